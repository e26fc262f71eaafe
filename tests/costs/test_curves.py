"""The series the charts draw: decode against the context, the cache against the context."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenwalk.costs.budget import budget_report
from tokenwalk.costs.kv import cache_by_context, context_points, kv_bytes, state_bytes
from tokenwalk.machine import resolve_machine
from tokenwalk.model.resolve import load_model
from tokenwalk.timing.passes import decode_by_context, decode_report


@pytest.fixture(scope="module")
def qwen():
    return load_model("qwen3.6-35b-a3b").model


@given(st.integers(0, 1 << 22), st.sampled_from([0, 4096, 40960, 131072, 262144]))
def test_context_points(ctx, max_ctx):
    points = context_points(ctx, max_ctx)
    assert points == sorted(set(points)) and points[0] == 0 and ctx in points
    top = points[-1]
    if ctx:
        want = min(ctx * 4, max(max_ctx, ctx)) if max_ctx else ctx * 4
    else:
        want = max_ctx or 16384
    assert top == max(want, 8)  # at least one token a step


def test_points_are_round_for_powers_of_two():
    assert context_points(0, 262144) == [i * 32768 for i in range(9)]
    assert context_points(8192, 262144)[-1] == 32768


def test_decode_curve_meets_the_answer(qwen):
    laptop = resolve_machine("radeon-860m")
    r = decode_report(qwen, laptop, ctx=8192)
    at = {p.ctx: p for p in r.by_context}
    assert at[8192].tok_s == pytest.approx(r.tok_s)
    assert at[8192].ceiling_tok_s == pytest.approx(r.ceiling_tok_s)
    speeds = [p.tok_s for p in r.by_context]
    assert speeds == sorted(speeds, reverse=True)  # more context, more KV read, slower
    assert decode_by_context(qwen, laptop, [0])[0].tok_s == pytest.approx(
        decode_report(qwen, laptop, ctx=0).tok_s
    )


def test_budget_curve_meets_the_answer(qwen):
    r = budget_report(
        [qwen], machine="radeon-860m", capacity_bytes=int(64 * 2**30), system_bytes=int(8e9)
    )
    at = {x.ctx: x for x in r.by_context}
    assert at[r.ctx].cache_bytes == r.cache_bytes
    assert r.by_context[-1].ctx == r.default_ctx
    assert r.by_context[-1].cache_bytes == pytest.approx(r.default_cache_bytes, abs=1)
    assert r.cache_room_bytes == r.capacity_bytes - r.system_bytes - r.weights_bytes - (
        r.buffers_bytes
    )


def test_cache_by_context_adds_the_models(qwen):
    rows = cache_by_context([qwen, qwen], [0, 4096])
    assert rows[0].cache_bytes == 2 * state_bytes(qwen)
    assert rows[1].kv_bytes == round(2 * kv_bytes(qwen, 4096))
