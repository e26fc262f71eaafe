"""`tokenwalk decode` and `tokenwalk prefill`."""

from __future__ import annotations

from typing import Annotated

import typer

from tokenwalk.cli.app import (
    JsonOpt,
    ModelArg,
    NoCacheOpt,
    QuantOpt,
    app,
    emit_json,
    load,
    stdout_console,
)
from tokenwalk.cli.machine_opts import (
    BackendOpt,
    BandwidthOpt,
    KindOpt,
    MachineOpt,
    MachinesFileOpt,
    MemoryOpt,
    TflopsOpt,
    machine_from_options,
)

KvTypeOpt = Annotated[
    str,
    typer.Option("--kv-type", "-t", help="Cache type: f16, bf16, q8_0, q4_0, ... (-ctk/-ctv)."),
]


@app.command()
def decode(
    model: ModelArg,
    machine: MachineOpt = None,
    ctx: Annotated[
        int,
        typer.Option("--ctx", "-c", help="Tokens already in the context (their KV is read)."),
    ] = 0,
    kv_type: KvTypeOpt = "f16",
    parallel: Annotated[
        int, typer.Option("--parallel", "-np", help="Streams sharing each read of the weights.")
    ] = 1,
    bandwidth: BandwidthOpt = None,
    tflops: TflopsOpt = None,
    memory: MemoryOpt = None,
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

    m = machine_from_options(machine, bandwidth, tflops, memory, backend, kind, machines_file)
    loaded = load(model, quant, json=json, no_cache=no_cache)
    report = decode_report(loaded.model, m, ctx=ctx, kv_type=kv_type, parallel=parallel)
    if json:
        emit_json(report)
        return
    from tokenwalk.render.timing import render_decode

    render_decode(report, stdout_console())


@app.command()
def prefill(
    model: ModelArg,
    prompt: Annotated[
        int, typer.Option("--prompt", "-p", help="Prompt length in tokens.", show_default=False)
    ],
    machine: MachineOpt = None,
    cached: Annotated[
        int, typer.Option("--cached", help="Prompt tokens reused from a prefix cache.")
    ] = 0,
    ubatch: Annotated[int, typer.Option("--ubatch", help="Tokens per pass (llama.cpp -ub).")] = 512,
    kv_type: KvTypeOpt = "f16",
    bandwidth: BandwidthOpt = None,
    tflops: TflopsOpt = None,
    memory: MemoryOpt = None,
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

    m = machine_from_options(machine, bandwidth, tflops, memory, backend, kind, machines_file)
    loaded = load(model, quant, json=json, no_cache=no_cache)
    report = prefill_report(
        loaded.model, m, prompt=prompt, cached=cached, ubatch=ubatch, kv_type=kv_type
    )
    if json:
        emit_json(report)
        return
    from tokenwalk.render.timing import render_prefill

    render_prefill(report, stdout_console())
