"""A recorded measurement for tests that must not time anything: `probe` through the CLI
(tests/probe/test_probe_cli.py), its --explain (tests/render/test_explain.py) and its view at
fixed widths (tests/render/widths.py)."""

from __future__ import annotations

from typing import Any

from tokenwalk.probe.measure import Measurement, summary

GIB = 1 << 30


def canned_measurement(**update: Any) -> Measurement:
    """A 2-thread host: ~19 GB/s read and ~190 GFLOP/s f32 GEMM at every thread; `update`
    replaces fields (e.g. `read_gbs_all=summary([...])`)."""
    m = Measurement(
        memory_budget_bytes=2 * GIB,
        buffer_bytes=2 * GIB - 48 * (1 << 20),
        l3_bytes=None,
        buffer_note="",
        n_threads=2,
        gemm_size=2048,
        n_repeats=3,
        read_gbs_1t=summary([11.0, 11.5, 12.0]),
        read_gbs_all=summary([18.0, 19.0, 20.0]),
        gemm_gflops_1t=summary([90.0, 95.0, 100.0]),
        gemm_gflops_all=summary([180.0, 190.0, 200.0]),
        blas="openblas 0.3.27 (SkylakeX)",
        loadavg_before=[0.1, 0.1, 0.1],
        loadavg_after=[0.2, 0.1, 0.1],
        elapsed_s=3.2,
    )
    return m.model_copy(update=update) if update else m
