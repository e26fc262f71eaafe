"""Does it fit: memory held by the system, the weights of every model, KV, buffers, what is left.

    free = capacity - system - sum(weights) - sum(KV at ctx + recurrent state) - sum(buffers)

where a GPU may hold less than that (a Mac's Metal working set), capacity - system is capped at
the GPU's limit.

Compute buffers follow what llama.cpp reserves for one micro-batch: the logits of `ubatch`
tokens in f32 (ubatch x n_vocab x 4 bytes) plus activations of about 2 x n_embd f32 values per
token (checked with `llama-fit-params -v`: 514.5 MiB for gemma-3-270m, 311 MiB for a Qwen2 7B at
ubatch 512).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from tokenwalk.costs.kv import kv_bytes, state_bytes
from tokenwalk.errors import InputError
from tokenwalk.model.model import Model

__all__ = [
    "BudgetModel",
    "BudgetReport",
    "compute_buffer_bytes",
    "model_memory_bytes",
    "max_context_that_fits",
    "budget_report",
    "ROOM_FRACTION",
    "SHARED_MEMORY_KINDS",
    "default_system_bytes",
]

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


def compute_buffer_bytes(model: Model, ubatch: int = 512) -> int:
    """Compute buffers for one micro-batch: ubatch x (n_vocab + 2 x n_embd) x 4 bytes."""
    return ubatch * (model.spec.n_vocab + 2 * model.spec.n_embd) * F32


def model_memory_bytes(
    model: Model, ctx: int, kv_type: str = "f16", parallel: int = 1, ubatch: int = 512
) -> tuple[int, float, int, int]:
    """(weights, KV at ctx, recurrent state, buffers) in bytes for one loaded model."""
    return (
        model.tensor_bytes,
        kv_bytes(model, ctx, kv_type, parallel, ubatch),
        state_bytes(model, parallel),
        compute_buffer_bytes(model, ubatch),
    )


class BudgetModel(BaseModel):
    model_config = ConfigDict(frozen=True)
    model: str
    weights_bytes: int
    kv_bytes: float
    state_bytes: int
    buffers_bytes: int
    max_ctx: int  # the model's trained maximum


class BudgetReport(BaseModel):
    """The answer of `tokenwalk budget`."""

    model_config = ConfigDict(frozen=True)
    machine: str
    capacity_bytes: int
    system_bytes: int
    gpu_limit_bytes: int | None = None  # what the GPU may hold, where less than the memory
    gpu_limit_note: str = ""
    ctx: int
    kv_type: str
    parallel: int
    models: list[BudgetModel]
    weights_bytes: int
    kv_bytes: float  # KV + recurrent state of every model
    buffers_bytes: int
    used_bytes: float
    free_bytes: float
    fits: bool
    verdict: str  # "fits with room", "tight", "does not fit"
    max_ctx: int  # largest context that fits (0 when not even the weights fit)
    default_ctx: int  # what a runtime reserves by default (the trained maximum)
    default_kv_bytes: float  # KV at that default
    settings: dict[str, str]
    warnings: list[str]


def _used(models: list[Model], ctx: int, kv_type: str, parallel: int, ubatch: int) -> float:
    total = 0.0
    for m in models:
        w, kv, st, buf = model_memory_bytes(m, ctx, kv_type, parallel, ubatch)
        total += w + kv + st + buf
    return total


def max_context_that_fits(
    models: list[Model],
    room_bytes: float,
    kv_type: str = "f16",
    parallel: int = 1,
    ubatch: int = 512,
    limit: int | None = None,
) -> int:
    """Largest context (a multiple of 256, up to `limit`) whose total stays within `room_bytes`.

    KV never shrinks as the context grows, so a bisection over the context is exact.
    """
    top = limit or max((m.spec.n_ctx_train for m in models), default=0) or 131072
    if _used(models, 256, kv_type, parallel, ubatch) > room_bytes:
        return 0
    lo, hi = 1, max(1, top // 256)
    if _used(models, hi * 256, kv_type, parallel, ubatch) <= room_bytes:
        return top
    while lo < hi - 1:
        mid = (lo + hi) // 2
        if _used(models, mid * 256, kv_type, parallel, ubatch) <= room_bytes:
            lo = mid
        else:
            hi = mid
    return lo * 256


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
    gpu_limit_bytes: int | None = None,
    gpu_limit_note: str = "",
) -> BudgetReport:
    """Fit `models` (a target and drafts alike) into `capacity_bytes` next to `system_bytes`,
    and within `gpu_limit_bytes` where the GPU may hold less."""
    if not models:
        raise InputError("give at least one model")
    if capacity_bytes <= 0:
        raise InputError("the machine's memory must be positive (set --memory GB)")
    if system_bytes < 0:
        raise InputError("--system-gb cannot be negative")
    if system_bytes >= capacity_bytes:
        raise InputError(
            f"--system-gb {system_bytes / 1e9:g} leaves nothing of {capacity_bytes / 1e9:g} GB"
        )
    trained = max((m.spec.n_ctx_train for m in models), default=0)
    if ctx is None:
        ctx = min(16384, trained) if trained else 16384
    if ctx < 1:
        raise InputError(f"--ctx must be at least 1 token, not {ctx}")
    warnings = []
    rows = []
    for m in models:
        w, kv, st, buf = model_memory_bytes(m, ctx, kv_type, parallel, ubatch)
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
        if m.spec.n_ctx_train and ctx > m.spec.n_ctx_train:
            warnings.append(
                f"{m.name}: context {ctx:,} is beyond its trained maximum of "
                f"{m.spec.n_ctx_train:,} tokens"
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
    best = max_context_that_fits(models, room, kv_type, parallel, ubatch, limit=trained or None)

    default_ctx = trained or ctx
    default_kv = sum(
        kv_bytes(m, default_ctx, kv_type, parallel, ubatch) + state_bytes(m, parallel)
        for m in models
    )
    if default_ctx > 4 * ctx and default_kv - kv_total > 0.05 * capacity_bytes:
        warnings.append(
            f"a runtime that reserves the full {default_ctx:,}-token context (Ollama does when it "
            f"detects enough memory) holds {default_kv / 1e9:.1f} GB of KV instead of "
            f"{kv_total / 1e9:.2f} GB: set the context to what you need"
        )
    if best and best < ctx:
        warnings.append(f"the largest context that fits is {best:,} tokens")

    quant_cache = kv_type != "f16"
    settings = {
        "OLLAMA_CONTEXT_LENGTH": str(ctx),
        "OLLAMA_KV_CACHE_TYPE": kv_type,
        "OLLAMA_FLASH_ATTENTION": "1",
        "llama.cpp": f"-c {ctx} -ctk {kv_type} -ctv {kv_type} -fa {'on' if quant_cache else 'auto'}"
        + (f" -np {parallel}" if parallel > 1 else ""),
    }
    return BudgetReport(
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
        kv_bytes=kv_total,
        buffers_bytes=buffers,
        used_bytes=used,
        free_bytes=free,
        fits=fits,
        verdict=verdict,
        max_ctx=best,
        default_ctx=default_ctx,
        default_kv_bytes=default_kv,
        settings=settings,
        warnings=warnings,
    )
