"""`tokenwalk budget`, `tokenwalk trace` and `tokenwalk spec`: memory and time of a whole setup."""

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
    warn,
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
from tokenwalk.errors import InputError

KvTypeOpt = Annotated[
    str, typer.Option("--kv-type", "-t", help="KV cache type: f16, bf16, q8_0, q4_0, ...")
]
UbatchOpt = Annotated[int, typer.Option("--ubatch", help="Micro-batch (prefill chunk) size.")]

# Memory an operating system and its apps hold when the user does not say (GB): on shared
# memory the seed's laptop held 32 GB with a browser and editors open; we assume a lighter 8 GB
# (capped at a quarter of small machines); a discrete GPU's own memory holds about 0.5 GB.
_SHARED_KINDS = ("igpu", "apple", "cpu", "sbc")


def default_system_gb(kind: str, memory_gb: float) -> float:
    if kind in _SHARED_KINDS:
        return min(8.0, memory_gb / 4)
    return 0.5


@app.command()
def budget(
    models: Annotated[
        list[str],
        typer.Argument(
            help="One or more models loaded together (a target and its draft, say).",
            show_default=False,
        ),
    ],
    machine: MachineOpt = None,
    ctx: Annotated[
        int | None, typer.Option("--ctx", "-c", help="Context to reserve per model, in tokens.")
    ] = None,
    kv_type: KvTypeOpt = "f16",
    system_gb: Annotated[
        float | None,
        typer.Option(
            "--system-gb",
            help="Memory the system and other apps already use, GB. Default: 8 GB on shared "
            "memory (a quarter of small machines), 0.5 GB on a discrete GPU.",
            show_default=False,
        ),
    ] = None,
    parallel: Annotated[int, typer.Option("--parallel", "-np", help="Parallel sequences.")] = 1,
    ubatch: UbatchOpt = 512,
    quant: QuantOpt = None,
    bandwidth: BandwidthOpt = None,
    tflops: TflopsOpt = None,
    memory: MemoryOpt = None,
    backend: BackendOpt = None,
    kind: KindOpt = None,
    machines_file: MachinesFileOpt = None,
    json: JsonOpt = False,
    no_cache: NoCacheOpt = False,
) -> None:
    """Does it fit: the system, the weights of every model, KV at the context, compute buffers,
    and what is left; the largest context that fits and the settings that apply it. Exits 1
    when it does not fit."""
    from tokenwalk.costs.budget import budget_report

    m = machine_from_options(machine, bandwidth, tflops, memory, backend, kind, machines_file)
    if not m.memory_bytes:
        raise InputError(f"machine '{m.slug}' has no memory size; give --memory GB")
    if parallel < 1:
        raise InputError(f"--parallel must be at least 1, not {parallel}")
    loaded = [load(ref, quant, json=json, no_cache=no_cache).model for ref in models]
    sys_gb = system_gb if system_gb is not None else default_system_gb(m.kind, m.memory_bytes / 1e9)
    report = budget_report(
        loaded,
        machine=m.slug,
        capacity_bytes=int(m.memory_bytes),
        system_bytes=int(sys_gb * 1e9),
        ctx=ctx,
        kv_type=kv_type.lower(),
        parallel=parallel,
        ubatch=ubatch,
    )
    for w in report.warnings:
        warn(w)
    if json:
        emit_json(report)
    else:
        from tokenwalk.render.plan import render_budget

        render_budget(report, stdout_console())
    if not report.fits:
        raise typer.Exit(1)


@app.command()
def trace(
    model: ModelArg,
    machine: MachineOpt = None,
    prompt: Annotated[
        int, typer.Option("--prompt", "-p", help="Prompt tokens.", show_default=False)
    ] = 0,
    output: Annotated[int, typer.Option("--output", "-n", help="Tokens written.")] = 300,
    cold: Annotated[bool, typer.Option("--cold", help="Load the weights from disk first.")] = False,
    cached: Annotated[
        int, typer.Option("--cached", help="Prompt tokens reused from a prefix cache.")
    ] = 0,
    restore_kv: Annotated[
        bool,
        typer.Option("--restore-kv", help="Restore the --cached prefix from disk (a saved slot)."),
    ] = False,
    ubatch: UbatchOpt = 512,
    kv_type: KvTypeOpt = "f16",
    quant: QuantOpt = None,
    bandwidth: BandwidthOpt = None,
    tflops: TflopsOpt = None,
    memory: MemoryOpt = None,
    backend: BackendOpt = None,
    kind: KindOpt = None,
    machines_file: MachinesFileOpt = None,
    json: JsonOpt = False,
    no_cache: NoCacheOpt = False,
) -> None:
    """The whole request as a timeline: load (--cold), tokenize, prefill chunk by chunk, KV
    stored, the first token, the decode steps with the context growing, the end."""
    from tokenwalk.costs.trace import trace_report

    if prompt < 1:
        raise InputError("give the prompt length with --prompt N (at least 1 token)")
    m = machine_from_options(machine, bandwidth, tflops, memory, backend, kind, machines_file)
    mdl = load(model, quant, json=json, no_cache=no_cache).model
    report = trace_report(
        mdl,
        m,
        prompt=prompt,
        output=output,
        cold=cold,
        cached=cached,
        restore_kv=restore_kv,
        ubatch=ubatch,
        kv_type=kv_type,
    )
    if (cold or restore_kv) and report.disk_read_assumed:
        warn(
            f"machine '{m.slug}' has no disk speed; assuming {report.disk_read_gbs:g} GB/s "
            "(an NVMe SSD)"
        )
    if json:
        emit_json(report)
        return
    from tokenwalk.render.plan import render_trace

    render_trace(report, stdout_console())


@app.command()
def spec(
    target: ModelArg,
    draft: Annotated[
        str | None,
        typer.Option(
            "--draft", "-d", help="The draft model (any model argument).", show_default=False
        ),
    ] = None,
    mtp: Annotated[
        bool,
        typer.Option("--mtp", help="Draft with the target's own multi-token-prediction block."),
    ] = False,
    machine: MachineOpt = None,
    gamma: Annotated[int, typer.Option("--gamma", "-g", help="Draft tokens per round.")] = 4,
    alpha: Annotated[
        float, typer.Option("--alpha", "-a", help="Acceptance rate of a draft token, in (0, 1).")
    ] = 0.7,
    ctx: Annotated[int, typer.Option("--ctx", "-c", help="Context the rounds run at.")] = 4096,
    kv_type: KvTypeOpt = "f16",
    quant: QuantOpt = None,
    draft_quant: Annotated[
        str | None,
        typer.Option(
            "--draft-quant",
            help="Quant preset of the draft (default: --quant).",
            show_default=False,
        ),
    ] = None,
    system_gb: Annotated[
        float | None,
        typer.Option(
            "--system-gb",
            help="Memory the system uses, GB (for the fit check).",
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
    bandwidth: BandwidthOpt = None,
    tflops: TflopsOpt = None,
    memory: MemoryOpt = None,
    backend: BackendOpt = None,
    kind: KindOpt = None,
    machines_file: MachinesFileOpt = None,
    json: JsonOpt = False,
    no_cache: NoCacheOpt = False,
) -> None:
    """When speculative decoding pays: tokens per round, round time, speedup, break-even
    acceptance rate, the experts a verify pass wakes, and a table over alpha and gamma."""
    from tokenwalk.costs.budget import budget_report
    from tokenwalk.costs.spec import mtp_draft_model, spec_report
    from tokenwalk.costs.timing import pass_time

    if draft and mtp:
        raise InputError("give either --draft MODEL or --mtp, not both")
    if not draft and not mtp:
        raise InputError("give a draft: --draft MODEL, or --mtp for the target's own MTP block")
    if not 0.0 < alpha < 1.0:
        raise InputError(f"--alpha must be between 0 and 1 (exclusive), not {alpha}")
    if gamma < 1:
        raise InputError(f"--gamma must be at least 1 draft token, not {gamma}")
    m = machine_from_options(machine, bandwidth, tflops, memory, backend, kind, machines_file)
    tgt = load(target, quant, json=json, no_cache=no_cache).model
    if mtp:
        drf = mtp_draft_model(tgt)
    else:
        assert draft is not None
        drf = load(draft, draft_quant or quant, json=json, no_cache=no_cache).model

    def timer(model, n: int, c: int) -> float:  # noqa: ANN001
        return pass_time(model, m, n, c, kv_type=kv_type).time_s

    report = spec_report(
        tgt,
        drf,
        timer,
        machine=m.slug,
        alpha=alpha,
        gamma=gamma,
        ctx=ctx,
        mtp=mtp,
        observed_speedup=observed_speedup,
    )
    if m.memory_bytes:
        models = [tgt] if mtp else [tgt, drf]
        sys_gb = (
            system_gb if system_gb is not None else default_system_gb(m.kind, m.memory_bytes / 1e9)
        )
        fit = budget_report(
            models,
            machine=m.slug,
            capacity_bytes=int(m.memory_bytes),
            system_bytes=int(sys_gb * 1e9),
            ctx=max(ctx, 1),
            kv_type=kv_type,
        )
        report = report.model_copy(update={"budget": fit})
    for w in report.warnings:
        warn(w)
    if json:
        emit_json(report)
        return
    from tokenwalk.render.plan import render_spec

    render_spec(report, stdout_console())
