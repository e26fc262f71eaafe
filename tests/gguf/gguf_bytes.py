"""A byte-level GGUF builder for tests: it writes whatever it is told, valid or not.

`gguf.GGUFWriter` refuses bad input, so hostile headers are packed here with `struct`.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

from gguf.constants import GGUFValueType as VT

from tokenwalk.gguf.reader import Header, Limits, read_header

_FMT = {
    VT.UINT8: "B",
    VT.INT8: "b",
    VT.UINT16: "H",
    VT.INT16: "h",
    VT.UINT32: "I",
    VT.INT32: "i",
    VT.FLOAT32: "f",
    VT.BOOL: "?",
    VT.UINT64: "Q",
    VT.INT64: "q",
    VT.FLOAT64: "d",
}


def s(text: str | bytes) -> bytes:
    """A GGUF string: u64 length, then the bytes."""
    raw = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(raw)) + raw


def scalar(vtype: VT, value: object) -> bytes:
    return struct.pack("<I", int(vtype)) + struct.pack("<" + _FMT[vtype], value)


def string(text: str | bytes) -> bytes:
    return struct.pack("<I", int(VT.STRING)) + s(text)


def array(item_type: VT | int, items: Sequence[object], count: int | None = None) -> bytes:
    """An array value; `count` overrides the stored length (to lie about it)."""
    n = len(items) if count is None else count
    head = struct.pack("<IIQ", int(VT.ARRAY), int(item_type), n)
    if item_type == VT.STRING:
        return head + b"".join(s(x) for x in items)  # type: ignore[arg-type]
    return head + b"".join(struct.pack("<" + _FMT[VT(item_type)], x) for x in items)


def kv(key: str | bytes, value: bytes) -> bytes:
    """A metadata entry: `value` is the packed type + value (from scalar/string/array)."""
    return s(key) + value


def tensor(
    name: str | bytes,
    shape: Sequence[int],
    ggml_type: int = 0,
    offset: int = 0,
    n_dims: int | None = None,
) -> bytes:
    nd = len(shape) if n_dims is None else n_dims
    return s(name) + struct.pack(f"<I{len(shape)}QIQ", nd, *shape, ggml_type, offset)


@dataclass
class GGUF:
    """A header to pack. Counts default to the real number of entries; set them to lie."""

    kvs: list[bytes] = field(default_factory=list)
    tensors: list[bytes] = field(default_factory=list)
    version: int = 3
    n_kv: int | None = None
    n_tensors: int | None = None
    magic: bytes = b"GGUF"
    pad_to: int | None = 32  # pad the end to this alignment when there are tensors
    data: bytes = b""  # tensor data appended after the padding

    def build(self) -> bytes:
        n_kv = len(self.kvs) if self.n_kv is None else self.n_kv
        n_t = len(self.tensors) if self.n_tensors is None else self.n_tensors
        out = self.magic + struct.pack("<IQQ", self.version, n_t, n_kv)
        out += b"".join(self.kvs) + b"".join(self.tensors)
        if self.tensors and self.pad_to:
            out += b"\0" * (-len(out) % self.pad_to)
        return out + self.data


def parse(data: bytes, *, size: bool = True, limits: Limits | None = None) -> Header:
    """read_header over bytes; `size=False` hides the file size, as a stream would."""
    return read_header(
        io.BytesIO(data), file_size=len(data) if size else None, limits=limits, keep_tokens=False
    )


def minimal(**kw: object) -> GGUF:
    """A small valid header: an architecture key and two F32 tensors."""
    g = GGUF(
        kvs=[kv("general.architecture", string("llama"))],
        tensors=[tensor("a.weight", [8, 2], 0, 0), tensor("b.weight", [8], 0, 64)],
    )
    for k, v in kw.items():
        setattr(g, k, v)
    return g
