"""Rich views of `DecodeReport` and `PrefillReport`: the numbers and the reasoning behind them."""

from __future__ import annotations

from rich.console import Console, Group
from rich.text import Text

from tokenwalk.numbers import counted
from tokenwalk.render.fmt import (
    count,
    human_bytes,
    kernel_times,
    pct,
    rate,
    row_count,
    rows,
    seconds,
)
from tokenwalk.render.layout import Facts, FitTable, Whole, marker, note_lines, title_of
from tokenwalk.render.safe import safe_markup, visible
from tokenwalk.timing.accuracy import ExpectedError
from tokenwalk.timing.efficiency import Efficiency
from tokenwalk.timing.passes import (
    MATVEC_MAX_BATCH,
    DecodeReport,
    PrefillReport,
    RpcLink,
    SplitInfo,
    cpu_matvec_kernels,
)

__all__ = [
    "render_decode",
    "render_prefill",
    "fit_line",
    "error_line",
    "error_note",
    "error_range",
    "split_view",
    "rpc_lines",
]


def fit_line(fit: Efficiency, *, experts: bool = False) -> str:
    """The efficiencies a report used, where they come from; `experts`: say the routed
    experts' share too (a mixture of experts' prefill), where it is not the dense rate."""
    routed = ""
    if experts and fit.eff_experts != 1.0:
        routed = f", routed experts at {pct(fit.eff_experts)} of that"
    return (
        f"{pct(fit.eff_bw)} of bandwidth, {pct(fit.eff_compute)} of compute (half that for "
        f"products of {rows(fit.rows_half)}{routed}), "
        f"{seconds(fit.overhead_per_layer_s)} per layer; "
        f"from {safe_markup(fit.source)}"
    )


def error_range(e: ExpectedError) -> str:
    """The median error, in sample to never measured where the machine has its own runs."""
    ends = {round(e.cross_validated.median_pct)}
    if e.in_sample is not None:
        ends.add(round(e.in_sample.median_pct))
    return "-".join(str(v) for v in sorted(ends)) + "%"


def error_note(prefill: ExpectedError | None, decode: ExpectedError | None) -> str:
    """'median error: prefill 4-26%, decode 3-16%' for the phases that have one, else ''."""
    errors = [
        f"{what} {error_range(e)}"
        for what, e in (("prefill", prefill), ("decode", decode))
        if e is not None
    ]
    return "median error: " + ", ".join(errors) if errors else ""


def error_line(e: ExpectedError, phase: str) -> tuple[str, str]:
    """The typical error of an estimate and what it rests on: the median |error| of `phase`
    estimates on published runs of devices of its class never measured (of classes never
    measured, each left out of the fit whole, for a machine whose class has no runs), and,
    for a machine fitted to its own runs, in sample; and the bounds 90% of them stay within."""
    cv = e.cross_validated
    devices = "devices" if e.group == "all" else f"{e.group} devices"
    never = f"on {devices} never measured (each left out of the fit, {count(cv.n_rows)} runs)"
    if e.left_out == "class":
        never = (
            f"on {devices} of classes never measured, as this one's (each class left out of "
            f"the fit, {count(cv.n_rows)} runs)"
        )
    own = e.in_sample
    if own is None:
        return (
            f"{error_range(e)} (median)",
            f"of {phase} estimates {never}; 90% within {cv.p90_pct:.0f}%",
        )
    return (
        f"{error_range(e)} (median)",
        f"of {phase} estimates: {own.median_pct:.0f}% on the runs machines were fitted to (in "
        f"sample, as this one is), {cv.median_pct:.0f}% {never}; 90% within "
        f"{own.p90_pct:.0f}% and {cv.p90_pct:.0f}%",
    )


def _kv(t: Facts, key: str, value: str, note: str = "") -> None:
    t.add_row(key, value, note)


def _summary() -> Facts:
    return Facts(pad_edge=False)


def render_decode(r: DecodeReport, console: Console) -> None:
    at = f"decode at {count(r.ctx)} tokens"
    if r.parallel > 1:  # ctx is the total, as llama.cpp's -c
        at += f" in {r.parallel} streams of {count(r.ctx // r.parallel)}"
    head = [f"{visible(r.model)} {visible(r.quant)}", visible(r.machine_name), at]
    title = title_of(head, console.width, markup=False)
    reads = FitTable()
    reads.add_column("a step reads")
    reads.add_column("bytes", justify="right")
    reads.add_row("weights (experts woken included)", human_bytes(r.weight_read_bytes))
    reads.add_row(f"KV cache at {count(r.ctx)} tokens ({r.kv_type})", human_bytes(r.kv_read_bytes))
    if r.state_traffic_bytes:
        reads.add_row("recurrent state (read + written)", human_bytes(r.state_traffic_bytes))
    reads.add_row("[bold]total per step[/bold]", f"[bold]{human_bytes(r.step_read_bytes)}[/bold]")

    s = _summary()
    split = r.split is not None and len(r.split.parts) > 1
    _kv(
        s,
        "ceiling",
        rate(r.ceiling_tok_s),
        "every device reading its bytes at its full bandwidth, one after another"
        if split
        else f"{r.bandwidth_gbs:,.0f} GB/s / {human_bytes(r.step_read_bytes)} per step",
    )
    if r.unhidden == 1.0:
        how = "memory + compute + overhead (a CPU)"
    elif r.unhidden:
        how = f"{r.bound}-bound, one stream's compute waiting on the read (a CPU)"
    else:
        how = f"{r.bound}-bound"
    _kv(s, "estimate", rate(r.tok_s), f"{seconds(r.ms_per_token / 1e3)} per step, {how}")
    _kv(
        s,
        "  memory",
        seconds(r.memory_s),
        "each device's bytes at its own bandwidth (below)"
        if split
        else f"bytes / ({r.bandwidth_gbs:,.0f} GB/s x {pct(r.fit.eff_bw)})",
    )
    if split:
        _kv(
            s,
            "  compute",
            seconds(r.compute_s),
            "each device's FLOPs at its own rate (below); a GPU's mat-vec kernels hide the "
            "weights' under the read, a CPU's do not",
        )
    elif r.tflops:
        rates = f"({r.tflops:,.1f} TFLOPS x {pct(r.fit.eff_compute)})"
        if r.backend == "cpu":  # a CPU multiplies every weight it reads
            matvec = cpu_matvec_kernels(r.parallel)
            _kv(
                s,
                "  compute",
                seconds(r.compute_s),
                f"(FLOPs + rows_half x FLOPs per row) / {rates}: "
                + (
                    f"a CPU's mat-vec products run at 1 / (1 + {row_count(r.fit.rows_half)}) "
                    "of its large-product rate"
                    if matvec
                    else f"a product of n rows runs at n / (n + {row_count(r.fit.rows_half)}) "
                    "of its large-product rate"
                )
                + (
                    f", the weights' FLOPs {kernel_times(r.kernel_time, matvec=matvec)}"
                    if r.kernel_time != 1.0
                    else ""
                )
                + (
                    "; flash attention done one element at a time on this build (cpu_simd) "
                    f"counts {r.fa_scalar_flops / 1e9:,.2g} GFLOP"
                    if r.fa_scalar_flops
                    else ""
                ),
            )
        elif r.parallel <= MATVEC_MAX_BATCH:  # the weight products ride on the memory time
            _kv(
                s,
                "  compute",
                seconds(r.compute_s),
                f"attention only / {rates}: the weights' {r.flops_per_token / 1e9:,.1f} GFLOP "
                "per token run on mat-vec kernels, inside the memory time",
            )
        else:
            _kv(s, "  compute", seconds(r.compute_s), f"matrix FLOPs / {rates}")
    _kv(s, "  overhead", seconds(r.overhead_s), "fixed cost per layer")
    _kv(
        s,
        "bandwidth used",
        f"{r.bandwidth_used_gbs:,.0f} GB/s",
        f"{pct(r.bandwidth_used_gbs / r.bandwidth_gbs)} of the spec sheet",
    )
    if r.parallel > 1:
        _kv(
            s,
            "all streams",
            rate(r.aggregate_tok_s),
            f"{r.parallel} streams share each weight read "
            f"(ceiling {rate(r.aggregate_ceiling_tok_s)})",
        )
    balance = (
        f"spec-sheet balance {r.machine_balance:,.0f} FLOP/byte: "
        + ("memory-bound" if r.arithmetic_intensity < r.machine_balance else "compute-bound")
        if r.machine_balance
        else "compute rate unknown"
    )
    _kv(s, "arithmetic intensity", f"{r.arithmetic_intensity:,.1f} FLOP/byte", balance)
    lo, hi = r.reading_tok_s
    _kv(s, "vs reading", r.vs_reading, f"people read about {lo:g} to {hi:g} tokens a second")
    _kv(s, "efficiencies", "", fit_line(r.fit))
    if r.decode_error is not None:
        _kv(s, "typical error", *error_line(r.decode_error, "decode"))
    parts: list = [Text(title, style="italic"), reads, "", s]
    if r.split is not None:
        parts += ["", split_view(r.split, "a step", console.width)]
    console.print(Group(*parts), crop=False)  # llama.cpp's flags whole (`Whole`)


def rpc_lines(r: RpcLink, what: str) -> list[tuple[str, str]]:
    """The network to the rpc: cards: its terms, what `what` sends over it, and the load."""
    sent = r.input_bytes + r.graph_bytes + r.output_bytes
    trips = f"{r.splits} round trip{'s' if r.splits != 1 else ''}"
    return [
        ("RPC", r.link),
        (
            "over RPC",
            f"{what} sends {human_bytes(sent)}: inputs {human_bytes(r.input_bytes)}, graph "
            f"{human_bytes(r.graph_bytes)}, outputs {human_bytes(r.output_bytes)}, in "
            f"{seconds(r.transfer_s)}; {trips} {seconds(r.latency_total_s)}",
        ),
        (
            "RPC at load",
            f"{human_bytes(r.upload_bytes)} of weights cross once: {seconds(r.upload_s)}",
        ),
    ]


def split_view(sp: SplitInfo, what: str, width: int = 120) -> Group:
    """Where the model sits and each device's part of the time (a split over cards and host).
    Each device's note (what bounds it, what its time is) stands beside its row where the
    whole table fits `width` columns, else under the table, marked ¹ ² ..."""
    head = _summary()
    _kv(head, "placement", safe_markup(sp.split), safe_markup(sp.placement_note))
    if sp.host:
        _kv(head, "host", "", safe_markup(sp.host))
    if sp.host_fit is not None:  # under the host: its CPU's efficiencies
        _kv(head, "", "", "its CPU at " + fit_line(sp.host_fit))
    if sp.link:
        _kv(head, "link", "", safe_markup(sp.link))
    if sp.rpc is not None:
        for key, line in rpc_lines(sp.rpc, what):
            _kv(head, key, "", safe_markup(line))
    flags = Whole([("llama.cpp", sp.placement or "-ngl all")], indent=0)
    if len(sp.parts) < 2:
        return Group(head, flags)
    total = sum(p.time_s for p in sp.parts) or 1.0
    rows = []
    for p in sp.parts:
        rows.append(
            {
                # a device's slug is what users type (--host, --machine): never cut
                "device": (p.device if p.device == "network" else "link")
                if p.role == "link"
                else f"{visible(p.device)} ({p.role})",
                "weights": human_bytes(p.weight_bytes) if p.role != "link" else "",
                "KV read": human_bytes(p.kv_read_bytes) if p.role != "link" else "",
                "time": f"{seconds(p.time_s)} ({pct(p.time_s / total)})",
                "note": visible(p.how or (f"{p.bound}-bound" if p.bound else "")),
            }
        )
    widths = [max(len(k), *(len(r[k]) for r in rows)) for k in ("device", "weights", "KV read")]
    widths += [max(len(r["time"]) for r in rows), max(len(r["note"]) for r in rows)]
    beside = sum(widths) + 3 * len(widths) + 1 <= width  # a bordered table, notes and all
    notes = [] if beside else [(i + 1, r["note"]) for i, r in enumerate(rows) if r["note"]]
    marks = {i - 1: marker(i) for i, _ in notes}
    t = FitTable(title=f"each device's part of {what}", title_justify="left")
    t.add_column("device", no_wrap=True)
    for col in ("weights", "KV read", "time"):
        t.add_column(col, justify="right", no_wrap=True)
    if beside:
        t.add_column("")
    for i, r in enumerate(rows):
        cells = [Text(r["device"] + marks.get(i, "")), r["weights"], r["KV read"], r["time"]]
        t.add_row(*cells, *([Text(r["note"])] if beside else []))
    under = [Text(line, style="dim") for line in note_lines(notes, width - 1)]
    return Group(head, flags, t, *under)


def render_prefill(r: PrefillReport, console: Console) -> None:
    head = [
        f"{visible(r.model)} {visible(r.quant)}",
        visible(r.machine_name),
        f"prefill of {count(r.prompt_tokens)} tokens",
    ]
    title = title_of(head, console.width, markup=False)
    moe = r.expert_rows > 0
    chunks = FitTable()
    cols = ["chunk", "tokens", "context", "time", "bound", "attention"]
    if moe:
        cols.append("experts")
    for col in cols:
        chunks.add_column(col, justify="right" if col != "bound" else "left")
    rows = r.chunks
    experts = "routed experts" if console.width >= 80 else "experts"  # never wrapped
    shown = rows if len(rows) <= 16 else rows[:8] + rows[-8:]
    for i, c in enumerate(shown):
        if len(rows) > 16 and i == 8:
            chunks.add_row("...", *[""] * (len(cols) - 1))
        cells = [
            str(c.index + 1),
            count(c.tokens),
            count(c.ctx),
            seconds(c.time_s),
            experts if c.bound == "experts" else c.bound,
            pct(c.attention_share),
        ]
        if moe:
            cells.append(pct(c.expert_s / c.time_s) if c.time_s else "-")
        chunks.add_row(*cells)
    s = _summary()
    if r.cached_tokens:
        _kv(s, "prefix cache", f"{count(r.cached_tokens)} tokens", "reused, not recomputed")
    _kv(
        s,
        "computed",
        f"{count(r.computed_tokens)} tokens",
        f"{counted(r.n_chunks, 'chunk')} of up to {count(r.ubatch)}",
    )
    _kv(s, "time to first token", seconds(r.ttft_s), "sum of the chunks")
    _kv(s, "prefill speed", rate(r.tok_s), "")
    _kv(
        s, "work", f"{r.flops / 1e12:,.1f} TFLOP", f"{r.flops_per_token / 1e9:,.1f} GFLOP per token"
    )
    _kv(s, "attention share", pct(r.attention_share), "of the FLOPs: grows with the context")
    bound = f"{r.compute_bound_chunks} compute, {r.memory_bound_chunks} memory"
    if moe:
        bound += f", {r.experts_bound_chunks} routed experts"
    _kv(s, "bound", bound, "chunks")
    _kv(s, "efficiencies", "", fit_line(r.fit, experts=moe))
    if r.prefill_error is not None:
        _kv(s, "typical error", *error_line(r.prefill_error, "prefill"))
    parts: list = [Text(title, style="italic"), chunks, "", s]
    if r.split is not None:
        parts += ["", split_view(r.split, "the prefill", console.width)]
    if moe:
        fit = r.experts_fit()
        kernels = ""
        if fit.eff_experts != 1.0:
            kernels = f", and a routed expert's product at {pct(fit.eff_experts)} of a dense one's"
        parts += [
            "",
            Text(
                f"experts: share of a chunk's time in routed-expert products. Each woken expert "
                f"multiplies only about {r.expert_rows:,.0f} of a chunk's tokens (ubatch x "
                f"experts used / experts woken), a product of n rows runs at n / (n + "
                f"{row_count(fit.rows_half)}) of the matrix rate{kernels}: small products"
                + (" and the routed-expert kernels" if kernels else "")
                + " are why a mixture of experts fills its prompt slower than its active size "
                "suggests.",
                style="dim",
            ),
        ]
    console.print(Group(*parts), crop=False)  # llama.cpp's flags whole (`Whole`)
