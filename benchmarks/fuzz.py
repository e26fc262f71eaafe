#!/usr/bin/env python3
"""Fuzz the GGUF header reader with structured mutations of the real fixtures.

The mutators are those of the test suite (tests/gguf/gguf_mutate.py): bit flips, truncation at
field boundaries, huge length fields, unknown type ids, inflated counts, damaged dimensions and
offsets, spliced fields. Invariant for every case: `read_header` returns a Header or raises a
TokenwalkError (and `from_gguf_metadata` on a parsed header raises nothing else), in under 2 s.

Each failure is saved as a reproducer (the input bytes) in a temp dir; rerun one with
``python -c "import io,sys; from tokenwalk.gguf.reader import read_header as r;
d=open(sys.argv[1],'rb').read(); r(io.BytesIO(d), file_size=len(d))" FILE``.

Usage: python benchmarks/fuzz.py --cases 100000 [--seed 0]
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "gguf"))

from gguf_mutate import check, corpus, mutate  # noqa: E402

SLOW_S = 2.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--memory-every",
        type=int,
        default=500,
        help="measure tracemalloc peak on every Nth case (default 500)",
    )
    args = ap.parse_args()

    rng = random.Random(args.seed)
    seeds = corpus()
    out_dir: Path | None = None
    failures = slow = parsed = 0
    slowest = (0.0, "")
    peak_trace = 0
    t0 = time.perf_counter()
    for i in range(args.cases):
        what, data = mutate(rng, seeds)
        size_known = i % 4 != 0
        traced = args.memory_every > 0 and i % args.memory_every == 0
        if traced:
            tracemalloc.start()
        out = check(data, size_known=size_known)
        if traced:
            peak_trace = max(peak_trace, tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()
        parsed += out.parsed
        if out.elapsed_s > slowest[0]:
            slowest = (out.elapsed_s, f"case {i} ({what})")
        bad = not out.ok or out.elapsed_s > SLOW_S
        slow += out.elapsed_s > SLOW_S
        if bad:
            failures += 1
            if out_dir is None:
                out_dir = Path(tempfile.mkdtemp(prefix="tokenwalk-fuzz-"))
            path = out_dir / f"case-{i}.gguf"
            path.write_bytes(data)
            print(
                f"FAIL case {i} ({what}, size {'known' if size_known else 'unknown'}): "
                f"{out.error or 'too slow'} [{out.elapsed_s:.2f} s] -> {path}"
            )
        if (i + 1) % 10_000 == 0:
            print(
                f"  {i + 1:,} cases, {failures} failures, {time.perf_counter() - t0:.0f} s",
                flush=True,
            )
    wall = time.perf_counter() - t0
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"cases run: {args.cases:,} (seed {args.seed}) in {wall:.1f} s; "
        f"{parsed:,} parsed, {args.cases - parsed:,} refused with a TokenwalkError"
    )
    print(
        f"failures: {failures} ({slow} over {SLOW_S} s)"
        + (f"; reproducers in {out_dir}" if out_dir else "")
    )
    print(f"slowest case: {slowest[0] * 1000:.1f} ms, {slowest[1]}")
    print(
        f"peak memory: tracemalloc {peak_trace / 2**20:.1f} MiB (sampled every "
        f"{args.memory_every} cases), process max RSS {rss_mib:.0f} MiB"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
