"""Rich views of `BudgetReport`, `TraceReport` and `SpecReport`."""

from __future__ import annotations

from rich.console import Console, Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from tokenwalk.costs.budget import BudgetReport
from tokenwalk.costs.spec import SpecReport
from tokenwalk.costs.trace import TraceReport
from tokenwalk.render.fmt import capacity, count, human_bytes, rate, seconds
from tokenwalk.render.safe import safe_markup, safe_text

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
    t = Table(
        title=f"Memory on {safe_markup(r.machine)}: {capacity(r.capacity_bytes)}",
        title_justify="left",
    )
    for col in ("", "bytes", "share", ""):
        t.add_column(col, justify="right" if col in ("bytes", "share") else "left")
    cap = r.capacity_bytes

    def row(label: str, n: float, style: str = "") -> None:
        t.add_row(
            label, human_bytes(n), f"{n / cap * 100:.0f}%", Text(_bar(n / cap, 30), style=style)
        )

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
    summary.add_column()
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
    for k, v in r.settings.items():
        summary.add_row(safe_text(k), safe_text(v, limit=None))
    for hint in r.hints:
        summary.add_row("try", safe_text(hint, limit=None))
    console.print(Group(t, "", summary))
    console.print("[dim]GB = 1e9 bytes; GiB = 2^30 bytes (a '24 GB' card holds 24 GiB).[/dim]")


def _render_devices(r: BudgetReport, console: Console) -> None:
    """A system of cards and a host: one row per device, the split as `ollama ps` says it."""
    t = Table(
        title=f"Memory on {safe_markup(r.machine)} and its host, at {count(r.ctx)} tokens "
        f"({r.kv_type})",
        title_justify="left",
    )
    for col in ("device", "holds", "weights", "KV", "buffers", "free", "of"):
        t.add_column(col, justify="left" if col in ("device", "holds") else "right", no_wrap=True)
    for d in r.devices:
        if d.role == "host":
            holds = f"{d.layers} layers" if d.layers else "embedding"
            if d.expert_layers:
                holds = f"experts of {d.expert_layers}" + (f" + {holds}" if d.layers else "")
        else:
            holds = f"{d.layers} layers" + (" + head" if d.output else "")
        free = human_bytes(d.free_bytes) if d.fits else f"[red]-{human_bytes(-d.free_bytes)}[/red]"
        style = "red" if not d.fits else ("cyan" if d.role == "gpu" else "magenta")
        t.add_row(
            Text(d.device, style=style),
            holds,
            human_bytes(d.weights_bytes),
            human_bytes(d.kv_bytes),
            human_bytes(d.buffers_bytes),
            free,
            human_bytes(d.capacity_bytes),
        )
    summary = Table(show_header=False, box=None)
    summary.add_column(style="bold")
    summary.add_column()
    summary.add_row("verdict", Text(r.verdict, style=_VERDICT_STYLE[r.verdict]))
    summary.add_row("placement", safe_text(f"{r.split}  ({r.placement})", limit=None))
    summary.add_row(
        "capacity",
        "; ".join(f"{safe_markup(d.device)} {capacity(d.capacity_bytes)}" for d in r.devices),
    )
    if r.host:
        summary.add_row("host", safe_text(r.host, limit=None))
    summary.add_row(
        "largest context that fits", count(r.max_fit_ctx) + " tokens" if r.max_fit_ctx else "none"
    )
    for k, v in r.settings.items():
        summary.add_row(safe_text(k), safe_text(v, limit=None))
    for hint in r.hints:
        summary.add_row("try" if "fits" in hint else "short", safe_text(hint, limit=None))
    console.print(Group(t, "", summary))
    console.print(
        "[dim]free = capacity - system - weights - KV - buffers; GB = 1e9 bytes, GiB = 2^30.[/dim]"
    )


def _on_timeline(s: float) -> str:
    """A time on a request's timeline: below a millisecond it is '< 1 ms' (a measured
    tokenization takes tens of µs, different at every run, beside phases of seconds)."""
    return "< 1 ms" if 0 < s < 0.5e-3 else seconds(s)


def render_trace(r: TraceReport, console: Console) -> None:
    total = r.total_s or 1.0
    t = Table(
        title=f"{safe_markup(r.model)} on {safe_markup(r.machine)}: "
        f"{count(r.prompt_tokens)} tokens in, {count(r.output_tokens)} out",
        title_justify="left",
    )
    t.add_column("phase")
    t.add_column("start", justify="right")
    t.add_column("takes", justify="right")
    t.add_column("timeline", no_wrap=True)
    t.add_column("", style="dim")
    width = 32
    for p in r.phases:
        lead = round(p.start_s / total * width)
        bar = _bar(p.duration_s / total, width)
        if not bar and p.duration_s > 0:
            bar = "▏"
        marker = "│" if p.duration_s == 0 else ""
        style = (
            "cyan" if p.name.startswith("prefill") else "green" if p.name == "decode" else "yellow"
        )
        line = Text(" " * min(lead, width)) + Text(bar or marker, style=style)
        t.add_row(
            p.name,
            _on_timeline(p.start_s),
            _on_timeline(p.duration_s) if p.duration_s else "",
            line,
            p.detail,
        )

    s = Table(show_header=False, box=None)
    s.add_column(style="bold")
    s.add_column(justify="right")
    s.add_column(style="dim")
    if r.cold:
        s.add_row("load", seconds(r.load_s), f"at {r.load_gbs:.3g} GB/s, {escape(r.load_from)}")
    s.add_row("prefill", seconds(r.prefill_s), f"{r.n_chunks} chunks of up to {r.ubatch} tokens")
    s.add_row("time to first token", seconds(r.ttft_s), "")
    s.add_row(
        "writing",
        seconds(r.decode_s),
        f"{rate(r.decode_tok_s)}; a step reads "
        f"{human_bytes(r.decode_step_read_bytes)} in {seconds(r.decode_step_s)}",
    )
    s.add_row("whole request", seconds(r.total_s), "")
    s.add_row(
        "KV cache after the prompt",
        human_bytes(r.kv_stored_bytes),
        f"+ {human_bytes(r.state_bytes)} recurrent state" if r.state_bytes else "",
    )
    console.print(Group(t, "", s))


def render_spec(r: SpecReport, console: Console) -> None:
    head = Table(
        show_header=False,
        box=None,
        title=f"{safe_markup(r.target)} with "
        f"{'its MTP block' if r.mtp else safe_markup(r.draft)} on {safe_markup(r.machine)}",
        title_justify="left",
    )
    head.add_column(style="bold")
    head.add_column(justify="right")
    head.add_column(style="dim")
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
    grid = Table(
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
    console.print(Group(head, "", grid))
