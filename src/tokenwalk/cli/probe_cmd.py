"""`tokenwalk probe`: detect and measure this machine, and store it as a machine entry."""

from __future__ import annotations

from typing import Annotated

import typer

from tokenwalk.cli.app import JsonOpt, app, emit_json, parse_gb, stdout_console
from tokenwalk.cli.machine_opts import MachinesFileOpt
from tokenwalk.cli.output import output_options


@app.command()
@output_options(chart=False)
def probe(
    write: Annotated[
        bool,
        typer.Option(
            "--write",
            help="Store this machine in your machine file ($TOKENWALK_MACHINES, else "
            "machines.yaml in your config directory), so that `--machine this` works.",
        ),
    ] = False,
    name: Annotated[str, typer.Option("--name", help="The machine's name in your file.")] = "this",
    no_measure: Annotated[
        bool,
        typer.Option("--no-measure", help="Only detect (instant); measure nothing, store nothing."),
    ] = False,
    memory_budget: Annotated[
        float,
        typer.Option(
            "--memory-budget",
            help="GiB the measurement may hold at once (the streamed buffer and the GEMM's "
            "matrices); at most half the available memory is used.",
            parser=parse_gb,
            metavar="GiB",
        ),
    ] = 2.0,
    repeats: Annotated[
        int, typer.Option("--repeats", help="Timed repeats of each measurement.", min=1, max=50)
    ] = 5,
    machines_file: MachinesFileOpt = None,
    json: JsonOpt = False,
) -> None:
    """Describe this machine (CPU, SIMD, memory, GPUs, the llama.cpp backend that would run,
    the catalogue entry that fits) and measure its read bandwidth and f32 GEMM rate in a few
    seconds. Every source is optional: what is missing is a line under Sources."""
    import re

    from tokenwalk.errors import InputError
    from tokenwalk.probe import probe as run_probe
    from tokenwalk.probe import write_machine_entry

    if write and no_measure:
        raise InputError("--write stores measured rates; it cannot go with --no-measure")
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,63}", name.lower()):
        raise InputError(
            f"--name '{name}' is not a machine name (letters, digits, '.', '_', '-'; "
            "up to 64 characters)"
        )
    report = run_probe(
        measure=not no_measure,
        budget_bytes=int(memory_budget * (1 << 30)),
        repeats=repeats,
        slug=name,
    )
    from tokenwalk.machine import machines_write_path

    target = machines_write_path(machines_file)
    if write and report.entry is not None:
        write_machine_entry(target, report.entry)
        report = report.model_copy(update={"written_to": str(target)})
    if json:
        emit_json(report)
        return
    from tokenwalk.render.probe import render_probe

    hint = "" if no_measure else f"not stored (--write stores it in {target})"
    render_probe(report, stdout_console(), store_hint=hint)
    from tokenwalk.cli.output import current

    if current().explain:
        from tokenwalk.render.explain.machines import explain_probe

        explain_probe(report, stdout_console())
