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
    SystemGbOpt,
    UbatchOpt,
    app,
    load,
    tokens_option,
)
from tokenwalk.cli.checks import answer, fit_on
from tokenwalk.cli.machine_opts import (
    BackendOpt,
    BandwidthOpt,
    GpuLimitOpt,
    KindOpt,
    MachineOpt,
    MachinesFileOpt,
    MemoryOpt,
    TflopsOpt,
    machine_from_options,
)
from tokenwalk.cli.prompt_opts import ChatOpt, PromptFileOpt, check_one_prompt, load_counted
from tokenwalk.errors import InputError


@app.command()
def decode(
    model: ModelArg,
    machine: MachineOpt = None,
    ctx: Annotated[
        int,
        tokens_option(
            "--ctx", "-c", help="Tokens already in the context (their KV is read), " + CTX_MEANING
        ),
    ] = 0,
    kv_type: KvTypeOpt = "f16",
    parallel: ParallelOpt = 1,
    system_gb: SystemGbOpt = None,
    bandwidth: BandwidthOpt = None,
    tflops: TflopsOpt = None,
    memory: MemoryOpt = None,
    gpu_limit: GpuLimitOpt = None,
    backend: BackendOpt = None,
    kind: KindOpt = None,
    machines_file: MachinesFileOpt = None,
    quant: QuantOpt = None,
    json: JsonOpt = False,
    no_cache: NoCacheOpt = False,
) -> None:
    """How fast a model writes: the bandwidth ceiling, the estimate, what a step reads, and
    how it compares with reading speed. Warns when the model and its KV do not fit."""
    from tokenwalk.costs.timing import decode_report
    from tokenwalk.costs.workload import check_workload, context_warnings, tokens_per_stream

    check_workload(ctx=ctx, parallel=parallel, min_ctx=0)
    m = machine_from_options(
        machine, bandwidth, tflops, memory, backend, kind, machines_file, gpu_limit
    )
    mdl = load(model, quant, json=json, no_cache=no_cache).model
    per_stream = tokens_per_stream(ctx, parallel)
    # each stream reads its own share of the context; the answer reports the total asked
    report = decode_report(mdl, m, ctx=per_stream, kv_type=kv_type, parallel=parallel)
    report = report.model_copy(update={"ctx": ctx})
    fit = fit_on([mdl], m, system_gb, ctx=ctx, kv_type=kv_type.lower(), parallel=parallel)
    answer(report, fit, context_warnings([mdl], per_stream, "a stream's context"), json)


@app.command()
def prefill(
    model: ModelArg,
    prompt: PromptOpt = 0,
    prompt_file: PromptFileOpt = None,
    chat: ChatOpt = None,
    machine: MachineOpt = None,
    cached: CachedOpt = 0,
    ubatch: UbatchOpt = 512,
    kv_type: KvTypeOpt = "f16",
    system_gb: SystemGbOpt = None,
    bandwidth: BandwidthOpt = None,
    tflops: TflopsOpt = None,
    memory: MemoryOpt = None,
    gpu_limit: GpuLimitOpt = None,
    backend: BackendOpt = None,
    kind: KindOpt = None,
    machines_file: MachinesFileOpt = None,
    quant: QuantOpt = None,
    json: JsonOpt = False,
    no_cache: NoCacheOpt = False,
) -> None:
    """How long the silence before the first token lasts: the prompt in chunks, each compute-
    or memory-bound, the attention share, and what a prefix cache saves. Warns when the model
    and the prompt's KV do not fit."""
    from tokenwalk.costs.timing import prefill_report
    from tokenwalk.costs.workload import check_workload, context_warnings

    text = check_one_prompt(prompt, prompt_file, chat)
    if not text and prompt < 1:
        raise InputError("give the prompt: --prompt N tokens, --prompt-file FILE or --chat FILE")
    check_workload(prompt=max(prompt, 1), cached=cached, ubatch=ubatch)
    m = machine_from_options(
        machine, bandwidth, tflops, memory, backend, kind, machines_file, gpu_limit
    )
    if text:
        loaded, counted = load_counted(
            model, quant, prompt_file, chat, json=json, no_cache=no_cache
        )
        mdl, prompt = loaded.model, counted.prompt_tokens
        check_workload(prompt=prompt, cached=cached, ubatch=ubatch)
    else:
        mdl = load(model, quant, json=json, no_cache=no_cache).model
    report = prefill_report(mdl, m, prompt=prompt, cached=cached, ubatch=ubatch, kv_type=kv_type)
    fit = fit_on([mdl], m, system_gb, ctx=prompt, kv_type=kv_type.lower(), ubatch=ubatch)
    answer(report, fit, context_warnings([mdl], prompt, "a prompt"), json)
