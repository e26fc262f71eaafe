"""The memory a context takes: KV cache cells per layer kind and the fixed recurrent state.

Sizes follow what llama.cpp allocates (llama-context.cpp, llama-kv-cache-iswa.cpp):
- the context is padded to 256 cells and split across `parallel` streams (non-unified cache);
- full-attention layers hold every cell: 2 x kv_heads x head_dim x bytes per cell (K and V);
- sliding layers hold min(ctx, window + ubatch) cells per stream, padded to 256;
- MLA layers hold one latent of kv_lora_rank + rope dims per cell, no V;
- recurrent layers (Gated DeltaNet, Mamba2, short conv) hold a fixed f32 state per stream.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from tokenwalk.costs.workload import (
    check_workload,
    default_context,
    stream_warnings,
)
from tokenwalk.errors import UnknownNameError
from tokenwalk.gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType
from tokenwalk.gguf.reader import align_up
from tokenwalk.model.layers import Attention, Layer
from tokenwalk.model.model import Model
from tokenwalk.units import Bytes

__all__ = [
    "KV_TYPES",
    "KvKind",
    "KvReport",
    "KvSweepRow",
    "kv_element_bytes",
    "kv_bytes_per_cell",
    "sliding_cells",
    "context_cells",
    "state_bytes",
    "kv_bytes",
    "kv_stored_bytes",
    "kv_report",
    "context_points",
    "cache_by_context",
]

# Cache types llama.cpp accepts for -ctk / -ctv.
KV_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")
_PAD = 256
STATE_ELEMENT_BYTES = 4  # recurrent states are f32


def kv_element_bytes(kv_type: str) -> float:
    """Bytes per cached element for a cache type: block bytes / block size (f16: 2, q8_0: 34/32)."""
    name = kv_type.lower()
    if name not in KV_TYPES:
        raise UnknownNameError(
            f"unknown KV cache type '{kv_type}'; choose one of: {', '.join(KV_TYPES)}"
        )
    block, type_bytes = GGML_QUANT_SIZES[GGMLQuantizationType[name.upper()]]
    return type_bytes / block


def kv_bytes_per_cell(layer: Layer, kv_type: str) -> float:
    """Bytes one cached token costs in one layer: (K width + V width) x bytes per element."""
    if not layer.has_kv:
        return 0.0
    return (layer.k_width + layer.v_width) * kv_element_bytes(kv_type)


def context_cells(ctx: int, parallel: int = 1) -> int:
    """Cells per stream of a full-attention cache: pad256(pad256(ctx) / parallel)."""
    return align_up(align_up(ctx, _PAD) // parallel, _PAD)


def sliding_cells(ctx: int, window: int, ubatch: int = 512, parallel: int = 1) -> int:
    """Cells per stream of a sliding-window cache: pad256(min(cells, window + ubatch))."""
    return align_up(min(context_cells(ctx, parallel), window + ubatch), _PAD)


def state_bytes(model: Model, parallel: int = 1) -> int:
    """Fixed recurrent state: sum of (conv + ssm elements) x 4 bytes x streams."""
    per_seq = sum(
        x.state_elems for x in model.decoding_layers if x.attention is Attention.RECURRENT
    )
    return per_seq * STATE_ELEMENT_BYTES * max(1, parallel)


def kv_bytes(
    model: Model, ctx: int, kv_type: str = "f16", parallel: int = 1, ubatch: int = 512
) -> float:
    """Total KV cache bytes at `ctx` tokens (all streams), without the recurrent state."""
    full = context_cells(ctx, parallel)
    total = 0.0
    for layer in model.decoding_layers:
        if not layer.has_kv:
            continue
        cells = (
            sliding_cells(ctx, layer.window, ubatch, parallel)
            if layer.attention is Attention.SLIDING
            else full
        )
        total += kv_bytes_per_cell(layer, kv_type) * cells * parallel
    return total


CURVE_POINTS = 9  # contexts a curve is computed at, ends included (8 steps: 256k in 32k)


def context_points(ctx: int, max_ctx: int = 0, n: int = CURVE_POINTS) -> list[int]:
    """The contexts a curve against the context is drawn at: `n` evenly spaced from 0 to the
    top, and `ctx` itself. The top is ctx x 4 when a context is asked, else the model's trained
    maximum `max_ctx` (16,384 when unknown), and never past that maximum unless `ctx` is."""
    top = ctx * 4 if ctx else (max_ctx or 16384)
    if max_ctx:
        top = min(top, max(max_ctx, ctx))
    top = max(top, ctx, n - 1)
    return sorted({round(top * i / (n - 1)) for i in range(n)} | {ctx})


def cache_by_context(
    models: list[Model],
    contexts: list[int],
    kv_type: str = "f16",
    parallel: int = 1,
    ubatch: int = 512,
) -> list[KvSweepRow]:
    """The cache of `models` held together at each context of `contexts` (the total of all
    streams, as llama.cpp's -c): KV (`kv_bytes`) + recurrent state, summed over the models."""
    st = sum(state_bytes(m, parallel) for m in models)
    rows = []
    for c in contexts:
        kv = round(sum(kv_bytes(m, c, kv_type, parallel, ubatch) for m in models))
        rows.append(KvSweepRow(ctx=c, kv_bytes=kv, state_bytes=st, cache_bytes=kv + st))
    return rows


def kv_stored_bytes(model: Model, tokens: int, kv_type: str = "f16", ubatch: int = 512) -> float:
    """Bytes of cache actually filled by `tokens` tokens of one sequence (not the allocation):
    per-cell bytes x min(tokens, cells the layer keeps)."""
    total = 0.0
    for layer in model.decoding_layers:
        if not layer.has_kv:
            continue
        held = tokens
        if layer.attention is Attention.SLIDING:
            held = min(tokens, sliding_cells(tokens, layer.window, ubatch))
        total += kv_bytes_per_cell(layer, kv_type) * held
    return total


class KvKind(BaseModel):
    model_config = ConfigDict(frozen=True)
    attention: str  # full, sliding, mla, recurrent
    n_layers: int
    kv_bytes_per_token: Bytes  # per cached token (per cell); 0 for recurrent
    cells: int  # cells held per stream at the context asked (0 for recurrent)
    window: int = 0
    window_cells_naive: int = 0  # min(ctx, window): what a window-only estimate would say
    cache_bytes: Bytes  # KV (recurrent: the state) held at the context asked, all streams


class KvSweepRow(BaseModel):
    model_config = ConfigDict(frozen=True)
    ctx: int
    kv_bytes: Bytes
    state_bytes: Bytes
    cache_bytes: Bytes  # kv_bytes + state_bytes


class KvReport(BaseModel):
    """The answer of `tokenwalk kv`."""

    model_config = ConfigDict(frozen=True)
    model: str
    kv_type: str
    ctx: int
    parallel: int
    ubatch: int
    max_ctx: int
    kv_bytes_per_token: Bytes  # per token of context, layers whose cache grows with it (full, MLA)
    sliding_kv_bytes_per_token: Bytes  # per cell of the sliding layers (capped at their window)
    state_bytes: Bytes
    kv_bytes: Bytes
    cache_bytes: Bytes  # kv_bytes + state_bytes
    kinds: list[KvKind]
    # if every decoding layer kept a full cache like its widest attention layer
    every_layer_kv_bytes_per_token: Bytes
    sweep: list[KvSweepRow]
    warnings: list[str]
    # sliding-window layers that hold the full context instead of their window (--swa-full)
    swa_full_layers: int = 0


def kv_report(
    model: Model,
    ctx: int | None = None,
    kv_type: str = "f16",
    parallel: int = 1,
    ubatch: int = 512,
) -> KvReport:
    """KV bytes per token by layer kind, the fixed state, the total at `ctx`, and a sweep."""
    kv_type = kv_type.lower()
    kv_element_bytes(kv_type)  # validates
    max_ctx = model.spec.n_ctx_train or 0
    if ctx is None:
        ctx = default_context([model])
    check_workload(ctx=ctx, parallel=parallel, ubatch=ubatch)
    warnings = stream_warnings([model], ctx, parallel)

    kinds: dict[str, dict[str, float]] = {}
    full_cells = context_cells(ctx, parallel)
    for layer in model.decoding_layers:
        kind = layer.attention.value
        if layer.attention is Attention.NONE:
            continue
        k = kinds.setdefault(kind, {"layers": 0, "bpt": 0.0, "cells": 0, "window": 0, "bytes": 0.0})
        k["layers"] += 1
        if layer.attention is Attention.RECURRENT:
            k["bytes"] += layer.state_elems * STATE_ELEMENT_BYTES * parallel
            continue
        per_cell = kv_bytes_per_cell(layer, kv_type)
        cells = (
            sliding_cells(ctx, layer.window, ubatch, parallel)
            if layer.attention is Attention.SLIDING
            else full_cells
        )
        k["bpt"] += per_cell
        k["cells"] = max(k["cells"], cells)
        k["window"] = max(k["window"], layer.window)
        k["bytes"] += per_cell * cells * parallel

    kind_rows = [
        KvKind(
            attention=name,
            n_layers=int(v["layers"]),
            kv_bytes_per_token=v["bpt"],
            cells=int(v["cells"]),
            window=int(v["window"]),
            window_cells_naive=min(ctx, int(v["window"])) if v["window"] else 0,
            cache_bytes=v["bytes"],
        )
        for name, v in kinds.items()
    ]
    growing = sum(v["bpt"] for name, v in kinds.items() if name in ("full", "mla"))
    sliding = sum(v["bpt"] for name, v in kinds.items() if name == "sliding")
    st = state_bytes(model, parallel)
    kv = round(kv_bytes(model, ctx, kv_type, parallel, ubatch))  # so that cache = kv + state

    attn = [x for x in model.decoding_layers if x.has_kv]
    widest = max((kv_bytes_per_cell(x, kv_type) for x in attn), default=0.0)
    every = widest * len(model.decoding_layers)

    points = sorted({4096, 16384, 32768, 131072, *([max_ctx] if max_ctx else []), ctx})
    sweep = []
    for c in points:
        if max_ctx and c > max_ctx and c != ctx:
            continue
        kvc = round(kv_bytes(model, c, kv_type, parallel, ubatch))
        sweep.append(KvSweepRow(ctx=c, kv_bytes=kvc, state_bytes=st, cache_bytes=kvc + st))

    return KvReport(
        model=model.name,
        kv_type=kv_type,
        ctx=ctx,
        parallel=parallel,
        ubatch=ubatch,
        max_ctx=max_ctx,
        kv_bytes_per_token=growing,
        sliding_kv_bytes_per_token=sliding,
        state_bytes=st,
        kv_bytes=kv,
        cache_bytes=kv + st,
        kinds=kind_rows,
        every_layer_kv_bytes_per_token=every,
        sweep=sweep,
        warnings=warnings,
        swa_full_layers=model.swa_full_layers,
    )
