"""Quant presets: the ggml type ``llama-quantize`` gives each tensor for a file type.

`assign_types` replays ``llama_tensor_get_type`` from llama.cpp's ``src/llama-quant.cpp`` over a
tensor table: which tensors may be quantized at all, the mix rules of each preset (more bits for
``attn_v`` and ``ffn_down`` in some layers, Q6_K output head, the 8-expert bumps, MXFP4 experts),
and the fallback to a 32-wide block type when a row is not a multiple of the 256-wide K-quant
block. The source is taken to be a BF16 conversion, so tensors the converter keeps in F32
(norms, biases, routers, convolution kernels) stay F32.

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

__all__ = ["Preset", "PRESETS", "assign_types", "preset"]

Q = GGMLQuantizationType


@dataclass(frozen=True)
class Preset:
    """A llama.cpp file type (``LLAMA_FTYPE_MOSTLY_*``) and its default tensor type."""

    name: str
    default_type: GGMLQuantizationType
    description: str

    @property
    def is_float(self) -> bool:
        return self.default_type in (Q.F32, Q.F16, Q.BF16)


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
        Preset("MXFP4", Q.MXFP4, "experts MXFP4, everything else Q8_0 (MXFP4_MOE)"),
    )
}


def preset(name: str) -> Preset:
    """Look a preset up by name, case-insensitively (``q4_k_m`` and ``MXFP4_MOE`` work)."""
    key = name.strip().upper()
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
    Q.IQ4_XS: Q.IQ4_NL,
    Q.Q2_K: Q.Q4_0,
    Q.Q3_K: Q.Q4_0,
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

    def __init__(self, spec: ArchSpec, names: Sequence[str]) -> None:
        self.spec = spec
        self.n_attention_wv = sum(
            _category(n) in ("attn_v", "attn_qkv", "attn_kv_b") for n in names
        )
        self.i_attention_wv = 0
        self.n_ffn_down = spec.n_layer_all
        self.i_ffn_down = 0
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


def _mix_type(st: _State, name: str, shape: Sequence[int], p: str, new: Q) -> Q:
    """``llama_tensor_get_type_impl`` for the presets tokenwalk offers."""
    cat = _category(name)
    if cat == "output" or (st.has_tied_embeddings and cat == "token_embd"):
        if p == "MXFP4" or shape[0] % _block_size(new) != 0:
            return Q.Q8_0
        return new if new == Q.Q8_0 else Q.Q6_K
    if p == "MXFP4":
        is_3d = len(shape) > 2 and shape[2] > 1
        return Q.MXFP4 if is_3d else Q.Q8_0
    if cat == "token_embd":
        return new
    if cat in ("attn_v", "attn_qkv", "attn_kv_b"):
        i = st.i_attention_wv
        if p == "Q2_K":
            new = Q.Q4_K if st.n_gqa >= 4 else Q.Q3_K
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
        return Q.Q8_0 if st.n_expert == 8 else new
    if cat == "attn_q":
        return new
    if cat == "ffn_down":
        if st.n_expert > 1:
            i_layer = _layer_of(name)
        else:
            i_layer = st.i_ffn_down
        n_layer = st.n_ffn_down
        if p == "Q2_K":
            new = Q.Q3_K
        elif p == "Q3_K_M":
            new = Q.Q5_K if i_layer < n_layer // 16 else Q.Q4_K
        elif p == "Q3_K_L":
            new = Q.Q5_K
        elif p == "Q4_K_M":
            if _use_more_bits(i_layer, n_layer):
                new = Q.Q6_K
        elif i_layer < n_layer // 8 and p in ("IQ4_NL", "IQ4_XS"):
            new = Q.Q5_K
        elif p == "Q5_K_M" and _use_more_bits(i_layer, n_layer):
            new = Q.Q6_K
        elif p == "Q4_K_S" and i_layer < n_layer // 8:
            new = Q.Q5_K
        st.i_ffn_down += 1
        return new
    if cat == "attn_output":
        if st.n_expert == 8:
            if p in ("Q2_K", "Q3_K_S", "Q3_K_M", "IQ4_NL", "Q4_K_S", "Q4_K_M", "IQ4_XS"):
                new = Q.Q5_K
        elif p == "Q2_K":
            new = Q.Q3_K
        elif p == "Q3_K_M":
            new = Q.Q4_K
        elif p == "Q3_K_L":
            new = Q.Q5_K
        return new
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
    st = _State(spec, [n for n, _ in ordered])
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
