"""Rich views of `BudgetReport`, `TraceReport` and `SpecReport`."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

from rich import box
from rich.console import Console, Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from tokenwalk.costs.budget import BudgetReport
from tokenwalk.costs.spec import SpecReport
from tokenwalk.costs.trace import TraceReport
from tokenwalk.numbers import counted
from tokenwalk.render.fmt import NBSP, capacity, count, human_bytes, pct, rate, seconds
from tokenwalk.render.fmt import free as free_text
from tokenwalk.render.layout import (
    Facts,
    FitTable,
    Whole,
    left_out_note,
    marker,
    note_lines,
)
from tokenwalk.render.safe import safe_markup, safe_text
from tokenwalk.render.timing import error_note
from tokenwalk.timing.passes import MATVEC_MAX_BATCH

_VERDICT_STYLE = {
    "fits with room": "bold green",
    "tight": "bold yellow",
    "does not fit": "bold red",
}


def _bar(share: float, width: int = 40, char: str = "█") -> str:
    n = round(max(0.0, min(1.0, share)) * width)
    return char * n


def render_budget(r: BudgetReport, console: Console) -> None:
    if r.devices:
        _render_devices(r, console)
        return
    t = FitTable(
        title=f"Memory on {safe_markup(r.machine)}: {capacity(r.capacity_bytes)}",
        title_justify="left",
    )
    for col in ("", "bytes", "share", ""):
        t.add_column(col, justify="right" if col in ("bytes", "share") else "left")
    cap = r.capacity_bytes

    def row(label: str, n: float, style: str = "") -> None:
        t.add_row(label, human_bytes(n), pct(n / cap), Text(_bar(n / cap, 30), style=style))

    row("system and other apps", r.system_bytes, "grey50")
    if r.gpu_limit_bytes is not None and cap - r.system_bytes > r.gpu_limit_bytes:
        row("beyond the GPU's limit", cap - r.system_bytes - r.gpu_limit_bytes, "grey50")
    for m in r.models:
        row(f"weights: {safe_markup(m.model)}", m.weights_bytes, "cyan")
        row(f"KV at {count(r.ctx)} ({r.kv_type})", m.kv_bytes + m.state_bytes, "magenta")
        row("compute buffers", m.buffers_bytes, "blue")
    row("free", max(r.free_bytes, 0.0), "green")
    if r.free_bytes < 0:
        t.add_row("[red]short by[/red]", f"[red]{human_bytes(-r.free_bytes)}[/red]", "", "")

    verdict = Text(r.verdict, style=_VERDICT_STYLE[r.verdict])
    summary = Table(show_header=False, box=None)
    summary.add_column(style="bold")
    summary.add_column(overflow="fold")
    summary.add_row("verdict", verdict)
    if r.gpu_limit_bytes is not None:
        summary.add_row(
            "the GPU may hold", f"{capacity(r.gpu_limit_bytes)}: {escape(r.gpu_limit_note)}"
        )
    summary.add_row(
        "largest context that fits",
        count(r.max_fit_ctx) + " tokens" if r.max_fit_ctx else "none",
    )
    if r.default_ctx != r.ctx:
        summary.add_row(
            "at the model's full context",
            f"{count(r.default_ctx)} tokens would hold {human_bytes(r.default_cache_bytes)} of KV",
        )
    whole = _settings_rows(r, summary) + [("try", hint) for hint in r.hints]
    console.print(Group(t, "", summary, Whole(whole, key_width=_label_width(summary))), crop=False)
    console.print("[dim]GB = 1e9 bytes; GiB = 2^30 bytes (a '24 GB' card holds 24 GiB).[/dim]")


def _label_width(summary: Table) -> int:
    return max((len(str(c)) for c in summary.columns[0].cells), default=0)


def _settings_rows(r: BudgetReport, summary: Table) -> list[tuple[str, str]]:
    """The settings into `summary`, but for llama.cpp's command lines: those come back, to be
    printed whole (`Whole`), where a copy takes them in one piece."""
    lines = []
    for k, v in r.settings.items():
        if k.startswith("llama.cpp"):
            lines.append((k, v))
        else:
            summary.add_row(safe_text(k), safe_text(v, limit=None))
    return lines


def _render_devices(r: BudgetReport, console: Console) -> None:
    """A system of cards and a host: one row per device, the split as `ollama ps` says it."""
    t = FitTable(
        title=f"Memory on {safe_markup(r.machine)} and its host, at {count(r.ctx)} tokens "
        f"({r.kv_type})",
        title_justify="left",
    )
    rows: list[dict[str, Text]] = []
    for d in r.devices:
        if d.role == "host":
            holds = f"{d.layers} layers" if d.layers else "embedding"
            if d.expert_layers:
                holds = f"experts of {d.expert_layers}" + (f" + {holds}" if d.layers else "")
        else:
            holds = f"{d.layers} layers" + (" + head" if d.output else "")
        left = free_text(d.free_bytes) if d.fits else f"[red]{free_text(d.free_bytes)}[/red]"
        style = "red" if not d.fits else ("cyan" if d.role == "gpu" else "magenta")
        rows.append(
            {
                "device": safe_text(d.device, style=style, limit=None),
                "holds": Text(holds),
                "weights": Text(human_bytes(d.weights_bytes)),
                "KV": Text(human_bytes(d.kv_bytes)),
                "buffers": Text(human_bytes(d.buffers_bytes)),
                "free": Text.from_markup(left),
                "of": Text(human_bytes(d.capacity_bytes)),
            }
        )
    # a device's slug is typed (--machine, --host): never cut; a narrow terminal leaves
    # whole columns out, and says so
    dropped = t.fill(rows, console.width, ("buffers", "of", "holds"), left=("device", "holds"))
    summary = Table(show_header=False, box=None)
    summary.add_column(style="bold")
    summary.add_column(overflow="fold")
    summary.add_row("verdict", Text(r.verdict, style=_VERDICT_STYLE[r.verdict]))
    summary.add_row(
        "placement", safe_text(f"{r.split}: {r.placement_note}" if r.placement_note else r.split)
    )
    summary.add_row(
        "capacity",
        "; ".join(
            f"{safe_markup(d.device)} {capacity(d.capacity_bytes)}"
            + (", shared with its CPU cores" if any(h.shared for h in r.devices) else "")
            for d in r.devices
            if not d.shared
        ),
    )
    if r.host:
        summary.add_row("host", safe_text(r.host, limit=None))
    summary.add_row(
        "largest context that fits", count(r.max_fit_ctx) + " tokens" if r.max_fit_ctx else "none"
    )
    whole = _settings_rows(r, summary) or [("flags", r.placement)]
    for hint in r.hints:  # what would fit ends with its flags, to be copied whole
        if "fits" in hint:
            whole.append(("try", hint))
        else:
            summary.add_row("short", safe_text(hint, limit=None))
    left_out = [left_out_note(dropped, console.width)] if dropped else []
    whole_rows = Whole(whole, key_width=_label_width(summary))
    console.print(Group(t, *left_out, "", summary, whole_rows), crop=False)
    console.print(
        "[dim]free = capacity - system - weights - KV - buffers; GB = 1e9 bytes, GiB = 2^30.[/dim]"
    )


_CHUNK_NAME = re.compile(r"prefill chunk (\d+)/(\d+)")
_CHUNK_DETAIL = re.compile(r"([\d,]+) tokens at ([\d,]+), (.+)")


@dataclass(frozen=True)
class _Row:
    """A row of the trace's table: one phase, or a run of equal prefill chunks collapsed."""

    name: str
    start_s: float
    duration_s: float
    detail: str
    prefill: bool


def _trace_rows(r: TraceReport) -> list[_Row]:
    """The trace's phases, with each run of at least 3 prefill chunks of the same size and
    bound shown as one row: "prefill chunks 1-12/13", its time the run's sum (--json and
    `tokenwalk prefill` keep every chunk)."""
    rows: list[_Row] = []
    run: list[tuple[int, int, int, str, float, float]] = []  # index, of, tokens, bound, start, s
    ctxs: list[str] = []

    def flush() -> None:
        if len(run) >= 3:
            first, last = run[0], run[-1]
            lo, hi = min(x[5] for x in run), max(x[5] for x in run)
            took = _span(seconds(lo), seconds(hi))
            rows.append(
                _Row(
                    f"prefill chunks {first[0]}-{last[0]}/{first[1]}",
                    first[4],
                    sum(x[5] for x in run),
                    f"{first[2]:,} tokens each at {ctxs[0]} to {ctxs[-1]}, {first[3]}; {took} each",
                    True,
                )
            )
        else:
            for x, ctx in zip(run, ctxs, strict=True):
                name = f"prefill chunk {x[0]}/{x[1]}"
                rows.append(_Row(name, x[4], x[5], f"{x[2]:,} tokens at {ctx}, {x[3]}", True))
        run.clear()
        ctxs.clear()

    for p in r.phases:
        name, detail = _CHUNK_NAME.fullmatch(p.name), _CHUNK_DETAIL.fullmatch(p.detail)
        if name and detail:
            index, of = int(name[1]), int(name[2])
            tokens, bound = int(detail[1].replace(",", "")), detail[3]
            if run and (run[-1][2], run[-1][3]) != (tokens, bound):
                flush()
            run.append((index, of, tokens, bound, p.start_s, p.duration_s))
            ctxs.append(detail[2])
            continue
        flush()
        rows.append(_Row(p.name, p.start_s, p.duration_s, p.detail, p.name.startswith("prefill")))
    flush()
    return rows


def _timeline(row: _Row, total: float, width: int) -> Text:
    """The row's span on a line of `width` characters that stands for the whole request."""
    lead = min(round(row.start_s / total * width), width)
    bar = _bar(row.duration_s / total, width)
    if not bar and row.duration_s > 0:
        bar = "▏"
    if not bar:
        bar = "│"  # an instant
    lead = min(lead, width - len(bar))  # the last phases end on the line, never past it
    style = "cyan" if row.prefill else "green" if row.name == "decode" else "yellow"
    return Text(" " * lead) + Text(bar, style=style)


def _span(lo: str, hi: str) -> str:
    """'5.1 s', '5.3 s' -> '5.1 to 5.3 s'; '900 ms', '1.2 s' -> '900 ms to 1.2 s'."""
    if lo == hi:
        return lo
    (a, ua), (b, ub) = lo.rsplit(" ", 1), hi.rsplit(" ", 1)
    return f"{a} to {b} {ua}" if ua == ub else f"{lo} to {hi}"


def render_trace(r: TraceReport, console: Console) -> None:
    """The request as a table of phases with a timeline that takes the width the terminal
    leaves it (8 to 40 characters). A terminal wide enough for the notes beside a timeline
    of 20 shows them in a column; a narrower one marks them ¹ ² ... and prints them under the
    table."""
    total = r.total_s or 1.0
    rows = _trace_rows(r)
    width = console.width
    names = [row.name for row in rows]
    starts = [seconds(row.start_s) for row in rows]
    takes = [seconds(row.duration_s) if row.duration_s else "" for row in rows]
    longest = max(len(row.detail) for row in rows)
    fixed = [
        max(map(len, names)) + 1,  # room for a note's mark (up to 9 notes)
        max(map(len, ["start", *starts])),
        max(map(len, ["takes", *takes])),
    ]
    # no edges: 3 columns between cells, 1 at each end; the timeline gets what is left
    room = width - sum(fixed) - 3 * len(fixed) - 1 - 1
    wide = room - 3 - longest >= 20  # the notes fit beside a timeline of 20 without wrapping
    notes: list[tuple[int, str]] = []
    if wide:
        line_w = min(32, room - 3 - longest)
    else:
        line_w = max(8, min(40, room))
        notes = [(i + 1, row.detail) for i, row in enumerate(rows) if row.detail]
        marks = {i - 1: marker(i) for i, _ in notes}
        names = [n + marks.get(i, "") for i, n in enumerate(names)]
    t = FitTable(
        title=f"{safe_markup(r.model)} on {safe_markup(r.machine)}: "
        f"{count(r.prompt_tokens)} tokens in, {count(r.output_tokens)} out",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
    )
    t.add_column("phase", no_wrap=True)
    t.add_column("start", justify="right", no_wrap=True)
    t.add_column("takes", justify="right", no_wrap=True)
    t.add_column("timeline", no_wrap=True, width=line_w, overflow="crop")
    if wide:
        t.add_column("", style="dim", ratio=1)
    for row, name, start, took in zip(rows, names, starts, takes, strict=True):
        cells: list = [name, start, took, _timeline(row, total, line_w)]
        if wide:
            cells.append(row.detail)
        t.add_row(*cells)
    parts: list = [t]
    tail = []
    if any(row.name.startswith("prefill chunks") for row in rows):
        tail.append("(each chunk: tokenwalk prefill, or --json)")
    parts += [Text(line, style="dim") for line in note_lines(notes, width - 1, tail)]

    s = Facts()
    if r.cold:
        s.add_row("load", seconds(r.load_s), f"at {r.load_gbs:.3g} GB/s, {escape(r.load_from)}")
    s.add_row(
        "prefill",
        seconds(r.prefill_s),
        f"{counted(r.n_chunks, 'chunk')} of up to {r.ubatch} tokens",
    )
    s.add_row("time to first token", seconds(r.ttft_s), "")
    s.add_row(
        "writing",
        seconds(r.decode_s),
        f"{rate(r.decode_tok_s)}; a step reads "
        f"{human_bytes(r.decode_step_read_bytes)} in {seconds(r.decode_step_s)}",
    )
    # the typical error of each phase's estimate (tokenwalk prefill and decode say on what)
    s.add_row("whole request", seconds(r.total_s), error_note(r.prefill_error, r.decode_error))
    s.add_row(
        "KV cache after the prompt",
        human_bytes(r.kv_stored_bytes),
        f"+ {human_bytes(r.state_bytes)} recurrent state" if r.state_bytes else "",
    )
    # under footnotes the facts follow at once: the design card's trace fits 80 x 24
    console.print(Group(*parts, *([] if notes else [""]), s))


def render_spec(r: SpecReport, console: Console) -> None:
    head = Facts(
        f"{safe_markup(r.target)} with "
        f"{'its MTP block' if r.mtp else safe_markup(r.draft)} on {safe_markup(r.machine)}"
    )
    head.add_row("acceptance rate", f"{r.alpha:.2f}", f"{r.gamma} draft tokens per round")
    head.add_row("tokens per round", f"{r.tokens_per_round:.2f}", "(1 - a^(g+1)) / (1 - a)")
    head.add_row("draft step", seconds(r.draft_step_s), "")
    head.add_row(
        "verify pass",
        seconds(r.verify_s),
        f"{r.gamma + 1} tokens; {r.verify_over_step:.1f}x one decode step",
    )
    if r.experts_total:
        head.add_row(
            "experts woken per layer",
            f"{r.experts_woken_per_layer:.0f} of {r.experts_total}",
            f"by {r.gamma + 1} tokens, against {r.experts_per_token} for one",
        )
    head.add_row("round", seconds(r.round_s), "")
    head.add_row("with speculation", rate(r.tok_s), "")
    head.add_row("without", rate(r.baseline_tok_s), "")
    style = "bold green" if r.pays else "bold red"
    head.add_row(
        "speedup",
        Text(f"{r.speedup:.2f}x", style=style),
        ("pays" if r.fits is not False else "would pay, but they do not fit in memory")
        if r.pays
        else "loses: slower than plain decoding",
    )
    be = f"{r.break_even_alpha:.2f}" if r.break_even_alpha is not None else "never"
    head.add_row("break-even acceptance", be, f"at {r.gamma} draft tokens")
    head.add_row("best draft length", str(r.best_gamma), f"at acceptance {r.alpha:.2f}")
    if r.observed_speedup is not None:
        implied = f"{r.observed_alpha:.2f}" if r.observed_alpha is not None else "out of reach"
        head.add_row(
            "observed speedup", f"{r.observed_speedup:.2f}x", f"implies acceptance {implied}"
        )
    if r.budget is not None:
        b = r.budget
        head.add_row(
            "memory",
            Text(b.verdict, style=_VERDICT_STYLE[b.verdict]),
            f"{human_bytes(b.free_bytes)} free with both loaded at {count(b.ctx)} tokens",
        )

    gammas = sorted({c.gamma for c in r.table})
    grid = FitTable(
        title="Speedup by acceptance rate (rows) and draft length (columns); best marked",
        title_justify="left",
    )
    grid.add_column("alpha")
    for g in gammas:
        grid.add_column(str(g), justify="right")
    for a in sorted({c.alpha for c in r.table}):
        cells = []
        for g in gammas:
            c = next(x for x in r.table if x.alpha == a and x.gamma == g)
            text = f"{c.speedup:.2f}"
            style = "bold" if c.best else ""
            if c.speedup < 1:
                style += " red"
            cells.append(Text(text + ("*" if c.best else ""), style=style.strip()))
        grid.add_row(f"{a:.1f}", *cells)
    parts: list = [head, "", grid]
    jump = _matvec_jump(r)
    if jump:  # wrapped here, so that a quantity never breaks between its number and unit
        lines = textwrap.wrap(jump, max(console.width - 1, 20), break_on_hyphens=False)
        parts += [Text(line.replace(NBSP, " "), style="dim") for line in lines]
    console.print(Group(*parts))


_JUMP = 1.5  # a 9-token verify pass this many times the 8-token one's is worth a note


def _matvec_jump(r: SpecReport) -> str:
    """Why a draft length's column drops, where it does: its verify pass is the first past
    llama.cpp's mat-vec kernels, and on this machine the matrix kernels that take it are
    much slower for so few tokens. '' where no column does."""
    verify = {c.gamma: c.verify_s for c in r.table}
    g = MATVEC_MAX_BATCH  # a round of g draft tokens verifies g + 1
    if g not in verify or g - 1 not in verify or verify[g] < _JUMP * verify[g - 1]:
        return ""
    now, before = (seconds(verify[k]).replace(" ", NBSP) for k in (g, g - 1))
    return (
        f"Draft length {g}: its verify pass of {g + 1} tokens is past the {g} of llama.cpp's "
        f"mat-vec kernels, and its matrix kernels take {now} for it on this machine, against "
        f"{before} for {g} tokens"
        + (" (its experts see a token or two each)." if r.experts_total else ".")
    )
