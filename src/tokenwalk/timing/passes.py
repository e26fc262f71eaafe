"""How long a pass takes: the roofline, made honest by fitted efficiencies.

A pass runs n tokens (per stream, over s streams) through every layer at context c (tokens
already cached). It reads

    B(n, c) = W(n s) + s x KV(n, c) + 2 s x S                                        [bytes]

(W: weights the n s tokens touch, experts woken included; KV: the cache cells its queries see;
S: the recurrent state, read and written) and does

    F(n, c) = 2 x P_body x n s + 2 x P_head x logits + s x A(n, c)                    [FLOP]

(P_body: active weights below the output head; the head only runs for the tokens that need
logits; A: attention scores and the weighted sum of values). Its time is

    t = max(B / (BW x eff_bw), (F + rows_half x R) / (FLOPS x eff_compute))
        + L x overhead_per_layer_s                                                    [s]

with BW, FLOPS the spec-sheet rates, R = sum over products of F_i / rows_i, L the decoding
layers in llama layers of llama.cpp's compute graph (each its model's graph nodes per layer over
a llama layer's; `PassWork.overhead_layers`),
and (eff_bw, eff_compute, rows_half, overhead_per_layer_s) the machine's fitted efficiencies
(`pass_seconds`). A pass of at most 8 tokens runs its weight
products on llama.cpp's mat-vec kernels, which stream each weight once: its F counts only A.
A CPU's F adds what its build's flash attention does one element at a time (`fa_scalar_flops`).
Decode is n = 1 per stream; prefill is chunks of `ubatch` tokens with the context growing chunk
by chunk; speculative verification is n = draft length + 1. Everything here is pure: no I/O.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from pydantic import BaseModel, ConfigDict

from tokenwalk.costs.energy import EnergyCost
from tokenwalk.costs.kv import context_points, kv_bytes_per_cell, kv_element_bytes, state_bytes
from tokenwalk.costs.weights import (
    active_params,
    expert_read_fraction,
    experts_woken,
    per_model,
    tensor_read_fraction,
    weight_bytes_read,
)
from tokenwalk.errors import InputError
from tokenwalk.machine import Machine
from tokenwalk.model.layers import Attention, Layer
from tokenwalk.model.model import Model, Role, Tensor
from tokenwalk.timing.accuracy import ExpectedError
from tokenwalk.timing.efficiency import Efficiency
from tokenwalk.units import Bytes

__all__ = [
    "READING_TOK_S",
    "compared_with_reading",
    "RECURRENT_LAYER_OVERHEAD",
    "DEFAULT_UBATCH",
    "PassWork",
    "PassCost",
    "DecodeReport",
    "PrefillChunk",
    "PrefillReport",
    "head_params",
    "head_tensors",
    "cpu_matvec_kernels",
    "attended_cells",
    "kv_read_bytes",
    "state_traffic_bytes",
    "matmul_flops",
    "expert_params",
    "active_expert_params",
    "expert_rows",
    "expert_tile_width",
    "tile_utilisation",
    "expected_tiles",
    "expert_padded_rows",
    "expert_tile_flops",
    "weight_row_flops",
    "matrix_flops",
    "matrix_row_flops",
    "CPU_KERNEL_TIME",
    "CPU_KERNEL_TWIN",
    "cpu_kernel_time",
    "MATVEC_MAX_BATCH",
    "attention_flops",
    "one_row_attention",
    "fa_scalar_flops",
    "cpu_fa_rest",
    "F16_VECTOR_STEPS",
    "FA_TILE_Q",
    "FA_SCALAR_FLOPS",
    "recurrent_flops",
    "pass_work",
    "pass_seconds",
    "pass_cost",
    "expert_compute",
    "experts_at_dense_rate",
    "compute_fit",
    "pass_time",
    "decode_ceiling_tok_s",
    "prefill_chunks",
    "decode_report",
    "ContextPoint",
    "decode_by_context",
    "prefill_report",
    "DevicePart",
    "SplitInfo",
]

READING_TOK_S = (5.0, 8.0)  # silent reading, in tokens per second (about 4 to 6 words)
DEFAULT_UBATCH = 512  # llama.cpp's n_ubatch: tokens per prefill pass
RECURRENT_FLOPS_PER_STATE_ELEMENT = 4.0  # read S.k, decay, rank-one update, S.q per token
# llama.cpp multiplies batches of up to 8 tokens with mat-vec kernels (CUDA MMVQ_MAX_BATCH_SIZE,
# Vulkan mul_mat_vec_max_cols, Metal mul_mv_ext): each weight is streamed once and its few
# multiply-adds hide under the read, so such passes pay no matrix-unit compute term.
MATVEC_MAX_BATCH = 8
# A recurrent layer with a scan state (Gated DeltaNet, Mamba) pays the fixed per-layer cost this
# many times: its graph has more kernels than an attention layer's (a short-conv layer, LFM2's,
# counts once: a convolution between two projections). llama-fit-params -v ("graph:
# nodes") counts Qwen3.6-27B at 3,751 nodes for 64 layers, 48 of them Gated DeltaNet: about 66
# a recurrent layer against about 36 an attention layer; Qwen3.6-35B-A3B 3,787 for 40 layers (30
# recurrent) against Qwen3-30B-A3B's 3,030 for 48 attention layers (about 1.5x). The value 2 was
# chosen by leave-one-device-out cross-validation among 1.5, 1.8, 2, 2.5 and 3 (mean
# |ln(predicted / measured)| 0.213, 0.210, 0.206, 0.206, 0.210; 1: 0.214; short-conv layers then
# counted too): the node counts give the direction, the cross-validation the value
# (docs/timing-model.md).
RECURRENT_LAYER_OVERHEAD = 2.0
# The fixed cost of a pass grows with llama.cpp's compute-graph nodes (kernel launches, graph
# bookkeeping): a layer counts its model's graph nodes per layer over a llama layer's, measured
# by llama-fit-params for every catalogue model (data/graph_nodes.yaml; `Model.layer_nodes`).
# Llama 2 7B: 998 nodes for 32 layers. A model of an architecture never measured counts its
# layers, a scan layer RECURRENT_LAYER_OVERHEAD times, as before the counts were measured.
LLAMA_LAYER_NODES = 998 / 32
# ggml-cpu's flash attention takes a query row at a time when a sequence has fewer than
# GGML_FA_TILE_Q = 64 queries in the pass (ops.cpp `ggml_compute_forward_flash_attn_ext_f16`:
# decoding, a draft's verification; larger passes take the tiled kernel): per cached cell a d_k
# dot product with the cell's key (`ggml_vec_dot_f16`) and a d_v multiply-add of its value into
# the sum (`ggml_vec_mad_f16`). Both run in whole steps of the build's f16 vectors and do the
# rest one element at a time, each converted from f16 and back (vec.h; the steps are
# simd-mappings.h's GGML_F16_DOT_STEP and GGML_F16_STEP, elements): a native build on a CPU
# with AVX512-FP16 (Sapphire Rapids and later) multiplies-and-adds in steps of 128, so a head
# of 64 does its whole value sum one element at a time (release builds load ggml's
# sapphirerapids variant, which leaves AVX512-FP16 out: avx512).
FA_TILE_Q = 64
F16_VECTOR_STEPS = {  # Machine.cpu_simd -> (dot-product step, multiply-add step)
    "avx512_fp16": (64, 128),
    "avx512": (64, 64),
    "avx2": (32, 32),
    "neon": (32, 32),  # with FP16 vector arithmetic (ARMv8.2-A and later)
}
# What one such element costs, in FLOPs of the machine's fitted compute rate: fitted on the
# difference one build option makes (-mno-avx512fp16) to SmolLM2-135M's decoding at depth on a
# 2-core Emerald Rapids guest (tests/data/cpu-attention-depth, benchmarks/cpu_attention.py).
FA_SCALAR_FLOPS = 163.0
# The time llama.cpp's CPU kernels take to multiply a weight of each type in a prefill pass,
# relative to a Q4_K weight of as many elements: pp512 of one model quantized --pure to each type,
# one thread of the project's own Xeon (AVX-512; scripts/cpu_kernels.py, tests/data/cpu-kernels,
# docs/timing-model.md "CPU kernels per weight type"). The kernel behind a type differs
# (llamafile's tinyBLAS, a repacked layout, ggml's dot product per row and column); a type not
# measured counts as its twin's (`CPU_KERNEL_TWIN`), else as Q4_K.
CPU_KERNEL_TIME: dict[str, float] = {
    "IQ4_XS": 0.63,
    "Q5_K": 0.68,
    "Q3_K": 0.70,
    "Q6_K": 0.72,
    "Q4_K": 1.00,
    "Q2_K": 1.07,
    "IQ4_NL": 1.15,
    "Q4_0": 1.16,
    "F16": 1.48,
    "Q8_0": 1.52,
    "BF16": 1.55,
    "Q5_0": 1.79,
    "Q4_1": 3.06,
    "Q5_1": 3.57,
}


# The time llama.cpp's CPU mat-vec kernels (a decoding step: one token, `ggml_vec_dot_*` per
# row or a repacked type's gemv) take per weight of each type, relative to a Q4_K weight, with
# the weights streamed from DRAM as a real model's are: tg64 of TinyLlama 1.1B's shape quantized
# --pure to each type (0.36 to 2.2 GB), one thread of the project's own Xeon, two sessions of
# two runs (scripts/cpu_kernels.py --dram, tests/data/cpu-matvec-dram; docs/timing-model.md
# "A CPU's decoding step"). With the weights in cache the types order otherwise (Q8_0 2.74,
# F16 4.18, Q4_0 1.09: tests/data/cpu-kernels, tg128): a model of gigabytes meets this table.
CPU_MATVEC_TIME: dict[str, float] = {
    "Q2_K": 0.89,
    "Q4_K": 1.00,
    "Q3_K": 1.18,
    "Q6_K": 1.58,
    "IQ4_NL": 1.76,
    "Q4_0": 1.79,
    "Q4_1": 2.07,
    "Q8_0": 2.09,
    "IQ4_XS": 2.43,
    "Q5_K": 2.64,
    "Q5_1": 2.84,
    "F16": 2.85,
    "Q5_0": 3.05,
    "BF16": 3.30,
}

# Types not measured that ggml-cpu multiplies with a measured type's code, timed as that type.
# MXFP4 runs IQ4_NL's: a 32-weight block of 4-bit indices into a 16-value table
# (ggml_vec_dot_mxfp4_q8_0 and ggml_vec_dot_iq4_nl_q8_0 in ggml-cpu/arch/x86/quants.c are one
# loop but for the block's scale, E8M0 against FP16; their repacked layouts share
# gemv_q4_b32_8x8_q8_0_lut_avx and its gemm in arch/x86/repack.cpp).
CPU_KERNEL_TWIN: dict[str, str] = {"MXFP4": "IQ4_NL"}


def _type_time(table: dict[str, float], type_name: str) -> float:
    """`table`'s time of a weight type: its own, its twin's (`CPU_KERNEL_TWIN`), else 1."""
    return table.get(type_name, table.get(CPU_KERNEL_TWIN.get(type_name, ""), 1.0))


_PRODUCT_ROLES = frozenset(
    {Role.ATTENTION, Role.LINEAR, Role.FFN, Role.EXPERT, Role.SHARED_EXPERT, Role.ROUTER}
)


def _mean_kernel_time(model: Model, table: dict[str, float], *, head: bool) -> float:
    """`table`'s time of each weight product's type, averaged over the weights a token
    multiplies (the routed experts by the share a token wakes; the output head, `head_tensors`,
    only with `head`). A type not in `table` takes its twin's time (`_type_time`), else 1."""
    num = den = 0.0
    for t in model.tensors:
        if t.role not in _PRODUCT_ROLES or len(t.info.shape) < 2:
            continue
        active = t.n_elements * tensor_read_fraction(model, t, 1)
        num += active * _type_time(table, t.type_name)
        den += active
    for t in head_tensors(model) if head else ():
        num += t.n_elements * _type_time(table, t.type_name)
        den += t.n_elements
    return num / den if den else 1.0


def cpu_matvec_kernels(tokens: int) -> bool:
    """Whether a CPU multiplies a pass of `tokens` (all streams) with its mat-vec kernels: one
    token only; from two, its matrix kernels (llamafile_sgemm declines n < 2)."""
    return tokens == 1


@per_model
def cpu_kernel_time(model: Model) -> float:
    """The time a CPU's prefill kernels take for this model's weight products, relative to Q4_K
    weights: CPU_KERNEL_TIME of each weight's type, averaged over the weights a token
    multiplies (the routed experts by the share a token wakes; the embedding lookup and the
    output head, which a prefill pass runs for one token, left out)."""
    return _mean_kernel_time(model, CPU_KERNEL_TIME, head=False)


@per_model
def cpu_matvec_time(model: Model) -> float:
    """The time a CPU's mat-vec kernels take for a decoding step's weight products, relative to
    Q4_K weights: CPU_MATVEC_TIME of each weight's type, averaged over the weights a token
    multiplies, the output head included (a decoding step runs it for every token)."""
    return _mean_kernel_time(model, CPU_MATVEC_TIME, head=True)


CUDA_MMQ_MAX_TILE = 128  # mmq.cuh mul_mat_q_switch_J: tile widths J = 8, 16, ..., 128
METAL_MM_ID_TILE = 32  # ggml-metal-ops.cpp ggml_metal_op_mul_mat_id: 32-token tiles
VULKAN_MM_ID_TILES = (32, 64, 128)  # ggml-vulkan.cpp matmul_id s / m / l tiles (N side)


# -- the work of a pass (machine-independent) -------------------------------------------------


def head_tensors(model: Model) -> tuple[Tensor, ...]:
    """The output head's weights: its own tensors, or the tied embedding table when there is no
    separate head."""
    head = tuple(t for t in model.tensors if t.role is Role.OUTPUT)
    if head:
        return head
    emb = model.embedding
    return (emb,) if emb is not None and model.spec.tied_embeddings else ()


@per_model
def head_params(model: Model) -> int:
    """Weights of the output head (the tied embedding table when there is no separate head)."""
    return sum(t.n_elements for t in head_tensors(model))


def attended_cells(layer: Layer, n_tokens: int, ctx: int) -> float:
    """Mean cells a query of the pass attends to: c + (n + 1) / 2 under the causal mask,
    capped at the window W for sliding layers. Cells (tokens)."""
    mean = ctx + (n_tokens + 1) / 2
    if layer.attention is Attention.SLIDING and layer.window:
        return min(mean, float(layer.window))
    return mean


def _cells_read(layer: Layer, n_tokens: int, ctx: int) -> float:
    """Cells of the cache a pass reads: c + n, or at most W + n for a sliding layer."""
    if layer.attention is Attention.SLIDING and layer.window:
        return min(ctx + n_tokens, layer.window + n_tokens)
    return ctx + n_tokens


def kv_read_bytes(model: Model, n_tokens: int, ctx: int, kv_type: str = "f16") -> float:
    """KV bytes one stream's pass reads: sum of bytes per cell x cells read. Bytes."""
    return sum(
        kv_bytes_per_cell(layer, kv_type) * _cells_read(layer, n_tokens, ctx)
        for layer in model.decoding_layers
        if layer.has_kv
    )


def state_traffic_bytes(model: Model) -> float:
    """Recurrent state one stream's pass moves: read once and written once, 2 x S. Bytes."""
    return 2.0 * state_bytes(model)


def matmul_flops(model: Model, n_tokens: float, n_logits: float) -> float:
    """Weight FLOPs: 2 x (P_active - P_head) x n + 2 x P_head x logits (2 per weight per token)."""
    head = head_params(model)
    body = max(active_params(model) - head, 0.0)
    return 2.0 * body * n_tokens + 2.0 * head * n_logits


@per_model
def expert_params(model: Model) -> int:
    """Weights of all routed experts (every layer, every expert)."""
    return sum(t.n_elements for t in model.tensors if t.role is Role.EXPERT)


def active_expert_params(model: Model) -> float:
    """Routed-expert weights one token multiplies: all expert weights x k / E."""
    spec = model.spec
    return expert_params(model) * expert_read_fraction(spec.n_expert, spec.n_expert_used, 1)


def expert_rows(model: Model, n_tokens: float) -> float:
    """Mean rows (tokens) a woken routed expert multiplies in a pass of n tokens:
    n k / E_woken, with E_woken = E (1 - (1 - k/E)^n) (uniform routing). Tokens."""
    spec = model.spec
    woken = experts_woken(spec.n_expert, spec.n_expert_used, n_tokens)
    return n_tokens * spec.n_expert_used / woken if woken else 0.0


# -- routed experts in tiles (llama.cpp's mul_mat_id) ---------------------------------------


def expert_tile_width(backend: str, n_tokens: int, rows_per_expert: float) -> int:
    """Token columns J of one tile of llama.cpp's routed-expert product (`mul_mat_id`) on a
    backend, for a micro-batch of n tokens whose woken experts see t_e = n k / E rows each;
    0 where the kernel does not pad (CPU, SYCL, OpenCL: an expert's rows only).

    - cuda, rocm (MMQ, `mmq.cuh` `mul_mat_q_switch_J`): J is chosen from all n tokens of the
      micro-batch, the smallest multiple of 8 up to 128 that covers n in the fewest tiles:
      J = 8 ceil(n / (8 ceil(n / 128))) (128 at n = 512, however few rows an expert sees);
    - metal (`ggml_metal_op_mul_mat_id`, `mul_mm_id`): 32-token tiles;
    - vulkan (`ggml_vk_mul_mat_id_q_f16`, `matmul_id_tile_selector`): the s / m / l tile of 32,
      64 or 128 columns, picked from the tokens per expert ceil(n k / E).
    """
    if backend in ("cuda", "rocm"):
        tiles = math.ceil(n_tokens / CUDA_MMQ_MAX_TILE)
        return 8 * math.ceil(n_tokens / (8 * tiles))
    if backend == "metal":
        return METAL_MM_ID_TILE
    if backend == "vulkan":
        per_expert = math.ceil(rows_per_expert)
        return next((j for j in VULKAN_MM_ID_TILES[:-1] if per_expert <= j), VULKAN_MM_ID_TILES[-1])
    return 0


def tile_utilisation(rows: float, tile: int) -> float:
    """Share of a tiled product's columns that do useful work: t / (J ceil(t / J)) for t rows
    in tiles of J columns (16 rows in a 128-column tile: 12.5%); 1 without tiles (J = 0)."""
    if tile <= 0 or rows <= 0:
        return 1.0
    return rows / (tile * math.ceil(rows / tile))


@functools.lru_cache(maxsize=4096)
def expected_tiles(n_tokens: int, p: float, tile: int) -> float:
    """E[ceil(n_e / J)]: tiles an expert runs when each of n tokens picks it with probability
    p = k / E (n_e binomial: uniform routing, uneven by chance; an expert with no token runs
    none), as sum over j >= 0 of P(n_e > j J)."""
    if n_tokens <= 0 or p <= 0.0:
        return 0.0
    if p >= 1.0:
        return float(math.ceil(n_tokens / tile))
    log_odds = math.log(p) - math.log1p(-p)
    log_pmf = n_tokens * math.log1p(-p)  # P(n_e = 0), then by recurrence, in logs
    cdf, tiles = 0.0, 0.0
    for m in range(n_tokens):
        cdf += math.exp(log_pmf)
        if m % tile == 0:
            tiles += max(1.0 - cdf, 0.0)  # P(n_e > j J) at m = j J
        log_pmf += math.log(n_tokens - m) - math.log(m + 1) + log_odds
    return tiles


def expert_padded_rows(n_tokens: int, n_expert: int, n_expert_used: int, backend: str) -> float:
    """Mean token columns a routed expert's product computes in a pass of n tokens, empty
    experts counted as 0: P = J x E[ceil(n_e / J)] with J = `expert_tile_width`, against the
    t_e = n k / E rows it has (no tiles, or a mat-vec pass of at most 8 tokens: t_e). Tokens."""
    if not n_expert or n_tokens <= 0:
        return 0.0
    rows = n_tokens * n_expert_used / n_expert
    tile = expert_tile_width(backend, n_tokens, rows) if n_tokens > MATVEC_MAX_BATCH else 0
    if not tile:
        return rows
    return tile * expected_tiles(n_tokens, n_expert_used / n_expert, tile)


def expert_tile_flops(model: Model, n_tokens: int, backend: str) -> float:
    """F_pad: what the tiles of the routed-expert products of a pass of n tokens compute for
    no token, on a backend whose `mul_mat_id` pads (see `expert_tile_width`):

        F_pad = 2 x (all expert weights) x (P - t_e),   P = J x E[ceil(n_e / J)], t_e = n k / E

    Qwen3.6 35B-A3B at n = 512 on CUDA: an expert's 16 rows fill 12.5% of its 128-column
    tile, so its products compute 8 times their useful FLOPs (F_pad = 7 x F_x). FLOP.
    Not part of the shipped time of a pass: cross-validation keeps it out (the "tiles"
    variant of `tokenwalk.timing.calibrate`, docs/timing-model.md)."""
    spec = model.spec
    if not spec.n_expert:
        return 0.0
    useful = n_tokens * spec.n_expert_used / spec.n_expert
    padded = expert_padded_rows(n_tokens, spec.n_expert, spec.n_expert_used, backend)
    return 2.0 * expert_params(model) * max(padded - useful, 0.0)


def weight_row_flops(
    model: Model, n_tokens: float, n_logits: float, *, matvec_free: bool = True
) -> tuple[float, float]:
    """(all, routed experts) of sum over weight products of F_i / rows_i. FLOP per row.

    A dense weight (attention, dense FFN, shared expert, router) multiplies all n rows, so its
    F_i / rows_i is 2 x its weights; a woken routed expert multiplies only n k / E_woken rows,
    and all woken experts together give 2 x the expert weights woken. The output head
    multiplies `n_logits` rows; on a GPU at most MATVEC_MAX_BATCH of them run on a mat-vec
    kernel, which adds no matrix work (`matvec_free`); a CPU pays for them like any product.
    """
    head = head_params(model)
    experts = expert_params(model)
    spec = model.spec
    woken = experts * expert_read_fraction(spec.n_expert, spec.n_expert_used, n_tokens)
    body = max(active_params(model) - head - active_expert_params(model), 0.0)
    head_rows = 2.0 * head if n_logits > (MATVEC_MAX_BATCH if matvec_free else 0) else 0.0
    return 2.0 * (body + woken) + head_rows, 2.0 * woken


@per_model
def _attention_layers(model: Model) -> tuple[tuple[Layer, int, int, int], ...]:
    """Each attention layer (full, sliding, MLA) with its head size and query heads:
    (layer, d_k, d_v, n_head); d_k + d_v are the per-head elements a score and a value sum touch
    (MLA: latent + rope, latent)."""
    out = []
    for layer in model.decoding_layers:
        if layer.attention not in (Attention.FULL, Attention.SLIDING, Attention.MLA):
            continue
        mla = layer.attention is Attention.MLA
        dv = model.spec.kv_lora_rank if mla else layer.head_v
        out.append((layer, layer.head_k, dv, model.spec.n_head[layer.index]))
    return tuple(out)


def _attention_by_head_size(model: Model, n_tokens: int, ctx: int) -> dict[tuple[int, int], float]:
    """Attention FLOPs of one stream by head size (d_k, d_v): sum over the layers of that size
    of 2 x n x c_eff x n_head x (d_k + d_v). FLOP."""
    out: dict[tuple[int, int], float] = {}
    for layer, dk, dv, n_head in _attention_layers(model):
        flops = 2.0 * n_tokens * attended_cells(layer, n_tokens, ctx) * n_head * (dk + dv)
        out[dk, dv] = out.get((dk, dv), 0.0) + flops
    return out


def attention_flops(model: Model, n_tokens: int, ctx: int) -> float:
    """Attention FLOPs of one stream: sum over layers 2 x n x c_eff x n_head x (d_k + d_v). FLOP."""
    return sum(_attention_by_head_size(model, n_tokens, ctx).values())


def one_row_attention(
    model: Model,
    n_tokens: int,
    ctx: int,
    kv_type: str = "f16",
    by_size: dict[tuple[int, int], float] | None = None,
) -> tuple[tuple[int, int, float], ...]:
    """The attention FLOPs of one stream's pass that ggml-cpu's one-row flash-attention loop
    computes (FA_TILE_Q), by head size: ((d_k, d_v, FLOPs), ...); none for a pass of
    FA_TILE_Q tokens or more, or a cache not in f16 (a quantized cache's values are summed in
    f32, whose vector steps divide the usual head sizes). `by_size`: the pass's
    `_attention_by_head_size`, where the caller has it."""
    if n_tokens >= FA_TILE_Q or kv_type != "f16":
        return ()
    if by_size is None:
        by_size = _attention_by_head_size(model, n_tokens, ctx)
    return tuple((dk, dv, f) for (dk, dv), f in sorted(by_size.items()))


def fa_scalar_flops(one_row: tuple[tuple[int, int, float], ...], simd: str | None) -> float:
    """What the one-row flash-attention loop's element-at-a-time rest costs on a CPU build of
    `simd` (F16_VECTOR_STEPS: dot-product step a, multiply-add step b), in FLOPs of the
    machine's compute rate:

        FA_SCALAR_FLOPS x sum over head sizes of F x (d_k mod a + d_v mod b) / (2 (d_k + d_v))

    (F / (2 (d_k + d_v)) is cells x query heads; d_k mod a + d_v mod b the elements a cell and
    head does one at a time). 0 for an unknown build."""
    if simd is None:
        return 0.0
    dot, mad = F16_VECTOR_STEPS[simd]
    return FA_SCALAR_FLOPS * sum(
        f * (dk % dot + dv % mad) / (2.0 * (dk + dv)) for dk, dv, f in one_row
    )


def recurrent_flops(model: Model, n_tokens: int) -> float:
    """State-update FLOPs of one stream: 4 x state elements x n (small next to weights)."""
    elems = sum(x.state_ssm for x in model.decoding_layers if x.attention is Attention.RECURRENT)
    return RECURRENT_FLOPS_PER_STATE_ELEMENT * elems * n_tokens


class PassWork(BaseModel):
    """What one pass reads and computes, independent of the machine."""

    model_config = ConfigDict(frozen=True)
    n_tokens: int  # tokens per stream
    streams: int
    ctx: int  # tokens cached before the pass (per stream)
    weight_bytes: float
    kv_read_bytes: float  # all streams
    state_bytes: float  # recurrent state read + written, all streams
    matmul_flops: float
    attention_flops: float  # all streams (recurrent state updates included)
    expert_flops: float  # the routed-expert share of matmul_flops
    row_flops: float  # sum over matrix products of F_i / rows_i (0 on the mat-vec path)
    expert_row_flops: float  # the routed-expert share of row_flops
    cpu_row_flops: float  # the same sum with mat-vec products counted too (a CPU pays them)
    n_layers: int
    recurrent_layers: int = 0  # of n_layers, recurrent with a scan state (Gated DeltaNet, Mamba)
    # the model's graph nodes per layer over a llama layer's (`Model.layer_nodes` /
    # LLAMA_LAYER_NODES); None where they were never measured
    layer_weight: float | None = None
    # the weight products' time on a CPU's kernels relative to Q4_K weights (`cpu_kernel_time`,
    # or `cpu_matvec_time` for a pass of one token: a CPU's mat-vec kernels)
    cpu_kernel_time: float = 1.0
    # all streams' attention in ggml-cpu's one-row flash-attention loop, by head size
    # (`one_row_attention`): a CPU pays `fa_scalar_flops` on it
    one_row_attention: tuple[tuple[int, int, float], ...] = ()

    @property
    def overhead_layers(self) -> float:
        """Layers the fixed per-layer cost counts, in llama layers: each layer its model's graph
        nodes per layer over a llama layer's (`layer_weight`); where never measured, a
        recurrent layer with a scan state counts RECURRENT_LAYER_OVERHEAD of them."""
        if self.layer_weight is not None:
            return self.n_layers * self.layer_weight
        return self.n_layers + (RECURRENT_LAYER_OVERHEAD - 1.0) * self.recurrent_layers

    @property
    def bytes(self) -> float:
        return self.weight_bytes + self.kv_read_bytes + self.state_bytes

    @property
    def flops(self) -> float:
        return self.matmul_flops + self.attention_flops

    @property
    def matvec(self) -> bool:
        """True when the weight products run on mat-vec kernels (n s <= MATVEC_MAX_BATCH)."""
        return self.n_tokens * self.streams <= MATVEC_MAX_BATCH

    @property
    def intensity_flop_per_byte(self) -> float:
        """Arithmetic intensity = F / B. FLOP per byte."""
        return self.flops / self.bytes if self.bytes else math.inf


def pass_work(
    model: Model,
    n_tokens: int,
    ctx: int,
    *,
    kv_type: str = "f16",
    streams: int = 1,
    n_logits: float | None = None,
    weight_bytes: float | None = None,
    kernel_time: float | None = None,
) -> PassWork:
    """B(n, c) and F(n, c) of a pass of `n_tokens` per stream over `streams` streams at `ctx`.

    `n_logits` defaults to every token (decoding, verification); prefill passes ask for the last
    token only. `weight_bytes` lets a caller reuse W(n s) computed once for many passes, and
    `kernel_time` the model's `cpu_kernel_time`.
    """
    if n_tokens < 1 or streams < 1 or ctx < 0:
        raise InputError(
            f"a pass needs n >= 1, streams >= 1, ctx >= 0 (got {n_tokens}, {streams}, {ctx})"
        )
    kv_element_bytes(kv_type)
    total = n_tokens * streams
    if weight_bytes is None:
        weight_bytes = weight_bytes_read(model, total)
    logits = total if n_logits is None else n_logits
    by_size = _attention_by_head_size(model, n_tokens, ctx)
    attn = sum(by_size.values()) + recurrent_flops(model, n_tokens)
    expert_flops = 2.0 * active_expert_params(model) * total
    if total <= MATVEC_MAX_BATCH:
        row_flops, expert_row_flops = 0.0, 0.0
    else:
        row_flops, expert_row_flops = weight_row_flops(model, total, logits)
        row_flops += attn / n_tokens  # attention: n query rows per head
    if cpu_matvec_kernels(total):
        kernel = cpu_matvec_time(model)
    else:
        kernel = cpu_kernel_time(model) if kernel_time is None else kernel_time
    cpu_weight_rows = weight_row_flops(model, total, logits, matvec_free=False)[0]
    cpu_row_flops = kernel * cpu_weight_rows + attn / n_tokens
    return PassWork(
        n_tokens=n_tokens,
        streams=streams,
        ctx=ctx,
        weight_bytes=weight_bytes,
        kv_read_bytes=streams * kv_read_bytes(model, n_tokens, ctx, kv_type),
        state_bytes=streams * state_traffic_bytes(model),
        matmul_flops=matmul_flops(model, total, logits),
        attention_flops=streams * attn,
        expert_flops=expert_flops,
        row_flops=row_flops,
        expert_row_flops=expert_row_flops,
        cpu_row_flops=cpu_row_flops,
        n_layers=len(model.decoding_layers),
        recurrent_layers=sum(1 for x in model.decoding_layers if x.has_scan_state),
        layer_weight=model.layer_nodes / LLAMA_LAYER_NODES if model.layer_nodes else None,
        cpu_kernel_time=kernel,
        one_row_attention=tuple(
            (dk, dv, streams * f)
            for dk, dv, f in one_row_attention(model, n_tokens, ctx, kv_type, by_size)
        ),
    )


# -- time on a machine ------------------------------------------------------------------------


class PassCost(BaseModel):
    """A pass on a machine: the work, the three terms of its time, and which one won."""

    model_config = ConfigDict(frozen=True)
    work: PassWork
    memory_s: float  # B / (BW x eff_bw)
    compute_s: float  # (F + rows_half x R, experts / eff_experts) / (FLOPS x eff_compute)
    expert_s: float  # the routed-expert products' share of compute_s
    overhead_s: float  # L x overhead per layer
    time_s: float  # max(memory_s, compute_s) + min(memory_s, unhidden x compute_s) + overhead_s
    bound: str  # "memory", "compute", or "experts" (compute, mostly routed-expert products)
    unhidden: float = 0.0  # share of compute_s that does not hide (`unhidden_share`): 1 = the sum


def pass_seconds(
    bytes_: float,
    flops: float,
    row_flops: float,
    overhead_layers: float,
    bandwidth_gbs: float,
    tflops: float | None,
    fit: Efficiency,
    *,
    expert_flops: float = 0.0,
    expert_row_flops: float = 0.0,
) -> tuple[float, float, float, float]:
    """(memory_s, compute_s, expert_s, overhead_s) of a pass:

        memory_s   = B / (BW x eff_bw)
        expert_s   = (F_x + rows_half x R_x) / (FLOPS x eff_compute x eff_experts)
        compute_s  = (F - F_x + rows_half x (R - R_x)) / (FLOPS x eff_compute) + expert_s
        overhead_s = L x overhead_per_layer_s

    L = `overhead_layers`, the decoding layers in llama layers of llama.cpp's compute graph
    (`PassWork.overhead_layers`: graph nodes per layer over LLAMA_LAYER_NODES; a scan layer
    counted RECURRENT_LAYER_OVERHEAD times where the nodes were never measured). A matrix
    product of n rows runs at eff_compute x n / (n + rows_half) of the compute rate, so it takes
    F_i (1 + rows_half / n) / (FLOPS x eff_compute); summed over products that is
    F + rows_half x R, with R = sum F_i / n_i (`PassWork.row_flops`). A routed expert sees only
    n k / E_woken rows, so its products run far below the peak (F_x, R_x: the experts' share,
    `expert_compute`), and llama.cpp's routed-expert kernels (`mul_mat_id`) reach only
    eff_experts of what a dense product of as many rows does.
    Bandwidth in GB/s (1e9), compute in TFLOPS (1e12); an unknown compute rate (None) leaves
    the compute term out, which only a memory-bound pass can afford."""
    memory_s = bytes_ / (bandwidth_gbs * 1e9 * fit.eff_bw)
    if not tflops:
        return memory_s, 0.0, 0.0, overhead_layers * fit.overhead_per_layer_s
    rate = tflops * 1e12 * fit.eff_compute
    h = fit.rows_half
    expert_s = (expert_flops + h * expert_row_flops) / (rate * fit.eff_experts)
    dense_s = (flops - expert_flops + h * (row_flops - expert_row_flops)) / rate
    overhead_s = overhead_layers * fit.overhead_per_layer_s
    return memory_s, dense_s + expert_s, expert_s, overhead_s


def unhidden_share(work: PassWork, backend: str) -> float:
    """The share u of a pass's compute that does not hide under its read:

        time = max(memory, compute) + min(memory, u x compute) + overhead

    A GPU hides a pass's arithmetic under the read, or the read under the arithmetic (u = 0).
    A CPU core streams its rows of a weight and unpacks and multiplies them in turn: in a
    decoding step the two add (u = 1: memory + compute). A pass of n tokens a stream
    multiplies each weight it loads for n tokens of a stream in a row, and only the first
    token's arithmetic waits on the read, u = 1 / n: in a prefill chunk a negligible term (a
    512-token chunk's compute is tens of times its read), between one and a few tokens (a
    draft's verification) an interpolation no measured row pins. A decoding step of s streams
    is s mat-vec products a weight, each waiting on it as one stream's does (u = 1): taking
    1 / (n s) there made a step of two streams faster than one on a CPU (`tokenwalk serve`):

        time = memory + compute + overhead      (a CPU's decoding step)
        time = max(memory, compute) + overhead  (a GPU's passes; a CPU's prefill, nearly)

    Chosen by leave-one-device-out cross-validation: mean |ln(predicted / measured)| 0.194 ->
    0.186, and 0.180 with the mat-vec kernel times per type (`cpu_matvec_time`); adding the
    whole read in a CPU's prefill too made it worse (0.193; docs/timing-model.md)."""
    if backend != "cpu":
        return 0.0
    return 1.0 / work.n_tokens


def cpu_fa_rest(work: PassWork, backend: str, simd: str | None) -> float:
    """`fa_scalar_flops` of a pass's one-row attention on a `cpu` backend; 0 on a GPU's."""
    return fa_scalar_flops(work.one_row_attention, simd) if backend == "cpu" else 0.0


def matrix_flops(work: PassWork, backend: str = "", simd: str | None = None) -> float:
    """FLOPs the compute term counts: all of them, except, on a GPU, the weight products of
    passes of at most MATVEC_MAX_BATCH tokens (mat-vec kernels, hidden under the weight read).
    A CPU's mat-vec kernels unpack and multiply every weight on the cores that read it: there
    they count, and do not hide under the read (`unhidden_share`). A CPU's weight products count
    `PassWork.cpu_kernel_time` times (the kernel of each weight type, relative to Q4_K's: the
    matrix kernels' in a larger pass, the mat-vec kernels' in a decoding step), and a CPU built
    for `simd` (`Machine.cpu_simd`) adds its one-row attention's element-at-a-time rest
    (`fa_scalar_flops`)."""
    if work.matvec and backend != "cpu":
        return work.attention_flops
    weights = weight_kernel_time(work, backend) * work.matmul_flops
    return work.attention_flops + weights + cpu_fa_rest(work, backend, simd)


def weight_kernel_time(work: PassWork, backend: str) -> float:
    """How many times the weight products' FLOPs count in the compute term: on a CPU
    `PassWork.cpu_kernel_time` (its kernels for the weights' types, relative to Q4_K's), 1 on
    a GPU, whose matrix kernels the fitted rate already describes."""
    return work.cpu_kernel_time if backend == "cpu" else 1.0


def matrix_row_flops(work: PassWork, backend: str = "") -> float:
    """R of the compute term: `PassWork.row_flops` on a GPU, `cpu_row_flops` on a CPU, where a
    product of one row (decoding, the head's last logit) runs at 1 / (1 + rows_half) of the
    rate a large product reaches."""
    return work.cpu_row_flops if backend == "cpu" else work.row_flops


def expert_compute(work: PassWork) -> tuple[float, float]:
    """(F_x, R_x): the routed-expert products' part of the compute term's F and R (0 for a pass
    on mat-vec kernels, hidden under the weight read)."""
    if work.matvec:
        return 0.0, 0.0
    return work.expert_flops, work.expert_row_flops


def experts_at_dense_rate(backend: str) -> bool:
    """Whether a backend's routed experts run at the dense rate (eff_experts does not apply): a
    cpu backend's do, as ggml-cpu's `mul_mat_id` sends an expert's rows through the
    dot-product kernels a dense weight uses."""
    return backend == "cpu"


def compute_fit(fit: Efficiency, backend: str) -> Efficiency:
    """The efficiencies a pass computes with on a backend: eff_experts 1 where the routed
    experts run at the dense rate (`experts_at_dense_rate`)."""
    if experts_at_dense_rate(backend) and fit.eff_experts != 1.0:
        return fit.model_copy(update={"eff_experts": 1.0})
    return fit


def pass_cost(work: PassWork, machine: Machine) -> PassCost:
    """A pass's work on a machine: its memory, compute and overhead terms and what bound it
    (`pass_seconds` with the machine's rates, efficiencies and backend)."""
    expert_x, expert_rx = expert_compute(work)
    mem, comp, expert, over = pass_seconds(
        work.bytes,
        matrix_flops(work, machine.backend, machine.cpu_simd),
        matrix_row_flops(work, machine.backend),
        work.overhead_layers,
        machine.bandwidth_gbs,
        machine.tflops,
        compute_fit(machine.fit, machine.backend),
        expert_flops=expert_x,
        expert_row_flops=expert_rx,
    )
    bound = "memory"
    if comp > mem:
        bound = "experts" if expert > comp / 2 else "compute"
    u = unhidden_share(work, machine.backend)
    return PassCost(
        work=work,
        memory_s=mem,
        compute_s=comp,
        expert_s=expert,
        overhead_s=over,
        time_s=max(mem, comp) + min(mem, u * comp) + over,
        bound=bound,
        unhidden=u,
    )


def pass_time(
    model: Model,
    machine: Machine,
    n_tokens: int,
    ctx: int,
    *,
    kv_type: str = "f16",
    streams: int = 1,
    n_logits: float | None = None,
) -> PassCost:
    """Time of one pass (`pass_seconds`: the formula, with L = `PassWork.overhead_layers`).

    The building block of decode (n = 1), prefill (n = ubatch), speculative verification
    (n = draft + 1), `budget` and `trace`.
    """
    return pass_cost(
        pass_work(model, n_tokens, ctx, kv_type=kv_type, streams=streams, n_logits=n_logits),
        machine,
    )


class ContextPoint(BaseModel):
    """Decode at one context: the estimate and the bandwidth ceiling, per stream."""

    model_config = ConfigDict(frozen=True)
    ctx: int  # tokens already in a stream's context
    tok_s: float  # 1 / step time
    ceiling_tok_s: float  # BW / bytes a step reads


def decode_by_context(
    model: Model,
    machine: Machine,
    contexts: list[int],
    *,
    kv_type: str = "f16",
    parallel: int = 1,
) -> list[ContextPoint]:
    """Decode speed at each context of `contexts` (tokens per stream): the same pass as
    `decode_report`, so a point at the asked context equals its answer. The KV read grows
    with the context, so tok/s falls as 1 / (t_weights + c x t_per_cell)."""
    points = []
    weights = weight_bytes_read(model, parallel)  # the same at every context
    for c in contexts:
        work = pass_work(model, 1, c, kv_type=kv_type, streams=parallel, weight_bytes=weights)
        cost = pass_cost(work, machine)
        points.append(
            ContextPoint(
                ctx=c,
                tok_s=1.0 / cost.time_s,
                ceiling_tok_s=decode_ceiling_tok_s(machine.bandwidth_gbs, cost.work.bytes),
            )
        )
    return points


def decode_ceiling_tok_s(bandwidth_gbs: float, bytes_per_token: float) -> float:
    """Bandwidth ceiling on writing speed: tok/s <= BW / bytes read per token."""
    return bandwidth_gbs * 1e9 / bytes_per_token


# -- split systems (the parts are worked out in costs/offload.py) ------------------------------


class DevicePart(BaseModel):
    """One device's share of a pass over a split model (a GPU, the host, or the link)."""

    model_config = ConfigDict(frozen=True)
    device: str
    role: str  # gpu, host, link
    weight_bytes: Bytes  # weights it reads (op offload: copied over the link)
    kv_read_bytes: Bytes
    flops: float
    state_bytes: Bytes = 0  # recurrent state of its layers, read and written
    time_s: float
    bound: str  # memory, compute, experts, link
    how: str = ""


class RpcLink(BaseModel):
    """What llama.cpp's RPC backend sends over the network to cards in another box, for one
    pass (a decode step, a prefill summed over its micro-batches) and once at load
    (`costs.offload.rpc_terms` gives the formulas)."""

    model_config = ConfigDict(frozen=True)
    cards: list[str]  # the rpc: cards
    link: str  # the network as given (and the round trip: given or assumed)
    link_gbs: float  # the network, one way, GB/s (--rpc-link-gbs)
    latency_s: float  # a round trip (--rpc-latency-ms, else assumed)
    latency_assumed: bool
    splits: int  # evaluations of a remote split: one round trip each
    input_bytes: Bytes  # SET_TENSOR of the splits' inputs (hidden state, KQ mask, positions)
    graph_bytes: Bytes  # GRAPH_COMPUTE (serialized graph) or GRAPH_RECOMPUTE (4 bytes)
    output_bytes: Bytes  # GET_TENSOR of the splits' outputs (hidden state, or logits)
    transfer_s: float  # (inputs + graph + outputs) / link
    latency_total_s: float  # splits x latency
    time_s: float  # transfer_s + latency_total_s
    upload_bytes: Bytes  # weights on the rpc: cards, sent once at load (SET_TENSOR)
    upload_s: float  # upload_bytes / link


class SplitInfo(BaseModel):
    """How a model is split over cards and host: the flags, the share on the GPUs (as
    `ollama ps` prints it), and each device's part of the time."""

    model_config = ConfigDict(frozen=True)
    system: str
    host: str  # where the host comes from
    link: str
    placement: str  # llama.cpp flags, as pasted into a shell
    split: str  # "41%/59% CPU/GPU"
    gpu_share: float  # share of the weights read per step that sit on a GPU
    parts: list[DevicePart]
    rpc: RpcLink | None = None  # cards in another box: the network's terms (costs.offload)
    host_fit: Efficiency | None = None  # the host's efficiencies, where its CPU computes a part
    placement_note: str = ""  # what the -ot overrides keep where, in words ("" without any)


# -- decode -----------------------------------------------------------------------------------


class _OnMachine(BaseModel):
    """What every timing answer says about its model and machine."""

    model_config = ConfigDict(frozen=True)
    model: str
    quant: str
    machine: str
    machine_name: str
    backend: str
    bandwidth_gbs: float
    tflops: float | None
    fit: Efficiency
    swa_full: bool = False  # sliding-window layers hold the full context (--swa-full)


def _on_machine(model: Model, machine: Machine) -> dict[str, Any]:
    return dict(
        model=model.name,
        quant=model.quant,
        machine=machine.slug,
        machine_name=machine.name,
        backend=machine.backend,
        bandwidth_gbs=machine.bandwidth_gbs,
        tflops=machine.tflops,
        fit=compute_fit(machine.fit, machine.backend),
        swa_full=model.swa_full,
    )


class DecodeReport(_OnMachine):
    """The answer of `tokenwalk decode`: one decoding step at context `ctx`."""

    ctx: int
    kv_type: str
    parallel: int
    ceiling_tok_s: float  # per stream: BW / bytes per step
    tok_s: float  # per stream
    aggregate_tok_s: float  # all streams
    aggregate_ceiling_tok_s: float
    ms_per_token: float  # one step, per stream
    step_read_bytes: Bytes  # bytes a step reads (all streams)
    read_bytes_per_token: Bytes  # step_read_bytes / streams
    weight_read_bytes: Bytes  # weights a step reads (experts woken included)
    kv_read_bytes: Bytes  # KV cells a step reads, all streams
    state_traffic_bytes: Bytes  # recurrent state read + written, all streams
    flops_per_token: float
    memory_s: float
    compute_s: float
    compute_flops: float | None = None  # F the compute term counts (None: split over devices)
    row_flops: float | None = None  # R, sum over products of F_i / rows_i (None: split)
    overhead_s: float  # layers x overhead_per_layer_s
    bound: str
    # share of compute_s that does not hide under the read (`unhidden_share`): 1 in a CPU's
    # decoding step, where memory and compute add; 0 on a GPU
    unhidden: float = 0.0
    # the weight products' FLOPs count this many times in the compute term: a CPU's kernel time
    # of the weights' types relative to Q4_K (its mat-vec kernels' for one stream,
    # `cpu_matvec_time`; its matrix kernels' for more, `cpu_kernel_time`), 1 elsewhere
    kernel_time: float = 1.0
    # of compute_flops, what a CPU's one-row flash attention does one element at a time on its
    # build (`fa_scalar_flops`, Machine.cpu_simd); 0 elsewhere
    fa_scalar_flops: float = 0.0
    bandwidth_used_gbs: float  # bytes per step / step time: what the estimate implies
    arithmetic_intensity: float  # FLOP per byte of a step
    machine_balance: float | None  # FLOP per byte at the machine's balance point
    reading_tok_s: tuple[float, float]
    vs_reading: str  # "faster than reading", "about reading speed", "slower than reading"
    by_context: list[ContextPoint] = []  # the same step at other contexts (`context_points`)
    split: SplitInfo | None = None  # a model split over cards and host
    energy: EnergyCost | None = None  # power x time, and its price (costs.energy)
    # the error to expect, from published runs (tokenwalk.timing.accuracy); on one machine only
    decode_error: ExpectedError | None = None


def compared_with_reading(tok_s: float) -> str:
    """How a writing speed compares with reading speed (`READING_TOK_S`)."""
    lo, hi = READING_TOK_S
    if tok_s > hi:
        return "faster than reading"
    if tok_s >= lo:
        return "about reading speed"
    return "slower than reading"


def decode_report(
    model: Model,
    machine: Machine,
    *,
    ctx: int = 0,
    kv_type: str = "f16",
    parallel: int = 1,
    curve: bool = True,
) -> DecodeReport:
    """A decoding step of `parallel` streams at context `ctx`: ceiling, estimate, bytes; with
    `curve`, the same step at other contexts too (`by_context`, which --json and --chart show;
    else left empty)."""
    if ctx < 0:
        raise InputError(f"--ctx must be 0 or more tokens, not {ctx}")
    if ctx > 1 << 30:
        raise InputError(f"--ctx {ctx:,} is beyond any model's context")
    if parallel < 1 or parallel > 4096:
        raise InputError(f"--parallel must be between 1 and 4096, not {parallel}")
    kv_type = kv_type.lower()
    cost = pass_time(model, machine, 1, ctx, kv_type=kv_type, streams=parallel)
    w = cost.work
    per_token = w.bytes / parallel
    return DecodeReport(
        **_on_machine(model, machine),
        ctx=ctx,
        kv_type=kv_type,
        parallel=parallel,
        ceiling_tok_s=decode_ceiling_tok_s(machine.bandwidth_gbs, w.bytes),
        tok_s=1.0 / cost.time_s,
        aggregate_tok_s=parallel / cost.time_s,
        aggregate_ceiling_tok_s=decode_ceiling_tok_s(machine.bandwidth_gbs, per_token),
        ms_per_token=cost.time_s * 1e3,
        step_read_bytes=w.bytes,
        read_bytes_per_token=per_token,
        weight_read_bytes=w.weight_bytes,
        kv_read_bytes=w.kv_read_bytes,
        state_traffic_bytes=w.state_bytes,
        flops_per_token=w.flops / parallel,
        memory_s=cost.memory_s,
        compute_s=cost.compute_s,
        compute_flops=matrix_flops(w, machine.backend, machine.cpu_simd),
        row_flops=matrix_row_flops(w, machine.backend),
        overhead_s=cost.overhead_s,
        bound=cost.bound,
        unhidden=cost.unhidden,
        kernel_time=weight_kernel_time(w, machine.backend),
        fa_scalar_flops=cpu_fa_rest(w, machine.backend, machine.cpu_simd),
        bandwidth_used_gbs=w.bytes / cost.time_s / 1e9,
        arithmetic_intensity=w.intensity_flop_per_byte,
        machine_balance=machine.balance_flop_per_byte,
        reading_tok_s=READING_TOK_S,
        vs_reading=compared_with_reading(1.0 / cost.time_s),
        by_context=decode_by_context(
            model,
            machine,
            context_points(ctx, model.spec.n_ctx_train),
            kv_type=kv_type,
            parallel=parallel,
        )
        if curve
        else [],
    )


# -- prefill ----------------------------------------------------------------------------------


# Chunks one prefill is timed in, at most: each is a pass of its own, about 0.1 ms and 4 KB
# here, so 131,072 of them take seconds (a prompt of 67 M tokens at the default micro-batch,
# six times the longest context any model is trained for)
MAX_PREFILL_CHUNKS = 1 << 17


def prefill_chunks(
    prompt: int, cached: int = 0, ubatch: int = DEFAULT_UBATCH
) -> list[tuple[int, int]]:
    """(ctx, n) of each prefill pass: ubatch-sized chunks from `cached` to `prompt` tokens."""
    n_chunks = -(-(prompt - cached) // ubatch)
    if n_chunks > MAX_PREFILL_CHUNKS:
        raise InputError(
            f"a prefill of {prompt - cached:,} tokens at --ubatch {ubatch:,} is {n_chunks:,} "
            f"chunks; tokenwalk times at most {MAX_PREFILL_CHUNKS:,} (a larger --ubatch)"
        )
    return [(s, min(ubatch, prompt - s)) for s in range(cached, prompt, ubatch)]


class PrefillChunk(BaseModel):
    model_config = ConfigDict(frozen=True)
    index: int
    tokens: int
    ctx: int  # tokens already in the cache when the chunk starts
    time_s: float
    bound: str  # "memory", "compute" or "experts" (compute, mostly routed-expert products)
    memory_s: float
    compute_s: float
    expert_s: float  # the routed-expert products' share of compute_s
    overhead_s: float  # layers x overhead_per_layer_s
    weight_read_bytes: Bytes  # weights the chunk reads (experts woken included)
    read_bytes: Bytes = 0  # all it reads: weights, KV cells, recurrent state
    flops: float
    row_flops: float | None = None  # R of the compute term (None: split over devices)
    # the routed experts' part of flops and row_flops, which runs at eff_experts of the rate
    expert_flops: float = 0.0
    expert_row_flops: float = 0.0
    attention_share: float  # attention FLOPs / all FLOPs of the chunk
    expert_rows: float  # mean tokens a woken routed expert multiplies (0: dense model)
    # the weight products' FLOPs count this many times in the compute term: a CPU's kernel time
    # of the weights' types relative to Q4_K (`cpu_kernel_time`; `cpu_matvec_time` for a chunk
    # of one token), 1 elsewhere
    kernel_time: float = 1.0
    unhidden: float = 0.0  # share of compute_s that does not hide (a CPU's: 1 / tokens)


class PrefillReport(_OnMachine):
    """The answer of `tokenwalk prefill`: the prompt in chunks, time to first token."""

    prompt_tokens: int
    cached_tokens: int
    computed_tokens: int  # prompt_tokens - cached_tokens
    ubatch: int
    kv_type: str
    ttft_s: float  # sum of the chunk times
    tok_s: float  # tokens / ttft
    flops: float
    attention_flops: float
    attention_share: float  # attention FLOPs / all FLOPs
    compute_bound_chunks: int
    memory_bound_chunks: int
    experts_bound_chunks: int
    expert_rows: float  # mean tokens a woken routed expert multiplies in a full chunk
    flops_per_token: float
    machine_balance: float | None
    n_chunks: int
    chunks: list[PrefillChunk]
    split: SplitInfo | None = None  # a model split over cards and host
    energy: EnergyCost | None = None  # power x time, and its price (costs.energy)
    # the error to expect, from published runs (tokenwalk.timing.accuracy); on one machine only
    prefill_error: ExpectedError | None = None

    def experts_fit(self) -> Efficiency:
        """The efficiencies the routed experts were multiplied at: the card's, or the host
        CPU's where it multiplies all of them (-ngl 0 with --no-op-offload: the dense kernels
        at its own rows_half)."""
        sp = self.split
        if sp is None or sp.host_fit is None:
            return self.fit
        if any(p.role == "gpu" and p.flops for p in sp.parts):
            return self.fit
        return sp.host_fit


def prefill_report(
    model: Model,
    machine: Machine,
    *,
    prompt: int,
    cached: int = 0,
    ubatch: int = DEFAULT_UBATCH,
    kv_type: str = "f16",
) -> PrefillReport:
    """Prefill of `prompt` tokens, `cached` of them reused from a prefix cache, in chunks."""
    if prompt < 1:
        raise InputError(f"--prompt must be at least 1 token, not {prompt}")
    if prompt > 1 << 30:
        raise InputError(f"--prompt {prompt:,} is beyond any model's context")
    if cached < 0:
        raise InputError(f"--cached must be 0 or more tokens, not {cached}")
    if cached >= prompt:
        raise InputError(
            f"--cached {cached:,} must be below --prompt {prompt:,} (at least one token runs)"
        )
    if ubatch < 1 or ubatch > 1 << 20:
        raise InputError(f"--ubatch must be between 1 and 1,048,576, not {ubatch}")
    if not machine.tflops:
        which = (
            "a machine given by --bandwidth alone has no compute rate"
            if machine.slug == "custom"
            else f"machine '{machine.slug}' has no compute rate in the catalogue"
        )
        raise InputError(f"{which}, and prefill is set by compute; give --tflops")
    kv_type = kv_type.lower()
    plan = prefill_chunks(prompt, cached, ubatch)
    weights: dict[int, float] = {}
    kernel = cpu_kernel_time(model)
    chunks: list[PrefillChunk] = []
    for i, (ctx, n) in enumerate(plan):
        if n not in weights:
            weights[n] = weight_bytes_read(model, n)
        last = i == len(plan) - 1
        work = pass_work(
            model,
            n,
            ctx,
            kv_type=kv_type,
            n_logits=1 if last else 0,
            weight_bytes=weights[n],
            kernel_time=kernel,
        )
        cost = pass_cost(work, machine)
        fx, rx = expert_compute(work)
        chunks.append(
            PrefillChunk(
                index=i,
                tokens=n,
                ctx=ctx,
                time_s=cost.time_s,
                bound=cost.bound,
                memory_s=cost.memory_s,
                compute_s=cost.compute_s,
                expert_s=cost.expert_s,
                overhead_s=cost.overhead_s,
                weight_read_bytes=work.weight_bytes,
                read_bytes=work.bytes,
                flops=work.flops,
                row_flops=matrix_row_flops(work, machine.backend),
                expert_flops=fx,
                expert_row_flops=rx,
                attention_share=work.attention_flops / work.flops if work.flops else 0.0,
                expert_rows=expert_rows(model, n) if model.spec.n_expert else 0.0,
                kernel_time=weight_kernel_time(work, machine.backend),
                unhidden=cost.unhidden,
            )
        )
    ttft = sum(c.time_s for c in chunks)
    flops = sum(c.flops for c in chunks)
    attn = sum(c.flops * c.attention_share for c in chunks)
    tokens = prompt - cached
    return PrefillReport(
        **_on_machine(model, machine),
        prompt_tokens=prompt,
        cached_tokens=cached,
        computed_tokens=tokens,
        ubatch=ubatch,
        kv_type=kv_type,
        ttft_s=ttft,
        tok_s=tokens / ttft,
        flops=flops,
        attention_flops=attn,
        attention_share=attn / flops if flops else 0.0,
        compute_bound_chunks=sum(c.bound == "compute" for c in chunks),
        memory_bound_chunks=sum(c.bound == "memory" for c in chunks),
        experts_bound_chunks=sum(c.bound == "experts" for c in chunks),
        expert_rows=expert_rows(model, min(ubatch, tokens)) if model.spec.n_expert else 0.0,
        flops_per_token=flops / tokens,
        machine_balance=machine.balance_flop_per_byte,
        n_chunks=len(chunks),
        chunks=chunks,
    )
