#!/usr/bin/env python3
"""Fuzz the GGUF header reader with structured mutations of the real fixtures.

The mutators are those of the test suite (tests/gguf/gguf_mutate.py): bit flips, truncation at
field boundaries, huge length fields, unknown type ids, inflated counts, damaged dimensions and
offsets, spliced fields, hostile strings (markup, escape sequences, C1 controls, bidi overrides,
huge lengths) in string values, array items and tensor names. Invariant for every case:
`read_header` returns a Header or raises a TokenwalkError (and `from_gguf_metadata` on a parsed
header raises nothing else), in under 2 s.

Every Nth case (`--render-every`, default 10) also runs through a command of the CLI
(tests/gguf/hostile.py `render_check`: size, kv, decode, prefill, budget, trace, spec, tables on
a colour terminal and --json) with one more hostile-strings mutation (of a fresh fixture when
the reader refused the case); what the terminal would
see must hold no markup turned live, no control character and no internal error, and a refusal
must be one line.

Each failure is saved as a reproducer (the input bytes) in a temp dir; rerun one with
``python -c "import io,sys; from tokenwalk.gguf.reader import read_header as r;
d=open(sys.argv[1],'rb').read(); r(io.BytesIO(d), file_size=len(d))" FILE``.

Usage: python benchmarks/fuzz.py --cases 100000 [--seed 0] [--render-every 10]
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

from gguf_mutate import check, corpus, fields, hostile_strings, mutate  # noqa: E402
from hostile import RENDER_COMMANDS, render_check  # noqa: E402

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
    ap.add_argument(
        "--render-every",
        type=int,
        default=10,
        help="run every Nth case through a CLI command and check its output (0: never)",
    )
    args = ap.parse_args()

    rng = random.Random(args.seed)
    render_rng = random.Random(args.seed + 1)  # the reader's cases stay those of the seed
    seeds = corpus()
    out_dir: Path | None = None
    failures = slow = parsed = rendered = shown = 0
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
        if not bad and args.render_every > 0 and i % args.render_every == 0:
            # a case the reader refused shows only the error line: start again from a fixture
            name, base, _fs = (what, data, None) if out.parsed else render_rng.choice(seeds)
            try:
                data = hostile_strings(render_rng, base, fields(base))
            except Exception:  # noqa: BLE001 - a mutated layout may have no field map
                data = base
            what = what if out.parsed else f"{name}: hostile_strings"
            command = RENDER_COMMANDS[(i // args.render_every) % len(RENDER_COMMANDS)]
            what += f" -> tokenwalk {' '.join(command)}"
            shown_out = render_check(data, command)
            rendered += 1
            shown += shown_out.code != 2
            if not shown_out.ok or shown_out.elapsed_s > SLOW_S:
                bad = True
                out.error = shown_out.error or "too slow"
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
        f"rendered through the CLI: {rendered:,} cases, {shown:,} shown, "
        f"{rendered - shown:,} refused on one line"
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
