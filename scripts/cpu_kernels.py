#!/usr/bin/env python3
"""Measure how fast llama.cpp's CPU matrix kernels run per weight type, on this machine.

llama.cpp multiplies a quantized weight on the CPU with one of three kinds of kernel: tinyBLAS
(`ggml-cpu/llamafile/sgemm.cpp`: F32, F16, BF16, Q8_0, Q4_0, Q5_0, IQ4_NL on x86), a repacked
layout (`ggml-cpu/repack.cpp`: Q4_0, Q4_K, IQ4_NL, MXFP4 on AVX2, Q2_K on AVX-512) or ggml's
own vec_dot loop (every other type). Their speeds differ by several times.

This writes one llama-architecture model with F16 weights of zeros (n_embd 1024, n_ff 2816,
8 layers, 16 heads, 4 KV heads, a 32,000-token placeholder vocabulary: every dimension a
multiple of 256, so every type applies to every tensor), quantizes it with `llama-quantize
--pure` to each type, and runs

    llama-bench -m MODEL -p 512 -n 128 -t 1 -r 3 -o json

on each, writing llama-bench's stdout unchanged to OUT/<TYPE>.json. Kernel speed does not
depend on the values; the weights are zeros because the file is only there to be timed.

That model fits in a large last-level cache, so its decoding speed is the kernels' with the
weights in cache. `--dram` times a decoding step the way a real model runs one, its weights
streamed from memory: TinyLlama 1.1B's shape (`zero_weights_model.llama_shape`, 0.4 to 2.2 GB
a type), its F16 weights filled with seeded random values (sd 0.02, norms 1: a file whose
pages differ, as a real model's do), quantized `--pure` to each type, and

    llama-bench -m MODEL -p 0 -n 64 -t 1 -r 3 -o json

twice over every type in turn (so a slow spell of the machine touches every type alike), then
once with `-t 2`; OUT/<TYPE>.json is the three runs' JSON lists joined into one, and with
`--append` they are added to the runs already there (another session of the same steps).

Usage:
  python scripts/cpu_kernels.py --bin /path/to/llama.cpp/build/bin [--out DIR] [TYPE ...]
  python scripts/cpu_kernels.py --bin /path/to/llama.cpp/build/bin --dram --out DIR [TYPE ...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType, GGUFReader, GGUFWriter
from sparse_gguf import add_tensor, finish

ROOT = Path(__file__).resolve().parents[1]
TYPES = "F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K Q4_K Q5_K Q6_K IQ4_NL IQ4_XS".split()


@dataclass(frozen=True)
class LlamaShape:
    """The hyperparameters of a llama-architecture model that its speed depends on."""

    n_embd: int
    n_ff: int
    n_layer: int
    n_vocab: int
    n_head: int
    n_head_kv: int
    head_dim: int | None = None  # n_embd / n_head when not given
    tied: bool = False  # the output head is token_embd (no output.weight)
    rope_base: float = 1e4


def llama_shape(name: str) -> LlamaShape:
    """The shape of catalogue model `name`, which must be of the llama architecture with the
    same heads and feed-forward width in every layer."""
    from tokenwalk.model.resolve import load_model

    spec = load_model(name).model.spec
    if spec.arch != "llama" or len(set(spec.n_ff)) > 1 or len(set(spec.n_head_kv)) > 1:
        raise SystemExit(f"{name}: not a uniform llama-architecture model")
    return LlamaShape(
        n_embd=spec.n_embd,
        n_ff=spec.n_ff[0],
        n_layer=spec.n_layer,
        n_vocab=spec.n_vocab,
        n_head=spec.n_head[0],
        n_head_kv=spec.n_head_kv[0],
        head_dim=spec.head_k,
        tied=spec.tied_embeddings,
    )


KERNEL_SHAPE = LlamaShape(n_embd=1024, n_ff=2816, n_layer=8, n_vocab=32000, n_head=16, n_head_kv=4)


def write_model(out: Path, shape: LlamaShape = KERNEL_SHAPE) -> None:
    """A llama-architecture F16 model of zeros of `shape`, written as a header then extended
    (sparse) to its full size."""
    f16, f32 = GGMLQuantizationType.F16, GGMLQuantizationType.F32
    s = shape
    head_dim = s.head_dim or s.n_embd // s.n_head
    w = GGUFWriter(str(out), "llama")
    w.add_block_count(s.n_layer)
    w.add_context_length(4096)
    w.add_embedding_length(s.n_embd)
    w.add_feed_forward_length(s.n_ff)
    w.add_head_count(s.n_head)
    w.add_head_count_kv(s.n_head_kv)
    if s.head_dim is not None:  # as a catalogue model's file states it (KERNEL_SHAPE's does not)
        w.add_key_length(head_dim)
        w.add_value_length(head_dim)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(s.rope_base)
    w.add_rope_dimension_count(head_dim)
    w.add_tokenizer_model("gpt2")
    w.add_token_list([f"t{i}" for i in range(s.n_vocab)])
    w.add_token_types([1] * s.n_vocab)
    w.add_token_merges(["t 1"])
    tensors = [
        ("token_embd.weight", (s.n_vocab, s.n_embd), f16),
        ("output_norm.weight", (s.n_embd,), f32),
    ]
    if not s.tied:
        tensors.append(("output.weight", (s.n_vocab, s.n_embd), f16))
    q_dim, kv_dim = s.n_head * head_dim, s.n_head_kv * head_dim
    for i in range(s.n_layer):
        p = f"blk.{i}."
        tensors += [
            (p + "attn_norm.weight", (s.n_embd,), f32),
            (p + "ffn_norm.weight", (s.n_embd,), f32),
            (p + "attn_q.weight", (q_dim, s.n_embd), f16),
            (p + "attn_k.weight", (kv_dim, s.n_embd), f16),
            (p + "attn_v.weight", (kv_dim, s.n_embd), f16),
            (p + "attn_output.weight", (s.n_embd, q_dim), f16),
            (p + "ffn_gate.weight", (s.n_ff, s.n_embd), f16),
            (p + "ffn_up.weight", (s.n_ff, s.n_embd), f16),
            (p + "ffn_down.weight", (s.n_embd, s.n_ff), f16),
        ]
    data = sum(add_tensor(w, name, shape, qtype) for name, shape, qtype in tensors)
    finish(w, out, data)


DRAM_MODEL = "tinyllama-1.1b"  # the shape --dram times: 1.1 B weights, 0.4 to 2.2 GB a type


def randomize(path: Path, seed: int = 0) -> None:
    """Fill an F16 model's weights in place with seeded normal values (sd 0.02) and its F32
    norms with 1."""
    reader = GGUFReader(str(path), "r+")
    rng = np.random.default_rng(seed)
    for tensor in reader.tensors:
        flat = tensor.data.reshape(-1)
        if flat.dtype == np.float32:
            flat[:] = 1.0
            continue
        for start in range(0, flat.size, 1 << 24):
            n = min(1 << 24, flat.size - start)
            flat[start : start + n] = (rng.standard_normal(n, np.float32) * 0.02).astype(flat.dtype)
    reader.data.flush()


def bench(bin_dir: Path, model: Path, *args: str) -> str:
    """llama-bench's JSON output (stdout, unchanged) for `model` with `args`."""
    cmd = [str(bin_dir / "llama-bench"), "-m", str(model), *args, "-o", "json"]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def quantized(bin_dir: Path, base: Path, qtype: str) -> Path:
    """`base` (an F16 model) quantized `--pure` to `qtype`, next to it; F16 is `base` itself."""
    if qtype == "F16":
        return base
    model = base.with_name(f"{qtype}.gguf")
    quantize = [str(bin_dir / "llama-quantize"), "--pure", str(base), str(model), qtype]
    subprocess.run(quantize, check=True, capture_output=True)
    return model


def measure_dram(bin_dir: Path, out: Path, types: list[str], append: bool = False) -> None:
    """The --dram measurement: decoding steps of DRAM_MODEL's shape in every type (module doc)."""
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "F16.gguf"
        write_model(base, llama_shape(DRAM_MODEL))
        randomize(base)
        models = {qtype: quantized(bin_dir, base, qtype) for qtype in types}
        runs: dict[str, list[dict]] = {
            q: json.loads((out / f"{q}.json").read_text(encoding="utf-8")) if append else []
            for q in types
        }
        for threads in ("1", "1", "2"):
            for qtype in types:
                args = ("-p", "0", "-n", "64", "-t", threads, "-r", "3")
                runs[qtype] += json.loads(bench(bin_dir, models[qtype], *args))
                print(qtype, threads, "threads done", file=sys.stderr)
        for qtype, result in runs.items():
            (out / f"{qtype}.json").write_text(json.dumps(result, indent=2) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", type=Path, required=True, help="llama.cpp's build/bin folder")
    ap.add_argument("--out", type=Path, default=ROOT / "tests/data/cpu-kernels")
    ap.add_argument(
        "--dram", action="store_true", help="time decoding steps with the weights in DRAM"
    )
    ap.add_argument("--append", action="store_true", help="with --dram: add to OUT's runs")
    ap.add_argument("types", nargs="*", default=list(TYPES))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.dram:
        measure_dram(args.bin, args.out, args.types, args.append)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "F16.gguf"
        write_model(base)
        for qtype in args.types:
            model = quantized(args.bin, base, qtype)
            result = bench(args.bin, model, "-p", "512", "-n", "128", "-t", "1", "-r", "3")
            (args.out / f"{qtype}.json").write_text(result)
            print(qtype, "done", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
