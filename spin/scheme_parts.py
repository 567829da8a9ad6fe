"""Where the shipped port-selection schemes declare their engine columns, found without
importing any compiled code: the modules of ``switch_emulator.lb`` whose name ends in
``columns`` (``columns`` for what every switch's selection owns, then ``<scheme>_columns`` for
one scheme's own state, by name), each defining ``DECLARES`` (``spin.engine.columns.Declares``,
its ``dev`` columns). ``spin.engine.layout`` assembles ``st.dev``'s ``DEV_LB`` from them, so a
shipped scheme with state of its own is its module plus its columns module. A scheme from
outside spin keeps its state in its per-switch memory (``PortScheme.table_entries``) instead:
it is compiled apart, and a column would change the engine."""
from __future__ import annotations

import importlib.util
import pkgutil
from typing import Any

from .transports import declaration_module

SCHEMES_PACKAGE = "switch_emulator.lb"


def declaration_paths() -> tuple[str, ...]:
    """The schemes' declaration modules, ``columns`` first, then by name."""
    spec = importlib.util.find_spec(SCHEMES_PACKAGE)
    names = [m.name for m in pkgutil.iter_modules(spec.submodule_search_locations)
             if m.name.endswith("columns")]
    names.sort(key=lambda n: (n != "columns", n))
    return tuple(f"{SCHEMES_PACKAGE}.{n}" for n in names)


def declarations() -> tuple[Any, ...]:
    """Every declaration module's ``DECLARES``, in ``declaration_paths`` order."""
    from .errors import StateLayoutError
    out = []
    for path in declaration_paths():
        declared = getattr(declaration_module(path, "port-selection schemes"), "DECLARES", None)
        if declared is None:
            raise StateLayoutError(f"port-selection schemes: declaration module {path!r} "
                                   f"defines no DECLARES")
        out += declared if isinstance(declared, tuple) else [declared]
    return tuple(out)
