"""Quant presets: the ggml type ``llama-quantize`` gives each tensor for a file type.

`assign_types` replays ``llama_tensor_get_type`` from llama.cpp's ``src/llama-quant.cpp`` over a
tensor table: which tensors may be quantized at all, the mix rules of each preset (more bits for
``attn_v`` and ``ffn_down`` in some layers, Q6_K output head, the 8-expert bumps, MXFP4 experts),
and the fallback to a 32-wide block type when a row is not a multiple of the 256-wide K-quant
or i-quant block (IQ4_NL for the i-quants). The source is taken to be a BF16 conversion, so
tensors the converter keeps in F32 (norms, biases, routers, convolution kernels) stay F32.

llama-quantize refuses the IQ1, IQ2, IQ3_XXS and IQ3_XS file types without an importance matrix
(``--imatrix``: any tensor it would write as IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S or IQ3_XXS needs
one), so those presets are replayed with one; its values change the weights, not their types.
The other presets are replayed as a plain ``llama-quantize IN OUT TYPE`` without one: an
importance matrix changes the types only of IQ3_XXS, IQ4_NL/IQ4_XS (no Q5_K ``ffn_down`` in the
first eighth of the layers) and Q4_0/Q5_0 (Q4_1/Q5_1 there).

Tensors that arrive already quantized keep their type under every preset: the converter writes
gpt-oss's expert weights as MXFP4 blocks whatever the output type, and llama-quantize does not
requantize a quantized tensor (it refuses to without ``--allow-requantize``), so published
gpt-oss files hold MXFP4 experts at Q4_K_M, Q8_0 and F16 alike; only the other tensors follow
the preset.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from tokenwalk.errors import UnknownNameError
from tokenwalk.gguf.constants import GGML_QUANT_SIZES, GGUF_DEFAULT_ALIGNMENT, GGMLQuantizationType
from tokenwalk.gguf.reader import TensorInfo, align_up
from tokenwalk.model.spec import ArchSpec

__all__ = ["Preset", "PRESETS", "assign_types", "preset", "ud_base", "ud_note"]

Q = GGMLQuantizationType


@dataclass(frozen=True)
class Preset:
    """A llama.cpp file type (``LLAMA_FTYPE_MOSTLY_*``) and its default tensor type.

    `imatrix` is true where llama-quantize needs an importance matrix to write the file type.
    """

    name: str
    default_type: GGMLQuantizationType
    description: str
    imatrix: bool = False

    @property
    def is_float(self) -> bool:
        return self.default_type in (Q.F32, Q.F16, Q.BF16)


def _bpw(t: GGMLQuantizationType) -> str:
    """Bits per weight of a ggml type, 8 x block bytes / block weights, as "2.06 bits/weight"."""
    block_weights, block_bytes = GGML_QUANT_SIZES[t]
    return f"{8 * block_bytes / block_weights:.2f} bits/weight"


_IMATRIX = "importance matrix required"

PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset("F32", Q.F32, "32-bit float"),
        Preset("F16", Q.F16, "16-bit float"),
        Preset("BF16", Q.BF16, "bfloat16"),
        Preset("Q8_0", Q.Q8_0, "8.5 bits/weight"),
        Preset("Q6_K", Q.Q6_K, "6.56 bits/weight"),
        Preset("Q5_K_M", Q.Q5_K, "Q5_K, attn_v/ffn_down Q6_K in half the layers"),
        Preset("Q5_K_S", Q.Q5_K, "Q5_K throughout"),
        Preset("Q5_1", Q.Q5_1, "6 bits/weight, legacy"),
        Preset("Q5_0", Q.Q5_0, "5.5 bits/weight, legacy"),
        Preset("Q4_K_M", Q.Q4_K, "Q4_K, attn_v/ffn_down Q6_K in half the layers"),
        Preset("Q4_K_S", Q.Q4_K, "Q4_K, a few early layers Q5_K"),
        Preset("Q4_1", Q.Q4_1, "5 bits/weight, legacy"),
        Preset("Q4_0", Q.Q4_0, "4.5 bits/weight, legacy"),
        Preset("Q3_K_L", Q.Q3_K, "Q3_K, attention and ffn_down Q5_K"),
        Preset("Q3_K_M", Q.Q3_K, "Q3_K, attn_v/ffn_down Q4_K-Q5_K"),
        Preset("Q3_K_S", Q.Q3_K, "Q3_K throughout"),
        Preset("Q2_K", Q.Q2_K, "Q2_K, attn_v Q3_K/Q4_K, ffn_down Q3_K"),
        Preset("IQ4_XS", Q.IQ4_XS, "4.25 bits/weight, non-linear"),
        Preset("IQ4_NL", Q.IQ4_NL, "4.5 bits/weight, non-linear"),
        Preset("IQ3_M", Q.IQ3_S, f"IQ3_S {_bpw(Q.IQ3_S)}, attention Q4_K"),
        Preset("IQ3_S", Q.IQ3_S, f"{_bpw(Q.IQ3_S)}, non-linear"),
        Preset("IQ3_XS", Q.IQ3_S, f"IQ3_S {_bpw(Q.IQ3_S)}, most ffn IQ3_XXS; {_IMATRIX}", True),
        Preset("IQ3_XXS", Q.IQ3_XXS, f"{_bpw(Q.IQ3_XXS)}, attn_q/k IQ2_S; {_IMATRIX}", True),
        Preset("IQ2_M", Q.IQ2_S, f"IQ2_S {_bpw(Q.IQ2_S)}, attention IQ3_S; {_IMATRIX}", True),
        Preset("IQ2_S", Q.IQ2_XS, f"IQ2_XS {_bpw(Q.IQ2_XS)}, attention IQ3_S; {_IMATRIX}", True),
        Preset("IQ2_XS", Q.IQ2_XS, f"{_bpw(Q.IQ2_XS)}, non-linear; {_IMATRIX}", True),
        Preset("IQ2_XXS", Q.IQ2_XXS, f"{_bpw(Q.IQ2_XXS)}, non-linear; {_IMATRIX}", True),
        Preset("IQ1_M", Q.IQ1_M, f"{_bpw(Q.IQ1_M)}, attn_output IQ2_XXS; {_IMATRIX}", True),
        Preset("IQ1_S", Q.IQ1_S, f"{_bpw(Q.IQ1_S)}, attn_output IQ2_XXS; {_IMATRIX}", True),
        Preset("TQ2_0", Q.TQ2_0, f"{_bpw(Q.TQ2_0)}, ternary, for BitNet-style models"),
        Preset("TQ1_0", Q.TQ1_0, f"{_bpw(Q.TQ1_0)}, ternary, for BitNet-style models"),
        Preset("MXFP4", Q.MXFP4, "experts MXFP4, everything else Q8_0 (MXFP4_MOE)"),
    )
}


# Unsloth's dynamic quants (UD-...) are llama-quantize presets with chosen tensors kept at
# higher precision (its own per-tensor recipe, not published as rules): sized as the preset
# they start from, which the answer says. The _XL names start from the preset below.
_UD_XL_BASE = {
    "Q8_K_XL": "Q8_0",
    "Q6_K_XL": "Q6_K",
    "Q5_K_XL": "Q5_K_M",
    "Q4_K_XL": "Q4_K_M",
    "Q3_K_XL": "Q3_K_M",
    "Q2_K_XL": "Q2_K",
}


def ud_base(name: str) -> str | None:
    """The preset an Unsloth dynamic quant is sized as ('UD-Q4_K_XL' -> 'Q4_K_M',
    'UD-IQ3_XXS' -> 'IQ3_XXS'), or None for a name that is not one."""
    key = name.strip().upper()
    if not key.startswith("UD-"):
        return None
    base = _UD_XL_BASE.get(key[3:], key[3:])
    return base if base in PRESETS else None


def ud_note(name: str) -> str | None:
    """What an answer says of a UD- quant: the preset it is sized as, and why."""
    base = ud_base(name)
    if base is None:
        return None
    return (
        f"{name.strip()} is Unsloth's dynamic quant: sized as {base}, the preset it starts "
        "from; Unsloth keeps some tensors at higher precision, so the file runs a little larger"
    )


def preset(name: str) -> Preset:
    """Look a preset up by name, case-insensitively (``q4_k_m`` and ``MXFP4_MOE`` work); an
    Unsloth dynamic quant (UD-Q4_K_XL) gives the preset it is sized as (`ud_base`)."""
    key = ud_base(name) or name.strip().upper()
    if key == "MXFP4_MOE":
        key = "MXFP4"
    if key not in PRESETS:
        raise UnknownNameError(
            f"unknown quant preset '{name}'; known presets: {', '.join(PRESETS)}"
        )
    return PRESETS[key]


# ---------------------------------------------------------------------------------------------
# What the converter keeps in F32 and what llama-quantize refuses to touch

_CONVERTER_F32 = re.compile(
    r"(ffn_gate_inp(_shexp)?\.weight|ssm_conv1d\.weight|shortconv\.conv\.weight)$"
)
_NOT_QUANTIZED = (
    "_norm.weight",
    "ffn_gate_inp.weight",
    "altup",
    "laurel",
    "per_layer_model_proj",
    "ssm_conv1d",
    "shortconv.conv.weight",
    "attn_rel_b.weight",
    "position_embd",
    "token_types",
)


_EXPERT_WEIGHT = re.compile(r"ffn_(gate|up|down)_exps\.weight$")


def _converter_type(
    spec: ArchSpec, name: str, shape: Sequence[int], float_type: GGMLQuantizationType
) -> Q:
    """Type in the converted GGUF: F32 where convert_hf_to_gguf forces it, the checkpoint's own
    type for expert weights that arrive quantized (`ArchSpec.expert_weights_type`), else the
    float output type."""
    if len(shape) <= 1 or name.endswith("_norm.weight") or not name.endswith(".weight"):
        return Q.F32
    if _CONVERTER_F32.search(name):
        return Q.F32
    if spec.expert_weights_type and _EXPERT_WEIGHT.search(name):
        return Q[spec.expert_weights_type]
    return float_type


def _is_quantized(t: Q) -> bool:
    return t not in (Q.F32, Q.F16, Q.BF16)


def _allows_quantization(name: str, shape: Sequence[int]) -> bool:
    """llama-quant.cpp ``tensor_allows_quantization``: 2-D and 3-D weights only, with exceptions."""
    n_dims = len(shape)
    while n_dims > 1 and shape[n_dims - 1] == 1:  # ggml_n_dims ignores trailing 1s
        n_dims -= 1
    if n_dims < 2 or not name.endswith("weight"):
        return False
    return not any(part in name for part in _NOT_QUANTIZED)


def _category(name: str) -> str:
    """llama-quant.cpp ``tensor_get_category``."""
    if name == "output.weight":
        return "output"
    if name in ("token_embd.weight", "per_layer_token_embd.weight"):
        return "token_embd"
    for part, cat in (
        ("attn_qkv.weight", "attn_qkv"),
        ("attn_kv_b.weight", "attn_kv_b"),
        ("attn_v.weight", "attn_v"),
        ("attn_k.weight", "attn_k"),
        ("attn_q.weight", "attn_q"),
        ("attn_output.weight", "attn_output"),
        ("ffn_up", "ffn_up"),
        ("ffn_gate", "ffn_gate"),
        ("ffn_down", "ffn_down"),
    ):
        if part in name:
            return cat
    return "other"


_BLK = re.compile(r"^blk\.(\d+)\.")


def _layer_of(name: str) -> int:
    m = _BLK.match(name)
    return int(m.group(1)) if m else -1


def _use_more_bits(i_layer: int, n_layers: int) -> bool:
    """The layers the _M mixes give more bits: the first and last eighth and every third."""
    return (
        i_layer < n_layers // 8
        or i_layer >= 7 * n_layers // 8
        or (i_layer - n_layers // 8) % 3 == 2
    )


def _block_size(t: Q) -> int:
    return GGML_QUANT_SIZES[t][0]


_FALLBACK = {
    Q.IQ1_S: Q.IQ4_NL,
    Q.IQ1_M: Q.IQ4_NL,
    Q.IQ2_XXS: Q.IQ4_NL,
    Q.IQ2_XS: Q.IQ4_NL,
    Q.IQ2_S: Q.IQ4_NL,
    Q.IQ3_XXS: Q.IQ4_NL,
    Q.IQ3_S: Q.IQ4_NL,
    Q.IQ4_XS: Q.IQ4_NL,
    Q.Q2_K: Q.Q4_0,
    Q.Q3_K: Q.Q4_0,
    Q.TQ1_0: Q.Q4_0,
    Q.TQ2_0: Q.Q4_0,
    Q.Q4_K: Q.Q5_0,
    Q.Q5_K: Q.Q5_1,
    Q.Q6_K: Q.Q8_0,
}


def _fallback(ncols: int, t: Q) -> Q:
    """``tensor_type_fallback``: a row not divisible by the block takes a 32-wide type, or F16."""
    if ncols % _block_size(t) == 0:
        return t
    t = _FALLBACK.get(t, t)
    return t if ncols % _block_size(t) == 0 else Q.F16


class _State:
    """The counters of llama-quant.cpp's ``quantize_state_impl``."""

    def __init__(self, spec: ArchSpec, names: Sequence[str], has_imatrix: bool) -> None:
        self.spec = spec
        self.has_imatrix = has_imatrix
        self.n_attention_wv = sum(
            _category(n) in ("attn_v", "attn_qkv", "attn_kv_b") for n in names
        )
        self.i_attention_wv = 0
        self.n_ffn_down = self.n_ffn_gate = self.n_ffn_up = spec.n_layer_all
        self.i_ffn_down = self.i_ffn_gate = self.i_ffn_up = 0
        self.has_tied_embeddings = "output.weight" not in names
        n_head0, n_head_kv0 = spec.n_head[0], spec.n_head_kv[0]
        self.n_gqa = n_head0 // n_head_kv0 if n_head_kv0 else 0
        self.n_expert = spec.n_expert
        # llama.cpp's LLM_TYPE_70B: 80-layer qwen2, or llama with grouped-query attention (an
        # 8-expert llama is typed 8x7B / 8x22B instead)
        self.is_70b = spec.n_layer == 80 and (
            spec.arch == "qwen2"
            or (spec.arch == "llama" and n_head0 != n_head_kv0 and spec.n_expert != 8)
        )

    def layer(self, name: str, counter: int) -> int:
        """``layer_info``: the block number from the name in a MoE (experts are not stored in
        layer order), else the running count of tensors of the category."""
        return _layer_of(name) if self.n_expert > 1 else counter


# File types grouped as llama-quant.cpp tests them
_IQ1_IQ2 = frozenset({"IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M"})
_HEAD_Q5_K = _IQ1_IQ2 | {"IQ3_XXS"}  # output head (and tied embeddings) Q5_K, not Q6_K
_EMBD_Q2_K = frozenset({"IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS"})
_EMBD_IQ3_S = frozenset({"IQ2_S", "IQ2_M", "IQ3_XXS"})
_TERNARY = frozenset({"TQ1_0", "TQ2_0"})
_ATTN_OUTPUT_8_EXPERTS_Q5_K = frozenset(
    {"Q2_K", "IQ3_XS", "IQ3_XXS", "Q3_K_S", "Q3_K_M", "IQ4_NL", "Q4_K_S", "Q4_K_M", "IQ3_S",
     "IQ3_M", "IQ4_XS"}
)  # fmt: skip


def _mix_type(st: _State, name: str, shape: Sequence[int], p: str, new: Q) -> Q:
    """``llama_tensor_get_type_impl`` for the presets tokenwalk offers, branch for branch."""
    cat = _category(name)
    if cat == "output" or (st.has_tied_embeddings and cat == "token_embd"):
        if p == "MXFP4" or shape[0] % _block_size(new) != 0:
            return Q.Q8_0
        if p in _HEAD_Q5_K:
            return Q.Q5_K
        return new if new == Q.Q8_0 else Q.Q6_K
    if p == "MXFP4":
        is_3d = len(shape) > 2 and shape[2] > 1
        return Q.MXFP4 if is_3d else Q.Q8_0
    if cat == "token_embd":
        if p in _EMBD_Q2_K:
            return Q.Q2_K
        if p in _EMBD_IQ3_S:
            return Q.IQ3_S
        if p in _TERNARY:
            return Q.Q4_K
        return new
    if p in _IQ1_IQ2:
        return _mix_type_iq1_iq2(st, cat, p, new)
    if cat in ("attn_v", "attn_qkv", "attn_kv_b"):
        i = st.i_attention_wv
        if p == "Q2_K":
            new = Q.Q4_K if st.n_gqa >= 4 else Q.Q3_K
        elif p == "IQ3_XXS":
            new = Q.Q4_K if st.n_gqa >= 4 else Q.IQ3_XXS if st.has_imatrix else Q.IQ3_S
        elif p in ("IQ3_XS", "IQ3_S") and st.n_gqa >= 4:
            new = Q.Q4_K
        elif p == "IQ3_M":
            new = Q.Q4_K
        elif p == "Q3_K_M":
            new = Q.Q5_K if i < 2 else Q.Q4_K
        elif p == "Q3_K_L":
            new = Q.Q5_K
        elif p in ("IQ4_NL", "IQ4_XS") and st.n_gqa >= 4:
            new = Q.Q5_K
        elif p in ("Q4_K_M", "Q5_K_M") and _use_more_bits(i, st.n_attention_wv):
            new = Q.Q6_K
        elif p == "Q4_K_S" and i < 4:
            new = Q.Q5_K
        if st.is_70b and new in (Q.Q3_K, Q.Q4_K):
            new = Q.Q5_K
        if st.n_expert == 8:
            new = Q.Q8_0
        st.i_attention_wv += 1
        return new
    if cat == "attn_k":
        if st.n_expert == 8:
            return Q.Q8_0
        return {"IQ3_XS": Q.IQ3_XXS, "IQ3_XXS": Q.IQ2_S}.get(p, new)
    if cat == "attn_q":
        return {"IQ3_XS": Q.IQ3_XXS, "IQ3_XXS": Q.IQ2_S}.get(p, new)
    if cat == "ffn_down":
        i_layer, n_layer = st.layer(name, st.i_ffn_down), st.n_ffn_down
        if p == "Q2_K":
            new = Q.Q3_K
        elif p == "IQ3_XXS" and not st.has_imatrix:
            new = Q.Q4_K if i_layer < n_layer // 8 else Q.Q3_K
        elif p == "Q3_K_M":
            new = Q.Q5_K if i_layer < n_layer // 16 else Q.Q4_K
        elif p == "IQ3_M" and (
            i_layer < n_layer // 8 or (st.n_expert == 8 and _use_more_bits(i_layer, n_layer))
        ):
            new = Q.Q4_K
        elif p == "Q3_K_L":
            new = Q.Q5_K
        elif p == "Q4_K_M":
            if _use_more_bits(i_layer, n_layer):
                new = Q.Q6_K
        elif i_layer < n_layer // 8 and p in ("IQ4_NL", "IQ4_XS") and not st.has_imatrix:
            new = Q.Q5_K
        elif p == "Q5_K_M" and _use_more_bits(i_layer, n_layer):
            new = Q.Q6_K
        elif p == "Q4_K_S" and i_layer < n_layer // 8:
            new = Q.Q5_K
        st.i_ffn_down += 1
        return new
    if cat == "attn_output":
        if st.n_expert == 8:
            if p in _ATTN_OUTPUT_8_EXPERTS_Q5_K:
                new = Q.Q5_K
        elif p == "Q2_K":
            new = Q.Q3_K
        elif p == "IQ3_XXS":
            new = Q.IQ3_S
        elif p in ("Q3_K_M", "IQ3_M"):
            new = Q.Q4_K
        elif p == "Q3_K_L":
            new = Q.Q5_K
        return new
    if cat in ("ffn_gate", "ffn_up"):
        counter = st.i_ffn_gate if cat == "ffn_gate" else st.i_ffn_up
        i_layer, n_layer = st.layer(name, counter), st.n_ffn_gate
        if p == "IQ3_XS" and n_layer // 8 <= i_layer < 7 * n_layer // 8:
            new = Q.IQ3_XXS
        if cat == "ffn_gate":
            st.i_ffn_gate += 1
        else:
            st.i_ffn_up += 1
        return new
    return new


def _mix_type_iq1_iq2(st: _State, cat: str, p: str, new: Q) -> Q:
    """The IQ1/IQ2 branch of ``llama_tensor_get_type_impl``: a few tensors a step up.

    Unlike the other mixes, ``ffn_down`` counts tensors rather than reading the block number,
    so in a MoE with a shared expert (two ``ffn_down`` tensors a layer) the bump covers the
    first sixteenth of the layers rather than the first eighth.
    """
    step_up = Q.IQ3_S if p in ("IQ2_S", "IQ2_M") else Q.Q2_K
    if cat in ("attn_v", "attn_qkv", "attn_kv_b"):
        new = Q.Q4_K if st.n_gqa >= 4 or st.n_expert >= 4 else step_up
        st.i_attention_wv += 1
    elif st.n_expert == 8 and cat == "attn_k":
        new = Q.Q4_K
    elif cat == "ffn_down":
        if st.i_ffn_down < st.n_ffn_down // 8:
            new = step_up
        st.i_ffn_down += 1
    elif cat == "attn_output":
        if st.n_expert == 8:
            new = Q.Q5_K
        elif p in ("IQ1_S", "IQ1_M"):
            new = Q.IQ2_XXS
        elif p in ("IQ2_S", "IQ2_M"):
            new = Q.IQ3_S
    return new


def _weights_map_key(name: str) -> tuple[int, str]:
    """llama-model-loader's ``weight_name_comparer``: by block number, then by name."""
    return (_layer_of(name), name)


def assign_types(
    spec: ArchSpec, tensors: Sequence[tuple[str, tuple[int, ...]]], preset_name: str
) -> list[TensorInfo]:
    """The tensor table of a `preset_name` GGUF: each tensor's ggml type and data offset.

    Tensors come back in the order llama-quantize writes them (by block, then by name), with
    offsets laid out sequentially and aligned to 32 bytes as in a GGUF data section. Raises
    `UnknownNameError` for a preset not in `PRESETS`.
    """
    p = preset(preset_name)
    ordered = sorted(tensors, key=lambda t: _weights_map_key(t[0]))
    st = _State(spec, [n for n, _ in ordered], p.imatrix)
    source_float = p.default_type if p.is_float else Q.BF16
    out: list[TensorInfo] = []
    offset = 0
    for name, shape in ordered:
        shape = tuple(shape)
        src = _converter_type(spec, name, shape, source_float)
        if _allows_quantization(name, shape):
            if p.is_float:
                new = p.default_type
            else:
                new = _fallback(shape[0], _mix_type(st, name, shape, p.name, p.default_type))
            if _is_quantized(src):
                new = src  # arrives quantized: copied as it is, never requantized
        else:
            new = src
        info = TensorInfo(name=name, shape=shape, ggml_type=int(new), offset=offset)
        out.append(info)
        offset += align_up(info.n_bytes, GGUF_DEFAULT_ALIGNMENT)
    return out
