"""spec_from_config: Hugging Face config.json dicts -> ArchSpec, per model_type.

The configs below carry the keys of the published config.json files (values from
/work/shared/data/models-facts.md); keys that do not change the tensor table are left out.
"""

from __future__ import annotations

import math

import pytest

from tokenwalk.errors import SpecError, UnknownArchitectureError
from tokenwalk.model.hf import HF_MODEL_TYPES, spec_from_config
from tokenwalk.model.synth import synthesize_tensors

CONFIGS: dict[str, dict] = {
    "llama-3.1-8b": {
        "model_type": "llama",
        "num_hidden_layers": 32,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "max_position_embeddings": 131072,
        "rope_scaling": {"rope_type": "llama3", "factor": 8.0},
        "tie_word_embeddings": False,
    },
    "mistral-7b-v0.1": {
        "model_type": "mistral",
        "num_hidden_layers": 32,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 32000,
        "max_position_embeddings": 32768,
        "sliding_window": 4096,
    },
    "mixtral-8x7b": {
        "model_type": "mixtral",
        "num_hidden_layers": 32,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 32000,
        "num_local_experts": 8,
        "num_experts_per_tok": 2,
    },
    "qwen2.5-7b": {
        "model_type": "qwen2",
        "num_hidden_layers": 28,
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "vocab_size": 152064,
        "tie_word_embeddings": False,
    },
    "qwen3-8b": {
        "model_type": "qwen3",
        "num_hidden_layers": 36,
        "hidden_size": 4096,
        "intermediate_size": 12288,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "vocab_size": 151936,
        "tie_word_embeddings": False,
    },
    "qwen3-30b-a3b": {
        "model_type": "qwen3_moe",
        "num_hidden_layers": 48,
        "hidden_size": 2048,
        "intermediate_size": 6144,
        "num_attention_heads": 32,
        "num_key_value_heads": 4,
        "head_dim": 128,
        "vocab_size": 151936,
        "num_experts": 128,
        "num_experts_per_tok": 8,
        "moe_intermediate_size": 768,
    },
    "qwen3-next-80b-a3b": {
        "model_type": "qwen3_next",
        "num_hidden_layers": 48,
        "hidden_size": 2048,
        "intermediate_size": 5120,
        "num_attention_heads": 16,
        "num_key_value_heads": 2,
        "head_dim": 256,
        "vocab_size": 151936,
        "num_experts": 512,
        "num_experts_per_tok": 10,
        "moe_intermediate_size": 512,
        "shared_expert_intermediate_size": 512,
        "linear_num_key_heads": 16,
        "linear_num_value_heads": 32,
        "linear_key_head_dim": 128,
        "linear_value_head_dim": 128,
        "linear_conv_kernel_dim": 4,
        "full_attention_interval": 4,
    },
    "gemma-3-270m": {
        "model_type": "gemma3_text",
        "num_hidden_layers": 18,
        "hidden_size": 640,
        "intermediate_size": 2048,
        "num_attention_heads": 4,
        "num_key_value_heads": 1,
        "head_dim": 256,
        "vocab_size": 262144,
        "sliding_window": 512,
        "max_position_embeddings": 32768,
    },
    "gpt-oss-20b": {
        "model_type": "gpt_oss",
        "num_hidden_layers": 24,
        "hidden_size": 2880,
        "intermediate_size": 2880,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "head_dim": 64,
        "vocab_size": 201088,
        "num_local_experts": 32,
        "num_experts_per_tok": 4,
        "sliding_window": 128,
        "tie_word_embeddings": False,
    },
    "deepseek-v3": {
        "model_type": "deepseek_v3",
        "num_hidden_layers": 61,
        "hidden_size": 7168,
        "intermediate_size": 18432,
        "num_attention_heads": 128,
        "num_key_value_heads": 128,
        "vocab_size": 129280,
        "n_routed_experts": 256,
        "num_experts_per_tok": 8,
        "n_shared_experts": 1,
        "moe_intermediate_size": 2048,
        "first_k_dense_replace": 3,
        "kv_lora_rank": 512,
        "q_lora_rank": 1536,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "v_head_dim": 128,
        "num_nextn_predict_layers": 1,
        "topk_method": "noaux_tc",
        "tie_word_embeddings": False,
    },
    "kimi-k2": {
        "model_type": "kimi_k2",
        "num_hidden_layers": 61,
        "hidden_size": 7168,
        "intermediate_size": 18432,
        "num_attention_heads": 64,
        "num_key_value_heads": 64,
        "vocab_size": 163840,
        "n_routed_experts": 384,
        "num_experts_per_tok": 8,
        "n_shared_experts": 1,
        "moe_intermediate_size": 2048,
        "first_k_dense_replace": 1,
        "kv_lora_rank": 512,
        "q_lora_rank": 1536,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "v_head_dim": 128,
        "topk_method": "noaux_tc",
    },
    "granite-4.0-h-small": {
        "model_type": "granitemoehybrid",
        "num_hidden_layers": 40,
        "hidden_size": 4096,
        "intermediate_size": 768,
        "shared_intermediate_size": 1536,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 100352,
        "num_local_experts": 72,
        "num_experts_per_tok": 10,
        "mamba_d_state": 128,
        "mamba_d_conv": 4,
        "mamba_expand": 2,
        "mamba_n_heads": 128,
        "mamba_n_groups": 1,
        "tie_word_embeddings": True,
        "layer_types": [
            "mamba",
            "mamba",
            "mamba",
            "mamba",
            "mamba",
            "attention",
            "mamba",
            "mamba",
            "mamba",
            "mamba",
            "mamba",
            "mamba",
            "mamba",
            "mamba",
            "mamba",
            "attention",
            "mamba",
            "mamba",
            "mamba",
            "mamba",
            "mamba",
            "mamba",
            "mamba",
            "mamba",
            "mamba",
            "attention",
            "mamba",
            "mamba",
            "mamba",
            "mamba",
            "mamba",
            "mamba",
            "mamba",
            "mamba",
            "mamba",
            "attention",
            "mamba",
            "mamba",
            "mamba",
            "mamba",
        ],
    },
    "lfm2-1.2b": {
        "model_type": "lfm2",
        "num_hidden_layers": 16,
        "hidden_size": 2048,
        "block_ff_dim": 12288,
        "block_auto_adjust_ff_dim": True,
        "block_ffn_dim_multiplier": 1.0,
        "block_multiple_of": 256,
        "intermediate_size": 8192,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 65536,
        "conv_L_cache": 3,
        "full_attn_idxs": [2, 5, 8, 10, 12, 14],
        "tie_embedding": True,
    },
    "phi-4": {
        "model_type": "phi3",
        "num_hidden_layers": 40,
        "hidden_size": 5120,
        "intermediate_size": 17920,
        "num_attention_heads": 40,
        "num_key_value_heads": 10,
        "vocab_size": 100352,
        "max_position_embeddings": 16384,
        "sliding_window": None,
        "tie_word_embeddings": False,
    },
    "phi-2": {
        "model_type": "phi",
        "num_hidden_layers": 32,
        "hidden_size": 2560,
        "intermediate_size": 10240,
        "num_attention_heads": 32,
        "vocab_size": 51200,
        "tie_word_embeddings": False,
    },
    "qwen3.6-35b-a3b": {
        "model_type": "qwen3_5_moe",
        "tie_word_embeddings": False,
        "text_config": {
            "model_type": "qwen3_5_moe_text",
            "num_hidden_layers": 40,
            "hidden_size": 2048,
            "num_attention_heads": 16,
            "num_key_value_heads": 2,
            "head_dim": 256,
            "vocab_size": 248320,
            "num_experts": 256,
            "num_experts_per_tok": 8,
            "moe_intermediate_size": 512,
            "shared_expert_intermediate_size": 512,
            "linear_num_key_heads": 16,
            "linear_num_value_heads": 32,
            "linear_key_head_dim": 128,
            "linear_value_head_dim": 128,
            "linear_conv_kernel_dim": 4,
            "full_attention_interval": 4,
            "mtp_num_hidden_layers": 1,
            "max_position_embeddings": 262144,
        },
    },
    "qwen3.6-27b": {
        "model_type": "qwen3_5",
        "tie_word_embeddings": False,
        "text_config": {
            "model_type": "qwen3_5_text",
            "num_hidden_layers": 64,
            "hidden_size": 5120,
            "intermediate_size": 17408,
            "num_attention_heads": 24,
            "num_key_value_heads": 4,
            "head_dim": 256,
            "vocab_size": 248320,
            "linear_num_key_heads": 16,
            "linear_num_value_heads": 48,
            "linear_key_head_dim": 128,
            "linear_value_head_dim": 128,
            "linear_conv_kernel_dim": 4,
            "layer_types": [
                "linear_attention",
                "linear_attention",
                "linear_attention",
                "full_attention",
                "linear_attention",
                "linear_attention",
                "linear_attention",
                "full_attention",
                "linear_attention",
                "linear_attention",
                "linear_attention",
                "full_attention",
                "linear_attention",
                "linear_attention",
                "linear_attention",
                "full_attention",
                "linear_attention",
                "linear_attention",
                "linear_attention",
                "full_attention",
                "linear_attention",
                "linear_attention",
                "linear_attention",
                "full_attention",
                "linear_attention",
                "linear_attention",
                "linear_attention",
                "full_attention",
                "linear_attention",
                "linear_attention",
                "linear_attention",
                "full_attention",
                "linear_attention",
                "linear_attention",
                "linear_attention",
                "full_attention",
                "linear_attention",
                "linear_attention",
                "linear_attention",
                "full_attention",
                "linear_attention",
                "linear_attention",
                "linear_attention",
                "full_attention",
                "linear_attention",
                "linear_attention",
                "linear_attention",
                "full_attention",
                "linear_attention",
                "linear_attention",
                "linear_attention",
                "full_attention",
                "linear_attention",
                "linear_attention",
                "linear_attention",
                "full_attention",
                "linear_attention",
                "linear_attention",
                "linear_attention",
                "full_attention",
                "linear_attention",
                "linear_attention",
                "linear_attention",
                "full_attention",
            ],
            "mtp_num_hidden_layers": 1,
            "max_position_embeddings": 262144,
        },
    },
}


def params(spec) -> int:
    return sum(math.prod(shape) for _, shape in synthesize_tensors(spec))


# name -> (llama.cpp arch, blocks incl. MTP, parameter count of the converted GGUF)
EXPECTED = {
    "llama-3.1-8b": ("llama", 32, 8_030_261_312),  # 8.03B + 64 rope_freqs
    "mistral-7b-v0.1": ("llama", 32, 7_241_732_096),
    "mixtral-8x7b": ("llama", 32, 46_702_792_704),
    "qwen2.5-7b": ("qwen2", 28, 7_615_616_512),  # = the DeepSeek-R1-Distill-Qwen-7B GGUF
    "qwen3-8b": ("qwen3", 36, 8_190_735_360),
    "qwen3-30b-a3b": ("qwen3moe", 48, 30_532_122_624),
    "qwen3-next-80b-a3b": ("qwen3next", 48, 79_674_391_296),
    "gemma-3-270m": ("gemma3", 18, 268_098_176),  # = the real GGUF
    "gpt-oss-20b": ("gpt-oss", 24, 20_914_757_184),
    "deepseek-v3": ("deepseek2", 61, 671_026_419_200),  # converter drops the MTP layer
    "kimi-k2": ("deepseek2", 61, 1_026_408_232_448),
    "granite-4.0-h-small": ("granitehybrid", 40, 32_207_337_984),
    "lfm2-1.2b": ("lfm2", 16, 1_170_340_608),
    "phi-4": ("phi3", 40, 14_659_507_200),
    "phi-2": ("phi2", 32, 2_779_683_840),
    "qwen3.6-35b-a3b": ("qwen35moe", 41, 35_505_251_456),  # seed: counted from the GGUF
    "qwen3.6-27b": ("qwen35", 65, 27_320_697_856),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_config_maps_to_arch_and_size(name: str) -> None:
    arch, n_layer_all, n_params = EXPECTED[name]
    spec = spec_from_config(CONFIGS[name], source=name)
    assert spec.arch == arch
    assert spec.n_layer_all == n_layer_all
    assert params(spec) == n_params


def test_qwen36_moe_layout() -> None:
    spec = spec_from_config(CONFIGS["qwen3.6-35b-a3b"])
    assert spec.n_nextn == 1 and spec.n_layer == 40
    full = [il for il in range(spec.n_layer_all) if not spec.recurrent(il)]
    assert full == [3, 7, 11, 15, 19, 23, 27, 31, 35, 39, 40]  # 10 full + the MTP block
    assert spec.n_head_kv[0] == 0 and spec.n_head_kv[3] == 2 and spec.n_head_kv[40] == 2
    assert (spec.ssm_d_state, spec.ssm_n_group, spec.ssm_dt_rank, spec.ssm_d_inner) == (
        128,
        16,
        32,
        4096,
    )
    assert all(spec.moe(il) for il in range(spec.n_layer_all))
    assert (spec.n_expert, spec.n_expert_used, spec.n_ff_exp, spec.n_ff_shexp) == (256, 8, 512, 512)
    assert not spec.tied_embeddings


def test_layer_types_and_interval_agree() -> None:
    by_types = spec_from_config(CONFIGS["qwen3.6-27b"])
    cfg = {**CONFIGS["qwen3.6-27b"], "text_config": dict(CONFIGS["qwen3.6-27b"]["text_config"])}
    del cfg["text_config"]["layer_types"]
    assert spec_from_config(cfg).is_recurrent == by_types.is_recurrent


def test_gemma3_sliding_pattern() -> None:
    spec = spec_from_config(CONFIGS["gemma-3-270m"])
    assert spec.tied_embeddings and spec.n_swa == 512
    assert [il for il in range(18) if not spec.swa(il)] == [5, 11, 17]
    types = ["sliding_attention"] * 5 + ["full_attention"]
    with_types = spec_from_config({**CONFIGS["gemma-3-270m"], "layer_types": types * 3})
    assert with_types.is_swa == spec.is_swa


def test_gemma3_multimodal_text_config() -> None:
    text = {k: v for k, v in CONFIGS["gemma-3-270m"].items() if k != "model_type"}
    spec = spec_from_config({"model_type": "gemma3", "text_config": text})
    assert spec.arch == "gemma3" and params(spec) == 268_098_176


def test_gpt_oss_alternates_sliding_layers() -> None:
    spec = spec_from_config(CONFIGS["gpt-oss-20b"])
    assert spec.n_swa == 128
    assert spec.is_swa[:4] == (True, False, True, False)


def test_deepseek_mla() -> None:
    spec = spec_from_config(CONFIGS["deepseek-v3"])
    assert spec.is_mla and spec.kv_lora_rank == 512 and spec.q_lora_rank == 1536
    assert (spec.n_rot, spec.head_k_mla, spec.head_v_mla) == (64, 192, 128)
    assert spec.n_layer_dense_lead == 3 and spec.n_ff[:4] == (18432, 18432, 18432, 0)
    assert spec.n_ff_shexp == 2048 and spec.n_expert_shared == 1


def test_granite_hybrid_layers() -> None:
    spec = spec_from_config(CONFIGS["granite-4.0-h-small"])
    assert sum(spec.is_recurrent) == 36
    assert spec.ssm_d_inner == 8192 and spec.ssm_dt_rank == 128 and spec.tied_embeddings


def test_lfm2_ffn_width_is_auto_adjusted() -> None:
    spec = spec_from_config(CONFIGS["lfm2-1.2b"])
    assert spec.n_ff[0] == 8192  # int(2 * 12288 / 3), rounded up to 256
    assert [il for il in range(16) if not spec.recurrent(il)] == [2, 5, 8, 10, 12, 14]
    assert spec.shortconv_l_cache == 3


def test_mistral_v01_has_no_sliding_window_as_llama_cpp_converts_it() -> None:
    # convert_hf_to_gguf writes MistralForCausalLM as the llama architecture, whose graph has
    # no sliding window (src/models/llama.cpp): every layer caches the whole context
    spec = spec_from_config(CONFIGS["mistral-7b-v0.1"])
    assert spec.arch == "llama" and spec.n_swa == 0 and not any(spec.is_swa)
    assert spec_from_config(CONFIGS["llama-3.1-8b"]).rope_freqs


@pytest.mark.parametrize(
    "extra", [{"model_type": "qwen2", "use_sliding_window": True, "sliding_window": 4096}]
)
def test_qwen2_and_phi3_windows_are_off_as_in_llama_cpp(extra: dict) -> None:
    cfg = {**CONFIGS["phi-4"], "sliding_window": 2047}
    assert spec_from_config(cfg).n_swa == 0
    assert spec_from_config({**CONFIGS["phi-4"], **extra}).n_swa == 0


def test_unknown_model_type_lists_known_ones() -> None:
    with pytest.raises(UnknownArchitectureError, match="'bloom'.*qwen3_5_moe"):
        spec_from_config({"model_type": "bloom", "num_hidden_layers": 2})


def test_missing_model_type() -> None:
    with pytest.raises(SpecError, match="model_type"):
        spec_from_config({"hidden_size": 4})


def test_missing_key_is_named() -> None:
    cfg = {k: v for k, v in CONFIGS["qwen3-8b"].items() if k != "hidden_size"}
    with pytest.raises(SpecError, match="'hidden_size'.*integer"):
        spec_from_config(cfg, source="qwen3/config.json")


def test_wrong_type_is_named() -> None:
    cfg = {**CONFIGS["qwen3-8b"], "num_hidden_layers": "36"}
    with pytest.raises(SpecError, match="'num_hidden_layers' should be an integer"):
        spec_from_config(cfg)


def test_heads_must_divide() -> None:
    cfg = {**CONFIGS["qwen3-8b"], "num_key_value_heads": 7}
    with pytest.raises(SpecError, match="multiple"):
        spec_from_config(cfg)


def test_not_an_object() -> None:
    with pytest.raises(SpecError, match="JSON object"):
        spec_from_config([1, 2])  # type: ignore[arg-type]


def test_model_types_are_listed() -> None:
    assert {"llama", "mixtral", "qwen3_5_moe", "gpt_oss", "kimi_k2", "phi"} <= set(HF_MODEL_TYPES)
