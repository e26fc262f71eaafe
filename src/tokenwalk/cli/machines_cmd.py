"""`tokenwalk machines` (the machine catalogue) and `tokenwalk calibrate` (fit efficiencies)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from pydantic import BaseModel

from tokenwalk.cli.app import JsonOpt, app, emit_json, stdout_console
from tokenwalk.cli.machine_opts import MachineOpt, MachinesFileOpt, TflopsOpt
from tokenwalk.cli.output import output_options
from tokenwalk.units import Bytes


class MachineRow(BaseModel):
    slug: str
    name: str
    kind: str
    backend: str
    memory_bytes: Bytes | None  # converted from the vendor's figure in memory_unit
    memory_gb: float | None  # the same capacity in decimal GB (1e9 bytes)
    memory_unit: str  # what the entry's figure means: GiB (2^30) or GB (1e9)
    bandwidth_gbs: float | None
    fp16_tflops: float | None
    fp16_kind: str | None
    cpu_tflops: float | None  # CPU cores, FP32 SIMD
    tflops: float | None  # the rate the default backend computes at
    load_gbs: float | None
    power_w: float | None  # board, package or CPU power at full load (costs.energy)
    lacks: list[str]  # memory, bandwidth, compute: what the entry does not give
    eff_bw: float
    eff_compute: float
    overhead_per_layer_s: float
    rows_half: float
    eff_experts: float  # routed-expert products' share of the dense rate (1 on a cpu backend)
    fit_source: str
    source: str


class MachineList(BaseModel):
    machines: list[MachineRow]


def machine_rows(query: str | None = None, machines_file: str | None = None) -> list[MachineRow]:
    """Catalogue and user machines whose slug, name, kind or backend contains `query`."""
    from tokenwalk.catalog import MEMORY_UNIT_BY_KIND, load_machines_checked
    from tokenwalk.cli.app import warn
    from tokenwalk.machine import user_machine_files
    from tokenwalk.timing.efficiency import entry_efficiency
    from tokenwalk.timing.passes import compute_fit

    entries, broken = load_machines_checked(user_machine_files(machines_file))
    for err in broken.values():  # left out, each with every mistake it has
        warn(f"left out: {err}")
    rows = []
    for e in entries:
        hay = " ".join([e.slug, e.name, e.kind, e.backend, *e.aliases]).lower()
        if e.benchmark_only or (query and query.lower() not in hay):
            continue
        fit, _ = entry_efficiency(e)
        fit = compute_fit(fit, e.backend)
        memory = e.memory_bytes
        rows.append(
            MachineRow(
                slug=e.slug,
                name=e.name,
                kind=e.kind,
                backend=e.backend,
                memory_bytes=memory,
                memory_gb=memory / 1e9 if memory is not None else None,
                memory_unit=e.memory_unit or MEMORY_UNIT_BY_KIND[e.kind],
                bandwidth_gbs=e.bandwidth_gbs,
                fp16_tflops=e.fp16_tflops,
                fp16_kind=e.fp16_kind,
                cpu_tflops=e.cpu_tflops,
                tflops=e.tflops_for(e.backend),
                load_gbs=e.load_gbs,
                power_w=e.power_w,
                lacks=e.lacks(),
                eff_bw=fit.eff_bw,
                eff_compute=fit.eff_compute,
                overhead_per_layer_s=fit.overhead_per_layer_s,
                rows_half=fit.rows_half,
                eff_experts=fit.eff_experts,
                fit_source=fit.source,
                source=e.source.split()[0] if e.source else "",
            )
        )
    return rows


# What each missing figure stops, and the flag that supplies it.
_LACKS = {
    "bandwidth": ("bandwidth", "every timing command", "--bandwidth"),
    "compute": ("a compute rate", "prefill and trace", "--tflops"),
    "memory": ("memory", "budget", "--memory"),
}


def _lacks_note(rows: list[MachineRow]) -> str:
    """'? = not known: 3 lack bandwidth (every timing command; --bandwidth), ...'."""
    parts = []
    for key, (what, stops, flag) in _LACKS.items():
        n = sum(key in r.lacks for r in rows)
        if n:
            parts.append(f"{n} lack {what} ({stops}; give {flag})")
    return "? = not known: " + ", ".join(parts) + "." if parts else ""


def _memory_cell(memory_bytes: int | None) -> str:
    if not memory_bytes:
        return "?"
    gb = memory_bytes / 1e9
    return f"{gb:,.0f}" if gb >= 1000 else f"{gb:.1f}"


def _rate_cell(r: MachineRow) -> str:
    if not r.tflops:
        return "?"
    if r.backend == "cpu":
        mark = "c"
    else:
        mark = "m" if r.fp16_kind == "matrix" else "v"
    digits = 0 if r.tflops >= 100 else 2 if r.tflops < 1 else 1
    return f"{r.tflops:,.{digits}f} {mark}"


@app.command()
@output_options(chart=False)
def machines(
    query: Annotated[
        str | None,
        typer.Argument(
            help="Only machines whose name, kind or backend contains this.", show_default=False
        ),
    ] = None,
    machines_file: MachinesFileOpt = None,
    json: JsonOpt = False,
) -> None:
    """List the machines: memory, bandwidth, compute rate and the efficiencies the timing model
    uses for each, and what an entry lacks. Your own files (--machines-file,
    $TOKENWALK_MACHINES) are merged in."""
    from rich import box
    from rich.table import Table

    from tokenwalk.render.layout import drop_columns, left_out_note, table_width
    from tokenwalk.render.safe import safe_text

    rows = machine_rows(query, machines_file)
    if not rows and query:
        from tokenwalk.catalog import load_machines, suggest
        from tokenwalk.errors import InputError
        from tokenwalk.machine import user_machine_files

        hint = suggest(
            query, load_machines(user_machine_files(machines_file)), "tokenwalk machines"
        )
        raise InputError(f"no machine's name contains '{query}'; {hint}")
    if json:
        emit_json(MachineList(machines=rows))
        return
    console = stdout_console()
    slug_w = max((len(r.slug) for r in rows), default=4)  # what users type: never cut
    # a narrow terminal leaves columns out, least needed first, and says so under the table
    all_widths = {
        "slug": slug_w,
        "name": 12,
        "kind/backend": 14,
        "mem GB": 6,
        "GB/s": 5,
        "TFLOPS": 7,
        "fit": 14,
    }
    kept, dropped = drop_columns(all_widths, console.width, ("fit", "name", "kind/backend"))
    widths = {c: w for c, w in kept.items() if c != "slug"}
    t = Table(
        title=f"{len(rows)} machines",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        collapse_padding=True,
        pad_edge=False,
    )
    t.add_column("slug", no_wrap=True, min_width=slug_w)
    if "name" in widths:  # the name gets what the terminal has left
        name_w = 12 + console.width - table_width(list(kept.values()))
        t.add_column("name", overflow="ellipsis", no_wrap=True, max_width=name_w)
    for col, width in widths.items():
        if col == "name":
            continue
        right = col in ("mem GB", "GB/s", "TFLOPS")
        t.add_column(
            col,
            no_wrap=True,
            min_width=width,
            max_width=width,
            justify="right" if right else "left",
        )
    for r in rows:
        own = (
            "own"
            if r.fit_source.startswith("machine")
            else "group"
            if " x " in r.fit_source
            else "global"
        )
        cells = {
            "name": safe_text(r.name),
            "kind/backend": safe_text(f"{r.kind}/{r.backend}"),
            "mem GB": _memory_cell(r.memory_bytes),
            "GB/s": f"{r.bandwidth_gbs:,.0f}" if r.bandwidth_gbs else "?",
            "TFLOPS": _rate_cell(r),
            "fit": safe_text(f"{r.eff_bw:.0%}/{r.eff_compute:.0%} {own}"),
        }
        t.add_row(safe_text(r.slug, limit=None), *(cells[c] for c in widths))
    console.print(t)
    lacks = _lacks_note(rows)
    console.print(
        "[dim]mem GB: decimal GB (1e9 bytes); a '24 GB' card or Mac holds 24 GiB = 25.8 GB. "
        "TFLOPS: dense FP16 on m = matrix units (tensor cores, WMMA, XMX), v = vector ALUs; "
        "c = CPU cores, FP32 SIMD. fit: share of bandwidth / compute the timing model uses, "
        "fitted for the machine itself (own), its kind/backend group, or all machines (global). "
        f"{lacks + ' ' if lacks else ''}Sources: --json.[/dim]"
    )
    if dropped:
        console.print(left_out_note(dropped, console.width))
    _explain("machines", rows, console)


def _explain(kind: str, obj: object, console: object) -> None:
    """--explain after a view this module prints itself (`render.explain`)."""
    from tokenwalk.cli.output import current

    if not current().explain:
        return
    from tokenwalk.render.explain.machines import (
        explain_defaults_fit,
        explain_machine_fit,
        explain_machines,
    )

    fn = {
        "machines": explain_machines,
        "defaults": explain_defaults_fit,
        "machine fit": explain_machine_fit,
    }[kind]
    fn(obj, console)  # type: ignore[operator]


@app.command()
@output_options(chart=False)
def calibrate(
    machine: MachineOpt = None,
    from_file: Annotated[
        str | None,
        typer.Option(
            "--from", help="Your `llama-bench -o json` (or jsonl) output.", show_default=False
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="The GGUF file (or catalogue model) the runs used, when "
            "its name does not match a catalogue model.",
            show_default=False,
        ),
    ] = None,
    run: Annotated[
        str | None,
        typer.Option(
            "--run",
            help="Your llama-bench executable: tokenwalk runs it on --model (pp512, pp128, "
            "tg128, -o json) and fits what it measures.",
            show_default=False,
        ),
    ] = None,
    threads: Annotated[
        int | None,
        typer.Option(
            "--threads",
            help="With --run: llama-bench -t N. Default: llama-bench's own.",
            min=1,
            show_default=False,
        ),
    ] = None,
    save: Annotated[
        str | None,
        typer.Option(
            "--save",
            help="With --run: also keep llama-bench's JSON in this file.",
            show_default=False,
        ),
    ] = None,
    tflops: TflopsOpt = None,
    machines_file: MachinesFileOpt = None,
    write_defaults: Annotated[
        bool,
        typer.Option(
            "--write-defaults",
            help="Write the refit to data/timing.yaml of the source checkout tokenwalk runs "
            "from; an installed package is never written into (refused, nothing written).",
        ),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Fit and print, but write nothing.")
    ] = False,
    json: JsonOpt = False,
) -> None:
    """Fit the timing model's efficiencies. Without --from: refit the shipped defaults from the
    published runs (printed; --write-defaults stores them). With --machine and --from: fit one
    machine from your own llama-bench runs and store it in your machine file. With --machine,
    --run PATH/llama-bench and --model F.gguf: run llama-bench first, then fit the same way."""
    from tokenwalk.errors import InputError

    if run is not None:
        if from_file is not None:
            raise InputError(
                "give --run (run llama-bench now) or --from (its saved JSON), not both"
            )
        if machine is None or model is None:
            raise InputError("--run needs --machine NAME and --model FILE.gguf (the model to run)")
        if write_defaults:
            raise InputError("--write-defaults refits the shipped defaults; it does not take --run")
        _calibrate_run(machine, run, model, threads, save, tflops, machines_file, dry_run, json)
        return
    if threads is not None or save is not None:
        raise InputError("--threads and --save go with --run PATH/llama-bench")
    if from_file is None:
        if machine is not None or model is not None:
            raise InputError("--machine and --model go with --from FILE (your llama-bench runs)")
        _refit_defaults(write_defaults and not dry_run, json)
        return
    if machine is None:
        raise InputError("--from needs --machine NAME: the machine the runs were made on")
    if write_defaults:
        raise InputError("--write-defaults refits the shipped defaults; it does not take --from")
    _calibrate_one(machine, from_file, model, tflops, machines_file, dry_run, json)


def _refit_defaults(write: bool, json: bool) -> None:
    from tokenwalk.cli.output import current
    from tokenwalk.cli.progress import StepProgress
    from tokenwalk.timing.calibrate import defaults_target, fit_defaults, timing_yaml
    from tokenwalk.timing.efficiency import timing_defaults

    path = defaults_target() if write else None  # refused before the fit, not after
    with StepProgress(enabled=not (json or current().for_scripts)) as progress:
        fit = fit_defaults(progress)
    if path is not None:
        text = timing_yaml(fit)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
        timing_defaults.cache_clear()
        sys.stderr.write(f"tokenwalk: wrote {path}\n")
    if json:
        emit_json(fit)
        return
    from tokenwalk.render.calibrate import render_defaults

    render_defaults(fit, stdout_console(), written=path)
    _explain("defaults", fit, stdout_console())


def _calibrate_run(
    name: str,
    exe: str,
    model_ref: str,
    threads: int | None,
    save: str | None,
    tflops: float | None,
    machines_file: str | None,
    dry_run: bool,
    json: bool,
) -> None:
    """Run the user's llama-bench on `model_ref`, then fit as `--from` does."""
    import tempfile

    from tokenwalk.probe.bench import bench_command, run_llama_bench

    cmd = bench_command(exe, model_ref, threads)
    if not json:
        from tokenwalk.cli.app import one_line

        sys.stderr.write(f"tokenwalk: running {one_line(' '.join(cmd))}\n")
    text = run_llama_bench(cmd)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "llama-bench.json"
        path.write_text(text, encoding="utf-8")
        note = f"tokenwalk calibrate --run {Path(exe).name} on {Path(model_ref).name}"
        _calibrate_one(name, str(path), model_ref, tflops, machines_file, dry_run, json, note)
    if save:  # only once the fit has worked: nothing is written on failure
        Path(save).write_text(text, encoding="utf-8")


def _calibrate_one(
    name: str,
    from_file: str,
    model_ref: str | None,
    tflops: float | None,
    machines_file: str | None,
    dry_run: bool,
    json: bool,
    note: str | None = None,
) -> None:
    from tokenwalk.machine import machines_write_path, resolve_machine
    from tokenwalk.timing.calibrate import calibrate_machine, read_llama_bench, write_machine_fit

    existing = machines_file if machines_file and Path(machines_file).exists() else None
    m = resolve_machine(name, tflops=tflops, machines_file=existing)  # the file may be new
    runs = read_llama_bench(from_file)
    model = None
    if model_ref:
        from tokenwalk.model.resolve import load_model

        model = load_model(model_ref).model
    from tokenwalk.cli.output import current
    from tokenwalk.cli.progress import StepProgress

    with StepProgress(enabled=not (json or current().for_scripts)) as progress:
        result = calibrate_machine(m, runs, model, progress)
    target = machines_write_path(machines_file)
    if not dry_run:
        note = (note or f"tokenwalk calibrate --from {Path(from_file).name}") + (
            f" ({result.n_runs} runs)"
        )
        write_machine_fit(target, m.slug, result, note)
    if json:
        emit_json(result)
        return
    from tokenwalk.render.calibrate import render_machine_fit

    render_machine_fit(result, stdout_console(), None if dry_run else target)
    _explain("machine fit", result, stdout_console())
