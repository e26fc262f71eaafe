"""Speculative decoding formulas with a stand-in timing model (the real one is tested elsewhere)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenwalk.costs.spec import break_even_alpha, mtp_draft_model, spec_report, tokens_per_round
from tokenwalk.errors import InputError
from tokenwalk.model.resolve import load_model


@pytest.fixture(scope="module")
def gemma3(gemma3_path):
    return load_model(str(gemma3_path)).model


def test_seed_tokens_per_round():
    # alpha 0.7, gamma 4: 2.77 tokens per round (the seed rounds to 2.8)
    assert tokens_per_round(0.7, 4) == pytest.approx(2.7731, abs=1e-4)
    assert tokens_per_round(1.0, 4) == 5


@given(st.floats(0.01, 0.99), st.integers(1, 16))
def test_tokens_per_round_is_between_one_and_gamma_plus_one(alpha, gamma):
    e = tokens_per_round(alpha, gamma)
    assert 1.0 <= e <= gamma + 1


def test_dense_target_with_cheap_draft_pays(qwen2, gemma3):
    # a stand-in roofline: a dense verify pass costs one step whatever n is
    def t(model, n, ctx):
        return 1.0 if model is qwen2 else 0.05

    r = spec_report(qwen2, gemma3, t, machine="m", alpha=0.7, gamma=4)
    assert r.speedup == pytest.approx(2.7731 / (4 * 0.05 + 1.0), rel=1e-6)
    assert r.pays and r.break_even_alpha is not None and r.break_even_alpha < 0.7
    assert any("vocabulary" in w for w in r.warnings)  # 152,064 vs 262,144 tokens
    assert len(r.table) == 40 and sum(c.best for c in r.table) == 5


def test_expensive_verify_loses():
    assert break_even_alpha(4, t_draft=0.05, t_verify=6.0, t_step=1.0) is None


def test_bad_alpha_and_gamma(qwen2):
    def t(model, n, ctx):
        return 1.0

    for kw in ({"alpha": 1.0}, {"alpha": 0.0}, {"alpha": -0.2}, {"gamma": 0}):
        with pytest.raises(InputError):
            spec_report(qwen2, qwen2, t, machine="m", **kw)


def test_mtp_needs_an_mtp_block(qwen2):
    with pytest.raises(InputError, match="no multi-token-prediction block"):
        mtp_draft_model(qwen2)


def test_alpha_for_speedup_inverts_the_speedup():
    from tokenwalk.costs.spec import _speedup, alpha_for_speedup

    for alpha in (0.2, 0.55, 0.9):
        s = _speedup(alpha, 2, t_draft=0.017, t_verify=0.11, t_step=0.08)
        assert alpha_for_speedup(s, 2, 0.017, 0.11, 0.08) == pytest.approx(alpha, abs=1e-6)
    assert alpha_for_speedup(50.0, 2, 0.017, 0.11, 0.08) is None  # out of reach


def test_an_mtp_block_pays_its_models_fixed_cost_per_layer():
    # the MTP block is one of its model's layers: a llama.cpp graph of as many nodes per layer
    # as its model's (not a llama layer's 31)
    from tokenwalk.timing.passes import pass_work

    target = load_model("qwen3.6-35b-a3b", "Q4_K_M").model
    draft = mtp_draft_model(target)
    assert target.layer_nodes and draft.layer_nodes == target.layer_nodes
    work = pass_work(draft, 1, 0)
    assert work.overhead_layers == pytest.approx(
        target.spec.n_nextn * target.layer_nodes / (998 / 32)
    )
