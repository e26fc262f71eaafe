"""GLM-4.5 (llama.cpp's ``glm4moe``): config -> tensors -> sizes and KV, and the GGUF path.

GLM_45_AIR carries the keys of GLM-4.5-Air's config.json (values from
/work/shared/data/models-facts.md and transformers' Glm4MoeConfig, whose defaults are this shape).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tokenwalk.costs.kv import kv_report
from tokenwalk.costs.size import size_report
from tokenwalk.model.hf import spec_from_config
from tokenwalk.model.layers import Attention, Ffn
from tokenwalk.model.model import Role
from tokenwalk.model.resolve import load_model, model_from_config
from tokenwalk.model.synth import synthesize_tensors

from .test_gguf_vs_config import write_header

GLM_45_AIR = {
    "architectures": ["Glm4MoeForCausalLM"],
    "model_type": "glm4_moe",
    "attention_bias": True,
    "first_k_dense_replace": 1,
    "head_dim": 128,
    "hidden_size": 4096,
    "intermediate_size": 10944,
    "max_position_embeddings": 131072,
    "moe_intermediate_size": 1408,
    "n_group": 1,
    "n_routed_experts": 128,
    "n_shared_experts": 1,
    "norm_topk_prob": True,
    "num_attention_heads": 96,
    "num_experts_per_tok": 8,
    "num_hidden_layers": 46,
    "num_key_value_heads": 8,
    "num_nextn_predict_layers": 1,
    "partial_rotary_factor": 0.5,
    "routed_scaling_factor": 1.0,
    "tie_word_embeddings": False,
    "topk_group": 1,
    "use_qk_norm": False,
    "vocab_size": 151552,
}


def test_spec_follows_llama_cpp() -> None:
    spec = spec_from_config(GLM_45_AIR)
    assert spec.arch == "glm4moe"
    assert (spec.n_layer_all, spec.n_layer, spec.n_nextn) == (47, 46, 1)  # block_count 47
    assert spec.n_ff[:2] == (10944, 0) and spec.n_layer_dense_lead == 1
    assert (spec.n_expert, spec.n_expert_used, spec.n_ff_exp) == (128, 8, 1408)
    assert (spec.n_expert_shared, spec.n_ff_shexp) == (1, 1408)
    assert (spec.head_k, spec.n_head[0], spec.n_head_kv[0]) == (128, 96, 8)
    assert spec.expert_probs_bias and spec.qkv_bias and not spec.qk_norm


def test_tensor_names_and_shapes() -> None:
    rows = dict(synthesize_tensors(spec_from_config(GLM_45_AIR)))
    assert rows["blk.0.attn_q.weight"] == (4096, 12288)  # head_dim x heads, not hidden
    assert rows["blk.0.attn_q.bias"] == (12288,)
    assert rows["blk.0.attn_k.bias"] == (1024,)
    assert "blk.0.attn_output.bias" not in rows
    assert rows["blk.0.post_attention_norm.weight"] == (4096,)
    assert rows["blk.0.ffn_gate.weight"] == (4096, 10944)
    assert "blk.0.ffn_gate_inp.weight" not in rows
    assert rows["blk.1.ffn_gate_exps.weight"] == (4096, 1408, 128)
    assert rows["blk.1.ffn_down_exps.weight"] == (1408, 4096, 128)
    assert rows["blk.1.exp_probs_b.bias"] == (128,)
    assert rows["blk.1.ffn_up_shexp.weight"] == (4096, 1408)
    assert rows["blk.46.nextn.eh_proj.weight"] == (8192, 4096)
    assert rows["blk.46.nextn.shared_head_head.weight"] == (4096, 151552)
    assert rows["blk.46.ffn_gate_exps.weight"] == (4096, 1408, 128)
    assert "blk.0.attn_q_norm.weight" not in rows
    qk = dict(synthesize_tensors(spec_from_config({**GLM_45_AIR, "use_qk_norm": True})))
    assert qk["blk.0.attn_q_norm.weight"] == (128,)


def test_params_and_active_against_published_numbers() -> None:
    """106B total / 12B active (README), counted without the MTP block and the output head."""
    model = model_from_config(GLM_45_AIR, "glm-4.5-air", "Q4_K_M")
    report = size_report(model)
    mtp = sum(t.n_elements for t in model.tensors if t.role is Role.MTP)
    assert report.params - mtp == pytest.approx(106e9, rel=0.01)
    assert report.params == 110_468_824_832  # the GGUF holds the MTP block too
    head = next(t.n_elements for t in model.tensors if t.role is Role.OUTPUT)
    assert report.active_params - head == pytest.approx(12e9, rel=0.02)
    layers = model.layers
    assert layers[0].ffn is Ffn.DENSE and layers[1].ffn is Ffn.MOE and layers[46].mtp
    assert all(layer.attention is Attention.FULL for layer in layers)


def test_q4_k_m_types() -> None:
    model = model_from_config(GLM_45_AIR, "glm-4.5-air", "Q4_K_M")
    types = {t.name: t.type_name for t in model.tensors}
    assert types["blk.1.ffn_gate_exps.weight"] == "Q4_K"
    assert types["blk.6.ffn_down_exps.weight"] == "Q5_0"  # 1408-wide rows: Q4_K falls back
    assert types["blk.1.ffn_down_exps.weight"] == "Q8_0"  # Q6_K (more bits) falls back
    assert types["blk.1.exp_probs_b.bias"] == "F32"
    assert types["output.weight"] == "Q6_K"


def test_kv_per_token() -> None:
    """46 layers x 8 KV heads x 128 x (K + V) x 2 bytes; the MTP block has no cache."""
    model = model_from_config(GLM_45_AIR, "glm-4.5-air")
    assert kv_report(model, 4096).kv_bytes_per_token == 46 * 8 * 128 * 2 * 2 == 188_416


def test_catalogue_entry_is_usable() -> None:
    catalogue = load_model("glm-4.5-air").model
    config = model_from_config(GLM_45_AIR, "glm-4.5-air")
    assert catalogue.params == config.params
    assert catalogue.file_bytes == config.file_bytes


def test_header_only_gguf_reads_back_as_the_config(tmp_path: Path) -> None:
    from_config = model_from_config(GLM_45_AIR, "glm-4.5-air", "Q4_K_M")
    path = tmp_path / "glm-4.5-air.gguf"
    write_header(from_config, path)
    from_gguf = load_model(str(path)).model
    assert from_gguf.spec.arch == "glm4moe"
    assert from_gguf.spec.n_nextn == 1 and from_gguf.spec.n_layer_dense_lead == 1
    assert from_gguf.spec.n_ff_shexp == 1408 and from_gguf.spec.expert_probs_bias
    assert [x.attention for x in from_gguf.layers] == [x.attention for x in from_config.layers]
    assert [x.ffn for x in from_gguf.layers] == [x.ffn for x in from_config.layers]
    assert [x.mtp for x in from_gguf.layers] == [x.mtp for x in from_config.layers]
    a, b = size_report(from_config), size_report(from_gguf)
    assert (a.params, a.tensor_bytes) == (b.params, b.tensor_bytes)
    assert a.active_params == pytest.approx(b.active_params)
    assert a.weight_read_bytes_per_token == pytest.approx(b.weight_read_bytes_per_token, abs=1)
    for ctx in (4096, 131072):
        assert kv_report(from_config, ctx).kv_bytes == kv_report(from_gguf, ctx).kv_bytes
