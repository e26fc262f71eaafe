"""A bounded, fail-closed reader of GGUF headers: metadata and tensor infos, never tensor data.

It reads from any object with ``read(n) -> bytes`` (a local file, an HTTP range reader), in
chunks, and walks the tokenizer's string arrays without keeping them. Every count and length is
checked against what the source can still hold and against sane limits before anything is
allocated; whatever is wrong raises a `GGUFError` subclass that says what and where.

The rules follow llama.cpp's own loader (``ggml/src/gguf.cpp``, ``gguf_init_from_file``): a
header llama.cpp refuses is refused here, and one it loads is read. Where llama.cpp keeps bytes
that are not valid UTF-8 (it never decodes keys, names or strings), they are read here with
U+FFFD in place of the bad bytes. A header whose tensor data lies beyond the end of the file is
read (llama.cpp reads such headers with ``no_alloc``); `Header.data_present` then says False.

The tables of value types and quant block sizes come from the ``gguf`` package.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any, Protocol

from tokenwalk.errors import GGUFError, TruncatedError, UnsupportedError
from tokenwalk.gguf.constants import (
    GGML_QUANT_SIZES,
    GGUF_DEFAULT_ALIGNMENT,
    GGUF_MAGIC,
    GGMLQuantizationType,
    GGUFValueType,
)

__all__ = [
    "ArrayInfo",
    "Header",
    "Readable",
    "TensorInfo",
    "read_header",
    "Limits",
    "LIMITS",
    "align_up",
]

_MAX_DIMS = 4
_MAX_NAME = 64  # GGML_MAX_NAME: llama.cpp refuses tensor names of 64 bytes or more
_SUPPORTED_VERSIONS = (2, 3)  # version 2 has version 3's layout on little-endian machines
_CHUNK = 1 << 20
_U64_MAX = (1 << 64) - 1  # llama.cpp's SIZE_MAX on 64-bit hosts
_I64_MAX = (1 << 63) - 1
# ggml type ids llama.cpp has removed (their block size is 0 there, so it refuses them);
# gguf.constants no longer lists them, so their names live here.
_REMOVED_TYPES = {
    4: "Q4_2",
    5: "Q4_3",
    31: "Q4_0_4_4",
    32: "Q4_0_4_8",
    33: "Q4_0_8_8",
    36: "IQ4_NL_4_4",
    37: "IQ4_NL_4_8",
    38: "IQ4_NL_8_8",
}
# the smallest possible metadata entry (key length, 1-byte key, type, 1-byte value) and tensor
# info (name length, empty name, n_dims = 0, type, offset)
_MIN_KV_BYTES = 8 + 1 + 4 + 1
_MIN_TENSOR_INFO_BYTES = 8 + 4 + 4 + 8

# struct format of each scalar value type: the GGUF layout, little-endian, as gguf's writer packs
# them (its table lives beside numpy code we do not load)
_STRUCT_CODE = {
    GGUFValueType.UINT8: "B",
    GGUFValueType.INT8: "b",
    GGUFValueType.UINT16: "H",
    GGUFValueType.INT16: "h",
    GGUFValueType.UINT32: "I",
    GGUFValueType.INT32: "i",
    GGUFValueType.FLOAT32: "f",
    GGUFValueType.BOOL: "?",
    GGUFValueType.UINT64: "Q",
    GGUFValueType.INT64: "q",
    GGUFValueType.FLOAT64: "d",
}
_SCALAR: dict[int, tuple[str, int]] = {
    int(vt): ("<" + code, struct.calcsize("<" + code)) for vt, code in _STRUCT_CODE.items()
}

_U64_AT = struct.Struct("<Q").unpack_from
_STRING = int(GGUFValueType.STRING)
_ARRAY = int(GGUFValueType.ARRAY)
_VALUE_TYPE_NAMES = {int(v): v.name for v in GGUFValueType}
# (block elements, block bytes) by ggml type id: a dict lookup, not an enum call per tensor
_BLOCK_BYTES: dict[int, tuple[int, int]] = {int(t): v for t, v in GGML_QUANT_SIZES.items()}
_MAX_VALUE_TYPE = max(_VALUE_TYPE_NAMES)
# arrays kept whole with keep_tokens: the vocabulary (tokens, merges, scores, token types)
_VOCAB_PREFIX = "tokenizer.ggml."


class Readable(Protocol):
    """Anything with ``read(n)``: returns up to n bytes, fewer only at the end."""

    def read(self, n: int, /) -> bytes: ...


@dataclass(frozen=True)
class Limits:
    """Sanity limits, far above any real model and far below what would hurt us.

    The first group bounds the bytes of a header; the second bounds a model's hyperparameters,
    whether they come from GGUF metadata or from a config.json / YAML spec (the model layer
    checks every key it reads against `hparam_limit`), so that no input can build a huge tensor
    table or print absurd sizes.
    """

    max_kv: int = 1 << 16
    max_tensors: int = 1 << 20
    max_key_bytes: int = 1 << 16
    max_string_bytes: int = 1 << 26  # 64 MiB: chat templates are ~100 KB (llama.cpp: 1 GiB)
    max_array_items: int = 1 << 30  # llama.cpp's GGUF_MAX_ARRAY_ELEMENTS
    keep_array_items: int = 1 << 16  # numeric arrays up to this are kept as lists
    keep_string_items: int = 256  # string arrays up to this are kept as lists
    # hyperparameters
    max_layers: int = 512  # blocks, MTP included: llama.cpp's LLAMA_MAX_LAYERS
    max_experts: int = 1024  # routed experts: llama.cpp's LLAMA_MAX_EXPERTS
    max_vocab: int = 1 << 24  # 16.8 M tokens: 64x the largest vocabulary (262,144)
    max_context: int = 1 << 30  # tokens: the largest --ctx the cost functions take
    max_width: int = 1 << 20  # any other width or count: embedding, FFN, heads, head length

    def hparam_limit(self, kind: str) -> int:
        """The bound of a hyperparameter of `kind` (layers, experts, vocab, context, width)."""
        return {
            "layers": self.max_layers,
            "experts": self.max_experts,
            "vocab": self.max_vocab,
            "context": self.max_context,
        }.get(kind, self.max_width)


LIMITS = Limits()  # the limits every reader uses unless a caller passes its own


@dataclass(frozen=True)
class ArrayInfo:
    """A metadata array that was walked but not kept: its item type and length."""

    item_type: str
    count: int

    def __len__(self) -> int:
        return self.count


@dataclass(frozen=True)
class TensorInfo:
    """One entry of the tensor table. ``shape`` is in ggml order (ne[0] is the row length)."""

    name: str
    shape: tuple[int, ...]
    ggml_type: int
    offset: int = 0

    @property
    def type_name(self) -> str:
        return GGMLQuantizationType(self.ggml_type).name

    @property
    def n_elements(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def n_bytes(self) -> int:
        block, type_bytes = _BLOCK_BYTES[self.ggml_type]
        return self.n_elements // block * type_bytes


@dataclass(frozen=True)
class Header:
    """What a GGUF header says: metadata, the tensor table and where the data would start."""

    version: int
    metadata: dict[str, Any]
    tensors: tuple[TensorInfo, ...]
    alignment: int
    data_offset: int
    file_size: int | None = None
    tokens: list[str] | None = field(default=None, repr=False)

    @property
    def tensor_data_bytes(self) -> int:
        """Bytes of tensor data the table describes (each tensor padded to the alignment)."""
        if not self.tensors:
            return 0
        last = self.tensors[-1]
        return last.offset + align_up(last.n_bytes, self.alignment)

    @property
    def expected_file_size(self) -> int:
        return self.data_offset + self.tensor_data_bytes if self.tensors else self.data_offset

    @property
    def data_present(self) -> bool | None:
        """True when the file holds all the tensor data, False when it stops short.

        None when the file size is unknown.
        """
        if self.file_size is None:
            return None
        return self.file_size >= self.expected_file_size

    @property
    def architecture(self) -> str | None:
        arch = self.metadata.get("general.architecture")
        return arch if isinstance(arch, str) else None


def align_up(n: int, alignment: int) -> int:
    """n rounded up to a multiple of `alignment` (GGML_PAD)."""
    return (n + alignment - 1) // alignment * alignment


class _Cursor:
    """A forward-only window over a `Readable`, refilled in chunks."""

    __slots__ = ("src", "buf", "pos", "base", "eof", "size")

    def __init__(self, src: Readable, size: int | None) -> None:
        self.src = src
        self.buf = b""
        self.pos = 0
        self.base = 0  # absolute offset of buf[0]
        self.eof = False
        self.size = size

    @property
    def offset(self) -> int:
        return self.base + self.pos

    def remaining(self) -> int | None:
        return None if self.size is None else self.size - self.offset

    def fill(self, n: int, what: str) -> None:
        """Make sure n bytes are buffered from pos on, or raise TruncatedError."""
        while len(self.buf) - self.pos < n:
            if self.eof:
                raise TruncatedError(
                    f"the file ends at byte {self.base + len(self.buf):,} inside {what} "
                    f"(needed {n:,} bytes at offset {self.offset:,})"
                )
            want = max(_CHUNK, n - (len(self.buf) - self.pos))
            try:
                more = self.src.read(want)
            except OSError as exc:
                raise GGUFError(f"cannot read at offset {self.offset:,}: {exc}") from exc
            if not isinstance(more, (bytes, bytearray, memoryview)):
                raise GGUFError("the source returned something other than bytes")
            if not more:
                self.eof = True
            self.base += self.pos
            self.buf = self.buf[self.pos :] + bytes(more)
            self.pos = 0

    def take(self, n: int, what: str) -> bytes:
        self.fill(n, what)
        out = self.buf[self.pos : self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str, n: int, what: str) -> Any:
        self.fill(n, what)
        (v,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += n
        return v

    def skip(self, n: int, what: str) -> None:
        while n > 0:
            have = len(self.buf) - self.pos
            if have >= n:
                self.pos += n
                return
            self.pos += have
            n -= have
            self.fill(min(n, _CHUNK), what)


class _Parser:
    def __init__(self, cur: _Cursor, limits: Limits, keep_tokens: bool) -> None:
        self.cur = cur
        self.lim = limits
        self.keep_tokens = keep_tokens
        self.tokens: list[str] | None = None

    # -- primitives -------------------------------------------------------------------------
    def u32(self, what: str) -> int:
        return self.cur.unpack("<I", 4, what)

    def u64(self, what: str) -> int:
        return self.cur.unpack("<Q", 8, what)

    def check_room(self, count: int, item_bytes: int, what: str) -> None:
        """Refuse a count whose items could not fit in what the source has left."""
        room = self.cur.remaining()
        if room is not None and count * item_bytes > room:
            raise TruncatedError(
                f"{what} announces {count:,} item{'' if count == 1 else 's'} "
                f"({count * item_bytes:,}+ bytes) at offset "
                f"{self.cur.offset:,}, but only {room:,} bytes remain in the file"
            )

    def raw_string(self, what: str, limit: int) -> bytes:
        at = self.cur.offset
        n = self.u64(what)
        if n > limit:
            raise GGUFError(f"{what} at offset {at:,} claims {n:,} bytes (limit {limit:,})")
        self.check_room(n, 1, what)
        return self.cur.take(n, what)

    def string(self, what: str, limit: int) -> str:
        """A length-prefixed string; bytes that are not UTF-8 become U+FFFD, as data."""
        return self.raw_string(what, limit).decode("utf-8", "replace")

    # -- values -----------------------------------------------------------------------------
    def value(self, vtype: int, key: str) -> Any:
        if vtype == _STRING:
            return self.string(f"the value of '{key}'", self.lim.max_string_bytes)
        if vtype == _ARRAY:
            return self.array(key)
        spec = _SCALAR.get(vtype)
        if spec is None:
            raise GGUFError(
                f"key '{key}' has unknown value type {vtype} at offset {self.cur.offset - 4:,} "
                f"(GGUF value types are 0 to {_MAX_VALUE_TYPE}): the file is damaged"
            )
        fmt, size = spec
        return self.cur.unpack(fmt, size, f"the value of '{key}'")

    def array(self, key: str) -> Any:
        at = self.cur.offset
        item_type = self.u32(f"the item type of array '{key}'")
        count = self.u64(f"the length of array '{key}'")
        if item_type == _ARRAY:
            raise GGUFError(
                f"array '{key}' at offset {at:,} holds arrays, which GGUF does not allow"
            )
        if count > self.lim.max_array_items:
            raise GGUFError(
                f"array '{key}' at offset {at:,} claims {count:,} items "
                f"(limit {self.lim.max_array_items:,})"
            )
        what = f"array '{key}'"
        vocab = self.keep_tokens and key.startswith(_VOCAB_PREFIX)
        if item_type == _STRING:
            self.check_room(count, 8, what)
            keep = count <= self.lim.keep_string_items or vocab
            items = self.string_array(count, key, keep)
            if key == "tokenizer.ggml.tokens" and self.keep_tokens:
                self.tokens = items
            if keep:
                return items
            return ArrayInfo("STRING", count)
        spec = _SCALAR.get(item_type)
        if spec is None:
            raise GGUFError(
                f"array '{key}' at offset {at:,} has unknown item type {item_type} "
                f"(GGUF value types are 0 to {_MAX_VALUE_TYPE}): the file is damaged"
            )
        fmt, size = spec
        self.check_room(count, size, what)
        if count <= self.lim.keep_array_items or vocab:
            raw = self.cur.take(count * size, what)
            return list(struct.unpack(f"<{count}{fmt[1:]}", raw))
        self.cur.skip(count * size, what)
        return ArrayInfo(_VALUE_TYPE_NAMES[item_type], count)

    def string_array(self, count: int, key: str, keep: bool) -> list[str] | None:
        """Walk `count` length-prefixed strings; decode them only when `keep`.

        The hot loop of the reader (a tokenizer has ~250,000 tokens and as many merges): items
        that lie wholly inside the buffer are walked in a tight loop; an item that crosses the
        end of the buffer, or one that is refused, goes through `_string_item`.
        """
        cur = self.cur
        limit = self.lim.max_string_bytes
        out: list[str] | None = [] if keep else None
        u64 = _U64_AT
        i = 0
        while i < count:
            buf, pos = cur.buf, cur.pos
            end = len(buf)
            last = end - 8
            if out is None:
                while i < count and pos <= last:
                    n = u64(buf, pos)[0]
                    stop = pos + 8 + n
                    if stop > end or n > limit:
                        break
                    pos = stop
                    i += 1
            else:
                append = out.append
                while i < count and pos <= last:
                    n = u64(buf, pos)[0]
                    stop = pos + 8 + n
                    if stop > end or n > limit:
                        break
                    append(buf[pos + 8 : stop].decode("utf-8", "replace"))
                    pos = stop
                    i += 1
            cur.pos = pos
            if i < count:
                self._string_item(i, key, out)
                i += 1
        return out

    def _string_item(self, i: int, key: str, out: list[str] | None) -> None:
        """Item `i` of a string array, read with every check and a buffer refill."""
        cur = self.cur
        limit = self.lim.max_string_bytes
        what = f"array '{key}'"
        at = cur.offset
        n = cur.unpack("<Q", 8, what)
        if n > limit:
            raise GGUFError(
                f"item {i:,} of array '{key}' at offset {at:,} claims {n:,} bytes (limit {limit:,})"
            )
        room = cur.remaining()
        if room is not None and n > room:
            raise TruncatedError(
                f"item {i:,} of array '{key}' at offset {at:,} claims {n:,} "
                f"bytes, but only {room:,} bytes remain in the file"
            )
        if out is None:
            cur.skip(n, what)
        else:
            out.append(cur.take(n, what).decode("utf-8", "replace"))

    # -- tensors ----------------------------------------------------------------------------
    def tensor_info(self, index: int, seen: set[bytes]) -> TensorInfo:
        raw = self.raw_string(f"the name of tensor {index}", self.lim.max_key_bytes)
        name = raw.decode("utf-8", "replace")
        if len(raw) >= _MAX_NAME:
            raise GGUFError(
                f"tensor {index} has a name of {len(raw)} bytes ('{name[:40]}...'); "
                f"llama.cpp allows at most {_MAX_NAME - 1}"
            )
        if raw in seen:
            raise GGUFError(f"tensor name '{name}' appears twice (tensor {index})")
        seen.add(raw)
        n_dims = self.u32(f"the dimension count of tensor '{name}'")
        if n_dims > _MAX_DIMS:
            raise GGUFError(
                f"tensor '{name}' has {n_dims:,} dimensions; GGUF allows at most {_MAX_DIMS}"
            )
        shape = tuple(self.u64(f"the shape of tensor '{name}'") for _ in range(n_dims))
        n = 1
        for j, d in enumerate(shape):
            if d > _I64_MAX:
                raise GGUFError(
                    f"tensor '{name}' dimension {j} is negative ({d - (1 << 64):,}) as a signed "
                    "64-bit count"
                )
            n *= d
        if n > _I64_MAX:
            raise GGUFError(
                f"tensor '{name}' has shape {list(shape)}, whose element count overflows 64 bits"
            )
        type_id = self.u32(f"the type of tensor '{name}'")
        if type_id in _REMOVED_TYPES:
            raise UnsupportedError(
                f"tensor '{name}' uses ggml type {_REMOVED_TYPES[type_id]} (id {type_id}), which "
                "llama.cpp has removed; convert the model again with a current llama.cpp"
            )
        try:
            qtype = GGMLQuantizationType(type_id)
            block, type_bytes = GGML_QUANT_SIZES[qtype]
        except (ValueError, KeyError):
            raise UnsupportedError(
                f"tensor '{name}' uses ggml type id {type_id}, which this version of tokenwalk "
                "does not know (a newer llama.cpp quant type? upgrade tokenwalk and the gguf "
                "package)"
            ) from None
        if shape and shape[0] % block != 0:
            raise GGUFError(
                f"tensor '{name}' of type {qtype.name} has rows of {shape[0]:,} elements, "
                f"not a multiple of its block size {block}"
            )
        if n // block * type_bytes > _U64_MAX:
            raise GGUFError(f"tensor '{name}' with shape {list(shape)} needs more than 2^64 bytes")
        offset = self.u64(f"the offset of tensor '{name}'")
        return TensorInfo(name, shape or (1,), type_id, offset)


def read_header(
    src: Readable,
    *,
    file_size: int | None = None,
    keep_tokens: bool = False,
    limits: Limits | None = None,
) -> Header:
    """Parse a GGUF header from `src`. `file_size`, when known, bounds every count.

    With `keep_tokens`, every ``tokenizer.ggml.*`` array (tokens, merges, scores, token types)
    is kept whole in `metadata` and the tokens also in `Header.tokens`: what a tokenizer needs,
    and only then, since decoding ~500,000 strings costs more than the rest of the header.

    Raises `GGUFError` (or `TruncatedError`, `UnsupportedError`) naming what is wrong and where;
    never anything else for any input bytes.
    """
    lim = limits or LIMITS
    cur = _Cursor(src, file_size)
    p = _Parser(cur, lim, keep_tokens)

    try:
        cur.fill(4, "the magic number")
    except TruncatedError:
        pass
    magic = cur.buf[:4]
    if magic != struct.pack("<I", GGUF_MAGIC):
        raise GGUFError(f"not a GGUF file (it starts with {magic!r}{_sniff(cur.buf[:16])})")
    cur.pos = 4
    version = p.u32("the version")
    _check_version(version)
    n_tensors = p.u64("the tensor count")
    n_kv = p.u64("the metadata key count")
    if n_kv > lim.max_kv:
        raise GGUFError(f"the header claims {n_kv:,} metadata keys (limit {lim.max_kv:,})")
    if n_tensors > lim.max_tensors:
        raise GGUFError(f"the header claims {n_tensors:,} tensors (limit {lim.max_tensors:,})")
    p.check_room(n_kv, _MIN_KV_BYTES, "the metadata key count")
    p.check_room(n_tensors, _MIN_TENSOR_INFO_BYTES, "the tensor count")
    p.check_room(n_kv * _MIN_KV_BYTES + n_tensors * _MIN_TENSOR_INFO_BYTES, 1, "the header")

    metadata: dict[str, Any] = {}
    seen_keys: set[bytes] = set()
    alignment_type: int | None = None
    for i in range(n_kv):
        at = cur.offset
        raw = p.raw_string(f"metadata key {i}", lim.max_key_bytes)
        if not raw:
            raise GGUFError(f"metadata key {i} at offset {at:,} is empty")
        key = raw.decode("utf-8", "replace")
        if raw in seen_keys or key in metadata:
            raise GGUFError(f"metadata key '{key}' appears twice (offset {at:,})")
        seen_keys.add(raw)
        vtype = p.u32(f"the type of '{key}'")
        if key == "general.alignment":
            alignment_type = vtype
        metadata[key] = p.value(vtype, key)

    alignment = GGUF_DEFAULT_ALIGNMENT
    if alignment_type is not None:
        if alignment_type != int(GGUFValueType.UINT32):
            raise GGUFError(
                "general.alignment must be a UINT32, not "
                f"{_VALUE_TYPE_NAMES.get(alignment_type, alignment_type)} (llama.cpp refuses it)"
            )
        alignment = metadata["general.alignment"]
        if alignment == 0 or alignment & (alignment - 1):
            raise GGUFError(f"general.alignment is {alignment}, which is not a power of two")

    tensors: list[TensorInfo] = []
    seen: set[bytes] = set()
    for i in range(n_tensors):
        tensors.append(p.tensor_info(i, seen))

    data_offset = align_up(cur.offset, alignment) if tensors else cur.offset
    expected = 0
    for t in tensors:
        if t.offset != expected:
            how = "overlaps the tensor before it" if t.offset < expected else "leaves a gap"
            if t.offset % alignment:
                how = f"is not a multiple of the alignment {alignment}"
            raise GGUFError(
                f"tensor '{t.name}' has data offset {t.offset:,}, which {how}; llama.cpp expects "
                f"{expected:,} (tensor data must follow the table order, each tensor padded to "
                f"{alignment} bytes)"
            )
        expected += align_up(t.n_bytes, alignment)
        if expected > _U64_MAX:
            raise GGUFError(f"the tensor data would end beyond 2^64 bytes (at tensor '{t.name}')")

    return Header(
        version=version,
        metadata=metadata,
        tensors=tuple(tensors),
        alignment=alignment,
        data_offset=data_offset,
        file_size=file_size,
        tokens=p.tokens,
    )


def _check_version(version: int) -> None:
    """Refuse the versions llama.cpp refuses, with its reasons."""
    if version in _SUPPORTED_VERSIONS:
        return
    if version == 0:
        raise UnsupportedError("GGUF version 0 does not exist; the file is damaged")
    if version & 0xFFFF == 0:
        raise UnsupportedError(
            f"GGUF version {version:#x} is impossibly large: the file is big-endian (made for "
            "s390x or similar); use a little-endian conversion of the model"
        )
    if version == 1:
        raise UnsupportedError(
            "GGUF version 1 is no longer read by llama.cpp or tokenwalk; convert the model again "
            "with a current llama.cpp"
        )
    raise UnsupportedError(
        f"GGUF version {version} is not supported (tokenwalk reads versions 2 and 3); "
        "a newer tokenwalk may read it"
    )


def _sniff(head: bytes) -> str:
    """A hint at what a non-GGUF file is, from its first bytes."""
    if not head:
        return ": the file is empty"
    if head.lstrip()[:1] == b"{":
        return "; it looks like JSON: pass a config.json path and tokenwalk reads it as a config"
    if len(head) >= 9 and head[8:9] == b"{":
        return "; it is a safetensors file: tokenwalk reads GGUF files or the model's config.json"
    if head[:4] == b"PK\x03\x04":
        return "; it is a zip archive (a PyTorch checkpoint?)"
    if head[:4] in (b"ggjt", b"tjgg", b"ggml", b"lmgg"):
        return "; it is an old GGML file from before GGUF"
    return ""
