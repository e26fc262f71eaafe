#!/usr/bin/env python3
"""Write a catalogue model's shape as a GGUF of zeros, quantized the way a real file is.

For timing llama.cpp on a CPU with models larger than the small real GGUF files at hand: a
llama-architecture model of the catalogue (`tokenwalk models`) is written with F16 weights of
zeros (`cpu_kernels.write_model`: its layers, widths, heads and vocabulary, the output head
tied or not as in its config), then quantized by

    llama-quantize F16.gguf OUT.gguf TYPE

with llama.cpp's own recipe for TYPE (not `--pure`: a Q4_K_M keeps its Q6_K tensors), so the
file has the size and tensor types of the real one (less llama 3's 64 rope factors,
`rope_freqs`, which it leaves out). Kernel speed does not depend on the
values; the file is only there to be timed.

Usage:
  python scripts/zero_weights_model.py --bin /path/to/llama.cpp/build/bin MODEL TYPE OUT.gguf
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from cpu_kernels import llama_shape, write_model


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", type=Path, required=True, help="llama.cpp's build/bin folder")
    ap.add_argument("model", help="a llama-architecture model of the catalogue")
    ap.add_argument("type", help="llama-quantize type: Q4_K_M, Q8_0, ...")
    ap.add_argument("out", type=Path)
    args = ap.parse_args()
    shape = llama_shape(args.model)
    env = {**os.environ, "LD_LIBRARY_PATH": str(args.bin)}
    with tempfile.TemporaryDirectory(dir=args.out.parent) as tmp:
        base = Path(tmp) / "F16.gguf"
        write_model(base, shape)
        quantize = [str(args.bin / "llama-quantize"), str(base), str(args.out), args.type]
        done = subprocess.run(quantize, capture_output=True, text=True, env=env)
        if done.returncode:
            print(done.stderr[-2000:], file=sys.stderr)
            return done.returncode
    print(f"{args.out}: {args.model} {args.type}, {args.out.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
