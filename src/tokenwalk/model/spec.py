"""`ArchSpec`: the hyperparameters of a model, normalised to llama.cpp's vocabulary.

A GGUF header (`from_gguf_metadata`) and a Hugging Face config (`tokenwalk.model.hf`) both land
here, so everything downstream (layers, synthesised tensors, costs) has one input. Per-layer
quantities are tuples of length `n_layer_all` (decoding blocks followed by MTP blocks).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from tokenwalk.errors import MetadataError, TokenwalkError, UnknownArchitectureError
from tokenwalk.gguf.reader import LIMITS

__all__ = [
    "ArchSpec",
    "SUPPORTED_ARCHITECTURES",
    "from_gguf_metadata",
    "check_architecture",
    "beyond_limit",
    "check_limits",
    "show_number",
]

# llama.cpp architecture names tokenwalk models, each with a test.
SUPPORTED_ARCHITECTURES: tuple[str, ...] = (
    "llama",
    "mistral3",
    "qwen2",
    "qwen3",
    "qwen3moe",
    "qwen35",
    "qwen35moe",
    "qwen3next",
    "gemma3",
    "gemma4",
    "gpt-oss",
    "deepseek2",
    "glm4moe",
    "granitehybrid",
    "lfm2",
    "lfm2moe",
    "phi3",
    "phi2",
)


# Supported architectures llama.cpp refuses to run with --split-mode tensor
# ("LLAMA_SPLIT_MODE_TENSOR not implemented for architecture", `llm_arch_supports_sm_tensor` in
# src/llama-arch.cpp, which lists Mamba, DeepSeek2, Nemotron-H, Granite-Hybrid and more).
NO_TENSOR_SPLIT_ARCHITECTURES: tuple[str, ...] = ("deepseek2", "granitehybrid")

# Architectures whose llama.cpp graph has no sliding window: llama, mistral3 and qwen2 never read
# `attention.sliding_window`, phi3 reads it and turns it off (src/models/phi3.cpp), so their
# cache holds the whole context (Mistral 7B v0.1 converts to llama: 4 GiB of f16 KV at 32k).
FULL_CACHE_ARCHITECTURES: tuple[str, ...] = ("llama", "mistral3", "qwen2", "phi3")

# Architectures whose MoE layers also run a dense FFN beside the experts.
DENSE_AND_MOE_ARCHITECTURES: tuple[str, ...] = ("gemma4",)

# Architectures whose llama.cpp compute buffer holds more n_embd-wide f32 rows per token when the
# output head runs: n_embd x (k + shared experts) where the query is not compressed
# (DeepSeek-V2-Lite: 240.26 MiB at ubatch 512 where the logits alone give 208 MiB), two where it
# is (Kimi K2: 380.01 MiB for 348, at any number of experts used). Which tensors stay below the
# logits is the allocator's layout; measured on the catalogue's models, tests/data/fit_params.md.
EXPERT_OUTPUTS_AT_HEAD_ARCHITECTURES: tuple[str, ...] = ("deepseek2",)

# Hybrid architectures whose llama.cpp graph holds more n_embd-wide f32 rows per token than the
# usual two when the output head runs, as llama-fit-params -v measures the compute buffer (the
# logits stage of Qwen3-Next, Qwen3.5 and Qwen3.6 is one row wider at most contexts, Granite 4.0
# H's two; tests/data/fit_params.md). Measured, not traced in the graph code.
EXTRA_HEAD_ROWS: dict[str, int] = {"qwen3next": 1, "qwen35": 1, "qwen35moe": 1, "granitehybrid": 2}


def check_architecture(arch: str) -> None:
    if arch not in SUPPORTED_ARCHITECTURES:
        raise UnknownArchitectureError(
            f"architecture '{arch}' is not modelled by tokenwalk; known architectures: "
            + ", ".join(SUPPORTED_ARCHITECTURES)
        )


@dataclass(frozen=True)
class ArchSpec:
    """Hyperparameters in llama.cpp terms. Lengths are elements, not bytes."""

    arch: str
    n_layer_all: int  # block_count: decoding blocks + MTP blocks
    n_embd: int
    n_vocab: int
    n_ctx_train: int
    n_head: tuple[int, ...]
    n_head_kv: tuple[int, ...]  # 0 marks a layer with no KV cache (recurrent)
    head_k: int  # key length of full-attention layers
    head_v: int
    n_ff: tuple[int, ...]  # dense FFN width per layer; 0 where the FFN is a mixture of experts
    n_nextn: int = 0  # MTP blocks, counted inside n_layer_all, at its end
    # sliding window attention
    n_swa: int = 0
    is_swa: tuple[bool, ...] = ()
    head_k_swa: int = 0  # 0: same as head_k
    head_v_swa: int = 0
    # recurrent layers (Gated DeltaNet, Mamba2, short conv)
    is_recurrent: tuple[bool, ...] = ()
    ssm_d_conv: int = 0
    ssm_d_inner: int = 0
    ssm_d_state: int = 0
    ssm_n_group: int = 0
    ssm_dt_rank: int = 0  # Mamba2 heads / DeltaNet value heads
    shortconv_l_cache: int = 0  # LFM2
    # mixture of experts
    n_expert: int = 0
    n_expert_used: int = 0
    n_expert_shared: int = 0
    n_ff_exp: int = 0
    n_ff_shexp: int = 0
    n_layer_dense_lead: int = 0
    # MLA (DeepSeek)
    kv_lora_rank: int = 0
    q_lora_rank: int = 0
    n_rot: int = 0  # rope dimensions (MLA: qk_rope_head_dim)
    head_v_mla: int = 0  # MLA value head length
    head_k_mla: int = 0  # MLA full key length (nope + rope)
    # misc
    tied_embeddings: bool = False
    shared_kv_layers: int = 0  # trailing layers that reuse an earlier layer's cache (gemma4)
    k_eq_v: bool = False  # full-attention layers use K as V: no V projection (gemma4)
    rope_freqs: bool = False  # a rope_freqs.weight tensor of n_rot/2 factors (Llama 3 rope scaling)
    expert_probs_bias: bool = False  # routing bias per expert, exp_probs_b (DeepSeek V3, GLM-4.5)
    qkv_bias: bool = False  # biases on the q/k/v projections (GLM-4.5's attention_bias)
    qk_norm: bool = False  # per-head q/k RMS norms (GLM-4.5 355B's use_qk_norm)
    # ggml type name the routed-expert weights arrive in from the checkpoint, written as they are
    # by the converter ("MXFP4" for gpt-oss); "" when they are converted from floats
    expert_weights_type: str = ""

    @property
    def n_layer(self) -> int:
        """Blocks run by normal decoding (MTP blocks excluded)."""
        return self.n_layer_all - self.n_nextn

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    def swa(self, il: int) -> bool:
        return bool(self.is_swa) and self.is_swa[il]

    def recurrent(self, il: int) -> bool:
        return bool(self.is_recurrent) and self.is_recurrent[il]

    def moe(self, il: int) -> bool:
        """True where layer `il` has routed experts (gemma4 layers have a dense FFN beside them)."""
        if self.n_expert == 0 or il < self.n_layer_dense_lead:
            return False
        return self.n_ff[il] == 0 or self.dense_ffn_beside_experts

    @property
    def dense_ffn_beside_experts(self) -> bool:
        """True where an MoE layer also runs a dense FFN of n_ff beside its experts (gemma4)."""
        return self.arch in DENSE_AND_MOE_ARCHITECTURES

    @property
    def tensor_split_supported(self) -> bool:
        """Whether llama.cpp runs this architecture with --split-mode tensor."""
        return self.arch not in NO_TENSOR_SPLIT_ARCHITECTURES

    @property
    def head_extra_rows(self) -> int:
        """n_embd-wide f32 rows per token the compute buffer holds beyond the usual two when
        the output head runs, as measured: on deepseek2 k + shared without query compression,
        two with it; a hybrid's (EXTRA_HEAD_ROWS)."""
        if self.n_expert > 0 and self.arch in EXPERT_OUTPUTS_AT_HEAD_ARCHITECTURES:
            return 2 if self.q_lora_rank else self.n_expert_used + self.n_expert_shared
        return EXTRA_HEAD_ROWS.get(self.arch, 0)

    def head_k_at(self, il: int) -> int:
        return self.head_k_swa if self.swa(il) and self.head_k_swa else self.head_k

    def head_v_at(self, il: int) -> int:
        return self.head_v_swa if self.swa(il) and self.head_v_swa else self.head_v


# ---------------------------------------------------------------------------------------------
# Bounds: the hyperparameter limits of `tokenwalk.gguf.reader.Limits`, for both paths

# ArchSpec fields that are not widths, by the kind of limit they take
_FIELD_KINDS = {
    "n_layer_all": "layers",
    "n_nextn": "layers",
    "n_layer_dense_lead": "layers",
    "shared_kv_layers": "layers",
    "n_vocab": "vocab",
    "n_ctx_train": "context",
    "n_swa": "context",
    "n_expert": "experts",
    "n_expert_used": "experts",
    "n_expert_shared": "experts",
}


def show_number(v: object) -> str:
    """A number for an error message: digits grouped, or 2^n for ints too long to print."""
    if type(v) is int and v.bit_length() > 64:
        return f"{'-' if v < 0 else ''}about 2^{v.bit_length() - 1}"
    if type(v) is int:
        return f"{v:,}"
    return f"{v!r:.40}"


def beyond_limit(value: int, kind: str) -> int | None:
    """The limit `value` exceeds for a hyperparameter of `kind`, or None when within it."""
    limit = LIMITS.hparam_limit(kind)
    return limit if value > limit else None


def check_limits(spec: ArchSpec, source: str, error: type[TokenwalkError]) -> None:
    """Refuse a spec with any quantity beyond `LIMITS`, whichever path built it.

    Readers check each key as they read it (naming the key); this catches what they derive
    (layers plus MTP blocks, widths computed from several keys).
    """
    for f in fields(spec):
        value = getattr(spec, f.name)
        values = value if isinstance(value, tuple) else (value,)
        ints = [v for v in values if type(v) is int]
        if not ints:
            continue
        kind = _FIELD_KINDS.get(f.name, "width")
        top = max(ints)
        limit = beyond_limit(top, kind)
        if limit is not None:
            raise error(
                f"{source}: the model's {f.name} comes to {show_number(top)}, beyond tokenwalk's "
                f"limit of {limit:,} ({kind})"
            )


# ---------------------------------------------------------------------------------------------
# From GGUF metadata

# GGUF keys (after the "{arch}." prefix) that are not widths, by the kind of limit they take
_META_KINDS = {
    "block_count": "layers",
    "nextn_predict_layers": "layers",
    "leading_dense_block_count": "layers",
    "full_attention_interval": "layers",
    "attention.sliding_window_pattern": "layers",
    "attention.shared_kv_layers": "layers",
    "expert_count": "experts",
    "expert_used_count": "experts",
    "expert_shared_count": "experts",
    "vocab_size": "vocab",
    "context_length": "context",
    "attention.sliding_window": "context",
}


class _Meta:
    """Typed access to `{arch}.*` metadata keys with errors that name the key."""

    def __init__(self, md: Mapping[str, Any], arch: str, n_layer: int | None = None) -> None:
        self.md = md
        self.arch = arch
        self.n_layer = n_layer

    def key(self, name: str) -> str:
        return f"{self.arch}.{name}"

    def has(self, name: str) -> bool:
        return self.key(name) in self.md

    def int(self, name: str, default: int | None = None, *, minimum: int = 0) -> int:
        k = self.key(name)
        if k not in self.md:
            if default is None:
                raise MetadataError(f"required metadata key '{k}' is missing")
            return default
        v = self.md[k]
        if isinstance(v, list) and v and all(type(x) is int for x in v):
            v = max(v)
        if type(v) is not int:
            raise MetadataError(f"metadata key '{k}' should be an integer, not {_kind(v)}")
        if v < minimum:
            raise MetadataError(f"metadata key '{k}' is {v}, below the minimum {minimum}")
        self.bound(name, v)
        return v

    def bound(self, name: str, v: int) -> None:
        """Refuse a value beyond tokenwalk's limit for the key (`Limits.hparam_limit`)."""
        kind = _META_KINDS.get(name, "width")
        limit = beyond_limit(v, kind)
        if limit is not None:
            raise MetadataError(
                f"metadata key '{self.key(name)}' is {show_number(v)}, beyond tokenwalk's limit "
                f"of {limit:,} ({kind})"
            )

    def float(self, name: str, default: float) -> float:
        v = self.md.get(self.key(name), default)
        if type(v) not in (int, float):
            raise MetadataError(f"metadata key '{self.key(name)}' should be a number")
        return float(v)

    def per_layer(
        self, name: str, default: int | None = None, *, minimum: int = 0
    ) -> tuple[int, ...]:
        """A key that is either one integer or one integer per layer."""
        assert self.n_layer is not None
        k = self.key(name)
        if k not in self.md:
            if default is None:
                raise MetadataError(f"required metadata key '{k}' is missing")
            return (default,) * self.n_layer
        v = self.md[k]
        if type(v) is int:
            if v < minimum:
                raise MetadataError(f"metadata key '{k}' is {v}, below the minimum {minimum}")
            self.bound(name, v)
            return (v,) * self.n_layer
        if isinstance(v, list) and all(type(x) is int for x in v):
            if len(v) < self.n_layer:
                raise MetadataError(
                    f"metadata key '{k}' has {len(v)} entries for {self.n_layer} layers"
                )
            v = v[: self.n_layer]
            if any(x < minimum for x in v):
                raise MetadataError(f"metadata key '{k}' holds a value below {minimum}")
            self.bound(name, max(v))
            return tuple(v)
        raise MetadataError(f"metadata key '{k}' should be an integer or integer array")

    def bools(self, name: str) -> tuple[bool, ...] | None:
        assert self.n_layer is not None
        k = self.key(name)
        if k not in self.md:
            return None
        v = self.md[k]
        if isinstance(v, list) and all(type(x) in (bool, int) for x in v):
            if len(v) < self.n_layer:
                raise MetadataError(
                    f"metadata key '{k}' has {len(v)} entries for {self.n_layer} layers"
                )
            return tuple(bool(x) for x in v[: self.n_layer])
        raise MetadataError(f"metadata key '{k}' should be a boolean array")


def _kind(v: Any) -> str:
    if isinstance(v, str):
        return f"the string {v[:40]!r}"
    return type(v).__name__


def _vocab_size(md: Mapping[str, Any], arch: str) -> int:
    k = f"{arch}.vocab_size"
    if k in md and type(md[k]) is int:
        return md[k]
    tokens = md.get("tokenizer.ggml.tokens")
    if tokens is not None and not isinstance(tokens, (str, bytes)) and hasattr(tokens, "__len__"):
        return len(tokens)  # a list or an ArrayInfo; a token list of the wrong type is ignored
    return 0


def swa_pattern(n_layer: int, pattern: int) -> tuple[bool, ...]:
    """llama.cpp's `set_swa_pattern`: with pattern p, the last layer of each period is global.

    Layers il % p < p - 1 slide: with p = 6 layers 5, 11, 17 are global; with p = 2 (gpt-oss)
    even layers slide and odd ones are full. p = 0 makes every layer slide.
    """
    if pattern <= 0:
        return (True,) * n_layer
    return tuple(il % pattern < pattern - 1 for il in range(n_layer))


def from_gguf_metadata(md: Mapping[str, Any], n_vocab_from_tensors: int = 0) -> ArchSpec:
    """Normalise GGUF metadata to an `ArchSpec`, following llama.cpp's `load_hparams`."""
    arch = md.get("general.architecture")
    if not isinstance(arch, str) or not arch:
        raise MetadataError("required metadata key 'general.architecture' is missing")
    check_architecture(arch)
    m = _Meta(md, arch)
    n_layer_all = m.int("block_count", minimum=1)
    m.n_layer = n_layer_all
    n_embd = m.int("embedding_length", minimum=1)
    n_head = m.per_layer("attention.head_count", minimum=0)
    n_head_kv = m.per_layer("attention.head_count_kv", default=max(n_head), minimum=0)
    head_default = n_embd // max(1, max(n_head))
    head_k = m.int("attention.key_length", head_default, minimum=1)
    head_v = m.int("attention.value_length", head_k, minimum=1)
    n_ff = m.per_layer("feed_forward_length", default=0)
    # the embedding table is the truth; a header cut for tests may shorten the token list
    n_vocab = n_vocab_from_tensors or _vocab_size(md, arch)
    kw: dict[str, Any] = {}

    n_expert = m.int("expert_count", 0)
    if n_expert:
        kw.update(
            n_expert=n_expert,
            n_expert_used=m.int("expert_used_count", minimum=1),
            n_expert_shared=m.int("expert_shared_count", 0),
            n_ff_exp=m.int("expert_feed_forward_length", 0),
            n_ff_shexp=m.int("expert_shared_feed_forward_length", 0),
            n_layer_dense_lead=m.int("leading_dense_block_count", 0),
        )
        if kw["n_expert_used"] > n_expert:
            raise MetadataError(
                f"'{arch}.expert_used_count' ({kw['n_expert_used']}) exceeds "
                f"'{arch}.expert_count' ({n_expert})"
            )
        if kw["n_expert_shared"] == 0 and kw["n_ff_shexp"] > 0:
            kw["n_expert_shared"] = 1
        # llama (Mixtral) and granitehybrid give the expert width as feed_forward_length; layers
        # past the dense lead are MoE whatever feed_forward_length says (qwen3next writes one too)
        if kw["n_ff_exp"] == 0:
            kw["n_ff_exp"] = max(n_ff)
        lead = kw["n_layer_dense_lead"]
        if arch not in DENSE_AND_MOE_ARCHITECTURES:
            n_ff = tuple(f if il < lead else 0 for il, f in enumerate(n_ff))

    n_nextn = m.int("nextn_predict_layers", 0)
    if n_nextn >= n_layer_all:
        raise MetadataError(f"'{arch}.nextn_predict_layers' ({n_nextn}) is not below block_count")

    # llama, mistral3 and qwen2 never read a sliding window and phi3 turns it off: llama.cpp
    # gives those architectures a full cache whatever the file says
    n_swa = 0 if arch in FULL_CACHE_ARCHITECTURES else m.int("attention.sliding_window", 0)
    is_swa: tuple[bool, ...] = ()
    if n_swa:
        explicit = m.bools("attention.sliding_window_pattern")
        if explicit is not None:
            is_swa = explicit
        elif arch == "gemma3":
            is_swa = swa_pattern(n_layer_all, m.int("attention.sliding_window_pattern", 6))
        elif arch == "gpt-oss":
            # llama.cpp: set_swa_pattern(2) -> even layers slide, odd layers are full
            is_swa = swa_pattern(n_layer_all, 2)
        else:
            is_swa = swa_pattern(n_layer_all, m.int("attention.sliding_window_pattern", 0))
        kw.update(
            n_swa=n_swa,
            is_swa=is_swa,
            head_k_swa=m.int("attention.key_length_swa", 0),
            head_v_swa=m.int("attention.value_length_swa", 0),
        )

    # recurrent layers
    is_recurrent: tuple[bool, ...] = ()
    if arch in ("qwen35", "qwen35moe", "qwen3next"):
        explicit = m.bools("attention.recurrent_layers")
        if explicit is not None:
            is_recurrent = explicit
        else:
            interval = m.int("full_attention_interval", 4, minimum=1)
            is_recurrent = tuple((il + 1) % interval != 0 for il in range(n_layer_all))
        kw.update(_ssm_keys(m))
    elif arch in ("granitehybrid", "lfm2", "lfm2moe"):
        is_recurrent = tuple(h == 0 for h in n_head_kv)
        if arch in ("lfm2", "lfm2moe"):
            kw["shortconv_l_cache"] = m.int("shortconv.l_cache", 3)
        else:
            kw.update(_ssm_keys(m))
    if is_recurrent:
        # the MTP blocks of hybrids are full attention
        is_recurrent = tuple(r and il < n_layer_all - n_nextn for il, r in enumerate(is_recurrent))
        n_head_kv = tuple(0 if r else h for h, r in zip(n_head_kv, is_recurrent, strict=True))
        kw["is_recurrent"] = is_recurrent

    # as a config's num_attention_heads and num_key_value_heads: at least one head in every
    # block with attention (0 marks a recurrent block, which has none)
    for key, heads in (("head_count", n_head), ("head_count_kv", n_head_kv)):
        zero = [
            il for il, h in enumerate(heads) if h < 1 and not (is_recurrent and is_recurrent[il])
        ]
        if zero:
            raise MetadataError(
                f"metadata key '{arch}.attention.{key}' is 0 for attention block {zero[0]}"
                + (f" and {len(zero) - 1} more" if len(zero) > 1 else "")
                + ": an attention block has at least one head"
            )

    if arch == "deepseek2":
        kw.update(
            kv_lora_rank=m.int("attention.kv_lora_rank", minimum=1),
            q_lora_rank=m.int("attention.q_lora_rank", 0),
            n_rot=m.int("rope.dimension_count", 64),
        )
        # newer files store the MLA head sizes separately; key_length then is the latent width
        kw["head_k_mla"] = m.int("attention.key_length_mla", head_k)
        kw["head_v_mla"] = m.int("attention.value_length_mla", head_v)
        # gating func 2 (sigmoid) comes with e_score_correction_bias -> exp_probs_b
        kw["expert_probs_bias"] = n_expert > 0 and m.int("expert_gating_func", 0) == 2

    if arch == "glm4moe":
        # the sigmoid router always comes with its correction bias (a required tensor)
        kw["expert_probs_bias"] = n_expert > 0
        if n_expert and not kw["n_ff_shexp"]:
            kw["n_ff_shexp"] = kw["n_ff_exp"] * kw["n_expert_shared"]  # as llama.cpp derives it

    if arch == "gemma4":
        kw["shared_kv_layers"] = m.int("attention.shared_kv_layers", 0)

    spec = ArchSpec(
        arch=arch,
        n_layer_all=n_layer_all,
        n_embd=n_embd,
        n_vocab=n_vocab,
        n_ctx_train=m.int("context_length", 0),
        n_head=n_head,
        n_head_kv=n_head_kv,
        head_k=head_k,
        head_v=head_v,
        n_ff=n_ff,
        n_nextn=n_nextn,
        **kw,
    )
    check_limits(spec, "GGUF metadata", MetadataError)
    return spec


def _ssm_keys(m: _Meta) -> dict[str, int]:
    return dict(
        ssm_d_conv=m.int("ssm.conv_kernel", 4),
        ssm_d_inner=m.int("ssm.inner_size", 0),
        ssm_d_state=m.int("ssm.state_size", 0),
        ssm_n_group=m.int("ssm.group_count", 1),
        ssm_dt_rank=m.int("ssm.time_step_rank", 0),
    )
