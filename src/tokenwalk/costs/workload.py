"""What a user asks a model to run, checked in one place: contexts, streams, batches, prompts.

Every command passes its numbers through `check_workload` before computing anything: what no
runtime can run is refused (an `InputError`, exit code 2) with the same words everywhere. A
context beyond what a model was trained on is not refused, since llama.cpp runs it (it logs
"possible training context overflow"); `context_warnings` says so, in every command alike.

The context `ctx` is llama.cpp's -c: the total of all `parallel` streams. llama.cpp gives each
stream n_ctx_seq = ctx / parallel cells (llama-context.cpp) and refuses n_ctx_seq = 0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from tokenwalk.errors import InputError
from tokenwalk.model.model import Model

if TYPE_CHECKING:
    pass

__all__ = [
    "MAX_TOKENS",
    "MAX_PARALLEL",
    "MAX_UBATCH",
    "MAX_OUTPUT",
    "DEFAULT_CTX",
    "default_context",
    "largest_context",
    "largest_that_fits",
    "shortest_trained",
    "stream_warnings",
    "tokens_per_stream",
    "check_workload",
    "context_warnings",
]

MAX_TOKENS = 1 << 30  # a billion tokens: beyond any model's context
MAX_PARALLEL = 256  # llama.cpp's LLAMA_MAX_SEQ (llama-cparams.h): n_seq_max must be <= 256
MAX_UBATCH = 1 << 20
MAX_OUTPUT = 1 << 24
DEFAULT_CTX = 16384  # the context a command assumes when none is given


def shortest_trained(models: Iterable[Model]) -> int:
    """The shortest trained context of `models` (0 when none states one): it bounds every
    stream of every model loaded together. Tokens."""
    return min((m.spec.n_ctx_train for m in models if m.spec.n_ctx_train), default=0)


def default_context(models: Iterable[Model], parallel: int = 1) -> int:
    """The context (all streams together) a command assumes when none is given:
    min(DEFAULT_CTX, shortest trained context x parallel), DEFAULT_CTX when no model states
    its trained context. Tokens."""
    shortest = shortest_trained(models)
    return min(DEFAULT_CTX, shortest * parallel) if shortest else DEFAULT_CTX


def largest_that_fits(fits: Callable[[int], bool], lo: int, hi: int) -> int:
    """The largest k in [lo, hi) for which `fits` holds, by bisection: `fits(lo)` is taken to
    hold, and `fits` must be monotone (what fits at k fits at every smaller k)."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


def largest_context(fits: Callable[[int], bool], limit: int, step: int = 256) -> int:
    """The largest context for which `fits` holds: `limit` itself, else a multiple of `step`
    below it; 0 when not even `step` tokens fit. Memory never shrinks as the context grows, so
    a bisection over the multiples of `step` is exact. Tokens."""
    if not fits(step):
        return 0
    top = max(1, limit // step)
    if fits(top * step):
        return limit
    return step * largest_that_fits(lambda k: fits(k * step), 1, top)


def tokens_per_stream(ctx: int, parallel: int = 1) -> int:
    """Context one stream holds: ctx / parallel tokens, rounded down (llama.cpp's n_ctx_seq)."""
    return ctx // max(1, parallel)


def _range(name: str, value: int, lo: int, hi: int, unit: str = "token") -> None:
    """Refuse `value` outside [lo, hi]; `unit` is singular ("token", "stream")."""
    if value < lo:
        units = unit if lo == 1 else f"{unit}s"
        raise InputError(f"{name} must be at least {lo:,} {units}, not {value:,}")
    if value > hi:
        raise InputError(f"{name} {value:,} is beyond what any runtime runs (at most {hi:,})")


def check_workload(
    *,
    ctx: int | None = None,
    parallel: int = 1,
    ubatch: int | None = None,
    prompt: int | None = None,
    cached: int | None = None,
    output: int | None = None,
    min_ctx: int = 1,
) -> None:
    """Refuse what cannot run: counts out of range, a context split into streams of no token,
    a prefix cache as long as the prompt. `min_ctx` is 0 where an empty context means something
    (a decode step at the start)."""
    if parallel > MAX_PARALLEL:
        raise InputError(
            f"--parallel {parallel:,} is beyond llama.cpp's {MAX_PARALLEL} parallel sequences"
        )
    _range("--parallel", parallel, 1, MAX_PARALLEL, "stream")
    if ctx is not None:
        _range("--ctx", ctx, min_ctx, MAX_TOKENS)
        if 0 < ctx < parallel:
            raise InputError(
                f"--ctx {ctx:,} split over {parallel:,} streams leaves each less than one token "
                "(--ctx is the total of all streams, as llama.cpp's -c)"
            )
    if ubatch is not None:
        _range("--ubatch", ubatch, 1, MAX_UBATCH)
    if prompt is not None:
        _range("--prompt", prompt, 1, MAX_TOKENS)
    if cached is not None:
        _range("--cached", cached, 0, MAX_TOKENS)
        if prompt is not None and cached >= prompt:
            raise InputError(
                f"--cached {cached:,} must be below --prompt {prompt:,} (at least one token runs)"
            )
    if output is not None:
        _range("--output", output, 0, MAX_OUTPUT)


def context_warnings(models: Iterable[Model], tokens: int, what: str = "context") -> list[str]:
    """One warning per model whose trained context is shorter than `tokens` (per stream)."""
    return [
        f"{m.name}: {what} of {tokens:,} tokens is beyond its trained maximum of "
        f"{m.spec.n_ctx_train:,} tokens (llama.cpp runs it; the model was not trained that far)"
        for m in models
        if m.spec.n_ctx_train and tokens > m.spec.n_ctx_train
    ]


def stream_warnings(models: Iterable[Model], ctx: int, parallel: int = 1) -> list[str]:
    """`context_warnings` for `parallel` streams sharing a context of `ctx` tokens (llama.cpp's
    -c): each stream holds ctx / parallel of them (`tokens_per_stream`)."""
    return context_warnings(models, tokens_per_stream(ctx, parallel), "a stream's context")
