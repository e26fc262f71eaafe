"""synthesize_tensors: the converter's tensor table rebuilt from hyperparameters.

The two header fixtures are cut from real Q4_K_M files; their tensor tables are the reference.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tokenwalk.errors import UnknownArchitectureError
from tokenwalk.gguf.reader import Header
from tokenwalk.model.hf import spec_from_config
from tokenwalk.model.model import Model
from tokenwalk.model.spec import ArchSpec
from tokenwalk.model.synth import SYNTH_ARCHITECTURES, synthesize_tensors
from tokenwalk.sources.base import read_local


def load(path: Path) -> Header:
    return read_local(path)[0]


def spec_of(header: Header) -> ArchSpec:
    """The ArchSpec of a real file, as a loaded model sees it (tied embeddings included)."""
    return Model.from_headers("fixture", [header]).spec


@pytest.mark.parametrize("fixture", ["gemma3_path", "qwen2_path"])
def test_matches_real_tensor_table(fixture: str, request: pytest.FixtureRequest) -> None:
    header = load(request.getfixturevalue(fixture))
    real = {t.name: t.shape for t in header.tensors}
    synth = dict(synthesize_tensors(spec_of(header)))
    assert synth == real


def test_gemma3_counts(gemma3_path: Path) -> None:
    rows = synthesize_tensors(spec_of(load(gemma3_path)))
    assert len(rows) == 236
    assert sum(math.prod(s) for _, s in rows) == 268_098_176
    assert ("token_embd.weight", (640, 262144)) in rows
    assert all(name != "output.weight" for name, _ in rows)


def test_qwen2_has_qkv_biases(qwen2_path: Path) -> None:
    rows = dict(synthesize_tensors(spec_of(load(qwen2_path))))
    assert rows["blk.0.attn_k.bias"] == (512,)
    assert rows["output.weight"] == (3584, 152064)
    assert len(rows) == 339


QWEN36_35B = {
    "model_type": "qwen3_5_moe",
    "tie_word_embeddings": False,
    "text_config": {
        "num_hidden_layers": 40, "hidden_size": 2048, "num_attention_heads": 16,
        "num_key_value_heads": 2, "head_dim": 256, "vocab_size": 248320, "num_experts": 256,
        "num_experts_per_tok": 8, "moe_intermediate_size": 512,
        "shared_expert_intermediate_size": 512, "linear_num_key_heads": 16,
        "linear_num_value_heads": 32, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
        "linear_conv_kernel_dim": 4, "full_attention_interval": 4, "mtp_num_hidden_layers": 1,
    },
}  # fmt: skip


def test_qwen36_moe_table() -> None:
    rows = dict(synthesize_tensors(spec_from_config(QWEN36_35B)))
    assert len(rows) == 753  # the seed's count for the real GGUF
    assert rows["blk.0.attn_qkv.weight"] == (2048, 8192)  # q, k: 16 x 128; v: 32 x 128
    assert rows["blk.0.attn_gate.weight"] == (2048, 4096)
    assert rows["blk.0.ssm_conv1d.weight"] == (4, 8192)
    assert rows["blk.0.ssm_a"] == (32,)
    assert rows["blk.3.attn_q.weight"] == (2048, 8192)  # 16 heads x 256, doubled for the gate
    assert rows["blk.3.attn_k.weight"] == (2048, 512)
    assert rows["blk.3.ffn_up_exps.weight"] == (2048, 512, 256)
    assert rows["blk.3.ffn_gate_inp_shexp.weight"] == (2048,)
    assert rows["blk.40.nextn.eh_proj.weight"] == (4096, 2048)
    assert rows["blk.40.attn_v.weight"] == (2048, 512)
    assert "blk.39.nextn.eh_proj.weight" not in rows
    assert "blk.3.attn_qkv.weight" not in rows


def test_deepseek_mla_tensors() -> None:
    cfg = {
        "model_type": "deepseek_v3", "num_hidden_layers": 4, "hidden_size": 7168,
        "intermediate_size": 18432, "num_attention_heads": 128, "vocab_size": 129280,
        "n_routed_experts": 256, "num_experts_per_tok": 8, "n_shared_experts": 1,
        "moe_intermediate_size": 2048, "first_k_dense_replace": 3, "kv_lora_rank": 512,
        "q_lora_rank": 1536, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128,
        "topk_method": "noaux_tc",
    }  # fmt: skip
    rows = dict(synthesize_tensors(spec_from_config(cfg)))
    assert rows["blk.0.attn_q_a.weight"] == (7168, 1536)
    assert rows["blk.0.attn_q_b.weight"] == (1536, 128 * 192)
    assert rows["blk.0.attn_kv_a_mqa.weight"] == (7168, 576)
    assert rows["blk.0.attn_k_b.weight"] == (128, 512, 128)
    assert rows["blk.0.attn_v_b.weight"] == (512, 128, 128)
    assert rows["blk.0.ffn_down.weight"] == (18432, 7168)
    assert rows["blk.3.ffn_down_exps.weight"] == (2048, 7168, 256)
    assert rows["blk.3.ffn_up_shexp.weight"] == (7168, 2048)
    assert rows["blk.3.exp_probs_b.bias"] == (256,)
    assert "blk.0.attn_kv_b.weight" not in rows and "blk.2.ffn_gate_inp.weight" not in rows


def test_gpt_oss_biases_and_sinks() -> None:
    cfg = {
        "model_type": "gpt_oss", "num_hidden_layers": 2, "hidden_size": 2880,
        "intermediate_size": 2880, "num_attention_heads": 64, "num_key_value_heads": 8,
        "head_dim": 64, "vocab_size": 201088, "num_local_experts": 32, "num_experts_per_tok": 4,
    }  # fmt: skip
    rows = dict(synthesize_tensors(spec_from_config(cfg)))
    assert rows["blk.1.attn_sinks.weight"] == (64,)
    assert rows["blk.1.attn_q.bias"] == (4096,)
    assert rows["blk.1.ffn_gate_inp.bias"] == (32,)
    assert rows["blk.1.ffn_down_exps.bias"] == (2880, 32)
    assert len(rows) == 3 + 2 * 19


def test_lfm2_shortconv_and_final_norm() -> None:
    cfg = {
        "model_type": "lfm2", "num_hidden_layers": 3, "hidden_size": 256, "block_ff_dim": 768,
        "block_auto_adjust_ff_dim": False, "num_attention_heads": 4, "num_key_value_heads": 2,
        "vocab_size": 1000, "conv_L_cache": 3, "layer_types": ["conv", "full_attention", "conv"],
    }  # fmt: skip
    rows = dict(synthesize_tensors(spec_from_config(cfg)))
    assert rows["blk.0.shortconv.conv.weight"] == (3, 256)
    assert rows["blk.0.shortconv.in_proj.weight"] == (256, 768)
    assert rows["blk.1.attn_k.weight"] == (256, 128)
    assert rows["token_embd_norm.weight"] == (256,)
    assert "output.weight" not in rows and "output_norm.weight" not in rows


def test_every_synth_arch_is_supported() -> None:
    from tokenwalk.model.spec import SUPPORTED_ARCHITECTURES

    assert set(SYNTH_ARCHITECTURES) <= set(SUPPORTED_ARCHITECTURES)


def test_unbuildable_arch_needs_a_header() -> None:
    spec = ArchSpec(
        arch="bert", n_layer_all=1, n_embd=8, n_vocab=8, n_ctx_train=0, n_head=(1,),
        n_head_kv=(1,), head_k=8, head_v=8, n_ff=(8,),
    )  # fmt: skip
    with pytest.raises(UnknownArchitectureError, match="bert.*GGUF header"):
        synthesize_tensors(spec)


def test_a_model_built_again_from_the_same_config_is_the_same_model():
    """model_from_config keeps the models it built last: the same config, name, preset and
    source give the same (frozen) model; any change in them builds another."""
    from tokenwalk.catalog import find_model
    from tokenwalk.model.resolve import model_from_config

    cfg = dict(find_model("qwen3-0.6b").config)
    first = model_from_config(cfg, "qwen3-0.6b", "q8_0")
    assert model_from_config(dict(cfg), "qwen3-0.6b", "Q8_0") is first
    assert model_from_config(cfg, "qwen3-0.6b", "Q4_K_M").quant == "Q4_K_M"
    wider = model_from_config(cfg | {"num_hidden_layers": 30}, "qwen3-0.6b", "Q8_0")
    assert wider is not first and len(wider.layers) == 30 != len(first.layers)
    assert model_from_config(cfg, "other", "Q8_0").name == "other"
    # a config that is not plain data is built, not remembered
    odd = model_from_config(cfg | {"note": object()}, "qwen3-0.6b", "Q8_0")
    assert odd is not first and odd.file_bytes == first.file_bytes
