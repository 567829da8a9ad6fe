"""A small reader of the protobuf wire format (varints, the four wire types, packed repeated
fields, and streams of varint-length-prefixed messages), enough to decode Chakra execution
traces without protoc or generated code. Malformed input raises ``WireFormatError`` with the
byte offset, so the trace reader can name the file and node it was reading."""
from __future__ import annotations

import struct
from collections.abc import Iterator

VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5
MAX_VARINT_BYTES = 10


class WireFormatError(ValueError):
    """Bytes that are not a well-formed protobuf encoding; ``offset`` is where it went wrong."""

    def __init__(self, message: str, offset: int):
        super().__init__(message)
        self.offset = offset


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """The unsigned varint at ``pos`` and the position after it."""
    value = shift = 0
    for i in range(MAX_VARINT_BYTES):
        if pos + i >= len(buf):
            raise WireFormatError(f"varint cut off at byte {pos + i}", pos)
        byte = buf[pos + i]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value & 0xFFFF_FFFF_FFFF_FFFF, pos + i + 1
        shift += 7
    raise WireFormatError(f"varint longer than {MAX_VARINT_BYTES} bytes", pos)


def zigzag(value: int) -> int:
    """sint32/sint64 decoding."""
    return (value >> 1) ^ -(value & 1)


def signed64(value: int) -> int:
    """int64/int32 fields are two's complement in a 64-bit varint."""
    return value - (1 << 64) if value >= 1 << 63 else value


def fields(buf: bytes, base: int = 0) -> Iterator[tuple[int, int, object]]:
    """(field number, wire type, value) of every field of one message, in order: an int for
    VARINT, FIXED64 and FIXED32 (raw bits), the bytes for LENGTH. ``base`` only shifts the
    offsets reported in errors (where the message sits in its file)."""
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = _varint_at(buf, pos, base)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise WireFormatError("field number 0", base + pos)
        if wire == VARINT:
            value, pos = _varint_at(buf, pos, base)
        elif wire in (FIXED64, FIXED32):
            width = 8 if wire == FIXED64 else 4
            if pos + width > end:
                raise WireFormatError(f"field {number} cut off", base + pos)
            value = int.from_bytes(buf[pos:pos + width], "little")
            pos += width
        elif wire == LENGTH:
            size, pos = _varint_at(buf, pos, base)
            if pos + size > end:
                raise WireFormatError(f"field {number} of {size} B cut off", base + pos)
            value = bytes(buf[pos:pos + size])
            pos += size
        else:
            raise WireFormatError(f"field {number} has wire type {wire} (groups and unknown "
                                  f"types are not protobuf 3)", base + pos)
        yield number, wire, value


def _varint_at(buf: bytes, pos: int, base: int) -> tuple[int, int]:
    try:
        return read_varint(buf, pos)
    except WireFormatError as exc:
        raise WireFormatError(str(exc), base + exc.offset) from None


def packed_varints(wire: int, value) -> list[int]:
    """A repeated varint field: packed (one LENGTH field) or one element per field."""
    if wire == VARINT:
        return [value]
    if wire != LENGTH:
        raise WireFormatError(f"repeated varint field with wire type {wire}", 0)
    out, pos = [], 0
    while pos < len(value):
        v, pos = read_varint(value, pos)
        out.append(v)
    return out


def packed_fixed(wire: int, value, fmt: str) -> list:
    """A repeated fixed-width field (``fmt`` a struct code: d, f, q, Q, i, I)."""
    width = struct.calcsize(fmt)
    if wire in (FIXED32, FIXED64):
        return [struct.unpack("<" + fmt, value.to_bytes(width, "little"))[0]]
    if wire != LENGTH or len(value) % width:
        raise WireFormatError(f"repeated {fmt} field of {len(value)} B", 0)
    return list(struct.unpack(f"<{len(value) // width}{fmt}", value))


def delimited(buf: bytes) -> Iterator[tuple[int, bytes]]:
    """(offset, message bytes) of each varint-length-prefixed message of a stream."""
    pos = 0
    while pos < len(buf):
        size, body = read_varint(buf, pos)
        if body + size > len(buf):
            raise WireFormatError(f"message of {size} B at byte {pos} cut off at "
                                  f"{len(buf)} B", pos)
        yield body, bytes(buf[body:body + size])
        pos = body + size
