"""Loading cached machine code without parsing the bitcode cached beside it.

Numba caches a compiled function as its object code plus the LLVM bitcode of the same library,
the bitcode kept so that a later compile calling the function can link it in. On every load
Numba parses that bitcode at once, only to list the symbols the library defines (its engine
records them to hand out function addresses): for spin's engine, 1.8 MB of bitcode, 46 ms of a
59 ms load on a 2-core VM, and about 25 ms more for the smaller functions a small run loads.

The object code's own symbol table lists the same symbols
(``tests/test_cached_machine_code.py`` checks that the two agree), so spin reads them from there
and parses the bitcode only if a compile does link against the library. An object code that is not ELF64 little-endian (macOS,
Windows) loads as Numba loads it.
"""
from __future__ import annotations

import struct

_SECTION = struct.Struct("<IIQQQQIIQQ")   # Elf64_Shdr
_SYMBOL = struct.Struct("<IBBHQQ")         # Elf64_Sym
_SHT_SYMTAB = 2
_SHN_UNDEF = 0
_STT_SECTION, _STT_FILE = 3, 4


def defined_symbols(object_code: bytes) -> set[str] | None:
    """Names of the symbols an ELF64 little-endian object file defines (None for any other
    format): what Numba lists from the bitcode's functions and globals that are not
    declarations."""
    if object_code[:6] != b"\x7fELF\x02\x01":
        return None
    section_offset = struct.unpack_from("<Q", object_code, 0x28)[0]
    entry_size, count = struct.unpack_from("<HH", object_code, 0x3A)
    sections = [_SECTION.unpack_from(object_code, section_offset + i * entry_size)
                for i in range(count)]
    names: set[str] = set()
    for _, kind, _, _, offset, size, link, _, _, sym_size in sections:
        if kind != _SHT_SYMTAB or sym_size != _SYMBOL.size:
            continue
        strings = sections[link][4]
        for name, info, _, section, _, _ in _SYMBOL.iter_unpack(
                object_code[offset:offset + size]):
            if name == 0 or section == _SHN_UNDEF or info & 0xF in (_STT_SECTION, _STT_FILE):
                continue
            start = strings + name
            names.add(object_code[start:object_code.index(b"\0", start)].decode())
    return names


class _BitcodeOnDemand:
    """Mixed into a loaded library's class: its bitcode for linking is parsed on first use."""

    _spin_bitcode: bytes | None = None

    def _get_module_for_linking(self):
        if self._shared_module is None and self._spin_bitcode is not None:
            import llvmlite.binding as ll
            self._shared_module = ll.parse_bitcode(self._spin_bitcode)
            self._spin_bitcode = None
        return super()._get_module_for_linking()


_ON_DEMAND_CLASSES: dict[type, type] = {}


def _on_demand_class(cls: type) -> type:
    if cls not in _ON_DEMAND_CLASSES:
        _ON_DEMAND_CLASSES[cls] = type(f"BitcodeOnDemand{cls.__name__}",
                                       (_BitcodeOnDemand, cls), {})
    return _ON_DEMAND_CLASSES[cls]


def load_without_bitcode() -> None:
    """Make Numba load cached object code with the symbols read from it (module docstring).
    Idempotent; a Numba without the internals used here keeps its own loader."""
    from numba.core import codegen
    library_class = codegen.CPUCodeLibrary
    numba_unserialize = library_class.__dict__.get("_unserialize")
    if numba_unserialize is None or getattr(numba_unserialize, "__spin__", False):
        return
    numba_unserialize = numba_unserialize.__func__

    def unserialize(cls, target_codegen, state):
        name, kind, data = state
        engine = getattr(target_codegen, "_engine", None)
        symbols = defined_symbols(data[0]) if kind == "object" else None
        if symbols is None or not hasattr(engine, "_defined_symbols"):
            return numba_unserialize(cls, target_codegen, state)
        object_code, bitcode = data
        library = target_codegen.create_library(name)
        library.__class__ = _on_demand_class(type(library))
        library._spin_bitcode = bitcode
        library.enable_object_caching()
        library._set_compiled_object(object_code)
        library._finalize_final_module()
        engine._defined_symbols |= symbols
        return library

    unserialize.__spin__ = True
    library_class._unserialize = classmethod(unserialize)
