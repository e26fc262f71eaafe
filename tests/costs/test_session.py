"""A conversation's calls on one timeline: the prefix cache, gaps and keep-alive."""

from __future__ import annotations

import pytest

from tokenwalk.costs.trace import session_report, trace_report
from tokenwalk.errors import InputError


def test_each_call_is_the_trace_of_its_request(qwen2, machine):
    calls = [(7600, 0, 300), (7950, 7900, 300)]
    r = session_report(qwen2, machine, calls, gap_s=30)
    one = trace_report(qwen2, machine, prompt=7600, output=300)
    two = trace_report(qwen2, machine, prompt=7950, output=300, cached=7900)
    assert r.calls[0].total_s == pytest.approx(one.total_s)
    assert r.calls[1].total_s == pytest.approx(two.total_s)
    assert r.calls[1].start_s == pytest.approx(one.total_s + 30)
    assert r.wall_s == pytest.approx(one.total_s + 30 + two.total_s)
    assert r.computed_tokens == 7600 + 50 and r.cached_tokens == 7900


def test_an_appended_question_costs_little_a_recompute_costs_all(qwen2, machine):
    r = session_report(qwen2, machine, [(7600, 0, 300), (7800, 7700, 300), (7600, 3, 300)])
    first, appended, changed = r.calls
    assert appended.prefill_s < first.prefill_s / 10
    assert changed.prefill_s == pytest.approx(first.prefill_s, rel=0.05)


def test_keep_alive_decides_a_cold_load(qwen2, machine):
    warm = session_report(
        qwen2, machine, [(1000, 0, 10), (1100, 1010, 10)], gap_s=200, keep_alive_s=300
    )
    cold = session_report(
        qwen2, machine, [(1000, 0, 10), (1100, 1010, 10)], gap_s=400, keep_alive_s=300
    )
    assert not warm.calls[1].cold and warm.calls[1].cached_tokens == 1010
    assert cold.calls[1].cold and cold.calls[1].cached_tokens == 0 and cold.calls[1].load_s > 0
    assert cold.n_cold_loads == 1
    stays = session_report(qwen2, machine, [(1000, 0, 10), (1100, 1010, 10)], gap_s=1e6)
    assert not stays.calls[1].cold  # no keep-alive: the model stays loaded


def test_first_call_cold(qwen2, machine):
    r = session_report(qwen2, machine, [(100, 0, 10), (120, 105, 10)], cold=True)
    assert r.calls[0].cold and not r.calls[1].cold and r.n_cold_loads == 1


def test_measured_tokenize_time_is_used(qwen2, machine):
    r = trace_report(qwen2, machine, prompt=500, tokenize_s=0.25, tokenize_detail="500 tokens")
    phase = next(p for p in r.phases if p.name == "template + tokenize")
    assert phase.duration_s == 0.25 and phase.detail == "500 tokens"


def test_bad_sessions(qwen2, machine):
    with pytest.raises(InputError):
        session_report(qwen2, machine, [])
    with pytest.raises(InputError, match="--gap"):
        session_report(qwen2, machine, [(10, 0, 1)], gap_s=-1)


def test_a_split_model_runs_each_call_on_one_placement():
    """On a card and its host the model is placed once for the longest call, and each call is
    the split trace of its request on that placement (here --cpu-moe, which any context keeps)."""
    from tokenwalk.costs.compare import system_session, system_trace
    from tokenwalk.model.resolve import load_model
    from tokenwalk.system import Offload, SystemSpec, resolve_system

    model = load_model("qwen3.6-35b-a3b", "Q4_K_M").model
    sysm = resolve_system(SystemSpec(machine="rtx-5080"))
    off = Offload(cpu_moe=True)
    calls = [(6000, 0, 200), (6400, 6200, 300)]
    r, setup = system_session(model, sysm, off, calls, gap_s=10)
    assert setup is not None and not setup.one_card and setup.placement.ctx >= 6700
    for call, (p, c, o) in zip(r.calls, calls, strict=True):
        single, _ = system_trace(model, sysm, off, prompt=p, output=o, cached=c)
        assert call.ttft_s == pytest.approx(single.ttft_s)
        assert call.total_s == pytest.approx(single.total_s)
    whole = session_report(model, sysm.first, calls, gap_s=10)
    assert r.busy_s > whole.busy_s  # experts in RAM are slower than the card alone
    assert r.machine == sysm.slug
