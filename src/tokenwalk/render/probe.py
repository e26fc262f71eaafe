"""Rich view of `tokenwalk probe`: what was found, what was measured, what each source said."""

from __future__ import annotations

from rich import box
from rich.console import Console, Group
from rich.table import Table

from tokenwalk.probe import ProbeReport
from tokenwalk.probe.measure import Summary
from tokenwalk.render.fmt import capacity, seconds
from tokenwalk.render.layout import FitTable
from tokenwalk.render.safe import safe_markup, safe_text

__all__ = ["render_probe"]


def _memory(n: int | None) -> str:
    """A memory size as every view prints it: decimal GB, with the GiB where round."""
    return capacity(n) if n else "?"


def _memory_line(r: ProbeReport) -> str:
    mem = r.detected.memory
    line = f"{_memory(mem.total_bytes)} ({mem.source})"
    told = " ".join(
        x for x in (mem.dram_type, f"{mem.speed_mts} MT/s" if mem.speed_mts else None) if x
    )
    if mem.n_modules:
        told += f", {mem.n_modules} modules"
    return line + (f"; {told}" if told else "; type and speed not told by the OS")


def _cpu_line(r: ProbeReport) -> str:
    c = r.detected.cpu
    cores = f"{c.n_cores} cores / {c.n_threads} threads" if c.n_cores else f"{c.n_threads} threads"
    usable = f" ({c.n_usable_threads} usable)" if c.n_usable_threads != c.n_threads else ""
    l3 = f", last-level cache {capacity(c.l3_bytes)}" if c.l3_bytes else ""
    simd = " ".join(c.simd) if c.simd else "no SIMD features listed"
    return f"{c.name or '?'} ({c.arch}), {cores}{usable}{l3}; {simd}"


def _gpus_line(r: ProbeReport) -> str:
    if not r.detected.gpus:
        return "none found"
    parts = []
    for g in r.detected.gpus:
        mem = _memory(g.memory_bytes) if g.memory_bytes else "memory shared or not told"
        cores = f", {g.n_gpu_cores} GPU cores" if g.n_gpu_cores else ""
        parts.append(f"{g.name} ({g.vendor}, {mem}{cores}; {g.source})")
    return "; ".join(parts)


def _match_line(r: ProbeReport) -> str:
    found = []
    if r.gpu_match is not None:
        found.append(f"GPU: {r.gpu_match.slug} ({r.gpu_match.reason})")
    if r.cpu_match is not None and r.cpu_match is not r.gpu_match:
        found.append(f"CPU: {r.cpu_match.slug} ({r.cpu_match.reason})")
    if not found:
        what = r.detected.cpu.name or "this CPU"
        return (
            f"no entry fits '{what}'"
            + (" or its GPUs" if r.detected.gpus else "")
            + ": written as a measured CPU machine"
        )
    return "; ".join(found)


def _row(t: Table, what: str, unit: str, s: Summary) -> None:
    t.add_row(what, unit, f"{s.min:,.1f}", f"{s.median:,.1f}", f"{s.max:,.1f}")


def render_probe(r: ProbeReport, console: Console, *, store_hint: str = "") -> None:
    d = r.detected
    about = FitTable(box=None, show_header=False, pad_edge=False)
    about.add_column(style="bold", no_wrap=True)
    about.add_column()
    about.add_row("OS", safe_text(d.os))
    about.add_row("CPU", safe_text(_cpu_line(r), limit=None))
    about.add_row("memory", safe_text(_memory_line(r), limit=None))
    about.add_row("GPUs", safe_text(_gpus_line(r), limit=None))
    about.add_row("llama.cpp", safe_text(f"{d.backend} backend: {d.backend_reason}", limit=None))
    about.add_row("catalogue", safe_text(_match_line(r), limit=None))
    parts: list = ["[bold]This machine[/bold]", about, ""]

    m = r.measured
    if m is not None:
        t = FitTable(
            title=f"Measured in {seconds(m.elapsed_s)}, memory budget "
            f"{capacity(m.memory_budget_bytes)}, {m.n_repeats} repeats",
            title_justify="left",
            box=box.SIMPLE_HEAD,
        )
        for col in ("", "unit", "min", "median", "max"):
            t.add_column(col, justify="left" if col in ("", "unit") else "right")
        n = m.n_threads
        _row(t, "read, 1 thread", "GB/s", m.read_gbs_1t)
        _row(t, f"read, {n} threads", "GB/s", m.read_gbs_all)
        _row(t, f"f32 GEMM n={m.gemm_size}, 1 thread", "GFLOP/s", m.gemm_gflops_1t)
        _row(t, f"f32 GEMM n={m.gemm_size}, {n} threads", "GFLOP/s", m.gemm_gflops_all)
        notes = [
            f"read: numpy sum over {capacity(m.buffer_bytes)} of float64 in {n} chunks on "
            f"{n} threads, after an untimed pass; 1 GB = 1e9 bytes",
            f"GEMM: {m.gemm_note}; BLAS {m.blas}",
        ]
        if m.buffer_note:
            notes.append(m.buffer_note)
        if m.loadavg_before is not None:
            notes.append(
                f"load average before {m.loadavg_before[0]:.2f}, after "
                f"{m.loadavg_after[0] if m.loadavg_after else 0:.2f}"
            )
        parts += [t, *(f"[dim]{safe_markup(x, limit=None)}[/dim]" for x in notes), ""]

    s = FitTable(title="Sources", title_justify="left", box=box.SIMPLE_HEAD)
    for col in ("source", "status", "detail"):
        s.add_column(col, overflow="fold")
    for note in d.notes:
        s.add_row(safe_text(note.source), safe_text(note.status), safe_text(note.detail))
    parts += [s]

    if r.entry is not None:
        e = r.entry
        rates = f"{e.get('bandwidth_gbs', '?')} GB/s"
        if e.get("kind") == "cpu":
            rates += f", {e['cpu_tflops']} TFLOPS (cpu_tflops: the measured f32 GEMM)"
            if e.get("cpu_simd"):
                rates += f", a build from source uses {e['cpu_simd']} (cpu_simd)"
        else:
            rates += f", {e.get('fp16_tflops', '?')} TFLOPS FP16 (catalogue)"
        where = f"stored in {r.written_to}" if r.written_to else store_hint or "not stored"
        parts.append(
            safe_markup(
                f"machine '{e['slug']}': {e['kind']}/{e['backend']}, {rates}; {where}",
                limit=None,
            )
        )
    console.print(Group(*parts))
