"""Side by side: one model on several machines, several models on one (`tokenwalk compare`,
`tokenwalk models --fits`).

A row is what the single commands answer for that model and machine, taken from the same
functions, so each number equals theirs:

    fits, free_bytes, max_fit_ctx    `budget MODEL -m M --ctx C`        (budget_report)
    tok_s, ceiling_tok_s             `decode MODEL -m M --ctx C`        (decode_report)
    ttft_s, total_s, energy          `trace MODEL -m M --prompt P --output O`  (trace_report,
                                     trace_energy)

where C, the context reserved in memory and read by the decode step, is P + O unless given.
On a discrete card and its host the model is placed as llama.cpp places it (`costs.split`).

A request's price (`price_for`): with a tariff per kWh and an hourly rent both given, a
data-center machine is rented by the hour and any other is a box of one's own that pays for
its energy; with one of them, it prices every machine.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from tokenwalk.costs.budget import (
    SHARED_MEMORY_KINDS,
    BudgetReport,
    budget_report,
    default_system_bytes,
    loaded_weight_bytes,
)
from tokenwalk.costs.energy import EnergyCost, Price, system_power, trace_energy
from tokenwalk.costs.trace import SessionReport, TraceReport, session_report, trace_report
from tokenwalk.costs.workload import (
    context_warnings,
    default_context,
    tokens_per_stream,
)
from tokenwalk.errors import InputError
from tokenwalk.model.model import Model
from tokenwalk.system import Offload, System, held_bytes
from tokenwalk.timing.accuracy import ExpectedError
from tokenwalk.timing.passes import DecodeReport, PrefillReport, decode_report, prefill_report
from tokenwalk.units import Bytes, Count

if TYPE_CHECKING:
    from tokenwalk.costs.split import Setup

# the typical error of a phase's estimate on a system as placed (cli.checks.typical_error)
Quote = Callable[[System, "Setup | None", str], ExpectedError | None]

__all__ = [
    "CompareRow",
    "CompareReport",
    "ModelFit",
    "ModelsFitReport",
    "reserve",
    "placed",
    "system_plan",
    "system_budget",
    "system_decode",
    "system_prefill",
    "system_trace",
    "system_session",
    "compare_row",
    "compare_report",
    "price_for",
    "RENTED_KINDS",
    "model_fit",
    "sort_fits",
    "FIT_SORTS",
]


def reserve(ctx: int, offload: Offload) -> int | None:
    """The context a placement reserves for a request of `ctx` tokens: what it runs at (at
    least one page of 256 cells); None for `--gpu-layers auto` with no context, which its
    `--fit` then chooses."""
    if offload.shrinks_ctx and ctx <= 0:
        return None
    return max(ctx, 256)


def placed(system: System) -> bool:
    """The one choice every answer (decode, prefill, trace, budget, spec, compare, serve) makes
    first: cards and their host, whose tensors llama.cpp places (`system_plan`), or one pool of
    memory (a Mac, an APU, a CPU), which holds everything and has nothing to place."""
    return not system.unified


def system_plan(
    model: Model,
    system: System,
    offload: Offload,
    *,
    ctx: int,
    kv_type: str = "f16",
    parallel: int = 1,
    ubatch: int = 512,
) -> Setup | None:
    """`model` placed on a card and its host for a request of `ctx` tokens (`reserve`), as
    llama.cpp places it (`costs.split.plan`); None on one pool of memory, which has nothing
    to place."""
    if not placed(system):
        return None
    from tokenwalk.costs.split import plan

    return plan(
        model,
        system,
        offload,
        ctx=reserve(ctx, offload),
        kv_type=kv_type.lower(),
        parallel=parallel,
        ubatch=ubatch,
    )


def system_budget(
    models: list[Model],
    system: System,
    offload: Offload,
    *,
    ctx: int | None,
    kv_type: str = "f16",
    parallel: int = 1,
    ubatch: int = 512,
    smaller_quants: Sequence[tuple[str, list[Model]]] = (),
    load_mtp: bool = False,
) -> BudgetReport | None:
    """`budget`'s answer for `models` on `system` at `ctx` (None: budget's default, 16,384 or
    the models' shortest maximum): one pool of memory (`budget_report`, the system's share
    `system.system_gb` or what the machine's kind suggests) or cards and their host placed by
    `offload` (`split_budget_report`; MTP blocks loaded as `offload.load_mtp` says, `load_mtp`
    being one pool's). None when a machine of one pool has no memory size."""
    kv_type = kv_type.lower()
    kw: dict[str, Any] = dict(
        ctx=ctx, kv_type=kv_type, parallel=parallel, ubatch=ubatch, smaller_quants=smaller_quants
    )
    if placed(system):
        from tokenwalk.costs.split import split_budget_report

        return split_budget_report(models, system, offload, **kw)
    m = system.first
    if not m.memory_bytes:
        return None
    held = held_bytes(system.system_gb)
    if held is None:
        held = default_system_bytes(m.kind, m.memory_bytes)
    return budget_report(
        models,
        machine=m.slug,
        capacity_bytes=int(m.memory_bytes),
        system_bytes=held,
        shared_memory=m.kind in SHARED_MEMORY_KINDS,
        gpu_limit_bytes=int(m.gpu_usable_bytes or m.memory_bytes),
        gpu_limit_note=m.gpu_limit_note,
        load_mtp=load_mtp,
        **kw,
    )


def system_decode(
    model: Model,
    system: System,
    offload: Offload,
    *,
    ctx: int,
    kv_type: str = "f16",
    parallel: int = 1,
    curve: bool = True,
    placed: tuple[Setup | None] | None = None,
) -> tuple[DecodeReport, Setup | None]:
    """`decode`'s answer for `model` on `system`: `parallel` streams sharing a context of `ctx`
    tokens, each reading its share (`tokens_per_stream`); the report states `ctx`, the total.
    The placement comes back too (None on one pool of memory); `placed` gives one already
    made (`system_plan`). `curve`: compute `by_context` (`decode_report`)."""
    per_stream = tokens_per_stream(ctx, parallel)
    setup = (
        placed[0]
        if placed is not None
        else system_plan(model, system, offload, ctx=ctx, kv_type=kv_type, parallel=parallel)
    )
    if setup is None:
        report = decode_report(
            model, system.first, ctx=per_stream, kv_type=kv_type, parallel=parallel, curve=curve
        )
    else:
        from tokenwalk.costs.split import split_decode_report

        report = split_decode_report(
            setup, ctx=per_stream, kv_type=kv_type, parallel=parallel, curve=curve
        )
    return report.model_copy(update={"ctx": ctx}), setup


def system_prefill(
    model: Model,
    system: System,
    offload: Offload,
    *,
    prompt: int,
    cached: int = 0,
    ubatch: int = 512,
    kv_type: str = "f16",
) -> tuple[PrefillReport, Setup | None]:
    """`prefill`'s answer for `model` on `system`: a prompt of `prompt` tokens, `cached` of them
    already in the cache, in micro-batches of `ubatch`. The placement comes back too (None on
    one pool of memory)."""
    setup = system_plan(model, system, offload, ctx=prompt, kv_type=kv_type, ubatch=ubatch)
    if setup is None:
        report = prefill_report(
            model, system.first, prompt=prompt, cached=cached, ubatch=ubatch, kv_type=kv_type
        )
        return report, None
    from tokenwalk.costs.split import split_prefill_report

    report = split_prefill_report(
        setup, prompt=prompt, cached=cached, ubatch=ubatch, kv_type=kv_type
    )
    return report, setup


def _split_trace_kw(
    setup: Setup, *, prompt: int, cached: int, ubatch: int, kv_type: str
) -> dict[str, Any]:
    """What a model split over cards and a host brings to `trace_report`: its own prefill and
    decode step, and over RPC the upload a cold load adds."""
    from tokenwalk.costs.split import split_pass_time, split_prefill_report

    kw: dict[str, Any] = {}
    kw["prefill"] = split_prefill_report(
        setup, prompt=prompt, cached=cached, ubatch=ubatch, kv_type=kv_type
    )

    def step(c: int) -> tuple[float, float]:
        sp = split_pass_time(setup, 1, c, kv_type=kv_type.lower())
        return sp.time_s, sp.bytes

    kw["step"] = step
    rpc = kw["prefill"].split.rpc
    if rpc is not None:
        kw["upload"] = (rpc.upload_bytes, rpc.upload_s)
    return kw


def system_trace(
    model: Model,
    system: System,
    offload: Offload,
    *,
    prompt: int,
    output: int,
    cached: int = 0,
    kv_type: str = "f16",
    ubatch: int = 512,
    placed: tuple[Setup | None] | None = None,
    **more: Any,
) -> tuple[TraceReport, Setup | None]:
    """`trace`'s answer (a request of `prompt` then `output` tokens, `cached` of the prompt
    in the prefix cache) for `model` on `system`, and the placement (None on one pool of
    memory). A model split over a card and its host brings its own prefill and decode step
    (and, over RPC, the upload a cold load adds); `more` goes to `trace_report` as it is
    (cold, restore_kv, tokenize_detail); `placed` gives a placement already made."""
    setup = (
        placed[0]
        if placed is not None
        else system_plan(
            model, system, offload, ctx=prompt + output, kv_type=kv_type, ubatch=ubatch
        )
    )
    report = _trace_on(
        model,
        system,
        setup,
        prompt=prompt,
        output=output,
        cached=cached,
        ubatch=ubatch,
        kv_type=kv_type,
        **more,
    )
    if setup is not None:
        report = report.model_copy(update={"machine": system.slug})
    return report, setup


def _trace_on(
    model: Model,
    system: System,
    setup: Setup | None,
    *,
    prompt: int,
    output: int,
    cached: int,
    ubatch: int,
    kv_type: str,
    **more: Any,
) -> TraceReport:
    """`trace_report` of one request on `system` as `setup` placed the model (None, or whole
    on one card: the first device's own timing)."""
    kw: dict[str, Any] = {}
    if setup is not None and not setup.one_card:
        kw = _split_trace_kw(setup, prompt=prompt, cached=cached, ubatch=ubatch, kv_type=kv_type)
    return trace_report(
        model,
        system.first,
        prompt=prompt,
        output=output,
        cached=cached,
        ubatch=ubatch,
        kv_type=kv_type,
        **kw,
        **more,
    )


def system_session(
    model: Model,
    system: System,
    offload: Offload,
    calls: list[tuple[int, int, int]],
    *,
    kv_type: str = "f16",
    ubatch: int = 512,
    **more: Any,
) -> tuple[SessionReport, Setup | None]:
    """`trace --chat`'s answer for a conversation of several calls ((prompt, cached, output)
    tokens each) on `system`, and the placement (None on one pool of memory). The model is
    placed once, for the longest call's context, as a server loads it once for the session;
    a split model runs every call's prefill and decode steps on that placement. `more` goes
    to `session_report` (gap_s, keep_alive_s, cold)."""
    ctx = max(p + o for p, _, o in calls)
    setup = system_plan(model, system, offload, ctx=ctx, kv_type=kv_type, ubatch=ubatch)
    trace = None
    if setup is not None and not setup.one_card:
        trace = functools.partial(_trace_on, model, system, setup, ubatch=ubatch, kv_type=kv_type)
    report = session_report(
        model,
        system.first,
        calls,
        ubatch=ubatch,
        kv_type=kv_type,
        trace=trace,
        machine_name=system.slug if setup is not None else None,
        **more,
    )
    return report, setup


# Kinds of machine rented by the hour when both prices are given (`price_for`).
RENTED_KINDS = ("datacenter",)


def price_for(system: System, per_kwh: Price, per_hour: Price) -> Price:
    """The price of a request on `system`: `per_hour` (an hourly rent) for a data-center
    machine and `per_kwh` (a tariff) for any other when both are given; else the one given."""
    if per_kwh.given and per_hour.given:
        rented = any(d.kind in RENTED_KINDS for d in system.devices)
        return per_hour if rented else per_kwh
    return per_hour if per_hour.given else per_kwh


class CompareRow(BaseModel):
    """One model on one machine: does it fit at the context, and how fast is the request."""

    model_config = ConfigDict(frozen=True)
    model: str
    quant: str
    machine: str
    machine_name: str
    weights_bytes: Bytes  # what llama.cpp loads (MTP blocks left out)
    fits: bool | None  # None: the machine has no memory size
    verdict: str | None
    free_bytes: Bytes | None  # left at ctx; negative when it does not fit
    max_fit_ctx: int | None
    placement: str  # llama.cpp flags on a card and its host; "" on one pool of memory
    split: str  # the weights' split between host and cards; "" on one pool of memory
    ceiling_tok_s: float  # decode at ctx: bandwidth / bytes a step reads
    tok_s: float  # decode at ctx: the estimate
    ttft_s: float  # the prompt: tokenize and prefill
    total_s: float  # the whole request: prompt and output
    energy: EnergyCost  # of the whole request, as `trace` counts it; its price where given
    warnings: list[str]
    # the error to expect of ttft_s and tok_s (tokenwalk.timing.accuracy): one device only
    prefill_error: ExpectedError | None = None
    decode_error: ExpectedError | None = None


class CompareReport(BaseModel):
    """The answer of `tokenwalk compare`: one row per model and machine, models first."""

    model_config = ConfigDict(frozen=True)
    prompt_tokens: int
    output_tokens: int
    ctx: int  # reserved in memory, and the context the decode step reads
    kv_type: str
    rows: list[CompareRow]
    swa_full: bool = False  # sliding-window layers hold the full context (--swa-full)
    notes: list[str]  # what was assumed (a host), what an option did not apply to


def compare_row(
    model: Model,
    system: System,
    offload: Offload,
    *,
    prompt: int,
    output: int,
    ctx: int,
    kv_type: str = "f16",
    ubatch: int = 512,
    watts: float | None = None,
    price: Price | None = None,
    quote: Quote | None = None,
) -> CompareRow:
    """One row: `budget`, `decode` and `trace` for `model` on `system` (see the module), and
    the request's energy at the system's power (`watts` replaces it) and `price`; `quote`
    gives the typical error of its prefill and decode estimates (the cli's
    `typical_error`, which reads the shipped errors)."""
    budget = system_budget([model], system, offload, ctx=ctx, kv_type=kv_type, ubatch=ubatch)
    # placed once, at the context reserved: the decode step and the request run on it
    placed = (system_plan(model, system, offload, ctx=ctx, kv_type=kv_type, ubatch=ubatch),)
    decode, _ = system_decode(
        model, system, offload, ctx=ctx, kv_type=kv_type, curve=False, placed=placed
    )
    trace, setup = system_trace(
        model,
        system,
        offload,
        prompt=prompt,
        output=output,
        kv_type=kv_type,
        ubatch=ubatch,
        placed=placed,
    )
    host_computes = setup is not None and setup.host_computes
    power = system_power(system.devices, system.host, host_computes=host_computes, watts=watts)
    # what budget would say about a runtime's own default context is its business, not this
    warnings = context_warnings([model], ctx, "a request")
    from tokenwalk.costs.split import ubatch_warnings

    warnings += ubatch_warnings([model], ubatch, prompt, system, setup)
    if budget is None:
        warnings.append(f"machine '{system.slug}' has no memory size: whether it fits is unknown")
    return CompareRow(
        model=model.name,
        quant=model.quant,
        machine=system.slug,
        machine_name=system.name,
        weights_bytes=loaded_weight_bytes(model),
        fits=budget.fits if budget is not None else None,
        verdict=budget.verdict if budget is not None else None,
        free_bytes=budget.free_bytes if budget is not None else None,
        max_fit_ctx=budget.max_fit_ctx if budget is not None else None,
        placement=budget.placement if budget is not None else "",
        split=budget.split if budget is not None else "",
        ceiling_tok_s=decode.ceiling_tok_s,
        tok_s=decode.tok_s,
        ttft_s=trace.ttft_s,
        total_s=trace.total_s,
        energy=trace_energy(trace, power, price),
        warnings=warnings,
        prefill_error=quote(system, setup, "prefill") if quote else None,
        decode_error=quote(system, setup, "decode") if quote else None,
    )


def compare_report(
    models: list[Model],
    systems: list[tuple[System, Offload]],
    *,
    prompt: int,
    output: int,
    ctx: int | None = None,
    kv_type: str = "f16",
    ubatch: int = 512,
    notes: list[str] | None = None,
    watts: float | None = None,
    per_kwh: Price | None = None,
    per_hour: Price | None = None,
    quote: Quote | None = None,
) -> CompareReport:
    """Every model on every system, one row each (models in the order given, then machines).
    `ctx` None reserves the whole request, `prompt + output`; `watts` replaces every system's
    power, and the prices are chosen per system by `price_for`; `quote` as in `compare_row`."""
    from tokenwalk.costs.workload import check_workload

    c = prompt + output if ctx is None else ctx
    check_workload(prompt=prompt, output=output, ubatch=ubatch, ctx=c)
    if c < prompt + output:
        raise InputError(
            f"--ctx {c:,} is shorter than the request it holds: --prompt {prompt:,} + "
            f"--output {output:,} = {prompt + output:,} tokens"
        )
    per_kwh, per_hour = per_kwh or Price(), per_hour or Price()
    rows = [
        compare_row(
            m,
            s,
            o,
            prompt=prompt,
            output=output,
            ctx=c,
            kv_type=kv_type,
            ubatch=ubatch,
            watts=watts,
            price=price_for(s, per_kwh, per_hour),
            quote=quote,
        )
        for m in models
        for s, o in systems
    ]
    hosts = list(dict.fromkeys(s.host_note for s, _ in systems if s.host and s.host_note))
    return CompareReport(
        swa_full=any(m.swa_full for m in models),
        prompt_tokens=prompt,
        output_tokens=output,
        ctx=c,
        kv_type=kv_type.lower(),
        rows=rows,
        notes=[*hosts, *(notes or [])],
    )


# How `models --fits` orders the models that fit: the key of a row, largest first.
FIT_SORTS = ("size", "speed", "ctx")


class ModelFit(BaseModel):
    """One catalogue model on the machine of `models --fits`."""

    model_config = ConfigDict(frozen=True)
    slug: str
    name: str
    params: Count
    active_params: Count
    weights_bytes: Bytes
    ctx: int  # the context reserved: budget's default
    fits: bool
    verdict: str
    free_bytes: Bytes
    max_fit_ctx: int  # the largest context that fits (0: not even the weights)
    max_ctx: int  # the model's trained maximum
    placement: str  # llama.cpp flags on a card and its host; "" on one pool of memory
    split: str  # the weights' split between host and cards; "" on one pool of memory
    tok_s: float  # decode at ctx
    ceiling_tok_s: float


class ModelsFitReport(BaseModel):
    """The answer of `tokenwalk models --fits MACHINE`: every catalogue model that can be
    modelled, those that fit first, in the order of `sort`."""

    model_config = ConfigDict(frozen=True)
    machine: str
    machine_name: str
    quant: str
    kv_type: str
    swa_full: bool = False  # sliding-window layers hold the full context (--swa-full)
    capacity_bytes: Bytes
    system_bytes: Bytes
    sort: str
    models: list[ModelFit]
    notes: list[str]


def model_fit(
    slug: str,
    name: str,
    model: Model,
    system: System,
    offload: Offload,
    *,
    ctx: int | None = None,
    kv_type: str = "f16",
) -> tuple[ModelFit, BudgetReport]:
    """`budget` (at `ctx`, default budget's: 16,384 or the model's maximum) and `decode` at
    that context for one catalogue model; the budget comes back too, for what it says about
    the machine."""
    from tokenwalk.costs.weights import active_params

    if ctx is None:  # budget's default, also where --fit would choose (the same for every row)
        ctx = default_context([model])
    budget = system_budget([model], system, offload, ctx=ctx, kv_type=kv_type)
    if budget is None:
        raise InputError(f"machine '{system.slug}' has no memory size; give --memory GiB")
    c = budget.ctx
    decode, _ = system_decode(model, system, offload, ctx=c, kv_type=kv_type, curve=False)
    row = ModelFit(
        slug=slug,
        name=name,
        params=model.params,
        active_params=active_params(model),
        weights_bytes=loaded_weight_bytes(model),
        ctx=c,
        fits=budget.fits,
        verdict=budget.verdict,
        free_bytes=budget.free_bytes,
        max_fit_ctx=budget.max_fit_ctx,
        max_ctx=model.spec.n_ctx_train,
        placement=budget.placement,
        split=budget.split,
        tok_s=decode.tok_s,
        ceiling_tok_s=decode.ceiling_tok_s,
    )
    return row, budget


def sort_fits(rows: list[ModelFit], sort: str) -> list[ModelFit]:
    """Those that fit first, each group largest first by `sort` (size: weights; speed: decode
    tok/s; ctx: the largest context that fits); those that do not, smallest weights first."""
    key = {
        "size": lambda r: r.weights_bytes,
        "speed": lambda r: r.tok_s,
        "ctx": lambda r: r.max_fit_ctx or 0,
    }[sort]
    fit = sorted((r for r in rows if r.fits), key=lambda r: (-key(r), r.slug))
    rest = sorted((r for r in rows if not r.fits), key=lambda r: (r.weights_bytes, r.slug))
    return fit + rest
