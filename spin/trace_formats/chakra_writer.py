"""Write Chakra execution traces (the inverse of ``chakra``): for the examples and tests, which
build small training steps and malformed traces without protoc or the Chakra tools. Same field
numbers as the reader (Chakra's ``schema/protobuf/et_def.proto``)."""
from __future__ import annotations

import gzip
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .chakra import COMM_TYPES, NODE_TYPES

_NODE_CODES = {name: code for code, name in NODE_TYPES.items()}
_COMM_CODES = {name: code for code, name in COMM_TYPES.items()}


def varint(value: int) -> bytes:
    """Base-128 varint of an unsigned (or two's-complement 64-bit) integer."""
    value &= 0xFFFF_FFFF_FFFF_FFFF
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def key(number: int, wire: int) -> bytes:
    """A field's key: number and wire type."""
    return varint(number << 3 | wire)


def length_field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (string, bytes, message, packed list)."""
    return key(number, 2) + varint(len(payload)) + payload


def attr(name: str, value) -> bytes:
    """An AttributeProto: bool (27), int64 (9), string (29) or a list of bools (28)."""
    body = length_field(1, name.encode())
    if isinstance(value, bool):
        body += key(27, 0) + varint(int(value))
    elif isinstance(value, int):
        body += key(9, 0) + varint(value)
    elif isinstance(value, str):
        body += length_field(29, value.encode())
    elif isinstance(value, (list, tuple)):
        body += length_field(28, length_field(1, b"".join(varint(int(v)) for v in value)))
    else:
        raise TypeError(f"attribute {name}: unsupported value {value!r}")
    return body


@dataclass
class ChakraNode:
    """A Node to write: ``type`` a NODE_TYPES name, ``attrs`` written in order (a collective's
    ``comm_type`` may be given by name); ``inputs`` the IOInfo strings (values, shapes,
    types) as Chakra's PyTorch converter writes them, ``str()`` of each list."""

    node_id: int
    type: str
    name: str = ""
    data_deps: tuple[int, ...] = ()
    ctrl_deps: tuple[int, ...] = ()
    duration_micros: int = 0
    attrs: dict = field(default_factory=dict)
    inputs: tuple[str, str, str] | None = None

    def encode(self) -> bytes:
        """The Node message's bytes."""
        out = key(1, 0) + varint(self.node_id)
        if self.name:
            out += length_field(2, self.name.encode())
        out += key(3, 0) + varint(_NODE_CODES[self.type])
        if self.ctrl_deps:
            out += length_field(4, b"".join(varint(d) for d in self.ctrl_deps))
        if self.data_deps:
            out += length_field(5, b"".join(varint(d) for d in self.data_deps))
        if self.duration_micros:
            out += key(7, 0) + varint(self.duration_micros)
        if self.inputs is not None:
            out += length_field(8, b"".join(length_field(i, text.encode())
                                            for i, text in enumerate(self.inputs, 1)))
        for name, value in self.attrs.items():
            if name == "comm_type" and isinstance(value, str):
                value = _COMM_CODES[value]
            out += length_field(10, attr(name, value))
        return out


def encode_trace(nodes: Iterable[ChakraNode], version: str = "0.0.4") -> bytes:
    """A GlobalMetadata and the nodes, each prefixed by its varint length."""
    messages = [length_field(1, version.encode())] + [n.encode() for n in nodes]
    return b"".join(varint(len(m)) + m for m in messages)


def write_rank(path: str | Path, nodes: Iterable[ChakraNode], compress: bool = False) -> Path:
    """Write one rank's file (gzip-compressed with ``compress``, reproducibly: mtime 0)."""
    path = Path(path)
    data = encode_trace(nodes)
    path.write_bytes(gzip.compress(data, mtime=0) if compress else data)
    return path
