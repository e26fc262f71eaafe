"""Charts under the tables (--chart), each the terminal form of a figure of the seed article.

A report type `FooReport` is served by a function `chart_foo_report(report, console)` here;
`tokenwalk.render.render` finds it by name. Line charts are drawn by plotext, bars by Rich.
Every chart is as wide as the console and no wider; where the console has no colour (NO_COLOR,
a pipe, a file) it draws with plain characters, each series or share with a glyph of its own.
Charts only show numbers the report carries: the series are computed in `tokenwalk.costs`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.text import Text

from tokenwalk.numbers import counted
from tokenwalk.render.fmt import capacity, human_bytes, rate, seconds
from tokenwalk.render.safe import visible
from tokenwalk.render.sweep import byte_unit

if TYPE_CHECKING:
    from rich.console import Console

    from tokenwalk.costs.budget import BudgetReport
    from tokenwalk.costs.compare import CompareReport
    from tokenwalk.costs.kv import KvReport
    from tokenwalk.costs.serve import ServeReport
    from tokenwalk.costs.size import SizeReport
    from tokenwalk.costs.spec import SpecReport
    from tokenwalk.costs.sweep import SweepReport
    from tokenwalk.costs.trace import SessionReport, TraceReport
    from tokenwalk.timing.passes import DecodeReport, PrefillReport

__all__ = [
    "chart_decode_report",
    "chart_prefill_report",
    "chart_kv_report",
    "chart_budget_report",
    "chart_trace_report",
    "chart_session_report",
    "chart_sweep_report",
    "chart_spec_report",
    "chart_size_report",
    "chart_compare_report",
    "chart_serve_report",
]

# (glyph, colour) of the shares of a bar: the glyphs alone tell them apart without colour
WEIGHTS = ("█", "blue")
KV = ("▒", "magenta")
SYSTEM = ("▓", "bright_black")
BUFFERS = ("░", "yellow")
FREE = ("·", "green")
IDLE = ("·", "bright_black")
OVER = ("!", "red")
# a line chart's series: plotext's colour, the same colour in Rich (for the legend), and the
# marker drawn without colour (then the legend shows it)
SERIES_COLOURS = ("blue+", "red+", "green+", "magenta+", "cyan+", "yellow+")
SERIES_STYLES = (
    "bright_blue",
    "bright_red",
    "bright_green",
    "bright_magenta",
    "bright_cyan",
    "bright_yellow",
)
SERIES_MARKERS = ("braille", "+", "x", "o", "*", "#")
MIN_WIDTH = 30  # narrower than this, a chart is drawn at this width and cropped to the console
LOG_SPREAD = 10  # a sweep whose values span 10x or more is drawn on a log scale


def _plain(console: Console) -> bool:
    """No colour: NO_COLOR, or output that is not a terminal (Rich's colour system is None)."""
    return console.no_color or console.color_system is None


def _width(console: Console) -> int:
    return max(MIN_WIDTH, console.width)


def _print(console: Console, text: Text) -> None:
    console.print(text, no_wrap=True, overflow="crop", crop=True, soft_wrap=False)


def _style(console: Console, colour: str) -> str:
    return "" if _plain(console) else colour


def tokens_label(n: float) -> str:
    """A token count for an axis: 8192 -> '8k', 1048576 -> '1M', 1000 -> '1,000'."""
    n = int(round(n))
    if n and n % (1 << 20) == 0:
        return f"{n >> 20}M"
    if n and n % 1024 == 0:
        return f"{n >> 10}k"
    if n >= 10_000:
        return f"{n / 1024:.0f}k"
    return f"{n:,}"


def _title(console: Console, text: str) -> None:
    console.print(Text(visible(text, None), style=_style(console, "bold")), overflow="fold")


# -- bars (Rich) -------------------------------------------------------------------------------


def stacked_bar(
    parts: Sequence[tuple[float, tuple[str, str]]], width: int, total: float, plain: bool
) -> Text:
    """One bar of `width` columns for `total`: each part takes its share of the columns,
    rounded so that the shares add up (a part's edge falls at round(cumulative / total x
    width)); a part too small for a column gets none."""
    bar = Text()
    done = 0.0
    edge = 0
    for value, (glyph, colour) in parts:
        done += max(0.0, value)
        end = min(width, round(done / total * width)) if total > 0 else 0
        if end > edge:
            bar.append(glyph * (end - edge), style="" if plain else colour)
            edge = end
    return bar


def _legend(console: Console, items: Sequence[tuple[tuple[str, str], str]]) -> None:
    """`█ weights 1.79 GB  ▒ KV 0.05 GB ...`, wrapped at the console's width between items."""
    plain = _plain(console)
    line = Text()
    for i, ((glyph, colour), label) in enumerate(items):
        item = Text()
        item.append(glyph, style="" if plain else colour)
        item.append(f" {label}")
        if line and line.cell_len + 2 + item.cell_len > _width(console):
            _print(console, line)
            line = Text()
        elif i:
            line.append("  ")
        line.append_text(item)
    if line:
        _print(console, line)


def _hbars(console: Console, rows: Sequence[tuple[str, float, str]], glyph: str = "█") -> None:
    """One bar a row, the longest for the largest value: `label  ████····  value`. A label
    longer than a third of the width goes on its own line above its bar."""
    width = _width(console)
    if not rows:
        return
    top = max(max(v for _, v, _ in rows), 1e-300)  # a negative value gets no bar
    value_w = max(len(s) for _, _, s in rows)
    label_w = max(len(label) for label, _, _ in rows)
    own_line = label_w > width // 3
    if own_line:
        label_w = 0
    bar_w = max(1, width - value_w - (label_w + 1 if label_w else 0) - 1)
    style = _style(console, "blue")
    for label, value, shown in rows:
        n = max(0, min(bar_w, round(value / top * bar_w)))
        if value > 0:
            n = max(1, n)
        line = Text()
        if own_line:
            _print(console, Text(label))
        else:
            line.append(label.ljust(label_w) + " ")
        line.append(glyph * n, style=style)
        line.append(" " * (bar_w - n) + " " + shown.rjust(value_w))
        _print(console, line)


# -- line charts (plotext) ---------------------------------------------------------------------


def _ticks(xs: Sequence[float], n: int) -> list[float]:
    """At most `n` of the values in `xs`, first and last included, evenly picked."""
    xs = sorted(set(xs))
    if len(xs) <= n:
        return list(xs)
    step = (len(xs) - 1) / (n - 1)
    return sorted({xs[round(i * step)] for i in range(n)})


def even_ticks(top: float, n: int) -> list[float]:
    """`n` ticks from 0 to `top`, evenly spaced (256k in 4: 0, 64k, 128k, 192k, 256k)."""
    return [top * i / (n - 1) for i in range(n)]


def log_ticks(low: float, high: float) -> list[float]:
    """The powers of ten between `low` and `high` (0.05 to 372: 0.1, 1, 10, 100), the ends
    where there are fewer than two: the ticks of a log axis, read at a glance."""
    import math

    inside = range(math.ceil(math.log10(low)), math.floor(math.log10(high)) + 1)
    ticks = [10.0**e for e in inside]
    return ticks if len(ticks) >= 2 else sorted({low, *ticks, high})


def _from_zero(values: Sequence[float]) -> tuple[float, float]:
    """The limits of a linear axis that includes 0 (below it where a value is negative)."""
    low, high = min(0.0, *values), max(0.0, *values)
    return low, high if high > low else low + 1


def line_chart(
    console: Console,
    series: Sequence[tuple[str, Sequence[float], Sequence[float]]],
    *,
    xlabel: str,
    ylabel: str,
    xlog: bool = False,
    ylog: bool = False,
    xticks: Sequence[float] | None = None,
    xtick_label: Any = tokens_label,
    height: int | None = None,
    right: tuple[str, Sequence[float], Sequence[float], str] | None = None,
    x0: bool = False,
) -> None:
    """Draw `series` (label, xs, ys) as lines across the console's width with plotext, one
    colour a series (plain: one marker a series), a legend where there are several. `right`
    is a series on its own axis at the right (label, xs, ys, axis label)."""
    import plotext as plt

    plain = _plain(console)
    width = _width(console)
    plt.clear_figure()
    plt.plotsize(width, height or max(12, min(18, width // 5)))
    plt.theme("clear")
    named = len(series) > 1 or right is not None
    every = [*series, *([right[:3]] if right else [])]
    for i, (_, xs, ys) in enumerate(every):
        kw: dict[str, Any] = {
            "marker": SERIES_MARKERS[i % len(SERIES_MARKERS)] if plain else "braille"
        }
        if not plain:
            kw["color"] = SERIES_COLOURS[i % len(SERIES_COLOURS)]
        if right is not None and i == len(every) - 1:
            kw["yside"] = "right"
        plt.plot(list(xs), list(ys), **kw)
    if xlog:
        plt.xscale("log")
    elif x0:  # the axis starts at 0 tokens even where the first point is further on
        plt.xlim(0, max((x for _, xs, _ in series for x in xs), default=0) or 1)
    if ylog:
        plt.yscale("log")
        ys = [y for _, _, sy in every for y in sy if y > 0]
        decades = log_ticks(min(ys), max(ys))
        plt.yticks(decades, [f"{y:.3g}" for y in decades])
    else:  # from zero: a fall from 13 to 11 tok/s looks like what it is
        plt.ylim(*_from_zero([y for _, _, ys in series for y in ys]))
        if right is not None:
            plt.ylim(*_from_zero(right[2]), yside="right")
    all_x = [x for _, xs, _ in every for x in xs]
    ticks = list(xticks) if xticks is not None else _ticks(all_x, max(2, min(6, width // 14)))
    plt.xticks(ticks, [xtick_label(x) for x in ticks])
    plt.xlabel(xlabel)
    plt.ylabel(ylabel)
    if right is not None:
        plt.ylabel(right[3], yside="right")
    drawn = plt.build()
    if plain:
        drawn = plt.uncolorize(drawn)
    for line in drawn.splitlines():
        _print(console, Text.from_ansi(line) if not plain else Text(line.rstrip()))
    if named:  # under the chart, where it hides no line (plotext draws it over the data)
        items = []
        for i, (label, _, _) in enumerate(every):
            marker = SERIES_MARKERS[i % len(SERIES_MARKERS)] if plain else "braille"
            glyph = "⠒⠒" if marker == "braille" else marker * 2
            items.append(((glyph, SERIES_STYLES[i % len(SERIES_STYLES)]), visible(label, 40)))
        _legend(console, items)


# -- the charts --------------------------------------------------------------------------------


def chart_decode_report(r: DecodeReport, console: Console) -> None:
    """One second of bandwidth cut into tokens, then decode speed against the context."""
    plain = _plain(console)
    width = _width(console)
    per_token = r.read_bytes_per_token
    weights = r.weight_read_bytes / r.parallel
    cache = (r.kv_read_bytes + r.state_traffic_bytes) / r.parallel
    second = r.bandwidth_gbs * 1e9
    console.print()
    _title(
        console,
        f"One second of {r.bandwidth_gbs:,.0f} GB/s cut into tokens of {human_bytes(per_token)}:"
        f" {r.aggregate_ceiling_tok_s:,.1f} at the ceiling; the estimate,"
        f" {rate(r.aggregate_tok_s)}, reads {human_bytes(r.aggregate_tok_s * per_token)} of it",
    )
    scale = width / second if second else 0.0  # columns per byte
    bar = Text()
    if per_token * scale >= 3:  # each token drawn: its first column marked, weights, then KV
        i = 0
        while i < r.aggregate_tok_s:
            share = min(1.0, r.aggregate_tok_s - i)
            end = min(width, round((i + share) * per_token * scale))
            seg = stacked_bar(
                [(weights, WEIGHTS), (cache, KV)], end - bar.cell_len, per_token, plain
            )
            if seg.cell_len >= 3:
                seg = Text("│", style="" if plain else WEIGHTS[1]) + seg[1:]
            bar.append_text(seg)
            i += 1
    else:
        read = r.aggregate_tok_s
        bar = stacked_bar([(weights * read, WEIGHTS), (cache * read, KV)], width, second, plain)
    bar.append(IDLE[0] * (width - bar.cell_len), style="" if plain else IDLE[1])
    _print(console, bar)
    _legend(
        console,
        [
            (WEIGHTS, f"weights {human_bytes(weights)}/token"),
            (KV, f"KV + state {human_bytes(cache)}/token"),
            (IDLE, "not reached (compute, overhead)"),
        ],
    )
    points = r.by_context
    if len(points) < 2:
        return
    console.print()
    per = " per stream" if r.parallel > 1 else ""
    _title(
        console,
        f"Decode speed against the context{per} ({r.machine}, {r.kv_type} cache):"
        f" {rate(r.tok_s)} at {r.ctx // r.parallel:,} tokens",
    )
    xs = [p.ctx for p in points]
    line_chart(
        console,
        [("estimate", xs, [p.tok_s for p in points])],
        xlabel="tokens in the context",
        ylabel="tok/s",
        xticks=even_ticks(max(xs), 5 if width >= 48 else 3),
    )


def chart_prefill_report(r: PrefillReport, console: Console) -> None:
    """Time to first token as the chunks run: cumulative TTFT, and each chunk's time."""
    xs: list[float] = []
    total: list[float] = []
    each: list[float] = []
    t = 0.0
    for c in r.chunks:
        t += c.time_s
        xs.append(c.ctx + c.tokens)
        total.append(t)
        each.append(c.time_s * 1e3)
    console.print()
    _title(
        console,
        f"Time to first token as the prompt runs: {seconds(r.ttft_s)} for"
        f" {r.computed_tokens:,} tokens in {counted(r.n_chunks, 'chunk')} of {r.ubatch:,}",
    )
    if len(xs) < 2:
        _hbars(console, [("chunk 1", r.ttft_s, seconds(r.ttft_s))])
        return
    line_chart(
        console,
        [("TTFT so far (s, left)", xs, total)],
        right=("time per chunk (ms, right)", xs, each, "ms"),
        xlabel="tokens processed",
        ylabel="s",
    )


def chart_kv_report(r: KvReport, console: Console) -> None:
    """The cache against the context: the report's sweep, KV and recurrent state together, on
    a linear scale of tokens (the cache grows linearly, plus a fixed state)."""
    rows = r.sweep
    console.print()
    _title(
        console,
        f"KV cache against the context ({r.kv_type}"
        + (f", {r.parallel} streams" if r.parallel > 1 else "")
        + f"): {human_bytes(r.cache_bytes)} at {r.ctx:,} tokens",
    )
    if len(rows) < 2:
        _hbars(
            console,
            [(tokens_label(x.ctx), x.cache_bytes, human_bytes(x.cache_bytes)) for x in rows],
        )
        return
    xs = [x.ctx for x in rows]
    line_chart(
        console,
        [("KV + state", xs, [x.cache_bytes / 1e9 for x in rows])],
        xlabel="tokens of context",
        ylabel="GB",
        xticks=even_ticks(max(xs), 5 if _width(console) >= 48 else 3),
        x0=True,
    )


def _budget_bar(
    console: Console,
    label: str,
    capacity_bytes: float,
    system: float,
    weights: float,
    cache: float,
    buffers: float,
) -> None:
    """`label: capacity, free`, then the memory as one bar: system, weights, KV, buffers, free
    (past the capacity, `!` for what does not fit)."""
    plain = _plain(console)
    width = _width(console)
    used = system + weights + cache + buffers
    total = max(capacity_bytes, used)
    head = f"{label}: {capacity(capacity_bytes)}"
    free = capacity_bytes - used
    head += f", {human_bytes(free)} free" if free >= 0 else f", {human_bytes(-free)} over"
    _print(console, Text(visible(head, width)))
    bar = stacked_bar(
        [
            (system, SYSTEM),
            (weights, WEIGHTS),
            (cache, KV),
            (buffers, BUFFERS),
            (max(0.0, free), FREE),
        ],
        width,
        total,
        plain,
    )
    if free < 0:  # what does not fit, past the capacity
        edge = round(capacity_bytes / total * width)
        bar = bar[:edge] + Text(OVER[0] * (width - edge), style="" if plain else OVER[1])
    _print(console, bar)


def chart_budget_report(r: BudgetReport, console: Console) -> None:
    """The memory as a stacked bar per device, then the cache against the context with the
    memory left for it as a line."""
    console.print()
    _title(console, f"Memory budget at {r.ctx:,} tokens of context")
    if r.devices:
        for d in r.devices:
            _budget_bar(
                console,
                f"{d.device} ({d.role})",
                d.capacity_bytes,
                d.capacity_bytes - d.room_bytes,
                d.weights_bytes,
                d.kv_bytes,
                d.buffers_bytes,
            )
    else:
        _budget_bar(
            console,
            r.machine,
            r.capacity_bytes,
            r.system_bytes,
            r.weights_bytes,
            r.cache_bytes,
            r.buffers_bytes,
        )
    _legend(
        console,
        [
            (SYSTEM, "system" if r.devices else f"system {human_bytes(r.system_bytes)}"),
            (WEIGHTS, f"weights {human_bytes(r.weights_bytes)}"),
            (KV, f"KV {human_bytes(r.cache_bytes)}"),
            (BUFFERS, f"buffers {human_bytes(r.buffers_bytes)}"),
            (FREE, "free"),
        ],
    )
    rows = r.by_context
    if len(rows) < 2:
        return
    console.print()
    fits = f"fits up to {r.max_fit_ctx:,} tokens" if r.max_fit_ctx else "not even the weights fit"
    _title(
        console,
        f"KV cache against the context; the line is the memory left for it,"
        f" {human_bytes(max(0, r.cache_room_bytes))}: {fits}",
    )
    xs = [x.ctx for x in rows]
    edges = [min(xs), max(xs)]
    line_chart(
        console,
        [
            ("KV + state", xs, [x.cache_bytes / 1e9 for x in rows]),
            ("memory left", edges, [max(0, r.cache_room_bytes) / 1e9] * 2),
        ],
        xlabel="tokens of context",
        ylabel="GB",
        xticks=even_ticks(max(xs), 5 if _width(console) >= 48 else 3),
    )


def chart_trace_report(r: TraceReport, console: Console) -> None:
    """The request as a timeline: each phase a bar from its start to its end, on one scale."""
    plain = _plain(console)
    width = _width(console)
    phases = r.phases
    total = r.total_s or max((p.start_s + p.duration_s for p in phases), default=0.0)
    console.print()
    _title(console, f"Timeline: first token at {seconds(r.ttft_s)}, done at {seconds(total)}")
    if not phases or total <= 0:
        return
    rows = _phase_rows(phases)
    names = [visible(name, 40) for name, _, _ in rows]
    times = [seconds(d) if d > 0 else "" for _, _, d in rows]
    label_w = min(max(len(n) for n in names), width // 3)
    time_w = max(len(t) for t in times)
    bar_w = max(4, width - label_w - time_w - 2)
    style = _style(console, "blue")
    for name, time, (_, start_s, duration_s) in zip(names, times, rows, strict=True):
        start = min(bar_w - 1, round(start_s / total * bar_w))
        end = min(bar_w, round((start_s + duration_s) / total * bar_w))
        if len(name) > label_w:
            name = name[: label_w - 1] + "…"
        line = Text(name.ljust(label_w) + " " + " " * start)
        if duration_s > 0:
            line.append("█" * max(1, end - start), style=style)
        else:
            line.append("▏", style=_style(console, "bright_black"))
        line.append(" " * (width - time_w - 1 - line.cell_len) + " " + time.rjust(time_w))
        _print(console, line)
    axis = Text(" " * (label_w + 1))
    left, right = "0", seconds(total)
    axis.append(left + " " * max(1, bar_w - len(left) - len(right)) + right)
    _print(console, axis if not plain else Text(axis.plain))


def chart_session_report(r: SessionReport, console: Console) -> None:
    """The calls of a conversation on the session's clock, idle gaps included: each call a
    bar from its start, its load from disk, prompt (tokenize + prefill) and reply in turn."""
    plain = _plain(console)
    width = _width(console)
    calls = r.calls
    end = max((c.start_s + c.total_s for c in calls), default=0.0)
    console.print()
    _title(console, f"Calls on the session's clock: busy {seconds(r.busy_s)} of {seconds(end)}")
    if not calls or end <= 0:
        return
    names = [f"call {c.index + 1}" + (" (cold)" if c.cold else "") for c in calls]
    times = [seconds(c.total_s) for c in calls]
    label_w = max(len(n) for n in names)
    time_w = max(len(t) for t in times)
    bar_w = max(4, width - label_w - time_w - 2)
    load = (SYSTEM[0], SYSTEM[1])
    for name, time, c in zip(names, times, calls, strict=True):
        start = min(bar_w - 1, round(c.start_s / end * bar_w))
        stop = max(start + 1, min(bar_w, round((c.start_s + c.total_s) / end * bar_w)))
        bar = stacked_bar(
            [(c.load_s, load), (c.tokenize_s + c.prefill_s, KV), (c.decode_s, WEIGHTS)],
            stop - start,
            c.total_s,
            plain,
        )
        line = Text(name.ljust(label_w) + " " + " " * start)
        line.append_text(bar)
        line.append(" " * (width - time_w - 1 - line.cell_len) + " " + time.rjust(time_w))
        _print(console, line)
    _legend(console, [(load, "load"), (KV, "prompt"), (WEIGHTS, "reply")])


CHUNK_ROWS = 3  # more prefill chunks than this are drawn as one bar


def _phase_rows(phases: Sequence[Any]) -> list[tuple[str, float, float]]:
    """(name, start, duration) of each row of the timeline: a run of more than CHUNK_ROWS
    prefill chunks becomes one row, "prefill, N chunks", from the first start to the last end."""
    rows: list[tuple[str, float, float]] = []
    run: list[Any] = []

    def flush() -> None:
        if len(run) > CHUNK_ROWS:
            end = run[-1].start_s + run[-1].duration_s
            rows.append((f"prefill, {len(run)} chunks", run[0].start_s, end - run[0].start_s))
        else:
            rows.extend((p.name, p.start_s, p.duration_s) for p in run)
        run.clear()

    for p in phases:
        if p.name.startswith("prefill chunk"):
            run.append(p)
            continue
        flush()
        rows.append((p.name, p.start_s, p.duration_s))
    flush()
    return rows


def _numeric(values: Sequence[Any]) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def chart_sweep_report(r: SweepReport, console: Console) -> None:
    """A sweep's first column against its numeric axis, one line per value of the other
    axes (two machines: two lines); with no numeric axis, one bar per run."""
    if not r.columns or not r.rows:
        return
    col = r.columns[0]
    numeric_axes = [a for a in r.axes if _numeric([row.inputs.get(a) for row in r.rows])]
    ys = [row.values.get(col.key) for row in r.rows]
    console.print()
    # bytes in the one unit the sweep's table gives the column (KB for KV per token)
    per, unit = byte_unit(ys) if col.unit == "B" else (1.0, col.unit)
    shown_unit = f" ({unit})" if unit else ""
    if not numeric_axes or not _numeric([y for y in ys if y is not None]):
        _title(console, f"{col.label}{shown_unit}")
        rows = []
        for row, y in zip(r.rows, ys, strict=True):
            if not isinstance(y, int | float) or isinstance(y, bool):
                continue
            label = ", ".join(visible(row.inputs[a], 40) for a in r.axes)
            rows.append((label, float(y) / per, _format(float(y), col.unit)))
        _hbars(console, rows)
        return
    axis = numeric_axes[0]
    others = [a for a in r.axes if a != axis]
    groups: dict[tuple[Any, ...], list[tuple[float, float]]] = {}
    for row, y in zip(r.rows, ys, strict=True):
        if y is None:
            continue
        key = tuple(row.inputs.get(a) for a in others)
        groups.setdefault(key, []).append((float(row.inputs[axis]), float(y) / per))
    series = []
    for key, pts in groups.items():
        pts.sort()
        label = ", ".join(str(k) for k in key) if key else col.label
        series.append((label, [p[0] for p in pts], [p[1] for p in pts]))
    xs = sorted({x for _, sx, _ in series for x in sx})
    _title(console, f"{col.label}{shown_unit} against {axis}")
    if len(xs) < 2:
        rows = [(label, sy[0], _format(sy[0] * per, col.unit)) for label, _, sy in series]
        _hbars(console, rows)
        return
    counts = all(float(x).is_integer() for x in xs) and max(xs) >= 1024
    line_chart(
        console,
        series,
        xlabel=axis,
        ylabel=unit or col.label,
        xtick_label=tokens_label if counts else (lambda x: f"{x:g}"),
        xlog=min(xs) > 0 and max(xs) / min(xs) >= 16,
        ylog=_spread([y for _, _, sy in series for y in sy]) >= LOG_SPREAD,
        xticks=xs if len(xs) <= max(2, _width(console) // 10) else None,
    )


def _spread(values: Sequence[float]) -> float:
    """max / min of positive values (0 when any is not positive: no log scale)."""
    if not values or min(values) <= 0:
        return 0.0
    return max(values) / min(values)


def _format(value: float, unit: str) -> str:
    if unit == "s":
        return seconds(value)
    if unit == "B":
        return human_bytes(value)
    if unit == "tok/s":
        return rate(value)
    return f"{value:,.4g}" + (f" {unit}" if unit else "")


def chart_spec_report(r: SpecReport, console: Console) -> None:
    """Speedup against the acceptance rate alpha, one line per draft length gamma; above the
    break-even line (1x), drafting pays."""
    gammas = sorted({c.gamma for c in r.table})
    alphas = sorted({c.alpha for c in r.table})
    console.print()
    _title(
        console, f"Speedup against the acceptance rate (alpha), {r.draft} drafting for {r.target}"
    )
    if len(alphas) < 2 or not gammas:
        return
    if len(gammas) > 4:
        keep = {gammas[0], gammas[-1], r.gamma, r.best_gamma}
        gammas = sorted(g for g in gammas if g in keep)[:4]
    series = []
    for g in gammas:
        cells = sorted((c for c in r.table if c.gamma == g), key=lambda c: c.alpha)
        series.append((f"gamma {g}", [c.alpha for c in cells], [c.speedup for c in cells]))
    series.append(("break even", [alphas[0], alphas[-1]], [1.0, 1.0]))
    line_chart(
        console,
        series,
        xlabel="alpha",
        ylabel="x",
        xtick_label=lambda a: f"{a:.2g}",
        xticks=_ticks(alphas, 5),
    )


def chart_size_report(r: SizeReport, console: Console) -> None:
    """The file's bytes by role, largest first."""
    roles = sorted(r.by_role, key=lambda x: -x.tensor_bytes)
    console.print()
    _title(console, f"Bytes by role: {human_bytes(r.tensor_bytes)} of tensors")
    _hbars(console, [(x.role, x.tensor_bytes, human_bytes(x.tensor_bytes)) for x in roles])


def chart_compare_report(r: CompareReport, console: Console) -> None:
    """The seed's laptop / desktop card / cloud figure: for each model on each machine, a bar
    of decode speed, of time to first token, of the whole request and, where the power is
    known, of its energy; each on its own scale, the longest bar the largest value."""
    several = len({row.model for row in r.rows}) > 1

    def label(row: Any) -> str:
        return visible(f"{row.model} on {row.machine}" if several else row.machine, 60)

    from tokenwalk.render.energy import wh

    panels: list[tuple[str, list[tuple[str, float, str]]]] = [
        ("Decode speed (tok/s)", [(label(x), x.tok_s, rate(x.tok_s)) for x in r.rows]),
        (
            f"Time to first token, {r.prompt_tokens:,} tokens in",
            [(label(x), x.ttft_s, seconds(x.ttft_s)) for x in r.rows],
        ),
        (
            f"The whole request, {r.prompt_tokens:,} in and {r.output_tokens:,} out",
            [(label(x), x.total_s, seconds(x.total_s)) for x in r.rows],
        ),
    ]
    energy = [
        (label(x), x.energy.energy_wh, wh(x.energy.energy_wh))
        for x in r.rows
        if x.energy.energy_wh is not None
    ]
    if energy:
        panels.append(("Energy of the request", energy))
    for title, rows in panels:
        console.print()
        _title(console, title)
        _hbars(console, rows)


def chart_serve_report(r: ServeReport, console: Console) -> None:
    """Each user's speed and all users' together against the number of users (log scale), the
    --min-tok-s line beside them."""
    xs = [p.users for p in r.by_users]
    console.print()
    _title(
        console,
        f"tok/s against the number of users ({r.machine}): {r.users_at_min_tok_s:,} users at "
        f"{r.min_tok_s:g} tok/s each",
    )
    line_chart(
        console,
        [
            ("each user", xs, [p.user_tok_s for p in r.by_users]),
            ("all users", xs, [p.aggregate_tok_s for p in r.by_users]),
            (f"{r.min_tok_s:g} tok/s", xs, [r.min_tok_s] * len(xs)),
        ],
        xlabel="users",
        ylabel="tok/s",
        xlog=True,
        ylog=True,
        xticks=xs,
        xtick_label=lambda x: f"{x:,.0f}",
    )
