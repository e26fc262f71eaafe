#!/usr/bin/env python3
"""Record CPU ground truth: llama-bench on GGUF files plus this machine's own measurements.

The files are real models or catalogue shapes with weights of zeros
(scripts/zero_weights_model.py), which time the same: kernel speed does not depend on the values.

For each model and each thread count, this waits until the machine is quiet (1-minute load
average below --max-load, polled every --poll seconds; after --run-anyway-at UTC it runs
regardless), then runs

    llama-bench -m MODEL -t T -p 512,128 -n 128 -r R -o json

(--depths and --flash-attn add -d and -fa),
and writes llama-bench's stdout unchanged to OUT/<model stem>.t<T>.json. It also runs
scripts/measure_host.py (read bandwidth and f32 GEMM rate) under the same load check into
OUT/host.json, cuts a header-only copy of each GGUF (scripts/make_fixtures.py `cut`: every
metadata key and tensor info, tokenizer arrays cut to 64 items, no tensor data) into
OUT/headers/ so tests can resolve the models without their weights, and writes OUT/runs.json
(every command, its exit code, wall time and the load averages before and after it) and
OUT/README.md saying how all of it was made.

Usage:
  python scripts/cpu_ground_truth.py --llama-bench /path/to/llama-bench \\
      --source "model.gguf=where the file came from" model.gguf [more.gguf ...] \\
      [--out tests/data/cpu-ground-truth] [--threads 1 2] [--repeats 5]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from make_fixtures import cut  # noqa: E402
from measure_host import GIB, loadavg  # noqa: E402


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def wait_for_quiet(max_load: float, poll_s: float, run_anyway_at: datetime | None) -> dict:
    """Block until the 1-minute load average is below `max_load` (or `run_anyway_at` passed);
    return the load averages seen at the start of the wait and at its end, and the wait."""
    first = loadavg()
    t0 = time.monotonic()
    forced = False
    while True:
        now = loadavg()
        if now is None or now[0] < max_load:
            break
        if run_anyway_at is not None and datetime.now(timezone.utc) >= run_anyway_at:
            forced = True
            break
        print(f"  load {now} >= {max_load}; waiting {poll_s:.0f} s", file=sys.stderr, flush=True)
        time.sleep(poll_s)
    return {
        "loadavg_at_wait_start": first,
        "loadavg_at_start": loadavg(),
        "waited_s": round(time.monotonic() - t0),
        "ran_despite_load": forced,
    }


def run_logged(cmd: list[str], out_file: Path, gate: dict, log: list[dict]) -> int:
    """Run `cmd`, write its stdout to `out_file` as printed, append a record to `log`."""
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
        out_file.write_text(res.stdout, encoding="utf-8")
    else:
        print(res.stderr[-4000:], file=sys.stderr)
    print(
        f"  {out_file.name}: exit {res.returncode}, {rec['wall_s']} s, load {gate}",
        file=sys.stderr,
        flush=True,
    )
    return res.returncode


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def lscpu_summary() -> dict[str, str]:
    """The lines of `lscpu` that describe the machine (model, CPUs, caches, NUMA)."""
    keep = (
        "Model name",
        "CPU(s)",
        "Thread(s) per core",
        "Core(s) per socket",
        "Socket(s)",
        "Hypervisor vendor",
        "L1d cache",
        "L1i cache",
        "L2 cache",
        "L3 cache",
    )
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return {}
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in keep:
            out[key.strip()] = value.strip()
    return out


def cpu_flags() -> list[str]:
    """The SIMD and matrix feature flags of /proc/cpuinfo that llama.cpp's CPU kernels use."""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            flags = line.split(":", 1)[1].split()
            return sorted(f for f in flags if re.match(r"(avx|amx|fma|f16c|sse4)", f))
    return []


def bench_summary(path: Path) -> list[dict[str, Any]]:
    """The rows of one llama-bench JSON file that the README table shows."""
    rows = []
    for r in json.loads(path.read_text()):
        test = f"pp{r['n_prompt']}" if r["n_prompt"] else f"tg{r['n_gen']}"
        if r.get("n_depth"):
            test += f" @ d{r['n_depth']}"
        if "flash_attn" in r:
            test += f" fa {int(r['flash_attn'])}"
        rows.append(
            {
                "file": path.name,
                "model": Path(r["model_filename"]).name,
                "type": r["model_type"],
                "size": r["model_size"],
                "params": r["model_n_params"],
                "threads": r["n_threads"],
                "test": test,
                "avg_ts": r["avg_ts"],
                "stddev_ts": r["stddev_ts"],
            }
        )
    return rows


def _blas_line(b: dict[str, Any]) -> str:
    """One BLAS library of host.json: threadpoolctl's entry, or numpy's build configuration
    (measure_host.py without threadpoolctl)."""
    if b.get("source") == "numpy.show_config":
        cfg = b.get("blas", {})
        return f"{cfg.get('name')} {cfg.get('version')} (numpy's build configuration)"
    return (
        f"{b.get('internal_api')} {b.get('version')} ({b.get('architecture')}, "
        f"{b.get('threading_layer')})"
    )


def write_readme(out: Path, meta: dict[str, Any], log: list[dict], host: dict | None) -> None:
    """OUT/README.md: machine, build, models, commands, load averages, results."""
    lines = [
        "# CPU ground truth: llama-bench and host measurements on one 2-core machine",
        "",
        f"Made {meta['date_utc']} by `{meta['command']}`.",
        "Everything here is written by `scripts/cpu_ground_truth.py`; do not edit by hand.",
        "",
        "- `<model>.t<T>.json`: the stdout of `llama-bench ... -t T -o json`, unchanged",
        "- `host.json`: the stdout of `scripts/measure_host.py` (read bandwidth, f32 GEMM rate)",
        "- `runs.json`: every command, its exit code, wall time and the load averages around it",
        "- `headers/<model>.header.gguf`: each GGUF's header without tensor data, tokenizer "
        "arrays cut to 64 items (`scripts/make_fixtures.py` `cut`), so tests resolve the models",
        "",
        "## Machine",
        "",
    ]
    lines += [f"- {k}: {v}" for k, v in meta["lscpu"].items()]
    lines += [
        f"- RAM: {meta['mem_total_bytes'] / GIB:.1f} GiB (MemTotal {meta['mem_total_bytes']:,} B)",
        f"- CPU flags used by ggml: {' '.join(meta['cpu_flags'])}",
        f"- OS: {meta['os']}",
        "- Shared with other work: the runs waited for a 1-minute load average below "
        f"{meta['max_load']} (polled every {meta['poll_s']:.0f} s); the load at every run is "
        "below and in runs.json.",
        "",
        "## Build",
        "",
        f"- llama.cpp from the llama-cpp-python sdist {meta['sdist']} (vendor/llama.cpp), "
        f"build_commit {meta['build_commit']}, build_number {meta['build_number']}",
        f"- {meta['build_cmd']}",
        "",
        "## Models",
        "",
        "| file | bytes | sha256 | llama-bench type | size | params | source |",
        "|---|---:|---|---|---:|---:|---|",
    ]
    for m in meta["models"]:
        lines.append(
            f"| {m['file']} | {m['bytes']:,} | `{m['sha256'][:16]}` | {m['model_type']} | "
            f"{m['model_size']:,} | {m['model_n_params']:,} | {m['source']} |"
        )
    lines += ["", "## Results (llama-bench avg_ts, tokens/s, and stddev over the repeats)", ""]
    lines += ["| model | threads | test | tok/s | stddev |", "|---|---:|---|---:|---:|"]
    for f in meta["bench_files"]:
        for r in bench_summary(out / f):
            lines.append(
                f"| {r['model']} | {r['threads']} | {r['test']} | {r['avg_ts']:.2f} | "
                f"{r['stddev_ts']:.2f} |"
            )
    if host:
        bw = host["read_bandwidth_gbs"]
        lines += [
            "",
            "## Host measurements (`host.json`, scripts/measure_host.py)",
            "",
            f"numpy {host['numpy']}; BLAS: "
            + "; ".join(_blas_line(b) for b in host["blas"])
            + f"; environment: {host['env'] or 'no BLAS/OpenMP variables set'}.",
            "",
            f"Read bandwidth, GB/s (streaming float64 sum over {bw['buffer_bytes'] / GIB:g} GiB, "
            f"{bw['repeats']} repeats):",
            "",
            "| threads | min | median | max |",
            "|---:|---:|---:|---:|",
        ]
        for t, s in bw["threads"].items():
            lines.append(f"| {t} | {s['min']} | {s['median']} | {s['max']} |")
        lines += [
            "",
            "f32 GEMM, GFLOP/s:",
            "",
            "| n | threads | min | median | max |",
            "|---:|---:|---:|---:|---:|",
        ]
        for n, per in host["gemm_gflops"]["n"].items():
            for t, s in per.items():
                lines.append(f"| {n} | {t} | {s['min']} | {s['median']} | {s['max']} |")
    lines += log_lines(log)
    (out / "README.md").write_text("\n".join(lines), encoding="utf-8")


def log_lines(log: list[dict[str, Any]]) -> list[str]:
    """The README's last section: each command's load averages, then the commands in order."""
    lines = [
        "",
        "## Commands and load averages (1, 5, 15 min)",
        "",
        "| output | started (UTC) | wall s | load at start | load at end | waited s |",
        "|---|---|---:|---|---|---:|",
    ]
    for r in log:
        forced = " (ran despite load)" if r["ran_despite_load"] else ""
        lines.append(
            f"| {r['output']} | {r['started_utc']} | {r['wall_s']} | {r['loadavg_at_start']}"
            f"{forced} | {r['loadavg_at_end']} | {r['waited_s']} |"
        )
    return [*lines, "", "Commands, in order:", "", "```", *(r["command"] for r in log), "```", ""]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("Usage:")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("models", type=Path, nargs="+", help="GGUF files to benchmark")
    ap.add_argument("--llama-bench", type=Path, required=True, help="path to llama-bench")
    ap.add_argument("--out", type=Path, default=Path("tests/data/cpu-ground-truth"))
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--prompts", default="512,128", help="llama-bench -p (default 512,128)")
    ap.add_argument("--gen", default="128", help="llama-bench -n (default 128)")
    ap.add_argument("--repeats", type=int, default=5, help="llama-bench -r (default 5)")
    ap.add_argument("--depths", help="llama-bench -d (cached tokens; not passed by default)")
    ap.add_argument("--flash-attn", help="llama-bench -fa (e.g. 0,1; not passed by default)")
    ap.add_argument("--max-load", type=float, default=0.7, help="1-minute load to wait for")
    ap.add_argument("--poll", type=float, default=60.0, help="seconds between load checks")
    ap.add_argument("--run-anyway-at", help="UTC time HH:MM after which runs no longer wait")
    ap.add_argument(
        "--source",
        action="append",
        default=[],
        help="FILE=where it came from (README column), once per model",
    )
    ap.add_argument("--sdist", default="unknown", help="llama-cpp-python sdist version")
    ap.add_argument("--build-cmd", default="(not given)", help="how llama-bench was built")
    ap.add_argument("--skip-host", action="store_true", help="do not run measure_host.py")
    ap.add_argument("--host-args", default="", help="extra arguments for measure_host.py")
    args = ap.parse_args(argv)

    for p in (args.llama_bench, *args.models):
        if not p.is_file():
            print(f"cpu_ground_truth: error: no such file: {p}", file=sys.stderr)
            return 2
    deadline = None
    if args.run_anyway_at:
        hh, mm = (int(x) for x in args.run_anyway_at.split(":"))
        deadline = datetime.now(timezone.utc).replace(hour=hh, minute=mm, second=0, microsecond=0)
    sources = dict(s.split("=", 1) for s in args.source)
    out: Path = args.out
    (out / "headers").mkdir(parents=True, exist_ok=True)
    log: list[dict] = []
    bench_files: list[str] = []
    models: list[dict[str, Any]] = []

    for model in args.models:
        stem = model.name.removesuffix(".gguf")
        cut(model, out / "headers" / f"{stem}.header.gguf", 64)
        first: dict[str, Any] | None = None
        for t in args.threads:
            cmd = [
                str(args.llama_bench),
                "-m",
                str(model),
                "-t",
                str(t),
                "-p",
                args.prompts,
                "-n",
                args.gen,
                "-r",
                str(args.repeats),
                *(["-d", args.depths] if args.depths else []),
                *(["-fa", args.flash_attn] if args.flash_attn else []),
                "-o",
                "json",
            ]
            gate = wait_for_quiet(args.max_load, args.poll, deadline)
            name = f"{stem}.t{t}.json"
            if run_logged(cmd, out / name, gate, log) == 0:
                bench_files.append(name)
                first = first or json.loads((out / name).read_text())[0]
        models.append(
            {
                "file": model.name,
                "bytes": model.stat().st_size,
                "sha256": sha256(model),
                "source": sources.get(str(model), sources.get(model.name, "")),
                "model_type": first["model_type"] if first else "",
                "model_size": first["model_size"] if first else 0,
                "model_n_params": first["model_n_params"] if first else 0,
                "build_commit": first["build_commit"] if first else "",
                "build_number": first["build_number"] if first else 0,
            }
        )

    host = None
    if not args.skip_host:
        gate = wait_for_quiet(args.max_load, args.poll, deadline)
        cmd = [sys.executable, str(HERE / "measure_host.py"), *shlex.split(args.host_args)]
        if run_logged(cmd, out / "host.json", gate, log) == 0:
            host = json.loads((out / "host.json").read_text())

    meta = {
        "date_utc": utc_now(),
        "command": shlex.join(["python", "scripts/cpu_ground_truth.py", *(argv or sys.argv[1:])]),
        "lscpu": lscpu_summary(),
        "cpu_flags": cpu_flags(),
        "mem_total_bytes": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
        "os": " ".join(os.uname()[i] for i in (0, 2, 4)),
        "max_load": args.max_load,
        "poll_s": args.poll,
        "sdist": args.sdist,
        "build_commit": next((m["build_commit"] for m in models if m["build_commit"]), ""),
        "build_number": next((m["build_number"] for m in models if m["build_number"]), 0),
        "build_cmd": args.build_cmd,
        "models": models,
        "bench_files": bench_files,
    }
    (out / "runs.json").write_text(
        json.dumps({k: v for k, v in meta.items() if k != "bench_files"} | {"runs": log}, indent=2)
        + "\n",
        encoding="utf-8",
    )
    write_readme(out, meta, log, host)
    failed = [r for r in log if r["exit_code"]]
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
