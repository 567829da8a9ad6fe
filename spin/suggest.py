"""Close-match suggestions for names a user mistyped (TOML keys, CLI options, registry names).

A typo such as ``kidn`` for ``kind`` or ``--sizes`` for ``--size`` is the commonest input
mistake; naming the likely intended name beats listing every valid one. Standard library only,
so any layer may use it.
"""
from __future__ import annotations

import difflib
from collections.abc import Iterable

# difflib's similarity ratio below which two names are not offered as a match: 0.6 (difflib's
# own default) pairs "kidn"/"kind" and "sizes"/"size" but not unrelated short words
MIN_SIMILARITY = 0.6


def close_match(word: object, choices: Iterable[str]) -> str | None:
    """The valid name closest to ``word``, or None when none is close enough (or ``word`` is
    not a string)."""
    if not isinstance(word, str):
        return None
    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=MIN_SIMILARITY)
    return found[0] if found else None


def did_you_mean(word: object, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest valid name, or "" when there is none: the tail
    of an unknown-name message."""
    match = close_match(word, choices)
    return f" (did you mean {match!r}?)" if match is not None else ""


def misspelt_key(missing: str, given: Iterable[object], valid: Iterable[str]) -> str | None:
    """The key of ``given`` (not itself valid) that is a typo of the required key ``missing``,
    or None: ``kidn`` when ``kind`` is missing and ``kidn`` was given. A typo of a required key
    makes a validator report the key as missing; the typo is the real mistake."""
    valid = list(valid)
    for key in given:
        if isinstance(key, str) and key not in valid and close_match(key, valid) == missing:
            return key
    return None
