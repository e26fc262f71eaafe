"""Does it fit: memory held by the system, the weights of every model, KV, buffers, what is left.

    free = capacity - system - sum(weights) - sum(KV at ctx + recurrent state) - sum(buffers)

where a GPU may hold less than that (a Mac's Metal working set, an integrated GPU's half of the
RAM), capacity - system is capped at the GPU's limit.

Compute buffers follow what llama.cpp reserves for one micro-batch: the larger of the logits
stage, ubatch x (n_vocab + 2 x n_embd) x 4 bytes, and the largest layer's live activations plus
the f16 KQ mask (MoE: 3 x n_ff_exp x k + n_embd x k per token; MLA: the absorbed path over all
heads; `offload.compute_buffer_bytes`). Checked with `llama-fit-params -v`: 514.5 MiB for
gemma-3-270m, 311 MiB for a Qwen2 7B, 204.01 MiB for a Mixtral-shaped file at ubatch 512
(tests/data/fit_params.md).

A discrete card and its host are counted device by device in `costs.split`.

The same accounting answers every timing command's "does it fit" (`memory_fit`): a speed is
only reached when the weights and the KV are in the machine's memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import TypeVar

from pydantic import BaseModel, ConfigDict

from tokenwalk.costs.command import Arg, cache_args, command_line
from tokenwalk.costs.kv import KvSweepRow, cache_by_context, context_points, kv_bytes, state_bytes
from tokenwalk.costs.offload import DeviceMemory
from tokenwalk.costs.workload import (
    check_workload,
    default_context,
    largest_context,
    shortest_trained,
    stream_warnings,
    tokens_per_stream,
)
from tokenwalk.errors import InputError
from tokenwalk.model.model import Model, Role
from tokenwalk.numbers import size
from tokenwalk.units import Bytes

__all__ = [
    "BudgetModel",
    "BudgetReport",
    "budget_contexts",
    "compute_buffer_bytes",
    "model_memory_bytes",
    "max_context_that_fits",
    "budget_report",
    "ROOM_FRACTION",
    "SHARED_MEMORY_KINDS",
    "default_system_bytes",
    "OLLAMA_KV_TYPES",
    "runtime_settings",
    "MemoryFit",
    "memory_fit",
    "FitChecked",
    "with_fit",
    "offload_layers",
    "loaded_weight_bytes",
]

# Cache types Ollama's OLLAMA_KV_CACHE_TYPE takes (llama.cpp takes more, see kv.KV_TYPES).
OLLAMA_KV_TYPES = ("f16", "q8_0", "q4_0")

# Machines whose GPU shares memory with the operating system and its apps.
SHARED_MEMORY_KINDS = ("igpu", "apple", "cpu", "sbc")


def default_system_bytes(kind: str, capacity_bytes: float) -> int:
    """Memory assumed held by the system and other apps when the user does not say: 8 GB (at
    most a quarter of the memory) where memory is shared, 0.5 GB of a discrete GPU's own."""
    if kind in SHARED_MEMORY_KINDS:
        return int(min(8e9, capacity_bytes / 4))
    return int(0.5e9)


# "Fits with room" keeps this share of the capacity free (the seed keeps 8 to 12 GB of 64).
ROOM_FRACTION = 0.125
F32 = 4


def compute_buffer_bytes(model: Model, ubatch: int = 512, ctx: int = 0) -> int:
    """Compute buffers for one micro-batch on one pool: the larger of the logits, ubatch x
    (n_vocab + 2 x n_embd) x 4 bytes, and the largest layer's live activations plus the KQ mask
    at `ctx` (`offload.compute_buffer_bytes`: MoE and MLA layers can need more than the
    logits)."""
    from tokenwalk.costs.kv import context_cells
    from tokenwalk.costs.offload import compute_buffer_bytes as device_buffer

    cells = context_cells(ctx) if ctx else 0
    return device_buffer(model, ubatch, list(model.decoding_layers), head=True, ctx_cells=cells)


def loaded_weight_bytes(model: Model, load_mtp: bool = False) -> int:
    """Bytes of weights llama.cpp allocates: every tensor, except MTP/NextN blocks unless an MTP
    draft asks for them (`load_mtp`; llama.cpp skips them otherwise, TENSOR_SKIP, #26296)."""
    if load_mtp:
        return model.tensor_bytes
    return sum(t.n_bytes for t in model.tensors if t.role is not Role.MTP)


def model_memory_bytes(
    model: Model,
    ctx: int,
    kv_type: str = "f16",
    parallel: int = 1,
    ubatch: int = 512,
    load_mtp: bool = False,
) -> tuple[int, float, int, int]:
    """(weights, KV at ctx, recurrent state, buffers) in bytes for one loaded model."""
    return (
        loaded_weight_bytes(model, load_mtp),
        kv_bytes(model, ctx, kv_type, parallel, ubatch),
        state_bytes(model, parallel),
        compute_buffer_bytes(model, ubatch, ctx),
    )


class BudgetModel(BaseModel):
    model_config = ConfigDict(frozen=True)
    model: str
    weights_bytes: Bytes
    kv_bytes: Bytes
    state_bytes: Bytes
    buffers_bytes: Bytes
    max_ctx: int  # the model's trained maximum


class BudgetReport(BaseModel):
    """The answer of `tokenwalk budget`."""

    model_config = ConfigDict(frozen=True)
    machine: str
    capacity_bytes: Bytes
    system_bytes: Bytes
    gpu_limit_bytes: Bytes | None = None  # what the GPU may hold, where less than the memory
    gpu_limit_note: str = ""
    ctx: int
    kv_type: str
    parallel: int
    models: list[BudgetModel]
    weights_bytes: Bytes
    cache_bytes: Bytes  # KV + recurrent state of every model
    buffers_bytes: Bytes
    used_bytes: Bytes
    free_bytes: Bytes
    fits: bool
    verdict: str  # "fits with room", "tight", "does not fit"
    max_fit_ctx: int  # largest context that fits (0 when not even the weights fit)
    default_ctx: int  # what a runtime reserves by default (the trained maximum)
    default_cache_bytes: Bytes  # KV + recurrent state at that default
    settings: dict[str, str]
    warnings: list[str]
    swa_full: bool = False  # sliding-window layers hold the full context (--swa-full)
    hints: list[str] = []  # when not even the weights fit: a smaller quant, offload
    # the memory left for the cache once the weights and buffers are in: room - weights - buffers
    cache_room_bytes: Bytes = 0
    by_context: list[KvSweepRow] = []  # the cache at other contexts, up to the trained maximum
    # a system of cards and a host: every device, the placement, the split as `ollama ps` says
    devices: list[DeviceMemory] = []
    placement: str = ""  # llama.cpp flags of each model ("; " between models)
    placement_note: str = ""  # what the -ot overrides keep where, in words
    split: str = ""
    host: str = ""


def _used(
    models: list[Model],
    ctx: int,
    kv_type: str,
    parallel: int,
    ubatch: int,
    load_mtp: bool = False,
) -> float:
    total = 0.0
    for m in models:
        w, kv, st, buf = model_memory_bytes(m, ctx, kv_type, parallel, ubatch, load_mtp)
        total += w + kv + st + buf
    return total


def max_context_that_fits(
    models: list[Model],
    room_bytes: float,
    kv_type: str = "f16",
    parallel: int = 1,
    ubatch: int = 512,
    limit: int | None = None,
    load_mtp: bool = False,
) -> int:
    """Largest context (a multiple of 256, up to `limit`) whose total stays within `room_bytes`.

    KV never shrinks as the context grows, so a bisection over the context is exact.
    """
    top = limit or max((m.spec.n_ctx_train for m in models), default=0) or 131072
    return largest_context(
        lambda c: _used(models, c, kv_type, parallel, ubatch, load_mtp) <= room_bytes, top
    )


def budget_report(
    models: list[Model],
    *,
    machine: str,
    capacity_bytes: int,
    system_bytes: int,
    ctx: int | None = None,
    kv_type: str = "f16",
    parallel: int = 1,
    ubatch: int = 512,
    shared_memory: bool = False,
    smaller_quants: Sequence[tuple[str, list[Model]]] = (),
    gpu_limit_bytes: int | None = None,
    gpu_limit_note: str = "",
    load_mtp: bool = False,
) -> BudgetReport:
    """Fit `models` (a target and drafts alike) into `capacity_bytes` next to `system_bytes`,
    and within `gpu_limit_bytes` where the GPU may hold less.

    `ctx` is the total of the `parallel` streams (llama.cpp's -c). When not even the weights fit,
    `smaller_quants` (preset, the same models at that preset), largest first, give the hint of
    the first that fits; `shared_memory` says whether offloading layers to the CPU can help.
    """
    if not models:
        raise InputError("give at least one model")
    if capacity_bytes <= 0:
        raise InputError("the machine's memory must be positive (set --memory GB)")
    if system_bytes < 0:
        raise InputError("--system-gb cannot be negative")
    if system_bytes >= capacity_bytes:
        raise InputError(
            f"--system-gb holds {size(system_bytes)}, all of {size(capacity_bytes)}: nothing "
            "is left for the model"
        )
    trained = max((m.spec.n_ctx_train for m in models), default=0)
    shortest = shortest_trained(models)
    if ctx is None:
        ctx = default_context(models, parallel)
    check_workload(ctx=ctx, parallel=parallel, ubatch=ubatch)
    warnings = stream_warnings(models, ctx, parallel)
    rows = []
    for m in models:
        w, kv, st, buf = model_memory_bytes(m, ctx, kv_type, parallel, ubatch, load_mtp)
        rows.append(
            BudgetModel(
                model=m.name,
                weights_bytes=w,
                kv_bytes=kv,
                state_bytes=st,
                buffers_bytes=buf,
                max_ctx=m.spec.n_ctx_train,
            )
        )
    weights = sum(r.weights_bytes for r in rows)
    kv_total = sum(r.kv_bytes + r.state_bytes for r in rows)
    buffers = sum(r.buffers_bytes for r in rows)
    used = weights + kv_total + buffers
    room = capacity_bytes - system_bytes
    if gpu_limit_bytes is not None and gpu_limit_bytes >= capacity_bytes:
        gpu_limit_bytes = None
    if gpu_limit_bytes is not None:
        room = min(room, gpu_limit_bytes)
    free = room - used
    fits = free >= 0
    if not fits:
        verdict = "does not fit"
    elif free >= ROOM_FRACTION * min(capacity_bytes, gpu_limit_bytes or capacity_bytes):
        verdict = "fits with room"
    else:
        verdict = "tight"
    limit = shortest * parallel or None
    best = max_context_that_fits(
        models, room, kv_type, parallel, ubatch, limit=limit, load_mtp=load_mtp
    )

    default_ctx = trained or ctx
    default_kv = sum(
        kv_bytes(m, default_ctx, kv_type, parallel, ubatch) + state_bytes(m, parallel)
        for m in models
    )
    if default_ctx > 4 * ctx and default_kv - kv_total > 0.05 * capacity_bytes:
        warnings.append(
            f"a runtime that reserves the full {default_ctx:,}-token context (Ollama does when it "
            f"detects enough memory) holds {size(default_kv)} of KV instead of "
            f"{size(kv_total)}: set the context to what you need"
        )
    if best and best < ctx:
        warnings.append(f"the largest context that fits is {best:,} tokens: the settings use it")
    # a unified memory's GPU held to a share of it (a Mac's working set, an iGPU's half) leaves
    # the rest to the CPU: layers offloaded past the limit still fit when the whole does
    spills = gpu_limit_bytes is not None and used <= capacity_bytes - system_bytes
    hints = (
        _not_even_the_weights(
            models,
            room,
            ctx,
            kv_type,
            parallel,
            ubatch,
            shared_memory and not spills,
            smaller_quants,
        )
        if not best
        else []
    )
    # the settings apply what fits: the context asked, or the largest that fits below it
    swa_full = any(m.swa_full for m in models)
    settings = (
        runtime_settings(ctx if fits else best, kv_type, parallel, swa_full=swa_full)
        if fits or best
        else {}
    )
    if settings and swa_full:
        warnings.append(
            "Ollama has no setting for a full-size sliding-window cache (--swa-full): "
            "the settings are llama.cpp's"
        )
    elif settings and kv_type not in OLLAMA_KV_TYPES:
        warnings.append(
            f"Ollama's OLLAMA_KV_CACHE_TYPE takes only {', '.join(OLLAMA_KV_TYPES)}: "
            f"a {kv_type} cache needs llama.cpp"
        )
    return BudgetReport(
        swa_full=swa_full,
        machine=machine,
        capacity_bytes=capacity_bytes,
        system_bytes=system_bytes,
        gpu_limit_bytes=gpu_limit_bytes,
        gpu_limit_note=gpu_limit_note if gpu_limit_bytes is not None else "",
        ctx=ctx,
        kv_type=kv_type,
        parallel=parallel,
        models=rows,
        weights_bytes=weights,
        cache_bytes=kv_total,
        buffers_bytes=buffers,
        used_bytes=used,
        free_bytes=free,
        fits=fits,
        verdict=verdict,
        max_fit_ctx=best,
        default_ctx=default_ctx,
        default_cache_bytes=default_kv,
        settings=settings,
        warnings=warnings,
        hints=hints,
        cache_room_bytes=room - weights - buffers,
        by_context=cache_by_context(
            models, budget_contexts(ctx, default_ctx, best), kv_type, parallel, ubatch
        ),
    )


def budget_contexts(ctx: int, default_ctx: int, max_fit_ctx: int) -> list[int]:
    """Contexts the cache is drawn at: 0 to the larger of the context asked and the runtime
    default (`kv.context_points`), with the asked one and the largest that fits among them."""
    points = context_points(0, max(ctx, default_ctx))
    return sorted({*points, ctx, *([max_fit_ctx] if max_fit_ctx else [])})


def runtime_settings(
    ctx: int,
    kv_type: str,
    parallel: int,
    placements: Sequence[tuple[str, Sequence[Arg]]] = (),
    swa_full: bool = False,
) -> dict[str, str]:
    """Runtime settings that reserve `ctx` tokens in all: Ollama's context is per request
    (its memory scales with OLLAMA_NUM_PARALLEL x OLLAMA_CONTEXT_LENGTH), llama.cpp's -c is the
    total of its -np streams. Ollama's settings only for the cache types Ollama takes, and not
    with `swa_full` (llama.cpp's --swa-full), which Ollama has no setting for.
    `placements` gives each model's placement flags (name, args) on a card and its host: one
    llama.cpp line per model, as each runs in its own process."""
    settings: dict[str, str] = {}
    if kv_type in OLLAMA_KV_TYPES and not swa_full:
        settings["OLLAMA_CONTEXT_LENGTH"] = str(tokens_per_stream(ctx, parallel))
        if parallel > 1:
            settings["OLLAMA_NUM_PARALLEL"] = str(parallel)
        settings["OLLAMA_KV_CACHE_TYPE"] = kv_type
        settings["OLLAMA_FLASH_ATTENTION"] = "1"
    base: list[Arg] = [("-c", str(ctx)), *cache_args(swa_full, kv_type)]
    if parallel > 1:
        base.append(("-np", str(parallel)))
    if len(placements) > 1:
        for name, args in placements:
            settings[f"llama.cpp ({name})"] = command_line(base, args)
    else:
        settings["llama.cpp"] = command_line(base, *(args for _, args in placements))
    return settings


def offload_layers(model: Model, room_bytes: float, ctx: int, kv_type: str = "f16") -> int:
    """Layers of `model` that fit in `room_bytes` next to its non-layer tensors and buffers
    (llama.cpp -ngl): (room - globals - buffers) / (layer weights + layer KV), rounded down."""
    n = max(1, model.spec.n_layer_all)
    globals_bytes = sum(t.info.n_bytes for t in model.tensors if t.layer is None)
    per_layer = (model.tensor_bytes - globals_bytes) / n
    per_layer += (kv_bytes(model, ctx, kv_type) + state_bytes(model)) / max(1, model.spec.n_layer)
    free = room_bytes - globals_bytes - compute_buffer_bytes(model)
    return max(0, min(n, int(free // per_layer))) if per_layer > 0 else 0


def _not_even_the_weights(
    models: list[Model],
    room: float,
    ctx: int,
    kv_type: str,
    parallel: int,
    ubatch: int,
    shared_memory: bool,
    smaller_quants: Sequence[tuple[str, list[Model]]],
) -> list[str]:
    """What to try when nothing fits: the largest smaller quant that fits (at `ctx`, else at
    the largest context it leaves room for), and offloading layers where the GPU has its own
    memory."""
    hints = []
    fallback = ""
    for preset, alt in smaller_quants:
        limit = shortest_trained(alt)
        best = max_context_that_fits(
            alt, room, kv_type, parallel, ubatch, limit=limit * parallel or None
        )
        if best >= ctx:
            hints.append(f"--quant {preset} fits at {ctx:,} tokens")
            break
        if best and not fallback:
            fallback = f"--quant {preset} fits up to {best:,} tokens"
    else:
        if fallback:
            hints.append(fallback)
        elif smaller_quants:
            hints.append(f"no quant down to {smaller_quants[-1][0]} fits")
    if shared_memory:
        hints.append("offloading layers does not help: the GPU shares this memory with the CPU")
    elif len(models) == 1:
        m = models[0]
        n = offload_layers(m, room, ctx, kv_type)
        hints.append(
            f"offload: about {n} of {m.spec.n_layer_all} layers fit in this memory "
            f"(llama.cpp -ngl {n}); the rest runs on the CPU from system RAM, far slower"
        )
    else:
        hints.append("offload layers to the CPU (llama.cpp -ngl), far slower")
    return hints


class MemoryFit(BaseModel):
    """Whether the model(s) of a timing answer and their KV fit the machine's memory."""

    model_config = ConfigDict(frozen=True)
    fits: bool
    ctx: int  # context reserved, all streams
    capacity_bytes: Bytes
    system_bytes: Bytes
    needed_bytes: Bytes  # weights + KV + recurrent state + compute buffers
    free_bytes: Bytes  # capacity - system - needed; negative when it does not fit
    note: str


def memory_fit(
    models: list[Model],
    *,
    capacity_bytes: int,
    system_bytes: int,
    ctx: int,
    kv_type: str = "f16",
    parallel: int = 1,
    ubatch: int = 512,
    gpu_limit_bytes: int | None = None,
    load_mtp: bool = False,
) -> MemoryFit:
    """needed = sum(weights + KV at ctx + state + buffers) against the room: capacity - system,
    capped at `gpu_limit_bytes` where the GPU may hold less (bytes)."""
    needed = int(_used(models, ctx, kv_type, parallel, ubatch, load_mtp))
    room = capacity_bytes - system_bytes
    limited = gpu_limit_bytes is not None and gpu_limit_bytes < room
    if limited:
        room = gpu_limit_bytes
    free = int(room - needed)
    fits = free >= 0
    what = " and ".join(m.name for m in models)
    if fits:
        note = f"{what} fits: {size(free)} free at {ctx:,} tokens"
    else:
        left = "the GPU may hold" if limited else "left by the system"
        note = (
            f"{what} does not fit: it needs {size(needed)} at {ctx:,} tokens, "
            f"{size(-free)} more than the {size(room)} {left}; "
            "these times assume it all in memory (`tokenwalk budget`)"
        )
    return MemoryFit(
        fits=fits,
        ctx=ctx,
        capacity_bytes=int(capacity_bytes),
        system_bytes=int(system_bytes),
        needed_bytes=needed,
        free_bytes=free,
        note=note,
    )


class FitChecked(BaseModel):
    """What every timing answer adds: does it fit (None: the machine has no memory size), the
    accounting behind it, and warnings such as a context beyond the trained maximum."""

    fits: bool | None = None
    memory: MemoryFit | None = None
    warnings: list[str] = []


R = TypeVar("R", bound=BaseModel)


@cache
def _checked_type(cls: type[BaseModel]) -> type[BaseModel]:
    return type(cls.__name__, (cls, FitChecked), {"__module__": cls.__module__})


def with_fit(report: R, fit: MemoryFit | None, warnings: Sequence[str] = ()) -> R:
    """`report` with the fields of `FitChecked` added: the same type name and view, and
    `fits`, `memory` and `warnings` in its JSON."""
    cls = _checked_type(type(report))
    values = {name: getattr(report, name) for name in type(report).model_fields}
    extra = {"fits": fit.fits if fit else None, "memory": fit, "warnings": list(warnings)}
    return cls(**values, **extra)  # type: ignore[return-value]
