"""Sizes from real headers: the known facts of the original files."""

from __future__ import annotations

import pytest

from tokenwalk.costs.size import size_report
from tokenwalk.costs.weights import expert_read_fraction, experts_woken
from tokenwalk.model.resolve import load_model


def test_gemma3_facts(gemma3_path):
    r = size_report(load_model(str(gemma3_path)).model)
    assert r.n_tensors == 236
    assert r.params == 268_098_176
    assert r.tensor_bytes == 246_587_904
    assert r.bits_per_weight_data == pytest.approx(7.358, abs=0.001)
    assert r.file_bytes_exact
    assert r.data_present is False
    # tied embeddings: the output head is the embedding table, read whole each token
    assert r.bytes_per_token == pytest.approx(r.tensor_bytes, rel=1e-9)
    assert r.layers.sliding == 15 and r.layers.full == 3


def test_qwen2_facts(qwen2_path):
    r = size_report(load_model(str(qwen2_path)).model)
    assert r.n_tensors == 339
    assert r.params == 7_615_616_512
    assert r.tensor_bytes == 4_677_120_000
    roles = {s.role: s for s in r.by_role}
    emb = roles["embedding"]
    # a token reads one row of the untied embedding table
    assert emb.bytes_per_token == pytest.approx(emb.bytes / 152_064)
    assert r.flops_per_token == pytest.approx(2 * r.active_params)
    assert r.arithmetic_intensity == pytest.approx(r.flops_per_token / r.bytes_per_token)


def test_expert_wake_up():
    assert expert_read_fraction(256, 8, 1) == pytest.approx(8 / 256)
    # seed: 5 tokens wake about 38 of 256 experts instead of 8
    assert experts_woken(256, 8, 5) == pytest.approx(37.6, abs=0.5)
    # a 512-token chunk wakes nearly all of them
    assert experts_woken(256, 8, 512) > 255
    assert expert_read_fraction(0, 0, 5) == 1.0
