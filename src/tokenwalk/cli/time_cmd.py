"""`tokenwalk decode` and `tokenwalk prefill`."""

from __future__ import annotations

from typing import Annotated

import typer

from tokenwalk.cli.app import (
    CachedOpt,
    JsonOpt,
    KvTypeOpt,
    ModelArg,
    NoCacheOpt,
    ParallelOpt,
    PromptOpt,
    QuantOpt,
    UbatchOpt,
    app,
    load,
    respond,
)
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


@app.command()
def decode(
    model: ModelArg,
    machine: MachineOpt = None,
    ctx: Annotated[
        int,
        typer.Option("--ctx", "-c", help="Tokens already in the context (their KV is read)."),
    ] = 0,
    kv_type: KvTypeOpt = "f16",
    parallel: ParallelOpt = 1,
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
    how it compares with reading speed."""
    from tokenwalk.costs.timing import decode_report

    m = machine_from_options(
        machine, bandwidth, tflops, memory, backend, kind, machines_file, gpu_limit
    )
    loaded = load(model, quant, json=json, no_cache=no_cache)
    report = decode_report(loaded.model, m, ctx=ctx, kv_type=kv_type, parallel=parallel)
    respond(report, json)


@app.command()
def prefill(
    model: ModelArg,
    prompt: PromptOpt,
    machine: MachineOpt = None,
    cached: CachedOpt = 0,
    ubatch: UbatchOpt = 512,
    kv_type: KvTypeOpt = "f16",
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
    or memory-bound, the attention share, and what a prefix cache saves."""
    from tokenwalk.costs.timing import prefill_report

    m = machine_from_options(
        machine, bandwidth, tflops, memory, backend, kind, machines_file, gpu_limit
    )
    loaded = load(model, quant, json=json, no_cache=no_cache)
    report = prefill_report(
        loaded.model, m, prompt=prompt, cached=cached, ubatch=ubatch, kv_type=kv_type
    )
    respond(report, json)
