#!/usr/bin/env python3
"""Measure this machine's sustained read bandwidth and f32 GEMM rate with numpy; print JSON.

The measuring code is tokenwalk's own (`tokenwalk.probe.measure`, which `tokenwalk probe` runs);
this script runs it at chosen sizes and thread counts and records the host beside it.

The two numbers a CPU timing model needs, measured the way a user would with numpy alone:

- **Read bandwidth** (GB/s, decimal: 1 GB = 1e9 bytes): a streaming sum over a float64 buffer
  far larger than the last-level cache (default 2 GiB), so every byte comes from DRAM.
  bandwidth_gbs = buffer_bytes / t_sum / 1e9. With T threads the buffer is cut into T
  contiguous chunks summed at once on a thread pool (numpy releases the GIL inside the
  reduction), and t_sum is the wall time of the slowest chunk, i.e. of the whole pass.
- **GEMM rate** (GFLOP/s): C = A @ B with float32 n x n matrices through the BLAS numpy was
  built with; gemm_gflops = 2 n^3 / t / 1e9. The BLAS thread count is set with threadpoolctl
  when it is installed; without it each thread count runs in a child process started with
  OPENBLAS_NUM_THREADS / OMP_NUM_THREADS / MKL_NUM_THREADS set.

Each figure is repeated and reported as min / median / max over the repeats (after one warm-up
pass that is not counted), with the raw samples beside them. The JSON also records the CPU
(model name, logical CPUs, caches from sysfs), total memory, the environment variables that
steer BLAS threading and kernels (OPENBLAS_*, OMP_*, MKL_*, ...), the BLAS libraries in use
(threadpoolctl.threadpool_info()) and the load average before and after.

Usage:
  python scripts/measure_host.py                      # 2 GiB buffer, n = 2048 and 4096
  python scripts/measure_host.py --quick              # a few seconds, for a smoke test
  python scripts/measure_host.py --threads 1 2 --buffer-gib 1 --gemm-sizes 2048 --repeats 5
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from tokenwalk.probe.measure import (  # noqa: F401  (GIB and loadavg: cpu_ground_truth.py)
    GB,
    GIB,
    blas_info,
    gemm_gflops_threads,
    loadavg,
    read_bandwidth_gbs,
    usable_cpus,
)
from tokenwalk.probe.measure import summary as _summary

_ENV_PREFIXES = ("OPENBLAS", "OMP_", "MKL_", "GOTO", "BLIS_", "NVPL_", "KMP_", "NUMEXPR_")


def summary(samples: Sequence[float]) -> dict[str, Any]:
    """min / median / max of `samples`, rounded to 0.1, with the samples themselves."""
    return _summary(samples).model_dump()


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return None


def cpu_info() -> dict[str, Any]:
    """CPU model name, logical CPUs, usable CPUs and the caches of cpu0 from sysfs."""
    model = None
    cpuinfo = _read(Path("/proc/cpuinfo")) or ""
    for line in cpuinfo.splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    caches = []
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    for idx in sorted(base.glob("index*")):
        caches.append(
            {
                "level": _read(idx / "level"),
                "type": _read(idx / "type"),
                "size": _read(idx / "size"),
                "shared_cpu_list": _read(idx / "shared_cpu_list"),
            }
        )
    return {
        "model_name": model or platform.processor() or None,
        "machine": platform.machine(),
        "logical_cpus": os.cpu_count(),
        "usable_cpus": usable_cpus(),
        "caches_cpu0": caches,
    }


def mem_total_bytes() -> int | None:
    """MemTotal from /proc/meminfo in bytes."""
    for line in (_read(Path("/proc/meminfo")) or "").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return None


def measure(
    threads: Sequence[int], buffer_bytes: int, gemm_sizes: Sequence[int], repeats: int
) -> dict[str, Any]:
    """Run every measurement and return the JSON-ready result."""
    load_before = loadavg()
    t0 = time.perf_counter()
    bandwidth = {str(t): summary(read_bandwidth_gbs(buffer_bytes, t, repeats)) for t in threads}
    gemm = {
        str(n): {str(t): summary(gemm_gflops_threads(n, t, repeats)) for t in threads}
        for n in gemm_sizes
    }
    return {
        "schema": 1,
        "date_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "cpu": cpu_info(),
        "mem_total_bytes": mem_total_bytes(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "blas": blas_info(),
        "env": {k: v for k, v in sorted(os.environ.items()) if k.startswith(_ENV_PREFIXES)},
        "loadavg_before": load_before,
        "loadavg_after": loadavg(),
        "seconds": round(time.perf_counter() - t0, 1),
        "read_bandwidth_gbs": {
            "method": "numpy.sum over a float64 buffer, T contiguous chunks on T threads",
            "buffer_bytes": buffer_bytes,
            "repeats": repeats,
            "threads": bandwidth,
        },
        "gemm_gflops": {
            "method": "numpy.matmul float32 n x n, 2 n^3 flops, BLAS limited to T threads",
            "repeats": repeats,
            "n": gemm,
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("Usage:")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument(
        "--threads",
        type=int,
        nargs="+",
        help="thread counts to measure (default: 1 and every usable CPU)",
    )
    ap.add_argument("--buffer-gib", type=float, default=2.0, help="read buffer in GiB (default 2)")
    ap.add_argument(
        "--gemm-sizes", type=int, nargs="+", default=[2048, 4096], help="GEMM n (default 2048 4096)"
    )
    ap.add_argument("--repeats", type=int, default=7, help="timed repeats of each (default 7)")
    ap.add_argument("--quick", action="store_true", help="256 MiB, n = 512, 3 repeats")
    ap.add_argument("--out", type=Path, help="also write the JSON to this file")
    args = ap.parse_args(argv)

    threads = args.threads or sorted({1, usable_cpus()})
    if args.quick:
        buffer_bytes, sizes, repeats = 256 << 20, [512], 3
    else:
        buffer_bytes, sizes, repeats = int(args.buffer_gib * GIB), args.gemm_sizes, args.repeats
    if min(threads) < 1 or repeats < 1 or buffer_bytes < 8 * max(threads) or min(sizes) < 1:
        print(
            "measure_host: error: threads, repeats, sizes and the buffer must be positive",
            file=sys.stderr,
        )
        return 2
    result = measure(threads, buffer_bytes, sizes, repeats)
    text = json.dumps(result, indent=2) + "\n"
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
