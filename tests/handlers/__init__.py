"""Tests of the ready-made handler programs in the top-level ``handlers`` package.

pytest's default ("prepend") import mode names this package after its directory, ``handlers``,
which is also the name of the handler library. Put the library's directory first on this
package's path so ``handlers.<module>`` always resolves to the library, whichever of the two
packages Python imported under that name.
"""
from pathlib import Path

_LIBRARY_DIR = str(Path(__file__).resolve().parents[2] / "handlers")
if __name__ == "handlers" and _LIBRARY_DIR not in __path__:
    __path__.insert(0, _LIBRARY_DIR)
