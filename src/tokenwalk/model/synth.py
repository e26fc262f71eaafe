"""The tensor table llama.cpp's converter would write for an `ArchSpec`.

Names are gguf-py's (``blk.3.attn_q.weight``), shapes are in ggml order (``ne[0]`` first, so
``token_embd.weight`` is ``(n_embd, n_vocab)``), following each architecture's
``load_arch_tensors`` in llama.cpp's ``src/models/<arch>.cpp`` and what
``convert_hf_to_gguf.py`` actually emits (separate q/k/v where it splits them, fused where it
keeps them fused, MLA ``attn_k_b``/``attn_v_b`` instead of ``attn_kv_b``).
"""

from __future__ import annotations

from collections.abc import Callable

from tokenwalk.errors import UnknownArchitectureError
from tokenwalk.model.spec import ArchSpec

__all__ = ["synthesize_tensors", "TensorShape", "SYNTH_ARCHITECTURES"]

TensorShape = tuple[str, tuple[int, ...]]


class _Table:
    """Collects (name, shape) pairs in the order they are added."""

    def __init__(self) -> None:
        self.rows: list[TensorShape] = []

    def add(self, name: str, *shape: int) -> None:
        self.rows.append((name, tuple(shape)))

    def blk(self, il: int, name: str, *shape: int) -> None:
        self.add(f"blk.{il}.{name}", *shape)


# ---------------------------------------------------------------------------------------------
# building blocks shared by several architectures


def _qkv(t: _Table, s: ArchSpec, il: int, *, q_mult: int = 1, bias: bool = False) -> None:
    """Separate q/k/v projections (``create_tensor_qkv`` without a fused tensor)."""
    n_q = s.head_k_at(il) * s.n_head[il] * q_mult
    n_k = s.head_k_at(il) * s.n_head_kv[il]
    n_v = s.head_v_at(il) * s.n_head_kv[il]
    t.blk(il, "attn_q.weight", s.n_embd, n_q)
    t.blk(il, "attn_k.weight", s.n_embd, n_k)
    t.blk(il, "attn_v.weight", s.n_embd, n_v)
    if bias:
        t.blk(il, "attn_q.bias", n_q)
        t.blk(il, "attn_k.bias", n_k)
        t.blk(il, "attn_v.bias", n_v)


def _attn_out(t: _Table, s: ArchSpec, il: int, *, bias: bool = False) -> None:
    t.blk(il, "attn_output.weight", s.head_v_at(il) * s.n_head[il], s.n_embd)
    if bias:
        t.blk(il, "attn_output.bias", s.n_embd)


def _qk_norm(t: _Table, s: ArchSpec, il: int) -> None:
    t.blk(il, "attn_q_norm.weight", s.head_k_at(il))
    t.blk(il, "attn_k_norm.weight", s.head_k_at(il))


def _dense_ffn(t: _Table, s: ArchSpec, il: int) -> None:
    n_ff = s.n_ff[il]
    t.blk(il, "ffn_gate.weight", s.n_embd, n_ff)
    t.blk(il, "ffn_up.weight", s.n_embd, n_ff)
    t.blk(il, "ffn_down.weight", n_ff, s.n_embd)


def _experts(t: _Table, s: ArchSpec, il: int, *, bias: bool = False) -> None:
    e, f = s.n_expert, s.n_ff_exp
    t.blk(il, "ffn_gate_inp.weight", s.n_embd, e)
    if bias:
        t.blk(il, "ffn_gate_inp.bias", e)
    if s.expert_probs_bias:
        t.blk(il, "exp_probs_b.bias", e)
    t.blk(il, "ffn_gate_exps.weight", s.n_embd, f, e)
    t.blk(il, "ffn_up_exps.weight", s.n_embd, f, e)
    t.blk(il, "ffn_down_exps.weight", f, s.n_embd, e)
    if bias:
        t.blk(il, "ffn_gate_exps.bias", f, e)
        t.blk(il, "ffn_up_exps.bias", f, e)
        t.blk(il, "ffn_down_exps.bias", s.n_embd, e)


def _shared_expert(t: _Table, s: ArchSpec, il: int, *, gate_inp: bool = False) -> None:
    f = s.n_ff_shexp
    if not f:
        return
    if gate_inp:
        t.blk(il, "ffn_gate_inp_shexp.weight", s.n_embd)
    t.blk(il, "ffn_gate_shexp.weight", s.n_embd, f)
    t.blk(il, "ffn_up_shexp.weight", s.n_embd, f)
    t.blk(il, "ffn_down_shexp.weight", f, s.n_embd)


def _ffn(t: _Table, s: ArchSpec, il: int) -> None:
    if s.moe(il):
        _experts(t, s, il)
        _shared_expert(t, s, il)
    else:
        _dense_ffn(t, s, il)


def _nextn(t: _Table, s: ArchSpec, il: int) -> None:
    """The MTP-specific tensors the Qwen converters write (embeddings and head are shared)."""
    t.blk(il, "nextn.eh_proj.weight", 2 * s.n_embd, s.n_embd)
    t.blk(il, "nextn.enorm.weight", s.n_embd)
    t.blk(il, "nextn.hnorm.weight", s.n_embd)
    t.blk(il, "nextn.shared_head_norm.weight", s.n_embd)


# ---------------------------------------------------------------------------------------------
# one function per architecture: the blocks, between token_embd and output_norm/output


def _llama(t: _Table, s: ArchSpec) -> None:
    if s.rope_freqs:
        t.add("rope_freqs.weight", (s.n_rot or s.head_k) // 2)
    for il in range(s.n_layer_all):
        t.blk(il, "attn_norm.weight", s.n_embd)
        _qkv(t, s, il)
        _attn_out(t, s, il)
        t.blk(il, "ffn_norm.weight", s.n_embd)
        if s.moe(il):
            _experts(t, s, il)
        else:
            _dense_ffn(t, s, il)


def _qwen2(t: _Table, s: ArchSpec) -> None:
    for il in range(s.n_layer_all):
        t.blk(il, "attn_norm.weight", s.n_embd)
        _qkv(t, s, il, bias=True)
        _attn_out(t, s, il)
        t.blk(il, "ffn_norm.weight", s.n_embd)
        _dense_ffn(t, s, il)


def _qwen3(t: _Table, s: ArchSpec) -> None:
    for il in range(s.n_layer_all):
        t.blk(il, "attn_norm.weight", s.n_embd)
        _qkv(t, s, il)
        _attn_out(t, s, il)
        _qk_norm(t, s, il)
        t.blk(il, "ffn_norm.weight", s.n_embd)
        _ffn(t, s, il)


def _gated_delta_net(t: _Table, s: ArchSpec, il: int, *, fused_beta_alpha: bool) -> None:
    key_dim = s.ssm_d_state * s.ssm_n_group
    value_dim = s.ssm_d_inner
    n_v_heads = s.ssm_dt_rank
    t.blk(il, "attn_qkv.weight", s.n_embd, 2 * key_dim + value_dim)
    t.blk(il, "attn_gate.weight", s.n_embd, value_dim)
    t.blk(il, "ssm_conv1d.weight", s.ssm_d_conv, 2 * key_dim + value_dim)
    t.blk(il, "ssm_dt.bias", n_v_heads)
    t.blk(il, "ssm_a", n_v_heads)
    if fused_beta_alpha:
        t.blk(il, "ssm_ba.weight", s.n_embd, 2 * n_v_heads)
    else:
        t.blk(il, "ssm_beta.weight", s.n_embd, n_v_heads)
        t.blk(il, "ssm_alpha.weight", s.n_embd, n_v_heads)
    t.blk(il, "ssm_norm.weight", value_dim // n_v_heads)
    t.blk(il, "ssm_out.weight", value_dim, s.n_embd)


def _qwen35_family(t: _Table, s: ArchSpec) -> None:
    """qwen35, qwen35moe, qwen3next: DeltaNet / gated attention hybrid, then MTP blocks."""
    for il in range(s.n_layer_all):
        t.blk(il, "attn_norm.weight", s.n_embd)
        t.blk(il, "post_attention_norm.weight", s.n_embd)
        if s.recurrent(il):
            _gated_delta_net(t, s, il, fused_beta_alpha=s.arch == "qwen3next")
        else:
            _qkv(t, s, il, q_mult=2)  # the query projection carries the output gate
            _attn_out(t, s, il)
            _qk_norm(t, s, il)
        if s.moe(il):
            _experts(t, s, il)
            _shared_expert(t, s, il, gate_inp=True)
        else:
            _dense_ffn(t, s, il)
        if il >= s.n_layer:
            _nextn(t, s, il)


def _gemma3(t: _Table, s: ArchSpec) -> None:
    for il in range(s.n_layer_all):
        t.blk(il, "attn_norm.weight", s.n_embd)
        _qkv(t, s, il)
        _attn_out(t, s, il)
        t.blk(il, "post_attention_norm.weight", s.n_embd)
        t.blk(il, "attn_k_norm.weight", s.head_k_at(il))
        t.blk(il, "attn_q_norm.weight", s.head_k_at(il))
        t.blk(il, "ffn_norm.weight", s.n_embd)
        _dense_ffn(t, s, il)
        t.blk(il, "post_ffw_norm.weight", s.n_embd)


def _gpt_oss(t: _Table, s: ArchSpec) -> None:
    for il in range(s.n_layer_all):
        t.blk(il, "attn_norm.weight", s.n_embd)
        t.blk(il, "post_attention_norm.weight", s.n_embd)
        _qkv(t, s, il, bias=True)
        _attn_out(t, s, il, bias=True)
        t.blk(il, "attn_sinks.weight", s.n_head[il])
        _experts(t, s, il, bias=True)


def _deepseek2(t: _Table, s: ArchSpec) -> None:
    nh = s.n_head[0]
    nope = s.head_k_mla - s.n_rot
    for il in range(s.n_layer_all):
        t.blk(il, "attn_norm.weight", s.n_embd)
        if s.q_lora_rank:
            t.blk(il, "attn_q_a_norm.weight", s.q_lora_rank)
        t.blk(il, "attn_kv_a_norm.weight", s.kv_lora_rank)
        if s.q_lora_rank:
            t.blk(il, "attn_q_a.weight", s.n_embd, s.q_lora_rank)
            t.blk(il, "attn_q_b.weight", s.q_lora_rank, nh * s.head_k_mla)
        else:
            t.blk(il, "attn_q.weight", s.n_embd, nh * s.head_k_mla)
        t.blk(il, "attn_kv_a_mqa.weight", s.n_embd, s.kv_lora_rank + s.n_rot)
        t.blk(il, "attn_k_b.weight", nope, s.kv_lora_rank, nh)
        t.blk(il, "attn_v_b.weight", s.kv_lora_rank, s.head_v_mla, nh)
        t.blk(il, "attn_output.weight", nh * s.head_v_mla, s.n_embd)
        t.blk(il, "ffn_norm.weight", s.n_embd)
        _ffn(t, s, il)
        if il >= s.n_layer:
            t.blk(il, "nextn.eh_proj.weight", 2 * s.n_embd, s.n_embd)
            t.blk(il, "nextn.enorm.weight", s.n_embd)
            t.blk(il, "nextn.hnorm.weight", s.n_embd)
            t.blk(il, "nextn.shared_head_norm.weight", s.n_embd)


def _glm4moe(t: _Table, s: ArchSpec) -> None:
    """GLM-4.5: llama.cpp's ``llama_model_glm4_moe::load_arch_tensors``. The MTP block also
    carries its own copy of the embeddings and head: the checkpoints hold
    ``model.layers.N.embed_tokens`` and ``shared_head.head``, which the converter writes as
    ``nextn.embed_tokens`` and ``nextn.shared_head_head``."""
    for il in range(s.n_layer_all):
        t.blk(il, "attn_norm.weight", s.n_embd)
        _qkv(t, s, il, bias=s.qkv_bias)
        _attn_out(t, s, il)
        if s.qk_norm:
            _qk_norm(t, s, il)
        t.blk(il, "post_attention_norm.weight", s.n_embd)
        _ffn(t, s, il)
        if il >= s.n_layer:
            _nextn(t, s, il)
            t.blk(il, "nextn.embed_tokens.weight", s.n_embd, s.n_vocab)
            t.blk(il, "nextn.shared_head_head.weight", s.n_embd, s.n_vocab)


def _granitehybrid(t: _Table, s: ArchSpec) -> None:
    d_inner, ng, ds, nh = s.ssm_d_inner, s.ssm_n_group, s.ssm_d_state, s.ssm_dt_rank
    conv_dim = d_inner + 2 * ng * ds
    for il in range(s.n_layer_all):
        t.blk(il, "attn_norm.weight", s.n_embd)
        if s.recurrent(il):
            t.blk(il, "ssm_in.weight", s.n_embd, 2 * d_inner + 2 * ng * ds + nh)
            t.blk(il, "ssm_conv1d.weight", s.ssm_d_conv, conv_dim)
            t.blk(il, "ssm_conv1d.bias", conv_dim)
            t.blk(il, "ssm_dt.bias", nh)
            t.blk(il, "ssm_a", 1, nh)
            t.blk(il, "ssm_d", 1, nh)
            t.blk(il, "ssm_norm.weight", d_inner // ng, ng)
            t.blk(il, "ssm_out.weight", d_inner, s.n_embd)
        else:
            _qkv(t, s, il)
            _attn_out(t, s, il)
        t.blk(il, "ffn_norm.weight", s.n_embd)
        _ffn(t, s, il)


def _lfm2(t: _Table, s: ArchSpec) -> None:
    """LFM2 and LFM2-MoE: short convolutions and a few attention layers; MoE layers after the
    leading dense ones."""
    for il in range(s.n_layer_all):
        t.blk(il, "ffn_norm.weight", s.n_embd)
        if s.moe(il):
            t.blk(il, "ffn_gate_inp.weight", s.n_embd, s.n_expert)
            t.blk(il, "ffn_gate_exps.weight", s.n_embd, s.n_ff_exp, s.n_expert)
            t.blk(il, "ffn_down_exps.weight", s.n_ff_exp, s.n_embd, s.n_expert)
            t.blk(il, "ffn_up_exps.weight", s.n_embd, s.n_ff_exp, s.n_expert)
            if s.expert_probs_bias:
                t.blk(il, "exp_probs_b.bias", s.n_expert)
        else:
            _dense_ffn(t, s, il)
        t.blk(il, "attn_norm.weight", s.n_embd)
        if s.recurrent(il):
            t.blk(il, "shortconv.conv.weight", s.shortconv_l_cache, s.n_embd)
            t.blk(il, "shortconv.in_proj.weight", s.n_embd, 3 * s.n_embd)
            t.blk(il, "shortconv.out_proj.weight", s.n_embd, s.n_embd)
        else:
            _qk_norm(t, s, il)
            _qkv(t, s, il)
            _attn_out(t, s, il)


def _gemma4(t: _Table, s: ArchSpec) -> None:
    """Gemma 4 as ``Gemma4Model`` converts it: one ``rope_freqs`` for the full layers, no K/V
    on layers that share an earlier layer's cache, no V where full layers use K as V, the dense
    FFN on every layer and, on MoE layers, a scaled router with fused gate/up experts."""
    if not all(s.swa(il) for il in range(s.n_layer_all)):
        t.add("rope_freqs.weight", s.head_k // 2)
    first_shared = s.n_layer - s.shared_kv_layers
    for il in range(s.n_layer_all):
        hk = s.head_k_at(il)
        n_q = hk * s.n_head[il]
        has_kv = il < first_shared
        t.blk(il, "attn_norm.weight", s.n_embd)
        t.blk(il, "attn_q.weight", s.n_embd, n_q)
        if has_kv:
            t.blk(il, "attn_k.weight", s.n_embd, hk * s.n_head_kv[il])
            if not (s.k_eq_v and not s.swa(il)):
                t.blk(il, "attn_v.weight", s.n_embd, s.head_v_at(il) * s.n_head_kv[il])
        t.blk(il, "attn_output.weight", n_q, s.n_embd)
        t.blk(il, "attn_q_norm.weight", hk)
        if has_kv:
            t.blk(il, "attn_k_norm.weight", hk)
        t.blk(il, "post_attention_norm.weight", s.n_embd)
        t.blk(il, "layer_output_scale.weight", 1)
        t.blk(il, "ffn_norm.weight", s.n_embd)
        _dense_ffn(t, s, il)
        t.blk(il, "post_ffw_norm.weight", s.n_embd)
        if s.moe(il):
            e, f = s.n_expert, s.n_ff_exp
            t.blk(il, "ffn_gate_inp.weight", s.n_embd, e)
            t.blk(il, "ffn_gate_inp.scale", s.n_embd)
            t.blk(il, "pre_ffw_norm_2.weight", s.n_embd)
            t.blk(il, "post_ffw_norm_1.weight", s.n_embd)
            t.blk(il, "post_ffw_norm_2.weight", s.n_embd)
            t.blk(il, "ffn_gate_up_exps.weight", s.n_embd, 2 * f, e)
            t.blk(il, "ffn_down_exps.weight", f, s.n_embd, e)
            t.blk(il, "ffn_down_exps.scale", e)


def _phi3(t: _Table, s: ArchSpec) -> None:
    for il in range(s.n_layer_all):
        n_qkv = s.head_k * (s.n_head[il] + s.n_head_kv[il]) + s.head_v * s.n_head_kv[il]
        t.blk(il, "attn_norm.weight", s.n_embd)
        t.blk(il, "attn_qkv.weight", s.n_embd, n_qkv)  # HF keeps qkv_proj fused
        _attn_out(t, s, il)
        t.blk(il, "ffn_norm.weight", s.n_embd)
        t.blk(il, "ffn_up.weight", s.n_embd, 2 * s.n_ff[il])  # gate_up_proj, fused
        t.blk(il, "ffn_down.weight", s.n_ff[il], s.n_embd)


def _phi2(t: _Table, s: ArchSpec) -> None:
    for il in range(s.n_layer_all):
        t.blk(il, "attn_norm.weight", s.n_embd)
        t.blk(il, "attn_norm.bias", s.n_embd)
        _qkv(t, s, il, bias=True)
        _attn_out(t, s, il, bias=True)
        t.blk(il, "ffn_up.weight", s.n_embd, s.n_ff[il])
        t.blk(il, "ffn_up.bias", s.n_ff[il])
        t.blk(il, "ffn_down.weight", s.n_ff[il], s.n_embd)
        t.blk(il, "ffn_down.bias", s.n_embd)


_BUILDERS: dict[str, Callable[[_Table, ArchSpec], None]] = {
    "llama": _llama,
    "mistral3": _llama,
    "qwen2": _qwen2,
    "qwen3": _qwen3,
    "qwen3moe": _qwen3,
    "qwen35": _qwen35_family,
    "qwen35moe": _qwen35_family,
    "qwen3next": _qwen35_family,
    "gemma3": _gemma3,
    "gemma4": _gemma4,
    "gpt-oss": _gpt_oss,
    "deepseek2": _deepseek2,
    "glm4moe": _glm4moe,
    "granitehybrid": _granitehybrid,
    "lfm2": _lfm2,
    "lfm2moe": _lfm2,
    "phi3": _phi3,
    "phi2": _phi2,
}

SYNTH_ARCHITECTURES: tuple[str, ...] = tuple(_BUILDERS)


def synthesize_tensors(spec: ArchSpec) -> list[TensorShape]:
    """Names and ggml-order shapes of every tensor the converted GGUF holds, in writing order.

    Embeddings first, then the blocks (MTP blocks last), then the output norm and, unless the
    embeddings are tied, the output head. Raises `UnknownArchitectureError` for an architecture
    whose table is only known from a real GGUF header.
    """
    build = _BUILDERS.get(spec.arch)
    if build is None:
        raise UnknownArchitectureError(
            f"cannot build the tensor table of architecture '{spec.arch}' from hyperparameters; "
            f"read it from a GGUF header instead. Buildable: {', '.join(SYNTH_ARCHITECTURES)}"
        )
    t = _Table()
    t.add("token_embd.weight", spec.n_embd, spec.n_vocab)
    build(t, spec)
    if spec.arch in ("lfm2", "lfm2moe"):
        t.add("token_embd_norm.weight", spec.n_embd)  # llama.cpp's name for LFM2's final norm
    else:
        t.add("output_norm.weight", spec.n_embd)
    if spec.arch == "phi2":
        t.add("output_norm.bias", spec.n_embd)
    if not spec.tied_embeddings:
        t.add("output.weight", spec.n_embd, spec.n_vocab)
        if spec.arch == "phi2":
            t.add("output.bias", spec.n_vocab)
    return t.rows
