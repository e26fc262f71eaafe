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
    assert r.weight_read_bytes_per_token == pytest.approx(r.tensor_bytes, rel=1e-9)
    assert r.layer_counts.sliding == 15 and r.layer_counts.full == 3


def test_qwen2_facts(qwen2_path):
    r = size_report(load_model(str(qwen2_path)).model)
    assert r.n_tensors == 339
    assert r.params == 7_615_616_512
    assert r.tensor_bytes == 4_677_120_000
    roles = {s.role: s for s in r.by_role}
    emb = roles["embedding"]
    # a token reads one row of the untied embedding table
    assert emb.weight_read_bytes_per_token == round(emb.tensor_bytes / 152_064)
    assert r.flops_per_token == pytest.approx(2 * r.active_params)
    assert r.arithmetic_intensity == pytest.approx(
        r.flops_per_token / r.weight_read_bytes_per_token, rel=1e-6
    )


def test_expert_wake_up():
    assert expert_read_fraction(256, 8, 1) == pytest.approx(8 / 256)
    # seed: 5 tokens wake about 38 of 256 experts instead of 8
    assert experts_woken(256, 8, 5) == pytest.approx(37.6, abs=0.5)
    # a 512-token chunk wakes nearly all of them
    assert experts_woken(256, 8, 512) > 255
    assert expert_read_fraction(0, 0, 5) == 1.0


def test_header_estimate_is_close_to_real_headers():
    from tokenwalk.model.resolve import estimate_header_bytes

    # real Q4_K_M headers: gemma-3-270m 6,525,120 B (262,144 tokens, 236 tensors),
    # DeepSeek-R1-Distill-Qwen-7B 5,953,248 B (152,064 tokens with merges, 339 tensors)
    assert estimate_header_bytes(262_144, 236) == pytest.approx(6_525_120, rel=0.5)
    assert estimate_header_bytes(152_064, 339) == pytest.approx(5_953_248, rel=0.1)
