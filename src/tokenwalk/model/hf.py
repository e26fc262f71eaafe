"""Hugging Face ``config.json`` -> `ArchSpec`, the way llama.cpp's converter reads it.

Each supported ``model_type`` maps to the llama.cpp architecture that ``convert_hf_to_gguf.py``
writes, with the hyperparameters that converter would store in the GGUF header: MTP blocks
counted inside ``n_layer_all``, recurrent layers marked, MoE layers with ``n_ff`` 0, and so on.
Multimodal configs keep the language model under ``text_config``; that part is read.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from tokenwalk.errors import SpecError, UnknownArchitectureError
from tokenwalk.gguf.reader import LIMITS
from tokenwalk.model.spec import (
    ArchSpec,
    beyond_limit,
    check_architecture,
    check_limits,
    show_number,
    swa_pattern,
)

__all__ = ["spec_from_config", "HF_MODEL_TYPES"]

# config keys that are not widths, by the kind of limit they take (`Limits.hparam_limit`);
# every other integer key is a width
_KEY_KINDS = {
    "num_hidden_layers": "layers",
    "mtp_num_hidden_layers": "layers",
    "num_nextn_predict_layers": "layers",
    "num_mtp_layers": "layers",
    "first_k_dense_replace": "layers",
    "full_attention_interval": "layers",
    "sliding_window_pattern": "layers",
    "num_experts": "experts",
    "num_local_experts": "experts",
    "n_routed_experts": "experts",
    "num_experts_per_tok": "experts",
    "experts_per_token": "experts",
    "n_shared_experts": "experts",
    "vocab_size": "vocab",
    "max_position_embeddings": "context",
    "sliding_window": "context",
}


class _Cfg:
    """Typed access to config keys, with errors that name the key and the source.

    Every integer read is bounded by `tokenwalk.gguf.reader.LIMITS`, the limits GGUF headers
    are held to, so a config cannot build a huge table or print absurd sizes.
    """

    def __init__(self, cfg: Mapping[str, Any], source: str) -> None:
        self.cfg = cfg
        self.source = source

    def has(self, key: str) -> bool:
        return self.cfg.get(key) is not None

    def get(self, key: str, default: Any = None) -> Any:
        v = self.cfg.get(key)
        return default if v is None else v

    def int(self, key: str, default: int | None = None, *, minimum: int = 0) -> int:
        v = self.cfg.get(key)
        if v is None:
            if default is None:
                raise SpecError(f"{self.source}: required key '{key}' is missing (an integer)")
            return default
        if type(v) is not int:
            raise SpecError(
                f"{self.source}: key '{key}' should be an integer, not {show_number(v)}"
            )
        if v < minimum:
            raise SpecError(
                f"{self.source}: key '{key}' is {show_number(v)}, below the minimum {minimum}"
            )
        kind = _KEY_KINDS.get(key, "width")
        limit = beyond_limit(v, kind)
        if limit is not None:
            raise SpecError(
                f"{self.source}: key '{key}' is {show_number(v)}, beyond tokenwalk's limit of "
                f"{limit:,} ({kind})"
            )
        return v

    def first_int(self, keys: tuple[str, ...], default: int | None = None) -> int:
        for k in keys:
            if self.has(k):
                return self.int(k)
        if default is None:
            raise SpecError(
                f"{self.source}: required key '{keys[0]}' is missing (an integer; "
                f"also accepted: {', '.join(keys[1:])})"
            )
        return default

    def bool(self, key: str, default: bool) -> bool:
        v = self.cfg.get(key)
        if v is None:
            return default
        if type(v) is not bool:
            raise SpecError(f"{self.source}: key '{key}' should be true or false, not {v!r:.40}")
        return v

    def float(self, key: str, default: float) -> float:
        v = self.cfg.get(key)
        if v is None:
            return default
        if type(v) not in (int, float):
            raise SpecError(f"{self.source}: key '{key}' should be a number, not {show_number(v)}")
        limit = LIMITS.max_width
        if not (type(v) is int or math.isfinite(v)) or abs(v) > limit:
            raise SpecError(
                f"{self.source}: key '{key}' is {show_number(v)}, beyond tokenwalk's limit of "
                f"{limit:,}"
            )
        return float(v)

    def str_list(self, key: str, n: int) -> list[str] | None:
        v = self.cfg.get(key)
        if v is None:
            return None
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise SpecError(f"{self.source}: key '{key}' should be a list of layer-type strings")
        if len(v) < n:
            raise SpecError(f"{self.source}: key '{key}' has {len(v)} entries for {n} layers")
        return v[:n]

    def int_list(self, key: str) -> list[int] | None:
        v = self.cfg.get(key)
        if v is None:
            return None
        if not isinstance(v, list) or not all(type(x) is int for x in v):
            raise SpecError(f"{self.source}: key '{key}' should be a list of layer indices")
        return v


def _base(c: _Cfg, arch: str, *, tied_default: bool = False) -> dict[str, Any]:
    """The keys every decoder config has."""
    n_layer = c.int("num_hidden_layers", minimum=1)
    n_embd = c.int("hidden_size", minimum=1)
    n_head = c.int("num_attention_heads", minimum=1)
    n_head_kv = c.int("num_key_value_heads", n_head, minimum=1)
    if n_head % n_head_kv:
        raise SpecError(
            f"{c.source}: num_attention_heads ({n_head}) is not a multiple of "
            f"num_key_value_heads ({n_head_kv})"
        )
    head = c.int("head_dim", n_embd // n_head, minimum=1)
    return dict(
        arch=arch,
        n_layer_all=n_layer,
        n_embd=n_embd,
        n_vocab=c.int("vocab_size", minimum=1),
        n_ctx_train=c.int("max_position_embeddings", 0),
        n_head=(n_head,) * n_layer,
        n_head_kv=(n_head_kv,) * n_layer,
        head_k=head,
        head_v=head,
        n_ff=(c.int("intermediate_size", minimum=1),) * n_layer
        if c.has("intermediate_size")
        else (0,) * n_layer,
        tied_embeddings=c.bool("tie_word_embeddings", tied_default),
    )


def _extend(kw: dict[str, Any], n_extra: int, **per_layer: Any) -> None:
    """Append `n_extra` MTP blocks: per-layer tuples grow with the given values."""
    kw["n_layer_all"] += n_extra
    kw["n_nextn"] = n_extra
    for key, value in per_layer.items():
        kw[key] = tuple(kw[key]) + (value,) * n_extra


def _require_ffn(c: _Cfg, kw: dict[str, Any]) -> None:
    if not c.has("intermediate_size"):
        raise SpecError(f"{c.source}: required key 'intermediate_size' is missing (an integer)")


# ---------------------------------------------------------------------------------------------
# one function per family


def _llama(c: _Cfg) -> dict[str, Any]:
    kw = _base(c, "llama")
    _require_ffn(c, kw)
    n = kw["n_layer_all"]
    rope = c.get("rope_scaling") or c.get("rope_parameters") or {}
    if isinstance(rope, Mapping) and rope.get("rope_type", rope.get("type")) == "llama3":
        kw["rope_freqs"] = True
    # Mistral 7B v0.1's `sliding_window` is dropped: the converter writes it as the llama
    # architecture, whose graph has no sliding window, so the cache holds the whole context
    n_expert = c.first_int(("num_local_experts", "num_experts"), 0)
    if n_expert:
        kw.update(
            n_expert=n_expert,
            n_expert_used=c.int("num_experts_per_tok", minimum=1),
            n_ff_exp=kw["n_ff"][0],
            n_ff=(0,) * n,
        )
    return kw


def _qwen2(c: _Cfg) -> dict[str, Any]:
    kw = _base(c, "qwen2")  # llama.cpp's qwen2 has no sliding window (`use_sliding_window`)
    _require_ffn(c, kw)
    return kw


def _qwen3(c: _Cfg) -> dict[str, Any]:
    kw = _base(c, "qwen3")
    _require_ffn(c, kw)
    return kw


def _moe(c: _Cfg, kw: dict[str, Any], *, shared_key: str = "shared_expert_intermediate_size"):
    n = kw["n_layer_all"]
    n_ff_shexp = c.int(shared_key, 0)
    kw.update(
        n_expert=c.first_int(("num_experts", "num_local_experts", "n_routed_experts")),
        n_expert_used=c.int("num_experts_per_tok", minimum=1),
        n_ff_exp=c.int("moe_intermediate_size", minimum=1),
        n_ff_shexp=n_ff_shexp,
        n_expert_shared=1 if n_ff_shexp else 0,
        n_ff=(0,) * n,
    )


def _qwen3moe(c: _Cfg) -> dict[str, Any]:
    kw = _base(c, "qwen3moe")
    _moe(c, kw)
    return kw


def _delta_net(c: _Cfg, kw: dict[str, Any], n_mtp: int) -> None:
    """Gated DeltaNet hybrids (qwen35, qwen35moe, qwen3next) and their MTP blocks."""
    n = kw["n_layer_all"]
    n_head_kv_full = kw["n_head_kv"][0]
    types = c.str_list("layer_types", n)
    if types is not None:
        recurrent = tuple(t == "linear_attention" for t in types)
    else:
        interval = c.int("full_attention_interval", 4, minimum=1)
        recurrent = tuple((il + 1) % interval != 0 for il in range(n))
    n_v_heads = c.int("linear_num_value_heads", minimum=1)
    kw.update(
        is_recurrent=recurrent,
        n_head_kv=tuple(0 if r else h for r, h in zip(recurrent, kw["n_head_kv"], strict=True)),
        ssm_d_conv=c.int("linear_conv_kernel_dim", 4, minimum=1),
        ssm_d_state=c.int("linear_key_head_dim", minimum=1),
        ssm_n_group=c.int("linear_num_key_heads", minimum=1),
        ssm_dt_rank=n_v_heads,
        ssm_d_inner=c.int("linear_value_head_dim", minimum=1) * n_v_heads,
    )
    if n_mtp:
        _extend(
            kw,
            n_mtp,
            is_recurrent=False,
            n_head=kw["n_head"][0],
            n_head_kv=n_head_kv_full,
            n_ff=kw["n_ff"][-1],
        )


def _mtp_layers(c: _Cfg) -> int:
    return c.first_int(("mtp_num_hidden_layers", "num_nextn_predict_layers"), 0)


def _qwen35(c: _Cfg) -> dict[str, Any]:
    kw = _base(c, "qwen35")
    _require_ffn(c, kw)
    _delta_net(c, kw, _mtp_layers(c))
    return kw


def _qwen35moe(c: _Cfg) -> dict[str, Any]:
    kw = _base(c, "qwen35moe")
    _moe(c, kw)
    _delta_net(c, kw, _mtp_layers(c))
    return kw


def _qwen3next(c: _Cfg) -> dict[str, Any]:
    kw = _base(c, "qwen3next")
    _moe(c, kw)
    _delta_net(c, kw, _mtp_layers(c))
    return kw


def _gemma3(c: _Cfg) -> dict[str, Any]:
    kw = _base(c, "gemma3", tied_default=True)
    _require_ffn(c, kw)
    n = kw["n_layer_all"]
    window = c.int("sliding_window", 0)
    if window:
        types = c.str_list("layer_types", n)
        if types is not None:
            is_swa = tuple(t == "sliding_attention" for t in types)
        else:
            is_swa = swa_pattern(n, c.int("sliding_window_pattern", 6))
        kw.update(n_swa=window, is_swa=is_swa)
    return kw


def _gpt_oss(c: _Cfg) -> dict[str, Any]:
    kw = _base(c, "gpt-oss")
    n = kw["n_layer_all"]
    types = c.str_list("layer_types", n)
    is_swa = (
        tuple(t == "sliding_attention" for t in types) if types is not None else swa_pattern(n, 2)
    )
    kw.update(
        n_swa=c.int("sliding_window", 128),
        is_swa=is_swa,
        n_expert=c.first_int(("num_local_experts", "num_experts")),
        n_expert_used=c.first_int(("num_experts_per_tok", "experts_per_token")),
        n_ff_exp=c.int("intermediate_size", minimum=1),
        n_ff=(0,) * n,
    )
    # OpenAI's checkpoints store the expert weights in MXFP4; the converter repacks them into
    # ggml's MXFP4 blocks as they are (GptOssModel.repack_mxfp4) under every output type
    quant = c.get("quantization_config")
    if isinstance(quant, Mapping) and quant.get("quant_method") == "mxfp4":
        kw["expert_weights_type"] = "MXFP4"
    return kw


def _deepseek2(c: _Cfg) -> dict[str, Any]:
    """DeepSeek V2/V3, Kimi K2: MLA attention. The converter drops the MTP layers
    (``skip_mtp`` in conversion/deepseek.py), so ``num_nextn_predict_layers`` adds no blocks."""
    kw = _base(c, "deepseek2")
    n = kw["n_layer_all"]
    kv_lora = c.int("kv_lora_rank", 512, minimum=1)
    rope = c.int("qk_rope_head_dim", minimum=1)
    nope = c.int("qk_nope_head_dim", minimum=1)
    has_moe = c.has("n_routed_experts")
    lead = c.int("first_k_dense_replace", 0 if has_moe else n)
    n_ff_dense = c.int("intermediate_size", minimum=1)
    kw.update(
        head_k=kv_lora + rope,
        head_v=kv_lora,
        kv_lora_rank=kv_lora,
        q_lora_rank=c.int("q_lora_rank", 0),
        n_rot=rope,
        head_k_mla=nope + rope,
        head_v_mla=c.int("v_head_dim", minimum=1),
        n_ff=tuple(n_ff_dense if il < lead else 0 for il in range(n)),
        n_layer_dense_lead=lead,
    )
    if has_moe:
        n_shared = c.int("n_shared_experts", 0)
        n_ff_exp = c.int("moe_intermediate_size", minimum=1)
        kw.update(
            n_expert=c.int("n_routed_experts", minimum=1),
            n_expert_used=c.int("num_experts_per_tok", minimum=1),
            n_expert_shared=n_shared,
            n_ff_exp=n_ff_exp,
            n_ff_shexp=n_ff_exp * n_shared,
            # V3's sigmoid router carries e_score_correction_bias, written as exp_probs_b
            expert_probs_bias=c.get("topk_method") == "noaux_tc",
        )
    return kw


def _glm4moe(c: _Cfg) -> dict[str, Any]:
    """GLM-4.5 / 4.6 and GLM-4.5-Air (Glm4MoeForCausalLM), llama.cpp's ``glm4moe``.

    ``first_k_dense_replace`` dense blocks, then MoE blocks: ``n_routed_experts`` experts of
    ``moe_intermediate_size`` behind a sigmoid router with its correction bias, and
    ``n_shared_experts`` shared experts of the same width. GQA attention with ``head_dim``
    (not hidden / heads), q/k/v biases (``attention_bias``), q/k norms (``use_qk_norm``).
    Partial RoPE (``partial_rotary_factor``) changes no tensor and no cache. The converter
    appends the ``num_nextn_predict_layers`` MTP blocks (Glm4MoeModel: block_count grows).
    """
    kw = _base(c, "glm4moe")
    lead = c.int("first_k_dense_replace", 0)
    n_shared = c.int("n_shared_experts", 0)
    n_ff_exp = c.int("moe_intermediate_size", minimum=1)
    if lead:
        _require_ffn(c, kw)
    kw.update(
        n_ff=tuple(f if il < lead else 0 for il, f in enumerate(kw["n_ff"])),
        n_layer_dense_lead=lead,
        n_expert=c.first_int(("n_routed_experts", "num_local_experts")),
        n_expert_used=c.int("num_experts_per_tok", minimum=1),
        n_expert_shared=n_shared,
        n_ff_exp=n_ff_exp,
        n_ff_shexp=n_ff_exp * n_shared,
        expert_probs_bias=True,
        qkv_bias=c.bool("attention_bias", False),
        qk_norm=c.bool("use_qk_norm", False),
    )
    n_mtp = c.first_int(("num_nextn_predict_layers", "num_mtp_layers"), 0)
    if n_mtp:
        _extend(kw, n_mtp, n_head=kw["n_head"][0], n_head_kv=kw["n_head_kv"][0], n_ff=0)
    return kw


def _granitehybrid(c: _Cfg) -> dict[str, Any]:
    kw = _base(c, "granitehybrid", tied_default=True)
    n = kw["n_layer_all"]
    types = c.str_list("layer_types", n)
    if types is None:
        attn = c.int_list("attn_layer_indices")
        if attn is None:
            raise SpecError(
                f"{c.source}: required key 'layer_types' is missing (a list of 'mamba' or "
                "'attention' per layer)"
            )
        attn_set = set(attn)  # a set: the list may be long
        types = ["attention" if il in attn_set else "mamba" for il in range(n)]
    recurrent = tuple(t == "mamba" for t in types)
    n_embd = kw["n_embd"]
    n_ssm_head = c.int("mamba_n_heads", minimum=1)
    d_inner = c.int("mamba_expand", 2, minimum=1) * n_embd
    kw.update(
        is_recurrent=recurrent,
        n_head_kv=tuple(0 if r else h for r, h in zip(recurrent, kw["n_head_kv"], strict=True)),
        ssm_d_conv=c.int("mamba_d_conv", 4, minimum=1),
        ssm_d_state=c.int("mamba_d_state", minimum=1),
        ssm_n_group=c.int("mamba_n_groups", 1, minimum=1),
        ssm_dt_rank=n_ssm_head,
        ssm_d_inner=d_inner,
    )
    n_expert = c.first_int(("num_local_experts", "num_experts"), 0)
    if n_expert:
        n_ff_shexp = c.int("shared_intermediate_size", 0)
        kw.update(
            n_expert=n_expert,
            n_expert_used=c.int("num_experts_per_tok", minimum=1),
            n_ff_exp=c.int("intermediate_size", minimum=1),
            n_ff_shexp=n_ff_shexp,
            n_expert_shared=1 if n_ff_shexp else 0,
            n_ff=(0,) * n,
        )
    else:
        kw["n_ff"] = (c.first_int(("shared_intermediate_size", "intermediate_size")),) * n
    return kw


def _lfm2(c: _Cfg) -> dict[str, Any]:
    """LFM2: short-conv blocks and GQA blocks; the FFN width is auto-adjusted like the
    converter does (``_add_feed_forward_length`` in conversion/lfm2.py)."""
    kw = _base(c, "lfm2", tied_default=True)
    kw["tied_embeddings"] = c.bool("tie_embedding", kw["tied_embeddings"])
    n = kw["n_layer_all"]
    types = c.str_list("layer_types", n)
    if types is not None:
        recurrent = tuple(t == "conv" for t in types)
    else:
        attn = c.int_list("full_attn_idxs")
        if attn is None:
            raise SpecError(
                f"{c.source}: required key 'layer_types' (or 'full_attn_idxs') is missing"
            )
        attn_set = set(attn)  # a set: the list may be long
        recurrent = tuple(il not in attn_set for il in range(n))
    ff = c.first_int(("block_ff_dim", "intermediate_size"))
    if c.bool("block_auto_adjust_ff_dim", False):
        ff = int(2 * ff / 3)
        multiplier = c.get("block_ffn_dim_multiplier")
        if multiplier is not None:
            ff = int(c.float("block_ffn_dim_multiplier", 1.0) * ff)
        multiple_of = c.int("block_multiple_of", 256, minimum=1)
        ff = multiple_of * ((ff + multiple_of - 1) // multiple_of)
    kw.update(
        is_recurrent=recurrent,
        n_head_kv=tuple(0 if r else h for r, h in zip(recurrent, kw["n_head_kv"], strict=True)),
        n_ff=(ff,) * n,
        shortconv_l_cache=c.int("conv_L_cache", 3, minimum=1),
    )
    return kw


def _lfm2moe(c: _Cfg) -> dict[str, Any]:
    """LFM2 MoE (LFM2-8B-A1B): LFM2's short-conv / GQA blocks with a mixture of experts after
    ``num_dense_layers`` dense FFN layers; a sigmoid router with a per-expert bias
    (``LFM2MoeModel`` in conversion/lfm2.py, ``llama_model_lfm2moe`` in llama.cpp)."""
    kw = _base(c, "lfm2moe", tied_default=True)
    n = kw["n_layer_all"]
    types = c.str_list("layer_types", n)
    if types is None:
        raise SpecError(f"{c.source}: required key 'layer_types' is missing (a list per layer)")
    # the converter gives KV heads to "full_attention" layers only; every other block is a conv
    recurrent = tuple(t != "full_attention" for t in types)
    _require_ffn(c, kw)
    lead = c.int("num_dense_layers", 0)
    kw.update(
        is_recurrent=recurrent,
        n_head_kv=tuple(0 if r else h for r, h in zip(recurrent, kw["n_head_kv"], strict=True)),
        shortconv_l_cache=c.int("conv_L_cache", 3, minimum=1),
        n_ff=tuple(f if il < lead else 0 for il, f in enumerate(kw["n_ff"])),
        n_layer_dense_lead=lead,
        n_expert=c.first_int(("num_experts", "num_local_experts")),
        n_expert_used=c.int("num_experts_per_tok", minimum=1),
        n_ff_exp=c.int("moe_intermediate_size", minimum=1),
        expert_probs_bias=c.bool("use_expert_bias", True),
    )
    return kw


def _gemma4(c: _Cfg) -> dict[str, Any]:
    """Gemma 4 (26B-A4B, 31B): sliding and full attention layers with their own head sizes and
    KV head counts; full layers may use K as V (``attention_k_eq_v``); MoE layers keep the
    dense FFN beside the experts (``Gemma4Model`` in conversion/gemma.py, the transformers
    ``Gemma4TextConfig`` defaults for keys a config leaves out)."""
    kw = _base(c, "gemma4", tied_default=True)
    n = kw["n_layer_all"]
    _require_ffn(c, kw)
    if c.int("hidden_size_per_layer_input", 0):
        raise SpecError(
            f"{c.source}: per-layer embeddings (hidden_size_per_layer_input, the E2B/E4B "
            "models) are not modelled from a config; read the model's GGUF header instead"
        )
    types = c.str_list("layer_types", n)
    if types is None:  # transformers: five sliding layers, then one full; the last is full
        types = ["sliding_attention" if (il + 1) % 6 else "full_attention" for il in range(n)]
        types[-1] = "full_attention"
    is_swa = tuple(t == "sliding_attention" for t in types)
    head_swa = kw["head_k"]
    head_full = c.int("global_head_dim", 512, minimum=1)
    kv_swa = kw["n_head_kv"][0]
    kv_full = c.int("num_global_key_value_heads", kv_swa, minimum=1)
    n_shared = c.int("num_kv_shared_layers", 0)
    if n_shared >= n:
        raise SpecError(f"{c.source}: num_kv_shared_layers ({n_shared}) is not below the layers")
    n_ff = kw["n_ff"]
    if c.bool("use_double_wide_mlp", False):  # the KV-sharing layers get twice the FFN
        n_ff = tuple(f if il < n - n_shared else 2 * f for il, f in enumerate(n_ff))
    kw.update(
        head_k=head_full,
        head_v=head_full,
        head_k_swa=head_swa,
        head_v_swa=head_swa,
        n_swa=c.int("sliding_window", 512, minimum=1),
        is_swa=is_swa,
        n_head_kv=tuple(kv_swa if swa else kv_full for swa in is_swa),
        n_ff=n_ff,
        shared_kv_layers=n_shared,
        k_eq_v=c.bool("attention_k_eq_v", False),
    )
    if c.bool("enable_moe_block", False):
        kw.update(
            n_expert=c.int("num_experts", minimum=1),
            n_expert_used=c.first_int(("top_k_experts", "num_experts_per_tok")),
            n_ff_exp=c.int("moe_intermediate_size", minimum=1),
        )
    return kw


def _phi3(c: _Cfg) -> dict[str, Any]:
    kw = _base(c, "phi3")  # llama.cpp turns Phi-3's sliding window off (phi3.cpp)
    _require_ffn(c, kw)
    return kw


def _phi2(c: _Cfg) -> dict[str, Any]:
    kw = _base(c, "phi2")
    _require_ffn(c, kw)
    return kw


# HF model_type -> reader. Text configs of multimodal models ("gemma3_text") map the same.
_READERS: dict[str, Callable[[_Cfg], dict[str, Any]]] = {
    "llama": _llama,
    "mistral": _llama,
    "mixtral": _llama,
    "qwen2": _qwen2,
    "qwen3": _qwen3,
    "qwen3_moe": _qwen3moe,
    "qwen3_5": _qwen35,
    "qwen3_5_moe": _qwen35moe,
    "qwen3_next": _qwen3next,
    "gemma3": _gemma3,
    "gemma3_text": _gemma3,
    "gemma4": _gemma4,
    "gpt_oss": _gpt_oss,
    "deepseek_v2": _deepseek2,
    "deepseek_v3": _deepseek2,
    "kimi_k2": _deepseek2,
    "glm4_moe": _glm4moe,
    "granitemoehybrid": _granitehybrid,
    "lfm2": _lfm2,
    "lfm2_moe": _lfm2moe,
    "phi3": _phi3,
    "phi": _phi2,
}

HF_MODEL_TYPES: tuple[str, ...] = tuple(_READERS)


def _model_type(cfg: Mapping[str, Any], text: Mapping[str, Any] | None, source: str) -> str:
    candidates = [cfg.get("model_type")]
    if text is not None:
        candidates.append(text.get("model_type"))
    for mt in candidates:
        if isinstance(mt, str) and mt in _READERS:
            return mt
        if isinstance(mt, str) and mt.endswith("_text") and mt[: -len("_text")] in _READERS:
            return mt[: -len("_text")]
    named = next((mt for mt in candidates if isinstance(mt, str)), None)
    if named is None:
        raise SpecError(f"{source}: required key 'model_type' is missing (a string)")
    raise UnknownArchitectureError(
        f"{source}: model_type '{named}' is not modelled by tokenwalk; known model types: "
        + ", ".join(HF_MODEL_TYPES)
    )


def spec_from_config(cfg: Mapping[str, Any], *, source: str = "config") -> ArchSpec:
    """Build the `ArchSpec` llama.cpp would load after converting this ``config.json``.

    `cfg` is the parsed JSON object; keys of a nested ``text_config`` take precedence over the
    top level. `source` names the file in error messages. Raises `SpecError` for a missing or
    mistyped key and `UnknownArchitectureError` for a ``model_type`` not in `HF_MODEL_TYPES`.
    """
    if not isinstance(cfg, Mapping):
        raise SpecError(f"{source}: a config must be a JSON object, not {type(cfg).__name__}")
    text = cfg.get("text_config")
    if text is not None and not isinstance(text, Mapping):
        raise SpecError(f"{source}: key 'text_config' should be an object")
    model_type = _model_type(cfg, text, source)
    merged = {**cfg, **text} if text else dict(cfg)
    kw = _READERS[model_type](_Cfg(merged, source))
    check_architecture(kw["arch"])
    spec = ArchSpec(**kw)
    check_limits(spec, source, SpecError)
    return spec
