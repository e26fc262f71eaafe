"""`tokenwalk budget`, `tokenwalk trace` and `tokenwalk spec`: memory and time of a whole setup."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from tokenwalk.cli.app import (
    CTX_MEANING,
    CachedOpt,
    JsonOpt,
    KvTypeOpt,
    ModelArg,
    NoCacheOpt,
    OutputOpt,
    ParallelOpt,
    PromptOpt,
    QuantOpt,
    SwaFullOpt,
    UbatchOpt,
    app,
    load,
    respond,
    tokens_option,
    warn,
)
from tokenwalk.cli.checks import answer, on_system, system_fit, typical_error
from tokenwalk.cli.complete import complete_model
from tokenwalk.cli.cost_opts import CostSpec, cost_options
from tokenwalk.cli.machine_opts import SYSTEM_LISTS, SYSTEM_SINGLE, system_options
from tokenwalk.cli.output import output_options
from tokenwalk.cli.prompt_opts import ChatOpt, PromptFileOpt, check_one_prompt, load_counted
from tokenwalk.cli.sweep import model_items, sweep
from tokenwalk.errors import InputError
from tokenwalk.system import SystemSpec

if TYPE_CHECKING:
    from tokenwalk.costs.budget import BudgetReport
    from tokenwalk.model.model import Model
    from tokenwalk.system import Offload, System


# Presets a hint may suggest when the weights do not fit, largest first.
_SMALLER_QUANTS = (
    "Q8_0",
    "Q6_K",
    "Q5_K_M",
    "Q5_K_S",
    "Q4_K_M",
    "Q4_K_S",
    "IQ4_XS",
    "Q3_K_L",
    "Q3_K_M",
    "Q3_K_S",
    "Q2_K",
)


def _at_preset(model: Model, preset: str) -> Model:
    """The tensor table llama.cpp would write for `model`'s architecture at `preset`."""
    from tokenwalk.model.model import Model as _Model
    from tokenwalk.model.quant import assign_types
    from tokenwalk.model.synth import synthesize_tensors

    infos = assign_types(model.spec, synthesize_tensors(model.spec), preset)
    alt = _Model.from_parts(
        model.name,
        model.spec,
        infos,
        file_bytes=sum(i.n_bytes for i in infos),
        file_bytes_exact=False,
        quant=preset,
        source=model.source,
        layer_nodes=model.layer_nodes,
    )
    return alt.with_swa_full() if model.swa_full_layers else alt


def _smaller_quants(models: list[Model]) -> list[tuple[str, list[Model]]]:
    """The same models at each preset of `_SMALLER_QUANTS` that is smaller than what they are."""
    from tokenwalk.errors import TokenwalkError

    now = sum(m.tensor_bytes for m in models)
    out = []
    for preset in _SMALLER_QUANTS:
        try:
            alt = [_at_preset(m, preset) for m in models]
        except TokenwalkError:
            return out
        if sum(m.tensor_bytes for m in alt) < now:
            out.append((preset, alt))
    return out


def _budget(models: list[Model], system: System, offload: Offload, **kw: Any) -> BudgetReport:
    """`costs.compare.system_budget`, refused when a machine of one pool has no memory size."""
    from tokenwalk.costs.compare import system_budget

    report = system_budget(models, system, offload, **kw)
    if report is None:
        raise InputError(f"machine '{system.first.slug}' has no memory size; give --memory GB")
    return report


@app.command()
@sweep(["ctx", "kv_type", "parallel", "ubatch", "quant", *SYSTEM_LISTS], single=SYSTEM_SINGLE)
@system_options
@output_options
def budget(
    models: Annotated[
        list[str],
        typer.Argument(
            help="One or more models loaded together (a target and its draft, say): a,b or a b.",
            show_default=False,
            metavar="MODEL",
        ),
    ],
    ctx: Annotated[
        int | None,
        tokens_option(
            "--ctx",
            "-c",
            help="Context to reserve for each model, " + CTX_MEANING + " Default: 16,384 or the "
            "models' shortest maximum.",
            show_default=False,
        ),
    ] = None,
    prompt_file: PromptFileOpt = None,
    chat: ChatOpt = None,
    kv_type: KvTypeOpt = "f16",
    swa_full: SwaFullOpt = False,
    parallel: ParallelOpt = 1,
    ubatch: UbatchOpt = 512,
    quant: QuantOpt = None,
    json: JsonOpt = False,
    no_cache: NoCacheOpt = False,
    *,
    system: SystemSpec,
) -> None:
    """Does it fit: the system, the weights of every model, KV at the context, compute buffers,
    and what is left; the largest context that fits and the settings that apply it. Exits 1
    when it does not fit."""
    from tokenwalk.costs.compare import placed
    from tokenwalk.costs.workload import check_workload

    check_workload(ctx=ctx, parallel=parallel, ubatch=ubatch)
    models = [item for ref in models for item in model_items(ref)]  # a,b as compare takes it
    sysm, offload = on_system(system)
    if check_one_prompt(None, prompt_file, chat):
        if ctx is not None:
            raise InputError("give the context once: --ctx N or a prompt to count, not both")
        counted = [
            load_counted(
                ref, quant, prompt_file, chat, json=json, no_cache=no_cache, swa_full=swa_full
            )
            for ref in models
        ]
        loaded = [c[0].model for c in counted]
        # the prompt and what is written after it, the reply counted in the chat or none
        ctx = max(
            c.prompt_tokens + (c.calls[-1].output_tokens if c.calls else 0) for _, c in counted
        )
        check_workload(ctx=ctx, parallel=parallel, ubatch=ubatch)
    else:
        loaded = [
            load(ref, quant, json=json, no_cache=no_cache, swa_full=swa_full).model
            for ref in models
        ]
    kw: dict[str, Any] = dict(ctx=ctx, kv_type=kv_type, parallel=parallel, ubatch=ubatch)
    report = _budget(loaded, sysm, offload, **kw)
    # say what would make it fit, a smaller quant included (on one pool of memory, when not
    # even the weights fit)
    if not (report.fits if placed(sysm) else report.max_fit_ctx):
        report = _budget(loaded, sysm, offload, smaller_quants=_smaller_quants(loaded), **kw)
    for w in report.warnings:
        warn(w)
    respond(report, json)
    if not report.fits:
        raise typer.Exit(1)


@app.command()
@sweep(
    ["model", "prompt", "output", "cached", "ubatch", "kv_type", "quant", *SYSTEM_LISTS],
    single=SYSTEM_SINGLE,
)
@system_options
@cost_options
@output_options
def trace(
    model: ModelArg,
    prompt: PromptOpt = 0,
    prompt_file: PromptFileOpt = None,
    chat: ChatOpt = None,
    output: OutputOpt = 300,
    cold: Annotated[bool, typer.Option("--cold", help="Load the weights from disk first.")] = False,
    cached: CachedOpt = 0,
    restore_kv: Annotated[
        bool,
        typer.Option("--restore-kv", help="Restore the --cached prefix from disk (a saved slot)."),
    ] = False,
    gap: Annotated[
        float,
        typer.Option(
            "--gap",
            help="Seconds between the calls of a --chat conversation (from one reply's end to the "
            "next question).",
            min=0,
        ),
    ] = 0.0,
    keep_alive: Annotated[
        float | None,
        typer.Option(
            "--keep-alive",
            help="Seconds an idle model stays loaded (Ollama: 300); a longer --gap loads it "
            "again and loses its cache. Default: it stays (llama-server).",
            min=0,
            show_default=False,
        ),
    ] = None,
    ubatch: UbatchOpt = 512,
    kv_type: KvTypeOpt = "f16",
    swa_full: SwaFullOpt = False,
    quant: QuantOpt = None,
    json: JsonOpt = False,
    no_cache: NoCacheOpt = False,
    *,
    system: SystemSpec,
    cost: CostSpec,
) -> None:
    """The whole request as a timeline: load (--cold), tokenize, prefill chunk by chunk, KV
    stored, the first token, the decode steps with the context growing, the end. A --chat
    conversation of several calls is traced call by call, each reusing the prefix cache the
    previous one left. Warns when the model and the request's KV do not fit."""
    from tokenwalk.costs.split import ubatch_warnings
    from tokenwalk.costs.workload import check_workload, context_warnings

    text = check_one_prompt(prompt, prompt_file, chat)
    if not text and prompt < 1:
        raise InputError(
            "give the prompt: --prompt N (at least 1 token), --prompt-file FILE or --chat FILE"
        )
    check_workload(prompt=max(prompt, 1), cached=cached, output=output, ubatch=ubatch)
    sysm, offload = on_system(system)
    m = sysm.first
    detail = None
    if text:
        loaded, counted = load_counted(
            model, quant, prompt_file, chat, json=json, no_cache=no_cache, swa_full=swa_full
        )
        mdl = loaded.model
        if len(counted.calls) > 1:
            _trace_session(
                mdl,
                sysm,
                offload,
                cost,
                counted,
                output,
                cold,
                gap,
                keep_alive,
                ubatch,
                kv_type,
                system.system_gb,
                json,
            )
            return
        prompt = counted.prompt_tokens
        check_workload(prompt=prompt, cached=cached, output=output, ubatch=ubatch)
        # the engine's tokenizer is timed by the model, not by how long counting took here:
        # an answer is the same every time it is asked
        detail = f"{prompt:,} tokens ({counted.counted_with})"
    else:
        mdl = load(model, quant, json=json, no_cache=no_cache, swa_full=swa_full).model
    from tokenwalk.costs.compare import system_trace
    from tokenwalk.costs.energy import trace_energy

    tokens = prompt + output
    report, setup = system_trace(
        mdl,
        sysm,
        offload,
        prompt=prompt,
        output=output,
        cached=cached,
        ubatch=ubatch,
        kv_type=kv_type,
        cold=cold,
        restore_kv=restore_kv,
        tokenize_detail=detail,
    )
    if (cold or restore_kv) and report.load_assumed:
        warn(
            f"machine '{m.slug}' has no load rate or disk speed; assuming "
            f"{report.load_gbs:g} GB/s (an NVMe SSD) for the "
            + " and ".join(w for w, on in (("load", cold), ("KV restore", restore_kv)) if on)
        )
    power = cost.power(sysm, host_computes=setup is not None and setup.host_computes)
    report = report.model_copy(
        update={
            "energy": trace_energy(report, power, cost.price),
            "prefill_error": typical_error(sysm, setup, "prefill"),
            "decode_error": typical_error(sysm, setup, "decode"),
        }
    )
    fit = system_fit(
        [mdl], sysm, setup, system.system_gb, ctx=tokens, kv_type=kv_type, ubatch=ubatch
    )
    warnings = context_warnings([mdl], tokens, "a request")
    warnings += ubatch_warnings([mdl], ubatch, prompt - cached, sysm, setup)
    answer(report, fit, warnings, json)


def _trace_session(
    mdl: Model,
    sysm: System,
    offload: Offload,
    cost: CostSpec,
    counted: Any,
    output: int,
    cold: bool,
    gap: float,
    keep_alive: float | None,
    ubatch: int,
    kv_type: str,
    system_gb: float | None,
    json: bool,
) -> None:
    """`trace --chat` with several calls: one line per call and the session's totals, and
    the energy of the calls; a model split over cards and a host is placed once for the
    session (`costs.compare.system_session`)."""
    from tokenwalk.costs.compare import system_session
    from tokenwalk.costs.energy import session_energy
    from tokenwalk.costs.split import ubatch_warnings
    from tokenwalk.costs.workload import check_workload, context_warnings

    calls = [(c.prompt_tokens, c.cached_tokens, c.output_tokens or output) for c in counted.calls]
    for p, c, o in calls:
        check_workload(prompt=p, cached=c, output=o, ubatch=ubatch)
    report, setup = system_session(
        mdl,
        sysm,
        offload,
        calls,
        gap_s=gap,
        keep_alive_s=keep_alive,
        cold=cold,
        ubatch=ubatch,
        kv_type=kv_type,
    )
    power = cost.power(sysm, host_computes=setup is not None and setup.host_computes)
    report = report.model_copy(
        update={
            "energy": session_energy(report, power, cost.price),
            "prefill_error": typical_error(sysm, setup, "prefill"),
            "decode_error": typical_error(sysm, setup, "decode"),
        }
    )
    tokens = max(p + o for p, _, o in calls)
    fit = system_fit([mdl], sysm, setup, system_gb, ctx=tokens, kv_type=kv_type, ubatch=ubatch)
    warnings = context_warnings([mdl], tokens, "a request")
    longest = max(p - c for p, c, _ in calls)  # the longest prefill of the session's calls
    warnings += ubatch_warnings([mdl], ubatch, longest, sysm, setup)
    answer(report, fit, warnings, json)


@app.command()
@sweep(
    ["target", "gamma", "alpha", "ctx", "kv_type", "quant", "draft_quant", *SYSTEM_LISTS],
    single=[*SYSTEM_SINGLE, "draft"],
)
@system_options
@cost_options
@output_options
def spec(
    target: ModelArg,
    draft: Annotated[
        str | None,
        typer.Option(
            "--draft",
            "-d",
            help="The draft model (any model argument); no default: this or --mtp is needed.",
            show_default=False,
            autocompletion=complete_model,
        ),
    ] = None,
    mtp: Annotated[
        bool,
        typer.Option("--mtp", help="Draft with the target's own multi-token-prediction block."),
    ] = False,
    gamma: Annotated[int, typer.Option("--gamma", "-g", help="Draft tokens per round.")] = 4,
    alpha: Annotated[
        float, typer.Option("--alpha", "-a", help="Acceptance rate of a draft token, in (0, 1).")
    ] = 0.7,
    ctx: Annotated[
        int, tokens_option("--ctx", "-c", help="Context the rounds run at (one stream).")
    ] = 4096,
    kv_type: KvTypeOpt = "f16",
    swa_full: SwaFullOpt = False,
    quant: QuantOpt = None,
    draft_quant: Annotated[
        str | None,
        typer.Option(
            "--draft-quant",
            help="Quant preset of the draft (default: --quant).",
            show_default=False,
        ),
    ] = None,
    observed_speedup: Annotated[
        float | None,
        typer.Option(
            "--observed-speedup",
            help="A speedup you measured (tok/s with drafting / without): reports the acceptance "
            "rate that reproduces it.",
            show_default=False,
        ),
    ] = None,
    json: JsonOpt = False,
    no_cache: NoCacheOpt = False,
    *,
    system: SystemSpec,
    cost: CostSpec,
) -> None:
    """When speculative decoding pays: tokens per round, round time, speedup, break-even
    acceptance rate, the experts a verify pass wakes, and a table over alpha and gamma."""
    from tokenwalk.costs.spec import mtp_draft_model, spec_report
    from tokenwalk.costs.workload import check_workload, context_warnings
    from tokenwalk.timing.passes import pass_time

    if draft and mtp:
        raise InputError("give either --draft MODEL or --mtp, not both")
    if not draft and not mtp:
        raise InputError("give a draft: --draft MODEL, or --mtp for the target's own MTP block")
    if not 0.0 < alpha < 1.0:
        raise InputError(f"--alpha must be between 0 and 1 (exclusive), not {alpha}")
    if gamma < 1:
        raise InputError(f"--gamma must be at least 1 draft token, not {gamma}")
    check_workload(ctx=ctx, min_ctx=0)
    sysm, offload = on_system(system, load_mtp=mtp)
    m = sysm.first
    tgt = load(target, quant, json=json, no_cache=no_cache, swa_full=swa_full).model
    if mtp:
        drf = mtp_draft_model(tgt)
    else:
        assert draft is not None
        drf = load(
            draft, draft_quant or quant, json=json, no_cache=no_cache, swa_full=swa_full
        ).model
    models = [tgt] if mtp else [tgt, drf]
    reserved = max(ctx, 1)
    from tokenwalk.costs.compare import system_budget, system_plan
    from tokenwalk.costs.split import split_pass_time
    from tokenwalk.system import Offload

    # the target as placed; the draft whole on the first card (llama.cpp's -ngld all); None on
    # one pool of memory
    setups = {
        id(tgt): system_plan(tgt, sysm, offload, ctx=ctx, kv_type=kv_type),
        id(drf): system_plan(drf, sysm, Offload(), ctx=ctx, kv_type=kv_type),
    }

    def timer(model, n: int, c: int) -> float:  # noqa: ANN001
        setup = setups[id(model)]
        if setup is None or setup.one_card:
            return pass_time(model, m, n, c, kv_type=kv_type).time_s
        return split_pass_time(setup, n, c, kv_type=kv_type.lower()).time_s

    placed = setups[id(tgt)]
    report = spec_report(
        tgt,
        drf,
        timer,
        machine=sysm.slug,
        alpha=alpha,
        gamma=gamma,
        ctx=ctx,
        mtp=mtp,
        observed_speedup=observed_speedup,
    )
    warnings = [*report.warnings, *context_warnings([tgt], ctx)]
    update: dict[str, Any] = {"warnings": warnings}
    # both models in memory, placed as above (budget's answer); the target's own verdict
    budget_ = system_budget(
        models,
        sysm,
        offload if not offload.shrinks_ctx else Offload(load_mtp=mtp),
        ctx=reserved,
        kv_type=kv_type,
        load_mtp=mtp,
    )
    fit = system_fit(
        models, sysm, placed, system.system_gb, ctx=reserved, kv_type=kv_type, load_mtp=mtp
    )
    if budget_ is not None and fit is not None:
        fits = fit.fits if placed is None else budget_.fits
        update |= {"fits": fits, "memory": fit, "budget": budget_}
    from tokenwalk.costs.energy import spec_energy

    power = cost.power(sysm, host_computes=placed is not None and placed.host_computes)
    update["energy"] = spec_energy(report, power, cost.price)
    report = report.model_copy(update=update)
    for w in report.warnings:
        warn(w)
    if json and fit is not None and not fit.fits:
        warn(fit.note)
    respond(report, json)
    if not report.pays or report.fits is False:
        raise typer.Exit(1)
