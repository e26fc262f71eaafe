#!/usr/bin/env python3
"""Record batched ground truth: llama-batched-bench on GGUF files, several sequences at once.

For each model and each number of parallel sequences B of --npl, this waits until the machine
is quiet (1-minute load average below --max-load, polled every --poll seconds; after
--run-anyway-at UTC it runs regardless), then runs

    llama-batched-bench -m MODEL -c CTX -t T -npp 128,128,512 -ntg 128 -npl B --output-format jsonl

(CTX = B x (largest PP + TG), so no row is skipped; a cache per sequence, prompts not shared:
llama.cpp's defaults) and appends its JSON lines, unchanged, to OUT/<model stem>.jsonl, all but
the first: --warmup W (1 by default) repeats the first prompt size W times in front and throws
those runs away (kept in runs.json), since the first run of an invocation is slower than the
same run again (docs/timing-model.md). One run per B keeps each row's load averages apart.
--repeats R makes R rounds of every model and B, one after another (a row's R lines then sit
apart in time, and a reader takes their median).
It writes OUT/runs.json (every command, its exit code, wall time and the load averages around
it) and OUT/README.md saying how all of it was made. The models' header-only copies are those
its llama-bench recording writes (scripts/cpu_ground_truth.py --out OUT/llama-bench), else
tests/data/cpu-ground-truth/headers.

Usage:
  python scripts/batched_ground_truth.py --batched-bench /path/to/llama-batched-bench \\
      --source "model.gguf=where the file came from" model.gguf [more.gguf ...] \\
      [--out tests/data/batched-ground-truth] [--threads 2] [--npl 1,2,4,8,16,32] \\
      [--repeats 1] [--warmup 1]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from cpu_ground_truth import (  # noqa: E402
    cpu_flags,
    log_lines,
    lscpu_summary,
    sha256,
    utc_now,
    wait_for_quiet,
)
from measure_host import GIB, loadavg  # noqa: E402


def run_appending(
    cmd: list[str], out_file: Path, gate: dict, log: list[dict], discard: int = 0
) -> int:
    """Run `cmd`, append its stdout's JSON lines but the first `discard` to `out_file`, and a
    record to `log` (the discarded lines in it)."""
    started = utc_now()
    t0 = time.monotonic()
    res = subprocess.run(cmd, capture_output=True, text=True)
    rec = {
        "command": shlex.join(cmd),
        "output": out_file.name,
        "started_utc": started,
        "wall_s": round(time.monotonic() - t0, 1),
        "exit_code": res.returncode,
        **gate,
        "loadavg_at_end": loadavg(),
    }
    log.append(rec)
    if res.returncode == 0:
        lines = [ln for ln in res.stdout.splitlines() if ln.startswith("{")]
        rec["discarded"] = [json.loads(ln) for ln in lines[:discard]]
        with out_file.open("a", encoding="utf-8") as fh:
            fh.writelines(ln + "\n" for ln in lines[discard:])
    else:
        print(res.stderr[-4000:], file=sys.stderr)
    print(f"  {out_file.name}: exit {res.returncode}, {rec['wall_s']} s", file=sys.stderr)
    return res.returncode


def rounds(rows: list[dict]) -> dict[tuple[int, int, int], list[dict]]:
    """The rows of each (pp, tg, pl), in the order they ran."""
    out: dict[tuple[int, int, int], list[dict]] = {}
    for r in rows:
        out.setdefault((r["pp"], r["tg"], r["pl"]), []).append(r)
    return out


def write_readme(out: Path, meta: dict[str, Any], log: list[dict]) -> None:
    lines = [
        "# Batched ground truth: llama-batched-bench on one 2-core machine",
        "",
        f"Made {meta['date_utc']} by `{meta['command']}`.",
        "Everything here is written by `scripts/batched_ground_truth.py`; do not edit by hand.",
        "",
        "- `<model>.jsonl`: the JSON lines llama-batched-bench printed (`--output-format jsonl`),"
        f" one run per number of sequences and round ({meta['repeats']} round(s)), unchanged,"
        f" after {meta['warmup']} leading run(s) of each invocation thrown away (in runs.json):"
        " pp, tg, pl (sequences), t_pp, speed_pp"
        " (S_PP = pl x pp / t_pp), t_tg, speed_tg (S_TG = pl x tg / t_tg)",
        "- `runs.json`: every command, its exit code, wall time and the load averages around it",
        "- the models' header-only copies: `llama-bench/headers/` where the same files' llama-bench"
        " runs were recorded here, else `../cpu-ground-truth/headers/`",
        "",
        "## Machine",
        "",
    ]
    lines += [f"- {k}: {v}" for k, v in meta["lscpu"].items()]
    lines += [
        f"- RAM: {meta['mem_total_bytes'] / GIB:.1f} GiB (MemTotal {meta['mem_total_bytes']:,} B)",
        f"- CPU flags used by ggml: {' '.join(meta['cpu_flags'])}",
        f"- OS: {meta['os']}",
        "- Shared with other work: each run waited for a 1-minute load average below "
        f"{meta['max_load']} (polled every {meta['poll_s']:.0f} s); the load at every run is "
        "below and in runs.json.",
        "",
        "## Build",
        "",
        f"- llama.cpp: {meta['build']}",
        "- llama-batched-bench defaults otherwise: n_batch 2048, n_ubatch 512, flash attention "
        "auto, a KV cache per sequence (no -kvu), prompts not shared (no -pps)",
        "",
        "## Models",
        "",
        "| file | bytes | sha256 | source |",
        "|---|---:|---|---|",
    ]
    for m in meta["models"]:
        lines.append(f"| {m['file']} | {m['bytes']:,} | `{m['sha256'][:16]}` | {m['source']} |")
    lines += [
        "",
        "## Results (tokens/s)",
        "",
        "The median of each row's rounds, and every round in the order it ran.",
        "",
        "| model | PP | TG | B | S_PP | S_TG | S_PP rounds | S_TG rounds |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for m in meta["models"]:
        path = out / (Path(m["file"]).name.removesuffix(".gguf") + ".jsonl")
        rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
        for (pp, tg, pl), group in sorted(rounds(rows).items()):
            pps = [r["speed_pp"] for r in group]
            tgs = [r["speed_tg"] for r in group]
            lines.append(
                f"| {m['file']} | {pp} | {tg} | {pl} | {statistics.median(pps):.2f} | "
                f"{statistics.median(tgs):.2f} | {', '.join(f'{x:.1f}' for x in pps)} | "
                f"{', '.join(f'{x:.1f}' for x in tgs)} |"
            )
    lines += log_lines(log)
    (out / "README.md").write_text("\n".join(lines), encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("Usage:")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("models", type=Path, nargs="+", help="GGUF files to benchmark")
    ap.add_argument("--batched-bench", type=Path, required=True, help="llama-batched-bench")
    ap.add_argument("--out", type=Path, default=Path("tests/data/batched-ground-truth"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--npp", default="128,512")
    ap.add_argument("--ntg", default="128")
    ap.add_argument("--npl", default="1,2,4,8,16,32")
    ap.add_argument("--max-load", type=float, default=0.7, help="1-minute load to wait for")
    ap.add_argument("--poll", type=float, default=60.0, help="seconds between load checks")
    ap.add_argument("--run-anyway-at", help="UTC time HH:MM after which runs no longer wait")
    ap.add_argument("--source", action="append", default=[], help="FILE=where it came from")
    ap.add_argument("--build", default="(not given)", help="which llama.cpp, how it was built")
    ap.add_argument("--repeats", type=int, default=1, help="rounds of every model and B")
    ap.add_argument(
        "--warmup",
        type=int,
        default=1,
        help="leading runs of each invocation thrown away (the first prompt size again)",
    )
    args = ap.parse_args(argv)

    for p in (args.batched_bench, *args.models):
        if not p.is_file():
            print(f"batched_ground_truth: error: no such file: {p}", file=sys.stderr)
            return 2
    deadline = None
    if args.run_anyway_at:
        hh, mm = (int(x) for x in args.run_anyway_at.split(":"))
        deadline = datetime.now(timezone.utc).replace(hour=hh, minute=mm, second=0, microsecond=0)
    sources = dict(s.split("=", 1) for s in args.source)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    log: list[dict] = []
    models = []
    span = max(int(x) for x in args.npp.split(",")) + max(int(x) for x in args.ntg.split(","))
    targets = {m: out / (m.name.removesuffix(".gguf") + ".jsonl") for m in args.models}
    for target in targets.values():
        target.write_text("", encoding="utf-8")
    npp = ",".join([args.npp.split(",")[0]] * args.warmup + [args.npp])
    for _ in range(args.repeats):
        for model, target in targets.items():
            for pl in (int(x) for x in args.npl.split(",")):
                cmd = [
                    str(args.batched_bench),
                    "-m",
                    str(model),
                    "-c",
                    str(pl * span),
                    "-t",
                    str(args.threads),
                    "-npp",
                    npp,
                    "-ntg",
                    args.ntg,
                    "-npl",
                    str(pl),
                    "--output-format",
                    "jsonl",
                ]
                gate = wait_for_quiet(args.max_load, args.poll, deadline)
                if run_appending(cmd, target, gate, log, args.warmup) != 0:
                    return 1
    for model in args.models:
        models.append(
            {
                "file": model.name,
                "bytes": model.stat().st_size,
                "sha256": sha256(model),
                "source": sources.get(str(model), sources.get(model.name, "not given")),
            }
        )
    meta = {
        "date_utc": utc_now(),
        "command": "python scripts/batched_ground_truth.py " + shlex.join(argv or sys.argv[1:]),
        "lscpu": lscpu_summary(),
        "mem_total_bytes": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
        "cpu_flags": cpu_flags(),
        "os": f"{platform.system()} {platform.release()} {platform.machine()}",
        "max_load": args.max_load,
        "poll_s": args.poll,
        "build": args.build,
        "repeats": args.repeats,
        "warmup": args.warmup,
        "models": models,
    }
    (out / "runs.json").write_text(json.dumps({"runs": log}, indent=1) + "\n", encoding="utf-8")
    write_readme(out, meta, log)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
