"""Per-layer description: what kind of attention and FFN each block has, and what it caches.

This is where architecture differences live, so that cost formulas stay general: a layer
*knows* that it slides, that it keeps a fixed recurrent state, or that it caches an MLA latent.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from tokenwalk.model.spec import ArchSpec

__all__ = ["Attention", "Ffn", "Layer", "build_layers"]


class Attention(str, Enum):
    FULL = "full"
    SLIDING = "sliding"
    MLA = "mla"
    RECURRENT = "recurrent"  # Gated DeltaNet, Mamba2, short convolution: a fixed state
    NONE = "none"


class Ffn(str, Enum):
    DENSE = "dense"
    MOE = "moe"
    NONE = "none"


@dataclass(frozen=True)
class Layer:
    """One block. Cache widths are elements per token; state sizes are f32 elements per sequence."""

    index: int
    attention: Attention
    ffn: Ffn
    mtp: bool = False  # a multi-token-prediction block: counted for size, not run by decoding
    kv_heads: int = 0
    head_k: int = 0
    head_v: int = 0
    window: int = 0  # sliding window in tokens
    k_width: int = 0  # K elements cached per token
    v_width: int = 0  # V elements cached per token (0 for MLA: V is read from the latent)
    shares_kv: bool = False  # reuses an earlier layer's cache (no memory of its own)
    state_conv: int = 0  # recurrent: convolution state elements (n_embd_r)
    state_ssm: int = 0  # recurrent: SSM / delta-rule state elements (n_embd_s)
    n_ff: int = 0  # dense FFN width
    n_expert: int = 0
    n_expert_used: int = 0
    n_expert_shared: int = 0
    n_ff_exp: int = 0

    @property
    def has_kv(self) -> bool:
        return self.k_width > 0 and not self.shares_kv and not self.mtp

    @property
    def has_scan_state(self) -> bool:
        """A recurrent layer with an SSM / delta-rule state (Gated DeltaNet, Mamba), not only a
        convolution's (LFM2's short conv)."""
        return self.attention is Attention.RECURRENT and self.state_ssm > 0

    @property
    def state_elems(self) -> int:
        return self.state_conv + self.state_ssm


def _recurrent_state(spec: ArchSpec) -> tuple[int, int]:
    """(n_embd_r, n_embd_s) of a recurrent layer, as llama.cpp's llama_hparams computes them.

    conv: (d_conv - 1) x (d_inner + 2 x n_group x d_state); LFM2 short conv: n_embd x (L - 1).
    ssm:  d_state x d_inner (Mamba2; for Gated DeltaNet d_state = head_k, d_inner = value dim,
          so it equals head_k x head_v x value heads).
    """
    if spec.shortconv_l_cache:
        return spec.n_embd * (spec.shortconv_l_cache - 1), 0
    conv = max(spec.ssm_d_conv - 1, 0) * (
        spec.ssm_d_inner + 2 * spec.ssm_n_group * spec.ssm_d_state
    )
    return conv, spec.ssm_d_state * spec.ssm_d_inner


def build_layers(spec: ArchSpec) -> tuple[Layer, ...]:
    """Describe every block of `spec`, decoding blocks first, then MTP blocks."""
    conv, ssm = _recurrent_state(spec)
    first_shared = spec.n_layer - spec.shared_kv_layers if spec.shared_kv_layers else None
    layers = []
    for il in range(spec.n_layer_all):
        mtp = il >= spec.n_layer
        if spec.moe(il):
            ffn = Ffn.MOE
        elif spec.n_ff[il] > 0:
            ffn = Ffn.DENSE
        else:
            ffn = Ffn.NONE
        moe_kw = (
            dict(
                n_expert=spec.n_expert,
                n_expert_used=spec.n_expert_used,
                n_expert_shared=spec.n_expert_shared,
                n_ff_exp=spec.n_ff_exp,
            )
            if ffn is Ffn.MOE
            else {}
        )
        common = dict(index=il, ffn=ffn, mtp=mtp, n_ff=spec.n_ff[il], **moe_kw)
        if spec.recurrent(il):
            layers.append(
                Layer(attention=Attention.RECURRENT, state_conv=conv, state_ssm=ssm, **common)
            )
            continue
        n_kv = spec.n_head_kv[il]
        if spec.is_mla:
            layers.append(
                Layer(
                    attention=Attention.MLA,
                    kv_heads=1,
                    head_k=spec.kv_lora_rank + spec.n_rot,
                    k_width=spec.kv_lora_rank + spec.n_rot,
                    **common,
                )
            )
            continue
        if n_kv == 0 or spec.n_head[il] == 0:
            layers.append(Layer(attention=Attention.NONE, **common))
            continue
        hk, hv = spec.head_k_at(il), spec.head_v_at(il)
        sliding = spec.swa(il) and spec.n_swa > 0
        layers.append(
            Layer(
                attention=Attention.SLIDING if sliding else Attention.FULL,
                kv_heads=n_kv,
                head_k=hk,
                head_v=hv,
                window=spec.n_swa if sliding else 0,
                k_width=n_kv * hk,
                v_width=n_kv * hv,
                shares_kv=first_shared is not None and first_shared <= il < spec.n_layer,
                **common,
            )
        )
    return tuple(layers)
