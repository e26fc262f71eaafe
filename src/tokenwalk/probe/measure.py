"""Measure this machine's sustained read bandwidth and f32 matrix rate with numpy.

The two numbers a CPU timing model needs, measured the way a user could with numpy alone:

- **Read bandwidth** (GB/s, decimal: 1 GB = 1e9 bytes): a streaming sum over a float64 buffer
  far larger than the last-level cache, so that every byte comes from DRAM.
  bandwidth_gbs = buffer_bytes / t / 1e9. With T threads the buffer is cut into T contiguous
  chunks summed at once on a thread pool (numpy releases the GIL inside the reduction), and t is
  the wall time of the whole pass.
- **GEMM rate** (GFLOP/s): C = A @ B with float32 n x n matrices through the BLAS numpy was built
  with; gemm_gflops = 2 n^3 / t / 1e9. The BLAS thread count is set with threadpoolctl when it is
  installed; without it a limited count runs in a child process started with
  OPENBLAS_NUM_THREADS / OMP_NUM_THREADS / MKL_NUM_THREADS set. llama.cpp's CPU kernels multiply
  quantized blocks (int8 dot products, repacked weights), not f32 BLAS: this rate is the
  cores' float throughput, a proxy for theirs, not the same figure.

Each figure is repeated after one untimed warm-up pass and reported as min / median / max over
the repeats, with the samples.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from pydantic import BaseModel

__all__ = [
    "GB",
    "GIB",
    "Summary",
    "summary",
    "usable_cpus",
    "read_bandwidth_gbs",
    "gemm_gflops",
    "gemm_gflops_threads",
    "gemm_bytes",
    "blas_info",
    "loadavg",
    "Measurement",
    "plan_buffer",
    "measure_host",
    "DEFAULT_BUDGET_BYTES",
    "F32_NOTE",
    "host_rates",
]

GB = 1e9
GIB = 1 << 30


class Summary(BaseModel):
    """min / median / max of repeated measurements, and the samples themselves."""

    min: float
    median: float
    max: float
    samples: list[float]


def summary(samples: Sequence[float]) -> Summary:
    """min / median / max of `samples`, rounded to 0.1, with the samples to 0.01."""
    return Summary(
        min=round(min(samples), 1),
        median=round(statistics.median(samples), 1),
        max=round(max(samples), 1),
        samples=[round(s, 2) for s in samples],
    )


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask), else os.cpu_count()."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def read_bandwidth_gbs(
    buffer_bytes: int, threads: int, repeats: int, buf: np.ndarray | None = None
) -> list[float]:
    """Sustained read bandwidth in GB/s, one value per repeat.

    bandwidth_gbs = buffer_bytes / t / 1e9, where t is the wall time of one streaming sum over
    the whole buffer split into `threads` contiguous chunks, each summed on its own thread.
    The buffer is written once before timing so that its pages exist and none is a shared
    zero page; one untimed pass warms the caches' state and the thread pool. `buf`, a float64
    buffer of ones, is used instead of a new one when given (one buffer for several counts).
    """
    if buf is None:
        buf = ones_buffer(buffer_bytes)
    n = buf.size
    bounds = np.linspace(0, n, threads + 1).astype(np.int64)
    chunks = [buf[bounds[i] : bounds[i + 1]] for i in range(threads)]
    out: list[float] = []
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for i in range(repeats + 1):
            t0 = time.perf_counter()
            total = sum(pool.map(np.sum, chunks))
            dt = time.perf_counter() - t0
            if total != n:  # keeps the sums from being skipped and checks them
                raise RuntimeError(f"streaming sum returned {total}, expected {n}")
            if i:
                out.append(buf.nbytes / dt / GB)
    del chunks, buf
    return out


def ones_buffer(buffer_bytes: int) -> np.ndarray:
    """A float64 buffer of `buffer_bytes` (rounded down to 8), every page written."""
    buf = np.empty(buffer_bytes // 8, dtype=np.float64)
    buf.fill(1.0)
    return buf


def gemm_bytes(n: int) -> int:
    """Memory a GEMM of size n holds: three float32 n x n matrices, 12 n^2 bytes."""
    return 3 * 4 * n * n


def gemm_gflops(n: int, repeats: int) -> list[float]:
    """float32 n x n matrix product rate in GFLOP/s (2 n^3 / t / 1e9), one value per repeat,
    with the BLAS thread count the caller set; one untimed product first."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    c = np.empty((n, n), dtype=np.float32)
    out: list[float] = []
    for i in range(repeats + 1):
        t0 = time.perf_counter()
        np.matmul(a, b, out=c)
        dt = time.perf_counter() - t0
        if i:
            out.append(2.0 * n**3 / dt / GB)
    return out


_BLAS_THREAD_VARS = (
    "OPENBLAS_NUM_THREADS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
)


def _gemm_in_child(n: int, threads: int, repeats: int) -> list[float]:
    """`gemm_gflops` in a fresh interpreter whose BLAS is limited by environment variables."""
    env = dict(os.environ)
    for var in _BLAS_THREAD_VARS:
        env[var] = str(threads)
    code = (
        "import json, sys; from tokenwalk.probe.measure import gemm_gflops; "
        "print(json.dumps(gemm_gflops(int(sys.argv[1]), int(sys.argv[2]))))"
    )
    res = subprocess.run(
        [sys.executable, "-c", code, str(n), str(repeats)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return [float(x) for x in json.loads(res.stdout)]


def gemm_gflops_threads(n: int, threads: int | None, repeats: int) -> list[float]:
    """`gemm_gflops` with the BLAS limited to `threads` threads (None: the BLAS's own count)."""
    if threads is None:
        return gemm_gflops(n, repeats)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return _gemm_in_child(n, threads, repeats)
    with threadpool_limits(limits=threads, user_api="blas"):
        return gemm_gflops(n, repeats)


def blas_info() -> list[dict[str, Any]]:
    """threadpoolctl.threadpool_info() (the BLAS and OpenMP libraries loaded), or, without
    threadpoolctl, numpy's build configuration of its BLAS."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        try:
            cfg = np.show_config(mode="dicts")
        except TypeError:  # numpy < 1.26 has no mode
            cfg = None
        deps = (cfg or {}).get("Build Dependencies", {}) if isinstance(cfg, dict) else {}
        return [{"source": "numpy.show_config", "blas": deps.get("blas", {})}]
    return threadpool_info()


def loadavg() -> list[float] | None:
    """The 1, 5 and 15 minute load averages (None where the OS has none)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


# -- the probe's measurement ------------------------------------------------------------------

DEFAULT_BUDGET_BYTES = 2 * GIB
DEFAULT_GEMM_N = 2048
DEFAULT_REPEATS = 5
MIN_BUFFER_BYTES = 64 << 20
F32_NOTE = (
    "f32 GEMM through numpy's BLAS; llama.cpp's CPU kernels multiply quantized weights "
    "(int8 dot products, repacked blocks), so its prefill rate differs"
)


class Measurement(BaseModel):
    """Read bandwidth (GB/s) at 1 thread and at every usable thread, and the f32 GEMM rate
    (GFLOP/s) at the same two thread counts; min / median / max over `repeats`."""

    memory_budget_bytes: int  # the most this measurement holds at once
    buffer_bytes: int  # the streamed buffer
    l3_bytes: int | None  # the last-level cache the buffer is compared with
    buffer_note: str  # empty, or why the bandwidth may read high
    n_threads: int  # "all threads": the usable CPUs
    gemm_size: int  # n of the n x n matrices
    n_repeats: int
    read_gbs_1t: Summary
    read_gbs_all: Summary
    gemm_gflops_1t: Summary
    gemm_gflops_all: Summary
    gemm_note: str = F32_NOTE
    blas: str  # the BLAS numpy uses, as threadpoolctl or numpy's config name it
    loadavg_before: list[float] | None
    loadavg_after: list[float] | None
    elapsed_s: float


def plan_buffer(
    budget_bytes: int, gemm_n: int, l3_bytes: int | None, available_bytes: int | None
) -> tuple[int, str]:
    """The read buffer: the budget less the GEMM's matrices, at most half the available memory,
    rounded down to MiB; and a note when it is under 4 x the last-level cache (a cache
    smaller than the buffer still keeps part of it under adaptive replacement, so the
    bandwidth may read high). Raises ValueError when the budget is too small."""
    buffer = budget_bytes - gemm_bytes(gemm_n)
    if available_bytes:
        buffer = min(buffer, available_bytes // 2)
    buffer = buffer // (1 << 20) * (1 << 20)
    if buffer < MIN_BUFFER_BYTES:
        raise ValueError(
            f"a memory budget of {budget_bytes / GIB:.2f} GiB leaves less than "
            f"{MIN_BUFFER_BYTES >> 20} MiB to stream after the GEMM's {gemm_bytes(gemm_n) >> 20} "
            "MiB"
        )
    note = ""
    if l3_bytes and buffer < 4 * l3_bytes:
        note = (
            f"buffer {buffer / GIB:.2f} GiB is only {buffer / l3_bytes:.1f} x the "
            f"{l3_bytes >> 20} MiB last-level cache: bandwidth may read high"
        )
    return buffer, note


def _blas_name() -> str:
    info = blas_info()
    for lib in info:
        if lib.get("user_api") == "blas":
            return f"{lib.get('internal_api')} {lib.get('version')} ({lib.get('architecture')})"
    blas = info[0].get("blas", {}) if info else {}
    return f"{blas.get('name', '?')} {blas.get('version', '')}".strip()


def measure_host(
    *,
    budget_bytes: int = DEFAULT_BUDGET_BYTES,
    gemm_n: int = DEFAULT_GEMM_N,
    repeats: int = DEFAULT_REPEATS,
    l3_bytes: int | None = None,
    available_bytes: int | None = None,
    threads: int | None = None,
) -> Measurement:
    """Measure read bandwidth and the GEMM rate at 1 thread and at `threads` (default: every
    usable CPU) within `budget_bytes` (a few seconds at the defaults)."""
    threads = threads or usable_cpus()
    buffer, note = plan_buffer(budget_bytes, gemm_n, l3_bytes, available_bytes)
    before = loadavg()
    t0 = time.perf_counter()
    buf = ones_buffer(buffer)
    bw1 = read_bandwidth_gbs(buffer, 1, repeats, buf)
    bwn = bw1 if threads == 1 else read_bandwidth_gbs(buffer, threads, repeats, buf)
    del buf  # freed before the GEMM allocates: the budget holds
    g1 = gemm_gflops_threads(gemm_n, 1, repeats)
    # every usable CPU is the BLAS's own default: no limit (and no child process) needed
    all_threads = None if threads == usable_cpus() else threads
    gn = g1 if threads == 1 else gemm_gflops_threads(gemm_n, all_threads, repeats)
    return Measurement(
        memory_budget_bytes=budget_bytes,
        buffer_bytes=buffer,
        l3_bytes=l3_bytes,
        buffer_note=note,
        n_threads=threads,
        gemm_size=gemm_n,
        n_repeats=repeats,
        read_gbs_1t=summary(bw1),
        read_gbs_all=summary(bwn),
        gemm_gflops_1t=summary(g1),
        gemm_gflops_all=summary(gn),
        blas=_blas_name(),
        loadavg_before=before,
        loadavg_after=loadavg(),
        elapsed_s=round(time.perf_counter() - t0, 1),
    )


def host_rates(host: Mapping[str, Any], threads: int) -> tuple[float, float]:
    """(read GB/s, f32 GEMM GFLOP/s) at `threads` from a `scripts/measure_host.py` JSON
    (tests/data/cpu-ground-truth/host.json): the medians, the GEMM at its largest n."""
    bw = host["read_bandwidth_gbs"]["threads"][str(threads)]["median"]
    by_n = host["gemm_gflops"]["n"]
    largest = max(by_n, key=int)
    return float(bw), float(by_n[largest][str(threads)]["median"])
