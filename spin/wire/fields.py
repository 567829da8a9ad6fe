"""Declarative header formats compiled to big-endian numpy structured dtypes.

A header is declared once as an ordered list of ``Field(name, nbits, default)`` (in the spirit of
scapy's ``fields_desc``) and compiled to a dtype whose record is exactly the wire header, so a
buffer of frames can be viewed field by field without copying.

Layout rules (numpy has no bit fields and no 3- or 6-byte integers):

* a byte-aligned field of 8/16/32/64 bits is a plain big-endian scalar (``>u2``, ``>u4``...);
* a byte-aligned field of another whole number of bytes (24-bit QP/PSN, 48-bit MAC) is a
  ``("u1", n)`` byte array; ``HeaderFormat.get``/``set`` read and write it as a big-endian integer;
* a run of fields that starts or ends inside a byte (IPv4 version/IHL, flags/fragment offset,
  BTH SE/M/PadCnt/TVer) is packed into one containing unsigned integer of 8/16/32/64 bits named
  after its members joined by ``_``; ``bits[name]`` gives ``(container, shift, mask)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from spin.errors import WireError

_SCALAR_WIDTHS = {8: "u1", 16: ">u2", 32: ">u4", 64: ">u8"}


@dataclass(frozen=True)
class Field:
    """One header field: ``nbits`` wide, ``default`` used when building a header."""

    name: str
    nbits: int
    default: int = 0

    def __post_init__(self) -> None:
        if self.nbits < 1 or (self.nbits > 64 and self.nbits % 8):
            raise WireError(f"field {self.name!r}: nbits={self.nbits} must be 1..64 or whole bytes")
        if self.default < 0 or self.default >= (1 << self.nbits):
            raise WireError(f"field {self.name!r}: default {self.default} does not fit "
                            f"in {self.nbits} bits")


@dataclass(frozen=True)
class BitSlot:
    """Where a declared field lives in the compiled dtype."""

    container: str   # dtype field holding it
    offset: int      # byte offset of the container in the header
    shift: int       # right shift that brings the field to bit 0 (0 for whole fields)
    mask: int        # mask applied after the shift
    nbytes: int      # container width in bytes
    is_bytes: bool   # container is a ("u1", n) array read as a big-endian integer


@dataclass(frozen=True, eq=False)
class HeaderFormat:
    """A compiled header: ``dtype`` (big-endian, packed), ``size_bytes``, ``offsets``, ``bits``."""

    name: str
    fields: tuple[Field, ...]
    dtype: np.dtype = field(init=False, repr=False)
    size_bytes: int = field(init=False)
    offsets: Mapping[str, int] = field(init=False, repr=False)
    bits: Mapping[str, BitSlot] = field(init=False, repr=False)

    def __init__(self, name: str, fields: list[Field] | tuple[Field, ...]) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "fields", tuple(fields))
        names = [f.name for f in self.fields]
        if len(set(names)) != len(names):
            raise WireError(f"header {name!r}: duplicate field names in {names}")
        dt_names: list[str] = []
        dt_formats: list[Any] = []
        dt_offsets: list[int] = []
        offsets: dict[str, int] = {}
        bits: dict[str, BitSlot] = {}
        i, bitpos = 0, 0
        fs = self.fields
        while i < len(fs):
            f = fs[i]
            byte = bitpos // 8
            if f.nbits % 8 == 0:
                fmt: Any = _SCALAR_WIDTHS.get(f.nbits, ("u1", f.nbits // 8))
                dt_names.append(f.name)
                dt_formats.append(fmt)
                dt_offsets.append(byte)
                offsets[f.name] = byte
                bits[f.name] = BitSlot(f.name, byte, 0, (1 << f.nbits) - 1, f.nbits // 8,
                                       f.nbits not in _SCALAR_WIDTHS)
                bitpos += f.nbits
                i += 1
                continue
            # Sub-byte run: extend until the run ends on a byte boundary of a scalar width.
            j, width = i, 0
            while j < len(fs) and (width == 0 or width % 8 or width not in _SCALAR_WIDTHS):
                width += fs[j].nbits
                j += 1
                if width > 64:
                    break
            if width not in _SCALAR_WIDTHS:
                raise WireError(f"header {name!r}: fields {[g.name for g in fs[i:j]]} do not "
                                f"pack into an 8/16/32/64-bit container")
            cname = "_".join(g.name for g in fs[i:j])
            dt_names.append(cname)
            dt_formats.append(_SCALAR_WIDTHS[width])
            dt_offsets.append(byte)
            used = 0
            for g in fs[i:j]:
                used += g.nbits
                offsets[g.name] = byte
                bits[g.name] = BitSlot(cname, byte, width - used, (1 << g.nbits) - 1,
                                       width // 8, False)
            bitpos += width
            i = j
        size = bitpos // 8
        dt = np.dtype({"names": dt_names, "formats": dt_formats, "offsets": dt_offsets,
                       "itemsize": size})
        object.__setattr__(self, "dtype", dt)
        object.__setattr__(self, "size_bytes", size)
        object.__setattr__(self, "offsets", MappingProxyType(offsets))
        object.__setattr__(self, "bits", MappingProxyType(bits))

    def _slot(self, name: str) -> BitSlot:
        try:
            return self.bits[name]
        except KeyError:
            raise WireError(f"header {self.name!r} has no field {name!r}; "
                            f"fields: {list(self.bits)}") from None

    def get(self, rec: Any, name: str) -> Any:
        """Read field ``name`` from a record or an array of records (vectorised)."""
        s = self._slot(name)
        v = rec[s.container]
        if s.is_bytes:
            v = np.asarray(v, dtype=np.uint64)
            acc = np.zeros(v.shape[:-1], dtype=np.uint64)
            for k in range(s.nbytes):
                acc = (acc << np.uint64(8)) | v[..., k]
            return acc if acc.ndim else int(acc)
        if s.shift == 0 and s.mask == (1 << (8 * s.nbytes)) - 1:
            return v
        return (v >> s.shift) & s.mask

    def set(self, rec: Any, name: str, value: int) -> None:
        """Write field ``name`` of a single record (``np.void`` view or 0-d array)."""
        s = self._slot(name)
        if value < 0 or value > s.mask:
            raise WireError(f"{self.name}.{name}={value} does not fit in its field")
        if s.is_bytes:
            rec[s.container] = list(int(value).to_bytes(s.nbytes, "big"))
        elif s.shift == 0 and s.mask == (1 << (8 * s.nbytes)) - 1:
            rec[s.container] = value
        else:
            old = int(rec[s.container])
            rec[s.container] = (old & ~(s.mask << s.shift)) | (value << s.shift)

    def default_bytes(self) -> bytes:
        """The header with every field at its default value, in wire order."""
        acc = 0
        for f in self.fields:
            acc = (acc << f.nbits) | f.default
        return acc.to_bytes(self.size_bytes, "big")

    def view(self, buf: np.ndarray, offset: int = 0) -> np.ndarray:
        """Zero-copy view of this header at ``offset`` in each row of a 2-D uint8 slot buffer."""
        if buf.ndim != 2 or buf.dtype != np.uint8 or not buf.flags.c_contiguous:
            raise WireError(f"expected a C-contiguous 2-D uint8 buffer, got {buf.dtype} "
                            f"with shape {buf.shape}")
        if offset < 0 or offset + self.size_bytes > buf.shape[1]:
            raise WireError(f"{self.name} at offset {offset} does not fit in "
                            f"{buf.shape[1]} B slots")
        return np.ndarray(buf.shape[0], dtype=self.dtype, buffer=buf, offset=offset,
                          strides=(buf.strides[0],))
