"""The request timeline: phases add up, and the decode integral matches a step-by-step sum."""

from __future__ import annotations

import pytest

from tokenwalk.costs.trace import decode_seconds, trace_report
from tokenwalk.errors import InputError
from tokenwalk.machine import resolve_machine
from tokenwalk.timing.passes import pass_time


def test_decode_integral_matches_the_sum_of_steps(qwen2, machine):
    total, _ = decode_seconds(qwen2, machine, 1000, 200)
    exact = sum(pass_time(qwen2, machine, 1, 1000 + i).time_s for i in range(200))
    assert total == pytest.approx(exact, rel=1e-3)


def test_phases_are_contiguous_and_add_up(qwen2, machine):
    r = trace_report(qwen2, machine, prompt=3000, output=50, cold=True)
    t = 0.0
    for p in r.phases:
        assert p.start_s == pytest.approx(t)
        t += p.duration_s
    assert r.total_s == pytest.approx(t)
    assert r.n_chunks == 6  # ceil(3000 / 512)
    assert r.load_s == pytest.approx(r.phases[0].duration_s)
    assert r.load_assumed  # an inline machine has no disk speed


def test_restore_needs_a_prefix(qwen2, machine):
    with pytest.raises(InputError, match="--cached"):
        trace_report(qwen2, machine, prompt=100, restore_kv=True)


def test_load_rate_prefers_a_measured_load(machine):
    from tokenwalk.costs.trace import DEFAULT_DISK_READ_GBS, load_rate

    assert load_rate(machine) == (DEFAULT_DISK_READ_GBS, load_rate(machine)[1], True)
    disk = machine.model_copy(update={"disk_read_gbs": 7.0})
    assert load_rate(disk)[:1] == (7.0,) and not load_rate(disk)[2]
    measured = disk.model_copy(update={"load_gbs": 0.4, "load_source": "a stopwatch"})
    gbs, where, assumed = load_rate(measured)
    assert gbs == 0.4 and "a stopwatch" in where and not assumed


def test_a_kv_restore_reads_the_disk_at_the_load_rate(qwen2):
    # the seed's laptop loads its weights at 0.395 GB/s: a saved prefix comes back as slowly
    laptop = resolve_machine("radeon-860m")
    r = trace_report(qwen2, laptop, prompt=2000, cached=1000, output=1, restore_kv=True)
    restore = next(p for p in r.phases if p.name == "restore KV from disk")
    assert restore.duration_s == pytest.approx(restore.data_bytes / (laptop.load_gbs * 1e9))
    assert not r.load_assumed


def test_cold_load_on_the_seed_laptop(qwen2):
    """The seed's laptop loaded 21.7 GB in 55 s: its load rate, not a 3 GB/s SSD."""
    laptop = resolve_machine("radeon-860m")
    r = trace_report(qwen2, laptop, prompt=100, output=1, cold=True)
    assert r.load_s == pytest.approx(qwen2.file_bytes / 21.718e9 * 55, rel=0.01)
    assert not r.load_assumed
