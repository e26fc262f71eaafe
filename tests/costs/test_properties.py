"""Properties the cost formulas must keep for every valid input (hypothesis)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenwalk.costs.kv import kv_bytes
from tokenwalk.costs.weights import weight_bytes_read
from tokenwalk.machine import resolve_machine
from tokenwalk.model.resolve import load_model
from tokenwalk.timing.passes import decode_report, prefill_report

MODELS = [
    "qwen3.6-35b-a3b",
    "gemma-3-4b",
    "deepseek-v3",
    "gpt-oss-20b",
    "llama-3.1-8b",
    "lfm2-1.2b",
]


@pytest.fixture(scope="module")
def models():
    return {slug: load_model(slug).model for slug in MODELS}


model_st = st.sampled_from(MODELS)
ctx_st = st.integers(1, 200_000)


@settings(max_examples=60, deadline=None)
@given(model_st, ctx_st, ctx_st, st.sampled_from(["f16", "q8_0", "q4_0"]), st.integers(1, 4))
def test_more_context_never_means_less_kv(models, slug, a, b, kv_type, parallel):
    m = models[slug]
    lo, hi = sorted((a, b))
    assert kv_bytes(m, lo, kv_type, parallel) <= kv_bytes(m, hi, kv_type, parallel)


@settings(max_examples=40, deadline=None)
@given(model_st, st.floats(1, 10_000), st.floats(1, 10_000), st.integers(0, 100_000))
def test_more_bandwidth_never_means_slower_decode(models, slug, bw1, bw2, ctx):
    m = models[slug]
    lo, hi = sorted((bw1, bw2))
    slow = decode_report(m, resolve_machine(None, bandwidth=lo, tflops=50), ctx=ctx)
    fast = decode_report(m, resolve_machine(None, bandwidth=hi, tflops=50), ctx=ctx)
    assert fast.tok_s >= slow.tok_s
    for r in (slow, fast):
        assert math.isfinite(r.tok_s) and r.tok_s > 0 and r.ms_per_token > 0


@settings(max_examples=30, deadline=None)
@given(model_st, st.integers(1, 20_000), st.integers(1, 20_000))
def test_prefill_time_grows_with_the_prompt(models, slug, p1, p2):
    m = models[slug]
    machine = resolve_machine(None, bandwidth=500, tflops=100)
    lo, hi = sorted((p1, p2))
    a = prefill_report(m, machine, prompt=lo)
    b = prefill_report(m, machine, prompt=hi)
    assert b.ttft_s >= a.ttft_s
    assert math.isfinite(b.ttft_s) and b.ttft_s > 0


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(["qwen3.6-35b-a3b", "deepseek-v3", "gpt-oss-20b", "mixtral-8x7b"]),
    st.integers(1, 4096),
)
def test_moe_never_reads_more_than_its_dense_equivalent(models_all, slug, n):
    m = models_all[slug]
    # the dense equivalent runs every expert for every token
    dense = replace(m.spec, n_expert_used=m.spec.n_expert)
    dense_model = replace(m, spec=dense)
    assert weight_bytes_read(m, n) <= weight_bytes_read(dense_model, n) + 1e-6


@pytest.fixture(scope="module")
def models_all():
    return {
        s: load_model(s).model
        for s in ("qwen3.6-35b-a3b", "deepseek-v3", "gpt-oss-20b", "mixtral-8x7b")
    }
