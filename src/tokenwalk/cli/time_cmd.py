"""`tokenwalk decode` and `tokenwalk prefill`."""

from __future__ import annotations

from typing import Annotated

from tokenwalk.cli.app import (
    CTX_MEANING,
    CachedOpt,
    JsonOpt,
    KvTypeOpt,
    ModelArg,
    NoCacheOpt,
    ParallelOpt,
    PromptOpt,
    QuantOpt,
    SwaFullOpt,
    UbatchOpt,
    app,
    load,
    tokens_option,
)
from tokenwalk.cli.checks import answer, on_system, system_fit, typical_error
from tokenwalk.cli.cost_opts import CostSpec, cost_options
from tokenwalk.cli.machine_opts import SYSTEM_LISTS, SYSTEM_SINGLE, system_options
from tokenwalk.cli.output import output_options
from tokenwalk.cli.prompt_opts import ChatOpt, PromptFileOpt, check_one_prompt, load_counted
from tokenwalk.cli.sweep import sweep
from tokenwalk.errors import InputError
from tokenwalk.system import SystemSpec


@app.command()
@sweep(["model", "ctx", "kv_type", "parallel", "quant", *SYSTEM_LISTS], single=SYSTEM_SINGLE)
@system_options
@cost_options
@output_options
def decode(
    model: ModelArg,
    ctx: Annotated[
        int,
        tokens_option(
            "--ctx", "-c", help="Tokens already in the context (their KV is read), " + CTX_MEANING
        ),
    ] = 0,
    kv_type: KvTypeOpt = "f16",
    swa_full: SwaFullOpt = False,
    parallel: ParallelOpt = 1,
    quant: QuantOpt = None,
    json: JsonOpt = False,
    no_cache: NoCacheOpt = False,
    *,
    system: SystemSpec,
    cost: CostSpec,
) -> None:
    """How fast a model writes: the bandwidth ceiling, the estimate, what a step reads, and
    how it compares with reading speed; on a card and its host, each device's part. Warns when
    the model and its KV do not fit."""
    from tokenwalk.cli.output import current
    from tokenwalk.costs.compare import system_decode
    from tokenwalk.costs.energy import decode_energy
    from tokenwalk.costs.workload import check_workload, stream_warnings

    check_workload(ctx=ctx, parallel=parallel, min_ctx=0)
    sysm, offload = on_system(system)
    mdl = load(model, quant, json=json, no_cache=no_cache, swa_full=swa_full).model
    warnings = stream_warnings([mdl], ctx, parallel)
    # each stream reads its own share of the context; the answer reports the total asked
    report, setup = system_decode(
        mdl,
        sysm,
        offload,
        ctx=ctx,
        kv_type=kv_type,
        parallel=parallel,
        curve=current().shows_curves,
    )
    power = cost.power(sysm, host_computes=setup is not None and setup.host_computes)
    report = report.model_copy(
        update={
            "energy": decode_energy(report, power, cost.price),
            "decode_error": typical_error(sysm, setup, "decode"),
        }
    )
    fit = system_fit(
        [mdl], sysm, setup, system.system_gb, ctx=ctx, kv_type=kv_type, parallel=parallel
    )
    answer(report, fit, warnings, json)


@app.command()
@sweep(
    ["model", "prompt", "cached", "ubatch", "kv_type", "quant", *SYSTEM_LISTS], single=SYSTEM_SINGLE
)
@system_options
@cost_options
@output_options
def prefill(
    model: ModelArg,
    prompt: PromptOpt = 0,
    prompt_file: PromptFileOpt = None,
    chat: ChatOpt = None,
    cached: CachedOpt = 0,
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
    """How long the silence before the first token lasts: the prompt in chunks, each compute-
    or memory-bound, the attention share, and what a prefix cache saves; on a card and its
    host, RAM-resident weights copied over the link (op offload). Warns when the model and the
    prompt's KV do not fit."""
    from tokenwalk.costs.compare import system_prefill
    from tokenwalk.costs.energy import prefill_energy
    from tokenwalk.costs.split import ubatch_warnings
    from tokenwalk.costs.workload import check_workload, context_warnings

    text = check_one_prompt(prompt, prompt_file, chat)
    if not text and prompt < 1:
        raise InputError(
            "give the prompt: --prompt N (at least 1 token), --prompt-file FILE or --chat FILE"
        )
    check_workload(prompt=max(prompt, 1), cached=cached, ubatch=ubatch)
    sysm, offload = on_system(system)
    if text:
        loaded, counted = load_counted(
            model, quant, prompt_file, chat, json=json, no_cache=no_cache, swa_full=swa_full
        )
        mdl, prompt = loaded.model, counted.prompt_tokens
        check_workload(prompt=prompt, cached=cached, ubatch=ubatch)
    else:
        mdl = load(model, quant, json=json, no_cache=no_cache, swa_full=swa_full).model
    warnings = context_warnings([mdl], prompt, "a prompt")
    report, setup = system_prefill(
        mdl, sysm, offload, prompt=prompt, cached=cached, ubatch=ubatch, kv_type=kv_type
    )
    warnings += ubatch_warnings([mdl], ubatch, prompt - cached, sysm, setup)
    power = cost.power(sysm, host_computes=setup is not None and setup.host_computes)
    report = report.model_copy(
        update={
            "energy": prefill_energy(report, power, cost.price),
            "prefill_error": typical_error(sysm, setup, "prefill"),
        }
    )
    fit = system_fit(
        [mdl], sysm, setup, system.system_gb, ctx=prompt, kv_type=kv_type, ubatch=ubatch
    )
    answer(report, fit, warnings, json)
