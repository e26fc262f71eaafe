"""Structured mutation of real GGUF headers, shared by tests/gguf/test_fuzz.py and
benchmarks/fuzz.py.

`fields(data)` maps a valid header to its fields (counts, lengths, type ids, dimensions, offsets);
each mutator picks fields by kind and damages them the way a hostile or broken file would: bit
flips, truncation at field boundaries, huge lengths, unknown type ids, inflated counts, and
strings replaced by hostile text (markup, escape sequences, C1 controls, bidi overrides, huge
lengths). `check` runs the reader (and `from_gguf_metadata` on what parses) and states the
invariant: a `Header` or a `TokenwalkError`, nothing else. `hostile.render_check` runs a case
through a command and checks what a terminal would show.
"""

from __future__ import annotations

import io
import random
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gguf.constants import GGUFValueType

from tokenwalk.errors import TokenwalkError
from tokenwalk.gguf.reader import Header, read_header
from tokenwalk.model.spec import from_gguf_metadata

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
_FIXED = {
    int(t): n
    for t, n in [
        (GGUFValueType.UINT8, 1),
        (GGUFValueType.INT8, 1),
        (GGUFValueType.BOOL, 1),
        (GGUFValueType.UINT16, 2),
        (GGUFValueType.INT16, 2),
        (GGUFValueType.UINT32, 4),
        (GGUFValueType.INT32, 4),
        (GGUFValueType.FLOAT32, 4),
        (GGUFValueType.UINT64, 8),
        (GGUFValueType.INT64, 8),
        (GGUFValueType.FLOAT64, 8),
    ]
}
_STRING, _ARRAY = int(GGUFValueType.STRING), int(GGUFValueType.ARRAY)


@dataclass(frozen=True)
class Field:
    """One field of a header: kind, byte offset and width."""

    kind: str  # version, count, len, vtype, ndims, dim, ttype, toff, value
    offset: int
    size: int
    of: str = ""  # for a string's len: key, value, item (of a string array) or tensor (name)


def fields(data: bytes) -> list[Field]:
    """The fields of a valid GGUF header, in file order."""
    out: list[Field] = [Field("version", 4, 4), Field("count", 8, 8), Field("count", 16, 8)]
    pos = 24
    n_tensors, n_kv = struct.unpack_from("<QQ", data, 8)

    def u32() -> int:
        nonlocal pos
        pos += 4
        return struct.unpack_from("<I", data, pos - 4)[0]

    def string(of: str) -> None:
        nonlocal pos
        n = struct.unpack_from("<Q", data, pos)[0]
        out.append(Field("len", pos, 8, of))
        pos += 8 + n

    for _ in range(n_kv):
        string("key")
        out.append(Field("vtype", pos, 4))
        vt = u32()
        if vt == _STRING:
            string("value")
        elif vt == _ARRAY:
            out.append(Field("vtype", pos, 4))
            it = u32()
            count = struct.unpack_from("<Q", data, pos)[0]
            out.append(Field("count", pos, 8))
            pos += 8
            for _ in range(count):
                if it == _STRING:
                    string("item")
                else:
                    pos += _FIXED[it]
        else:
            out.append(Field("value", pos, _FIXED[vt]))
            pos += _FIXED[vt]
    for _ in range(n_tensors):
        string("tensor")
        out.append(Field("ndims", pos, 4))
        nd = u32()
        for _ in range(nd):
            out.append(Field("dim", pos, 8))
            pos += 8
        out.append(Field("ttype", pos, 4))
        pos += 4
        out.append(Field("toff", pos, 8))
        pos += 8
    out.append(Field("end", pos, 0))
    return out


_HUGE = [
    (1 << 64) - 1,
    (1 << 63),
    (1 << 63) - 1,
    (1 << 62),
    1 << 32,
    (1 << 32) - 1,
    1 << 30,
    (1 << 30) + 1,
    1 << 26,
    (1 << 26) + 1,
    1 << 20,
    65_536,
    0,
    1,
]


def _put(data: bytearray, f: Field, value: int) -> None:
    data[f.offset : f.offset + f.size] = (value % (1 << (8 * f.size))).to_bytes(f.size, "little")


def _pick(rng: random.Random, fs: list[Field], *kinds: str) -> Field | None:
    cands = [f for f in fs if f.kind in kinds]
    return rng.choice(cands) if cands else None


def bit_flip(rng: random.Random, data: bytes, fs: list[Field]) -> bytes:
    b = bytearray(data)
    for _ in range(rng.choice([1, 1, 2, 4, 16])):
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)
    return bytes(b)


def field_bit_flip(rng: random.Random, data: bytes, fs: list[Field]) -> bytes:
    f = rng.choice([f for f in fs if f.size])
    b = bytearray(data)
    b[f.offset + rng.randrange(f.size)] ^= 1 << rng.randrange(8)
    return bytes(b)


def truncate(rng: random.Random, data: bytes, fs: list[Field]) -> bytes:
    f = rng.choice(fs)
    cut = rng.choice([f.offset, f.offset + 1, f.offset + f.size - 1, f.offset + f.size])
    cut = rng.choice([cut, cut, rng.randrange(len(data) + 1), rng.randrange(32)])
    return data[: max(0, min(cut, len(data)))]


def huge_length(rng: random.Random, data: bytes, fs: list[Field]) -> bytes:
    f = _pick(rng, fs, "len")
    if f is None:
        return data
    b = bytearray(data)
    _put(b, f, rng.choice([*_HUGE, len(data), len(data) - f.offset, rng.randrange(1 << 16)]))
    return bytes(b)


def type_ids(rng: random.Random, data: bytes, fs: list[Field]) -> bytes:
    f = _pick(rng, fs, "vtype", "ttype")
    if f is None:
        return data
    b = bytearray(data)
    if f.kind == "vtype":
        _put(b, f, rng.choice([*range(16), 0xFFFFFFFF, 1 << 31]))
    else:
        _put(b, f, rng.choice([*range(45), 4, 5, 31, 42, 43, 1 << 31, 0xFFFFFFFF]))
    return bytes(b)


def counts(rng: random.Random, data: bytes, fs: list[Field]) -> bytes:
    f = _pick(rng, fs, "count", "ndims", "version")
    if f is None:
        return data
    b = bytearray(data)
    old = int.from_bytes(data[f.offset : f.offset + f.size], "little")
    _put(b, f, rng.choice([*_HUGE, old + 1, old * 2, max(0, old - 1), rng.randrange(8)]))
    return bytes(b)


def dims_offsets(rng: random.Random, data: bytes, fs: list[Field]) -> bytes:
    f = _pick(rng, fs, "dim", "toff", "value")
    if f is None:
        return data
    b = bytearray(data)
    old = int.from_bytes(data[f.offset : f.offset + f.size], "little")
    _put(b, f, rng.choice([*_HUGE, old + 1, old + 32, old * 2, old // 2, 3]))
    return bytes(b)


def splice(rng: random.Random, data: bytes, fs: list[Field]) -> bytes:
    """Duplicate, drop or overwrite a run of fields: repeated keys, shifted layouts."""
    a, z = sorted(rng.sample(range(len(fs)), 2))
    start, stop = fs[a].offset, fs[z].offset
    op = rng.randrange(3)
    if op == 0:
        return data[:stop] + data[start:stop] + data[stop:]
    if op == 1:
        return data[:start] + data[stop:]
    return (
        data[:start]
        + bytes(rng.randrange(256) for _ in range(min(64, stop - start)))
        + data[start + min(64, stop - start) :]
    )


def _string_at(data: bytes, f: Field) -> bytes:
    n = struct.unpack_from("<Q", data, f.offset)[0]
    return data[f.offset + 8 : f.offset + 8 + n]


def hostile_strings(rng: random.Random, data: bytes, fs: list[Field]) -> bytes:
    """Put hostile text (`hostile.hostile_string`) into string values, string array items and
    tensor names: all of them or a few. general.architecture keeps its value in most cases, so
    that most cases get as far as the views."""
    from hostile import hostile_string

    spans = [f for f in fs if f.kind == "len" and f.of in ("value", "item", "tensor")]
    if not spans:
        return data
    keys = {}
    for i, f in enumerate(fs):  # a value's len comes two fields after its key's len
        if f.of == "value" and i >= 2 and fs[i - 2].of == "key":
            keys[f.offset] = _string_at(data, fs[i - 2])
    everything = rng.random() < 0.5
    chosen = []
    for f in spans:
        if keys.get(f.offset) == b"general.architecture" and rng.random() < 0.8:
            continue
        if f.of == "tensor" and rng.random() < (0.9 if everything else 0.98):
            continue  # renamed tensors lose their role; keep most of them
        if everything or rng.random() < 0.2:
            chosen.append(f)
    out = data
    for f in sorted(chosen, key=lambda f: f.offset, reverse=True):
        n = struct.unpack_from("<Q", out, f.offset)[0]
        text = hostile_string(rng, short=f.of == "tensor")
        out = out[: f.offset] + struct.pack("<Q", len(text)) + text + out[f.offset + 8 + n :]
    return out


MUTATORS: dict[str, Callable[[random.Random, bytes, list[Field]], bytes]] = {
    "bit_flip": bit_flip,
    "field_bit_flip": field_bit_flip,
    "truncate": truncate,
    "huge_length": huge_length,
    "type_ids": type_ids,
    "counts": counts,
    "dims_offsets": dims_offsets,
    "splice": splice,
    "hostile_strings": hostile_strings,
}


def seeds() -> list[tuple[str, bytes]]:
    """The real fixtures, the inputs every mutation starts from."""
    return [(p.name, p.read_bytes()) for p in sorted(FIXTURES.glob("*.gguf"))]


def mutate(rng: random.Random, corpus: list[tuple[str, bytes, list[Field]]]) -> tuple[str, bytes]:
    """One case: a fixture with one to three mutations. Returns (description, bytes)."""
    name, data, fs = rng.choice(corpus)
    done = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        # after a first mutation the field map is stale: keep the fields still inside the data
        live = [f for f in fs if f.offset + f.size <= len(data)]
        if len(live) < 2 or not data:
            break
        m = rng.choice(list(MUTATORS))
        data = MUTATORS[m](rng, data, live)
        done.append(m)
    return f"{name}: {'+'.join(done)}", data


def corpus() -> list[tuple[str, bytes, list[Field]]]:
    return [(n, d, fields(d)) for n, d in seeds()]


@dataclass
class Outcome:
    ok: bool
    parsed: bool
    error: str
    elapsed_s: float


def check(data: bytes, *, size_known: bool = True) -> Outcome:
    """Run the reader on `data`. ok is False when anything but a TokenwalkError escapes."""
    t = time.perf_counter()
    try:
        h = read_header(io.BytesIO(data), file_size=len(data) if size_known else None)
        _touch(h)
    except TokenwalkError as exc:
        return Outcome(True, False, f"{type(exc).__name__}: {exc}", time.perf_counter() - t)
    except Exception as exc:  # noqa: BLE001 - the invariant under test
        return Outcome(False, False, f"{type(exc).__name__}: {exc}", time.perf_counter() - t)
    try:
        from_gguf_metadata(h.metadata)
    except TokenwalkError:
        pass
    except Exception as exc:  # noqa: BLE001
        return Outcome(
            False, True, f"from_gguf_metadata {type(exc).__name__}: {exc}", time.perf_counter() - t
        )
    return Outcome(True, True, "", time.perf_counter() - t)


def _touch(h: Header) -> None:
    """Use what callers use: sizes and names of every tensor."""
    _ = h.tensor_data_bytes, h.expected_file_size, h.data_present, h.architecture
    for t in h.tensors:
        _ = t.n_bytes, t.type_name, t.n_elements
