"""How many more bytes a GGUF header can still need, from the part of it fetched so far.

`HeaderScan` walks the header's layout (counts, lengths, types; no values are decoded) over the
bytes the range reader has received, and keeps a lower bound on where the header ends:

    min_end = offset reached
              + 8 x (string-array items left)        each item has at least its u64 length
              + 14 x (metadata entries left)          key length, 1-byte key, type, 1-byte value
              + 24 x (tensor infos left)              name length, n_dims, type, offset

Numeric arrays and strings are skipped by their exact sizes. Once the tensor table is reached
there is an upper bound too, since a tensor info is at most 8 + 63 + 4 + 4 x 8 + 4 + 8 = 119
bytes (llama.cpp's 63-byte names, 4 dimensions). The reader asks for at most `min_end` plus a
fixed slack, so a range never reaches more than that slack past the header's real end.

Bytes that do not look like a GGUF header stop the walk: the bounds are then unknown (None) and
the reader falls back to growing ranges; the parser says what is wrong with the bytes.
"""

from __future__ import annotations

import struct

from tokenwalk.gguf.constants import GGUF_DEFAULT_ALIGNMENT, GGUF_MAGIC, GGUFValueType

__all__ = ["HeaderScan"]

_U32 = struct.Struct("<I").unpack_from
_U64 = struct.Struct("<Q").unpack_from
_MAGIC = struct.pack("<I", GGUF_MAGIC)
_STRING = int(GGUFValueType.STRING)
_ARRAY = int(GGUFValueType.ARRAY)
_UINT32 = int(GGUFValueType.UINT32)
# bytes of each scalar value type in the GGUF layout
_SCALAR_BYTES = {
    int(GGUFValueType.UINT8): 1,
    int(GGUFValueType.INT8): 1,
    int(GGUFValueType.BOOL): 1,
    int(GGUFValueType.UINT16): 2,
    int(GGUFValueType.INT16): 2,
    int(GGUFValueType.UINT32): 4,
    int(GGUFValueType.INT32): 4,
    int(GGUFValueType.FLOAT32): 4,
    int(GGUFValueType.UINT64): 8,
    int(GGUFValueType.INT64): 8,
    int(GGUFValueType.FLOAT64): 8,
}
MIN_KV_BYTES = 8 + 1 + 4 + 1
MIN_TENSOR_INFO_BYTES = 8 + 4 + 4 + 8
MAX_TENSOR_INFO_BYTES = 8 + 63 + 4 + 4 * 8 + 4 + 8
_HEAD_BYTES = 4 + 4 + 8 + 8
_SANE_COUNT = 1 << 32  # past this the counts are nonsense; the parser will refuse them


class HeaderScan:
    """A resumable walk over a GGUF header's layout; see the module docstring.

    Call `advance(data)` with every byte fetched so far (from offset 0); then `min_end` and
    `max_end` bound the header's end (None when unknown), and `done` says it was walked whole.
    """

    def __init__(self) -> None:
        self.pos = 0  # every byte before this offset has been walked
        self.n_tensors: int | None = None
        self.n_kv: int | None = None
        self.kv_left = 0
        self.tensors_left = 0
        self.items_left = 0  # items of the string array being walked
        self.alignment = GGUF_DEFAULT_ALIGNMENT
        self.broken = False
        self.done = False

    # -- bounds -----------------------------------------------------------------------------
    @property
    def min_end(self) -> int | None:
        """The least offset at which the header can end, given what was walked."""
        if self.broken:
            return None
        if self.n_kv is None or self.n_tensors is None:
            return _HEAD_BYTES
        if self.done:
            return self.end
        return (
            self.pos
            + 8 * self.items_left
            + MIN_KV_BYTES * self.kv_left
            + MIN_TENSOR_INFO_BYTES * self.tensors_left
        )

    @property
    def max_end(self) -> int | None:
        """The greatest offset at which the header can end: known once only tensors are left."""
        if self.broken or self.n_tensors is None:
            return None
        if self.done:
            return self.end
        if self.kv_left or self.items_left:
            return None
        return self.pos + MAX_TENSOR_INFO_BYTES * self.tensors_left + self.alignment

    @property
    def end(self) -> int:
        """Where the tensor data starts, once `done`."""
        if self.n_tensors:
            return -(-self.pos // self.alignment) * self.alignment
        return self.pos

    # -- walking ----------------------------------------------------------------------------
    def advance(self, data: bytes | bytearray) -> None:
        """Walk as far as `data` (the header's first len(data) bytes) allows."""
        if self.broken or self.done:
            return
        view = memoryview(data)
        try:
            self._walk(view, len(view))
        finally:
            view.release()

    def _walk(self, buf: memoryview, have: int) -> None:
        if self.n_kv is None:
            if have < _HEAD_BYTES:
                return
            if bytes(buf[:4]) != _MAGIC:
                self.broken = True
                return
            n_tensors, n_kv = _U64(buf, 8)[0], _U64(buf, 16)[0]
            if n_tensors > _SANE_COUNT or n_kv > _SANE_COUNT:
                self.broken = True
                return
            self.n_tensors, self.n_kv = n_tensors, n_kv
            self.kv_left, self.tensors_left = n_kv, n_tensors
            self.pos = _HEAD_BYTES
        while not self.done:
            if self.items_left:
                if not self._string_items(buf, have):
                    return
            elif self.kv_left:
                if not self._kv(buf, have):
                    return
            elif self.tensors_left:
                if not self._tensor_info(buf, have):
                    return
            else:
                self.done = True

    def _string_items(self, buf: memoryview, have: int) -> bool:
        pos, left = self.pos, self.items_left
        while left and pos + 8 <= have:
            pos += 8 + _U64(buf, pos)[0]
            left -= 1
        self.pos, self.items_left = pos, left
        return left == 0

    def _kv(self, buf: memoryview, have: int) -> bool:
        """One metadata entry (an array of strings: its head; the items come after)."""
        p = self.pos
        if p + 8 > have:
            return False
        key_len = _U64(buf, p)[0]
        p += 8 + key_len
        if p + 4 > have:
            return False
        key = bytes(buf[p - key_len : p])
        vtype = _U32(buf, p)[0]
        p += 4
        if vtype == _STRING:
            if p + 8 > have:
                return False
            p += 8 + _U64(buf, p)[0]
        elif vtype == _ARRAY:
            if p + 12 > have:
                return False
            item_type, count = _U32(buf, p)[0], _U64(buf, p + 4)[0]
            p += 12
            if count > _SANE_COUNT:
                self.broken = True
                return False
            if item_type == _STRING:
                self.items_left = count
            elif item_type in _SCALAR_BYTES:
                p += count * _SCALAR_BYTES[item_type]
            else:
                self.broken = True
                return False
        elif vtype in _SCALAR_BYTES:
            size = _SCALAR_BYTES[vtype]
            if p + size > have:
                return False
            if key == b"general.alignment" and vtype == _UINT32:
                alignment = _U32(buf, p)[0]
                if alignment and not alignment & (alignment - 1):
                    self.alignment = alignment
            p += size
        else:
            self.broken = True
            return False
        self.pos = p
        self.kv_left -= 1
        return True

    def _tensor_info(self, buf: memoryview, have: int) -> bool:
        p = self.pos
        if p + 8 > have:
            return False
        p += 8 + _U64(buf, p)[0]
        if p + 4 > have:
            return False
        n_dims = _U32(buf, p)[0]
        if n_dims > 4:
            self.broken = True
            return False
        p += 4 + 8 * n_dims + 4 + 8
        if p > have:
            return False
        self.pos = p
        self.tensors_left -= 1
        return True
