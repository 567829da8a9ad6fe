"""pcap capture of emulated traffic: nanosecond timestamps, Ethernet link type.

Virtual time is integer picoseconds; pcap's finest standard resolution is nanoseconds
(magic 0xa1b23c4d), so timestamps are rounded down to whole nanoseconds. Frames carry no FCS.
Wireshark and tshark read these files directly and dissect the RoCEv2 frames (UDP 4791).
"""

from __future__ import annotations

import struct
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Sequence

import numpy as np

from spin.errors import WireError
from spin.jit import njit

PCAP_MAGIC_NS = 0xA1B23C4D
PCAP_MAGIC_US = 0xA1B2C3D4
LINKTYPE_ETHERNET = 1
PCAP_SNAPLEN = 262144
_NS_PER_S = 1_000_000_000
_PS_PER_NS = 1_000

_GLOBAL_HDR = struct.Struct("<IHHiIII")
_REC_HDR = struct.Struct("<IIII")
_REC_DTYPE = np.dtype([("sec", "<u4"), ("nsec", "<u4"), ("incl", "<u4"), ("orig", "<u4")])


@njit(cache=True)
def _pack_records(out, starts, hdr, buf2d, incl):
    for i in range(incl.shape[0]):
        s = starts[i]
        for j in range(16):
            out[s + j] = hdr[i, j]
        s += 16
        for j in range(incl[i]):
            out[s + j] = buf2d[i, j]


class PcapWriter:
    """Context manager writing a nanosecond-resolution Ethernet pcap."""

    def __init__(self, path: str | Path, snaplen: int = PCAP_SNAPLEN) -> None:
        self.path = Path(path)
        self.snaplen = snaplen
        self._f: BinaryIO | None = None
        self.frames_written = 0

    def __enter__(self) -> PcapWriter:
        self.open()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def open(self) -> None:
        """Create the file and write the global header (``__enter__`` does this)."""
        self._f = open(self.path, "wb")
        self._f.write(_GLOBAL_HDR.pack(PCAP_MAGIC_NS, 2, 4, 0, 0, self.snaplen,
                                       LINKTYPE_ETHERNET))

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None

    def _file(self) -> BinaryIO:
        if self._f is None:
            raise WireError(f"pcap {self.path} is not open (use 'with PcapWriter(path) as w')")
        return self._f

    def write(self, time_ps: int, frame: bytes | bytearray | memoryview | np.ndarray) -> None:
        """Append one frame captured at virtual time ``time_ps`` (picoseconds)."""
        f = self._file()
        data = frame.tobytes() if isinstance(frame, np.ndarray) else bytes(frame)
        if time_ps < 0:
            raise WireError(f"negative capture time {time_ps} ps")
        t_ns = int(time_ps) // _PS_PER_NS
        n = len(data)
        incl = min(n, self.snaplen)
        f.write(_REC_HDR.pack(t_ns // _NS_PER_S, t_ns % _NS_PER_S, incl, n))
        f.write(data[:incl])
        self.frames_written += 1

    def write_many(self, times_ps: Sequence[int] | np.ndarray, buf2d: np.ndarray,
                   lengths: Sequence[int] | np.ndarray) -> None:
        """Append a batch: frame ``i`` is ``buf2d[i, :lengths[i]]`` at ``times_ps[i]`` ps.

        The batch (record headers and frame bytes) is packed by Numba into one buffer and written
        with a single call.
        """
        f = self._file()
        t = np.asarray(times_ps, dtype=np.int64)
        lens = np.asarray(lengths, dtype=np.int64)
        k = t.shape[0]
        if buf2d.ndim != 2 or buf2d.dtype != np.uint8 or lens.shape[0] != k \
                or buf2d.shape[0] < k:
            raise WireError(f"write_many: need uint8 buf2d[n, slot] with n >= {k} and {k} "
                            f"lengths; got {buf2d.dtype} {buf2d.shape}, {lens.shape[0]} lengths")
        if k == 0:
            return
        if (lens < 0).any() or (lens > buf2d.shape[1]).any() or (t < 0).any():
            raise WireError("write_many: negative time, or length outside 0..slot size")
        incl = np.minimum(lens, self.snaplen)
        rec_sizes = 16 + incl
        starts = np.zeros(k + 1, dtype=np.int64)
        np.cumsum(rec_sizes, out=starts[1:])
        out = np.empty(int(starts[-1]), dtype=np.uint8)
        t_ns = t // _PS_PER_NS
        hdr = np.empty(k, dtype=_REC_DTYPE)
        hdr["sec"] = t_ns // _NS_PER_S
        hdr["nsec"] = t_ns % _NS_PER_S
        hdr["incl"] = incl
        hdr["orig"] = lens
        _pack_records(out, starts, hdr.view(np.uint8).reshape(k, 16), buf2d, incl)
        f.write(memoryview(out))
        self.frames_written += k


def read_pcap(path: str | Path) -> list[tuple[int, bytes]]:
    """Read a classic pcap (µs or ns, either byte order) as ``[(time_ns, frame_bytes)]``."""
    data = Path(path).read_bytes()
    if len(data) < 24:
        raise WireError(f"{path}: {len(data)} B is too short for a pcap header")
    for endian in "<>":
        (magic,) = struct.unpack(endian + "I", data[:4])
        if magic in (PCAP_MAGIC_NS, PCAP_MAGIC_US):
            break
    else:
        raise WireError(f"{path}: not a pcap file (magic {data[:4].hex()})")
    scale = 1 if magic == PCAP_MAGIC_NS else 1000
    rec = struct.Struct(endian + "IIII")
    out: list[tuple[int, bytes]] = []
    pos = 24
    while pos < len(data):
        if pos + 16 > len(data):
            raise WireError(f"{path}: truncated record header at byte {pos}")
        sec, frac, incl, _orig = rec.unpack_from(data, pos)
        pos += 16
        if pos + incl > len(data):
            raise WireError(f"{path}: truncated record at byte {pos} ({incl} B announced)")
        out.append((sec * _NS_PER_S + frac * scale, data[pos:pos + incl]))
        pos += incl
    return out
