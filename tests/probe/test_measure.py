"""The measurements: real but tiny runs, and the plan that keeps them within the budget."""

from __future__ import annotations

import pytest

from tokenwalk.probe import measure as m

MIB = 1 << 20


def test_summary_is_min_median_max():
    s = m.summary([3.0, 1.0, 2.0, 10.0])
    assert (s.min, s.median, s.max) == (1.0, 2.5, 10.0) and len(s.samples) == 4


def test_tiny_bandwidth_and_gemm_runs():
    bw = m.read_bandwidth_gbs(8 * MIB, 2, 2)
    assert len(bw) == 2 and all(x > 0 for x in bw)
    g = m.gemm_gflops(64, 2)
    assert len(g) == 2 and all(x > 0 for x in g)


def test_gemm_without_threadpoolctl_runs_in_a_child(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "threadpoolctl", None)  # import fails
    assert len(m.gemm_gflops_threads(32, 1, 1)) == 1


def test_plan_stays_within_the_budget():
    budget = 512 * MIB
    buffer, note = m.plan_buffer(budget, 1024, l3_bytes=32 * MIB, available_bytes=None)
    assert buffer + m.gemm_bytes(1024) <= budget and note == ""
    buffer, note = m.plan_buffer(budget, 1024, l3_bytes=480 * MIB, available_bytes=None)
    assert "last-level cache" in note
    buffer, _ = m.plan_buffer(budget, 1024, None, available_bytes=300 * MIB)
    assert buffer == 150 * MIB  # at most half of what is available
    with pytest.raises(ValueError, match="budget"):
        m.plan_buffer(64 * MIB, 2048, None, None)


def test_measure_host_small():
    r = m.measure_host(budget_bytes=128 * MIB, gemm_n=64, repeats=2, threads=1)
    assert r.read_gbs_1t.min <= r.read_gbs_1t.median <= r.read_gbs_1t.max
    assert r.buffer_bytes + m.gemm_bytes(64) <= r.memory_budget_bytes
    assert "quantized" in r.gemm_note
