"""The arithmetic behind each answer (--explain): formula first, then the numbers in it.

A report type `FooReport` is served by a function `explain_foo_report(report, console)` here;
`tokenwalk.render.render` finds it by name. Commands that print their own view (`models`,
`machines`, `probe`, `calibrate`) call theirs directly.

Every explanation is a list of steps, each printed as

    name = formula
         = the numbers plugged in = result unit

with the numbers read from the report the answer came from, formatted as the view formats
them, so that the last number of a step is the number the answer printed. Lines are wrapped
to the console's width, before an operator where one is near, never inside a quantity.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.text import Text

from tokenwalk.costs.timing import cpu_matvec_kernels
from tokenwalk.render.fmt import (
    NBSP,
    human_bytes,
    kernel_times,
    params,
    pct,
    rate,
    row_count,
    rows,
    seconds,
)
from tokenwalk.render.safe import visible

if TYPE_CHECKING:
    from rich.console import Console

    from tokenwalk.calibrate import DefaultsFit, MachineFit
    from tokenwalk.costs.budget import BudgetReport
    from tokenwalk.costs.kv import KvReport
    from tokenwalk.costs.size import SizeReport
    from tokenwalk.costs.spec import SpecReport
    from tokenwalk.costs.timing import DecodeReport, PrefillChunk, PrefillReport, SplitInfo
    from tokenwalk.costs.trace import SessionReport, TraceReport
    from tokenwalk.machine import Efficiency
    from tokenwalk.probe import ProbeReport
    from tokenwalk.text.prompt import TokenCount

__all__ = [
    "Step",
    "show",
    "explain_size_report",
    "explain_kv_report",
    "explain_decode_report",
    "explain_prefill_report",
    "explain_budget_report",
    "explain_trace_report",
    "explain_spec_report",
    "explain_token_count",
    "explain_session_report",
    "explain_sweep_report",
    "explain_compare_report",
    "explain_models_fit_report",
    "explain_catalogue",
    "explain_machines",
    "explain_probe",
    "explain_defaults_fit",
    "explain_machine_fit",
]

_OPERATORS = {"+", "-", "x", "/", "=", "·", "<=", ">=", "<", ">"}


@dataclass(frozen=True)
class Step:
    """One line of arithmetic: `name = formula`, then `= numbers = result`."""

    name: str
    formula: str
    numbers: str | tuple[str, ...] = ""  # several: one line each, the result after the last
    result: str = ""
    note: str = ""


# -- numbers, as the views print them (a quantity never breaks across lines) -------------------


def _q(text: str) -> str:
    return text.replace(" ", NBSP)


def _b(n: float) -> str:
    """Bytes: '2.11 GB'."""
    return _q(human_bytes(n))


def _s(s: float) -> str:
    """Seconds in the largest sensible unit, as the views print them."""
    return _q(seconds(s))


def _r(tok_s: float) -> str:
    return _q(rate(tok_s))


def _p(x: float) -> str:
    return pct(x)


def _gbs(x: float) -> str:
    return _q(f"{x:,.0f} GB/s" if x >= 10 else f"{x:,.3g} GB/s")


def _tflops(x: float) -> str:
    return _q(f"{x:,.1f} TFLOPS" if x >= 1 else f"{x:,.3g} TFLOPS")


def _flop(x: float) -> str:
    """FLOP counts: '6.0 GFLOP', '3.1 TFLOP'."""
    for unit, scale in (("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6)):
        if abs(x) >= scale:
            v = x / scale
            return _q(f"{v:,.2f} {unit}" if v < 10 else f"{v:,.1f} {unit}")
    return _q(f"{x:,.0f} FLOP")


def _sum(terms: Sequence[str], limit: int = 4) -> str:
    """'a + b + c', or 'a + b + ... + z (n terms)' when there are more than `limit`."""
    if len(terms) <= limit:
        return " + ".join(terms)
    return f"{terms[0]} + {terms[1]} + ... + {terms[-1]} ({len(terms)} terms)"


# -- layout ------------------------------------------------------------------------------------


def _depth(word: str) -> int:
    return word.count("(") - word.count(")")


def _break_at(line: list[str], depth0: int) -> int | None:
    """Where to break `line` (an index: before that word), or None to keep it full: before the
    operator, or after the comma, least deep in parentheses, then of lowest precedence (+, -,
    = before x and /), then the latest. `depth0`: parentheses open before the line."""
    best: tuple[int, int, int] | None = None
    depth = depth0 + _depth(line[0])
    for j in range(1, len(line)):
        rank = None
        if line[j] in _OPERATORS:
            rank = 1 if line[j] in ("x", "/", "·") else 0
        elif line[j - 1].endswith(","):
            rank = 0
        if rank is not None:
            key = (depth, rank, -j)
            if best is None or key < best:
                best = key
        depth += _depth(line[j])
    return -best[2] if best is not None else None


def _wrap(first: str, text: str, indent: int, width: int, ops: bool = True) -> list[str]:
    """`first` + `text` in lines of at most `width`, continuation lines indented by `indent`;
    a formula breaks where `_break_at` says, when that leaves a third of a line."""
    words = text.split(" ")
    lines: list[str] = []
    line: list[str] = []
    lead = first
    depth = 0  # parentheses open before `line`
    for word in words:
        # a break may carry words over: break again until the word fits after them
        while line and len(lead + " ".join([*line, word])) > width:
            cut = len(line)
            at = _break_at(line, depth) if ops else None
            if at is not None and len(lead + " ".join(line[:at])) >= width // 3:
                cut = at
            lines.append(lead + " ".join(line[:cut]))
            depth += sum(_depth(w) for w in line[:cut])
            line = line[cut:]
            lead = " " * indent
        line.append(word)
    lines.append(lead + " ".join(line))
    return [x.replace(NBSP, " ").rstrip() for x in lines]


def show(console: Console, title: str, steps: Iterable[Step], notes: Iterable[str] = ()) -> None:
    """Print `steps` under `title`, each formula first, then the numbers and the result."""
    width = max(40, console.width)
    out = Text()
    out.append("\n")
    out.append(_q(visible(title)).replace(NBSP, " "), style="bold underline")
    out.append("\n")
    for st in steps:
        name = visible(st.name)
        pad = min(len(name) + 1, 24)
        head = _wrap(f"{name} = ", visible(st.formula), pad + 2, width)
        out.append(head[0][: len(name)], style="bold")
        out.append(head[0][len(name) :] + "\n")
        for x in head[1:]:
            out.append(x + "\n")
        lines = [st.numbers] if isinstance(st.numbers, str) else list(st.numbers)
        lines = [x for x in lines if x]
        if st.result:
            if lines:
                lines[-1] = f"{lines[-1]} = {st.result}"
            else:
                lines = [st.result]
        for k, body in enumerate(lines):
            wrapped = _wrap(" " * pad + "= ", visible(body), pad + 2, width)
            for i, x in enumerate(wrapped):
                last = k == len(lines) - 1 and i == len(wrapped) - 1
                shown = st.result.replace(NBSP, " ")
                if last and st.result and x.endswith(shown):
                    out.append(x[: len(x) - len(shown)])
                    out.append(shown, style="bold")
                    out.append("\n")
                else:
                    out.append(x + "\n")
        if st.note:
            for x in _wrap(" " * pad + "  ", visible(st.note), pad + 2, width, ops=False):
                out.append(x + "\n", style="dim")
    for note in notes:
        for x in _wrap("", visible(note), 0, width, ops=False):
            out.append(x + "\n", style="dim")
    out.rstrip()
    console.print(out, soft_wrap=True)


# -- the timing model, shared by decode, prefill, trace ---------------------------------------


def _efficiency(fit: Efficiency) -> Step:
    return Step(
        "efficiencies",
        "eff_bw, eff_compute, rows_half, eff_experts, overhead per layer",
        f"{_p(fit.eff_bw)}, {_p(fit.eff_compute)}, {rows(fit.rows_half)}, "
        f"{_p(fit.eff_experts)}, {_s(fit.overhead_per_layer_s)} per layer",
        note=f"fitted on published runs; from {fit.source} (see tokenwalk calibrate --explain)",
    )


def _routed(eff_experts: float) -> str:
    """What a routed expert's product runs at, after the row term's words; nothing where the
    experts run at the dense rate."""
    return f", a routed expert's at {_p(eff_experts)} of that" if eff_experts != 1.0 else ""


def _layers(overhead_s: float, fit: Efficiency, bandwidth_gbs: float) -> str:
    """L of the overhead term, overhead_s = L x overhead per layer x the bandwidth's scale
    (`PassWork.overhead_layers`, a float when a scan layer counts a fraction more;
    `timing.overhead_scale`)."""
    from tokenwalk.costs.timing import overhead_scale

    per = fit.overhead_per_layer_s * overhead_scale(bandwidth_gbs)
    return f"{overhead_s / per:,.4g}" if per else "0"


def _time_steps(
    *,
    bytes_: float,
    flops: float | None,
    row_flops: float | None,
    memory_s: float,
    compute_s: float,
    overhead_s: float,
    time_s: float,
    bandwidth_gbs: float,
    tflops: float | None,
    fit: Efficiency,
    what: str,
    compute_note: str = "",
    unhidden: float = 0.0,
    tokens: int = 1,
) -> list[Step]:
    """memory, compute, overhead and the time of one pass of `tokens`, with its numbers
    (`unhidden`: the share of the compute that waits on the read, `timing.unhidden_share`: 1
    in a CPU's decoding step, where memory and compute add, 1 / tokens in a larger CPU pass)."""
    steps = [
        Step(
            "memory",
            "B / (BW x eff_bw)",
            f"{_b(bytes_)} / ({_gbs(bandwidth_gbs)} x {_p(fit.eff_bw)})",
            _s(memory_s),
            f"B: the bytes {what} reads",
        )
    ]
    if tflops and flops is not None and row_flops is not None:
        steps.append(
            Step(
                "compute",
                "(F + rows_half x R) / (FLOPS x eff_compute)",
                f"({_flop(flops)} + {row_count(fit.rows_half)} x {_flop(row_flops)}) / "
                f"({_tflops(tflops)} x {_p(fit.eff_compute)})",
                _s(compute_s),
                note="F: the FLOPs counted; R: sum over products of F_i / rows_i"
                + (f"; {compute_note}" if compute_note else ""),
            )
        )
    elif tflops:
        steps.append(
            Step("compute", "(F + rows_half x R) / (FLOPS x eff_compute)", "", _s(compute_s))
        )
    from tokenwalk.costs.timing import (
        LLAMA_LAYER_NODES,
        OVERHEAD_BW_EXPONENT,
        OVERHEAD_REF_GBS,
        overhead_scale,
    )

    layers = _layers(overhead_s, fit, bandwidth_gbs)
    steps.append(
        Step(
            "overhead",
            "L x overhead per layer x (REF / BW)^a (L: llama.cpp's graph nodes / "
            f"{LLAMA_LAYER_NODES:.1f}, a llama layer's; the per-layer cost at REF "
            f"{OVERHEAD_REF_GBS:,.0f} GB/s, a = {OVERHEAD_BW_EXPONENT:g})",
            f"{layers} x {_s(fit.overhead_per_layer_s)} x {overhead_scale(bandwidth_gbs):.3g}",
            _s(overhead_s),
        )
    )
    if unhidden == 1.0:
        steps.append(
            Step(
                "time",
                "memory + compute + overhead",
                f"{_s(memory_s)} + {_s(compute_s)} + {_s(overhead_s)}",
                _s(time_s),
                "a CPU core reads a weight and multiplies it in turn: the two add",
            )
        )
        return steps
    if unhidden:
        steps.append(
            Step(
                "time",
                "max(memory, compute) + min(memory, compute / tokens) + overhead",
                f"max({_s(memory_s)}, {_s(compute_s)}) + min({_s(memory_s)}, "
                f"{_s(compute_s)} / {tokens}) + {_s(overhead_s)}",
                _s(time_s),
                "a CPU core reads a weight, then multiplies it for each token: the first "
                "token's arithmetic waits on the read",
            )
        )
        return steps
    steps.append(
        Step(
            "time",
            "max(memory, compute) + overhead",
            f"max({_s(memory_s)}, {_s(compute_s)}) + {_s(overhead_s)}",
            _s(time_s),
        )
    )
    return steps


def _split_steps(sp: SplitInfo, total_s: float, what: str) -> list[Step]:
    """A pass split over devices: each device's part, then their sum."""
    steps = []
    for p in sp.parts:
        if p.role == "link":
            steps.append(
                Step(
                    f"  {p.device}",
                    "transfers over the network (RPC)"
                    if "network" in p.device
                    else "transfers over the link",
                    "",
                    _s(p.time_s),
                    p.how,
                )
            )
            continue
        steps.append(
            Step(
                f"  {p.device}",
                f"{_b(p.weight_bytes)} weights + {_b(p.kv_read_bytes)} KV, at its own "
                "bandwidth, rate and efficiencies",
                "",
                _s(p.time_s),
                p.how or (f"{p.bound}-bound" if p.bound else ""),
            )
        )
    steps.append(
        Step(
            "time",
            f"sum over devices of their part of {what} (they run one after another)",
            _sum([_s(p.time_s) for p in sp.parts], limit=6),
            _s(total_s),
        )
    )
    return steps


# -- energy and price (costs.energy: power x time) --------------------------------------------


def _energy_steps(e: Any, what: str) -> list[Step]:
    """energy = P x t, in Wh, per million tokens; cost = Wh / 1000 x price per kWh, or
    t / 3600 x price per hour. `e` is the answer's `energy` (None: not asked)."""
    if e is None:
        return []
    from tokenwalk.render.energy import joules, money, wh

    steps: list[Step] = []
    t = _q(f"{e.time_s:,.3g} s")
    if e.power_w is not None and e.energy_j is not None and e.energy_wh is not None:
        bound = "; rated power at full load: an upper bound" if e.upper_bound else ""
        if e.host_w and e.device_w is not None:
            steps.append(
                Step(
                    "power",
                    "P = cards + the host's share",
                    f"{e.device_w:,.0f} W + {e.host_w:,.0f} W",
                    _q(f"{e.power_w:,.0f} W"),
                    f"{e.power_from}{bound}",
                )
            )
        else:
            steps.append(
                Step(
                    "power",
                    "P, the power drawn while it works",
                    "",
                    _q(f"{e.power_w:,.0f} W"),
                    f"{e.power_from}{bound}",
                )
            )
        steps.append(
            Step(
                "energy",
                "P x t",
                f"{e.power_w:,.0f} W x {t}",
                _q(joules(e.energy_j)),
                f"t: {what}",
            )
        )
        steps.append(
            Step("  in Wh", "J / 3600", f"{_q(joules(e.energy_j))} / 3600", _q(wh(e.energy_wh)))
        )
        if e.wh_per_million_tokens is not None:
            steps.append(
                Step(
                    "Wh per 1M tokens",
                    "Wh x 1e6 / tokens",
                    f"{_q(wh(e.energy_wh))} x 1e6 / {e.tokens:,}",
                    _q(wh(e.wh_per_million_tokens)),
                )
            )
    elif e.note:
        steps.append(Step("energy", "P x t", "", "unknown", e.note))
    if e.cost is not None:
        cur = e.currency
        if e.price_per_hour is not None:
            steps.append(
                Step(
                    "cost",
                    "t / 3600 x price per hour",
                    f"{t} / 3600 x {e.price_per_hour:g}",
                    _q(money(e.cost, cur)),
                )
            )
        elif e.energy_wh is not None:
            steps.append(
                Step(
                    "cost",
                    "Wh / 1000 x price per kWh",
                    f"{_q(wh(e.energy_wh))} / 1000 x {e.price_per_kwh or 0.0:g}",
                    _q(money(e.cost, cur)),
                )
            )
        if e.cost_per_million_tokens is not None:
            steps.append(
                Step(
                    "cost per 1M tokens",
                    "cost x 1e6 / tokens",
                    f"{_q(money(e.cost, cur))} x 1e6 / {e.tokens:,}",
                    _q(money(e.cost_per_million_tokens, cur)),
                )
            )
    return steps


# -- decode ------------------------------------------------------------------------------------


def explain_decode_report(r: DecodeReport, console: Console) -> None:
    """bytes per step, ceiling = BW / bytes, the time model and its efficiencies."""
    split = r.split is not None and len(r.split.parts) > 1
    steps = [
        Step(
            "bytes per step",
            "weights read (experts woken) + KV read at ctx + recurrent state (read + written)",
            f"{_b(r.weight_read_bytes)} + {_b(r.kv_read_bytes)} + {_b(r.state_traffic_bytes)}",
            _b(r.step_read_bytes),
        )
    ]
    if r.parallel > 1:
        steps.append(
            Step(
                "bytes per token",
                "bytes per step / streams",
                f"{_b(r.step_read_bytes)} / {r.parallel}",
                _b(r.read_bytes_per_token),
            )
        )
    if split:
        steps.append(
            Step(
                "ceiling",
                "1 / sum over devices of B_d / BW_d (each at its full bandwidth)",
                "",
                _r(r.ceiling_tok_s),
            )
        )
    else:
        steps.append(
            Step(
                "ceiling",
                "BW / bytes per step",
                f"{_gbs(r.bandwidth_gbs)} / {_b(r.step_read_bytes)}",
                _r(r.ceiling_tok_s),
            )
        )
    if split and r.split is not None:
        steps += _split_steps(r.split, r.ms_per_token / 1e3, "a step")
    else:
        note = ""
        if r.backend != "cpu" and r.parallel <= 8:
            note = (
                f"the weights' {_flop(r.flops_per_token)} per token run on mat-vec kernels, "
                "inside the memory time: F counts attention only, R = 0"
            )
        elif r.backend == "cpu":
            matvec = cpu_matvec_kernels(r.parallel)
            note = (
                "a CPU pays for every product"
                + (", a mat-vec product as one of 1 row" if matvec else "")
                + (
                    f"; the weights' FLOPs count {kernel_times(r.kernel_time, matvec=matvec)}"
                    if r.kernel_time != 1.0
                    else ""
                )
            )
        steps += _time_steps(
            bytes_=r.step_read_bytes,
            flops=r.compute_flops,
            row_flops=r.row_flops,
            memory_s=r.memory_s,
            compute_s=r.compute_s,
            overhead_s=r.overhead_s,
            time_s=r.ms_per_token / 1e3,
            bandwidth_gbs=r.bandwidth_gbs,
            tflops=r.tflops,
            fit=r.fit,
            what="a step",
            compute_note=note,
            unhidden=r.unhidden,
            tokens=r.parallel,
        )
    steps.append(Step("estimate", "1 / time", f"1 / {_s(r.ms_per_token / 1e3)}", _r(r.tok_s)))
    if r.ceiling_tok_s:
        steps.append(
            Step(
                "of the ceiling",
                "estimate / ceiling",
                f"{_r(r.tok_s)} / {_r(r.ceiling_tok_s)}",
                _p(r.tok_s / r.ceiling_tok_s),
            )
        )
    if r.parallel > 1:
        steps.append(
            Step(
                "all streams",
                "streams / time",
                f"{r.parallel} / {_s(r.ms_per_token / 1e3)}",
                _r(r.aggregate_tok_s),
            )
        )
    if not split:
        steps.append(_efficiency(r.fit))
    steps += _energy_steps(getattr(r, "energy", None), "one step; tokens: one per stream")
    show(console, "How decode is worked out", steps)


# -- prefill -----------------------------------------------------------------------------------


def _chunk_step(r: PrefillReport, c: PrefillChunk) -> Step:
    what = f"chunk {c.index + 1}"
    if r.split is not None and len(r.split.parts) > 1 or c.row_flops is None:
        return Step(what, f"{c.tokens:,} tokens at context {c.ctx:,}", "", _s(c.time_s), c.bound)
    rate_ = f"{_tflops(r.tflops or 0)} x {_p(r.fit.eff_compute)}"
    bound = "routed experts" if c.bound == "experts" else c.bound
    h = f"{row_count(r.fit.rows_half)}"
    if c.expert_flops and r.fit.eff_experts != 1.0:
        # dense products, then routed experts at eff_experts of the rate
        work = (
            f"{_flop(c.flops - c.expert_flops)} + {h} x {_flop(c.row_flops - c.expert_row_flops)}"
            f" + ({_flop(c.expert_flops)} + {h} x {_flop(c.expert_row_flops)}) / "
            f"{_p(r.fit.eff_experts)}"
        )
    elif c.kernel_time != 1.0:
        # a CPU: the weight products at their types' kernel time, attention as counted
        attn = c.flops * c.attention_share
        work = (
            f"{_flop(attn)} + {c.kernel_time:.2f} x {_flop(c.flops - attn)}"
            f" + {h} x {_flop(c.row_flops)}"
        )
    else:
        work = f"{_flop(c.flops)} + {h} x {_flop(c.row_flops)}"
    memory = f"{_b(c.read_bytes)} / ({_gbs(r.bandwidth_gbs)} x {_p(r.fit.eff_bw)})"
    if c.unhidden:  # a CPU's chunk: its first token's arithmetic waits on the read
        worked = (
            f"max({memory}, ({work}) / ({rate_})) + min(memory, compute / {c.tokens:,}) + "
            f"{_s(c.overhead_s)}",
            f"max({_s(c.memory_s)}, {_s(c.compute_s)}) + min({_s(c.memory_s)}, "
            f"{_s(c.compute_s)} / {c.tokens:,}) + {_s(c.overhead_s)}",
        )
    else:
        worked = (
            f"max({memory}, ({work}) / ({rate_})) + {_s(c.overhead_s)}",
            f"max({_s(c.memory_s)}, {_s(c.compute_s)}) + {_s(c.overhead_s)}",
        )
    return Step(
        what,
        f"{c.tokens:,} tokens at context {c.ctx:,}",
        worked,
        _s(c.time_s),
        f"{bound}-bound; attention {_p(c.attention_share)} of its FLOPs",
    )


def explain_prefill_report(r: PrefillReport, console: Console) -> None:
    """The chunks, each chunk's time, their sum, the prefix cache."""
    steps = []
    if r.cached_tokens:
        steps.append(
            Step(
                "computed",
                "prompt - cached prefix (the cached tokens' KV is reused, not recomputed)",
                f"{r.prompt_tokens:,} - {r.cached_tokens:,}",
                f"{r.computed_tokens:,} tokens",
            )
        )
    steps.append(
        Step(
            "chunks",
            "ceil(computed tokens / ubatch)",
            f"ceil({r.computed_tokens:,} / {r.ubatch:,})",
            f"{r.n_chunks}",
        )
    )
    first = r.chunks[0] if r.chunks else None
    cpu = first is not None and r.backend == "cpu"
    steps.append(
        Step(
            "chunk time",
            "max(B_i / (BW x eff_bw), (F_i + rows_half x R_i) / (FLOPS x eff_compute)) "
            "+ L x overhead" + (" + min(memory, compute / tokens)" if cpu else ""),
            note="B_i: weights the chunk's tokens wake + KV read; F_i: 2 x active weights x "
            "tokens + attention; R_i: sum of F / rows over its products; "
            + (
                f"a CPU's weight products count "
                f"{kernel_times(first.kernel_time, matvec=cpu_matvec_kernels(first.tokens))}"
                if first is not None and cpu
                else "the routed experts' part of F_i and R_i counts 1 / eff_experts times"
            ),
        )
    )
    shown = r.chunks if len(r.chunks) <= 3 else [r.chunks[0], r.chunks[-1]]
    steps += [_chunk_step(r, c) for c in shown]
    if r.expert_rows:
        steps.append(
            Step(
                "expert rows",
                "ubatch x experts used / experts woken",
                "",
                f"{r.expert_rows:,.0f} tokens per woken expert",
                f"a product of n rows runs at n / (n + {row_count(r.experts_fit().rows_half)}) of "
                f"the matrix rate{_routed(r.experts_fit().eff_experts)}",
            )
        )
    steps.append(
        Step(
            "attention share",
            "attention FLOPs / all FLOPs",
            f"{_flop(r.attention_flops)} / {_flop(r.flops)}",
            _p(r.attention_share),
        )
    )
    steps.append(
        Step(
            "TTFT",
            "sum of the chunk times",
            _sum([_s(c.time_s) for c in r.chunks]),
            _s(r.ttft_s),
        )
    )
    steps.append(
        Step(
            "useful rate",
            "FLOPs / TTFT",
            f"{_flop(r.flops)} / {_s(r.ttft_s)}",
            _tflops(r.flops / r.ttft_s / 1e12) if r.ttft_s else "",
            f"{_p(r.flops / r.ttft_s / 1e12 / r.tflops)} of the spec sheet's "
            f"{_tflops(r.tflops)}; FLOPs per token: {_flop(r.flops_per_token)}"
            if r.tflops and r.ttft_s
            else "",
        )
    )
    steps.append(
        Step(
            "prefill speed",
            "computed tokens / TTFT",
            f"{r.computed_tokens:,} / {_s(r.ttft_s)}",
            _r(r.tok_s),
        )
    )
    if r.split is not None and len(r.split.parts) > 1:
        steps += _split_steps(r.split, r.ttft_s, "the prefill")
    else:
        steps.append(_efficiency(r.fit))
    steps += _energy_steps(getattr(r, "energy", None), "TTFT; tokens: those computed")
    show(console, "How prefill is worked out", steps)


# -- size, kv, budget --------------------------------------------------------------------------


def _type_bits(type_name: str) -> float | None:
    """Bits per weight of a ggml type: block bytes x 8 / block size (gguf's table)."""
    from tokenwalk.gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    try:
        block, type_bytes = GGML_QUANT_SIZES[GGMLQuantizationType[type_name.upper()]]
    except KeyError:
        return None
    return type_bytes * 8 / block


def _size_by_type(r: SizeReport) -> list[Step]:
    steps = []
    for t in r.by_type[:4]:
        bits = _type_bits(t.type)
        bits = bits if bits is not None else (t.tensor_bytes * 8 / t.params if t.params else 0)
        steps.append(
            Step(
                f"  {t.type}",
                "elements x bits / 8",
                f"{_q(params(t.params))} x {bits:.4g} / 8",
                _b(t.tensor_bytes),
            )
        )
    if len(r.by_type) > 4:
        rest = sum(t.tensor_bytes for t in r.by_type[4:])
        steps.append(Step("  other types", f"{len(r.by_type) - 4} more", "", _b(rest)))
    steps.append(
        Step(
            "tensor data",
            "sum over types",
            _sum([_b(t.tensor_bytes) for t in r.by_type], limit=5),
            _b(r.tensor_bytes),
        )
    )
    return steps


def explain_size_report(r: SizeReport, console: Console) -> None:
    """params, bytes by type, bits per weight, bytes and FLOPs a token reads."""
    steps = [
        Step(
            "params",
            "sum of every tensor's elements",
            "",
            f"{_q(params(r.params))} ({r.params:,})",
            f"active per token: {params(r.active_params)} (routed experts at k/E)",
        ),
        *_size_by_type(r),
        Step(
            "file",
            "tensor data + header (and alignment)",
            f"{_b(r.tensor_bytes)} + {_b(r.file_bytes - r.tensor_bytes)}",
            _b(r.file_bytes),
        ),
        Step(
            "bits per weight",
            "file bytes x 8 / params",
            f"{_b(r.file_bytes)} x 8 / {_q(params(r.params))}",
            f"{r.bits_per_weight:.2f}",
        ),
        Step(
            "bytes per token",
            "sum over tensors of bytes x share a token reads",
            "",
            _b(r.weight_read_bytes_per_token),
            "share: 1 for dense weights, k/E for routed experts, one row of the embedding",
        ),
        Step(
            "FLOPs per token",
            "2 x active params",
            f"2 x {_q(params(r.active_params))}",
            _flop(r.flops_per_token),
        ),
        Step(
            "intensity",
            "FLOPs per token / bytes per token",
            f"{_flop(r.flops_per_token)} / {_b(r.weight_read_bytes_per_token)}",
            _q(f"{r.arithmetic_intensity:,.2f} FLOP/byte"),
        ),
    ]
    show(console, "How the size is worked out", steps)


def explain_kv_report(r: KvReport, console: Console) -> None:
    """per-token bytes per layer kind x cells, plus the recurrent state."""
    from tokenwalk.costs.kv import kv_element_bytes

    elem = kv_element_bytes(r.kv_type)
    steps = []
    streams = f" x {r.parallel} streams" if r.parallel > 1 else ""
    for k in r.kinds:
        if k.attention == "recurrent":
            per = k.cache_bytes / k.n_layers / max(1, r.parallel) if k.n_layers else 0
            steps.append(
                Step(
                    "  recurrent",
                    "layers x state elements x 4 bytes (f32), fixed",
                    f"{k.n_layers} x {_b(per)}{streams}",
                    _b(k.cache_bytes),
                )
            )
            continue
        cells = "pad256(min(ctx, window + ubatch))" if k.attention == "sliding" else "pad256(ctx)"
        width = k.kv_bytes_per_token / k.n_layers / elem if k.n_layers and elem else 0.0
        steps.append(
            Step(
                f"  {k.attention}, a token",
                "layers x (K width + V width) x bytes per element",
                f"{k.n_layers} x {width:,.6g} x {elem:g} B",
                _b(k.kv_bytes_per_token),
                f"{r.kv_type}: {elem:g} B per element; K width = KV heads x key length "
                "(MLA: the latent, no V)",
            )
        )
        steps.append(
            Step(
                f"  {k.attention}",
                f"a token x cells, cells = {cells}",
                f"{_b(k.kv_bytes_per_token)} x {k.cells:,}{streams}",
                _b(k.cache_bytes),
                f"window {k.window:,}" if k.window else "",
            )
        )
    kv_terms = [_b(k.cache_bytes) for k in r.kinds if k.attention != "recurrent"]
    steps.append(
        Step(
            "KV",
            "sum over attention kinds",
            _sum(kv_terms) if len(kv_terms) > 1 else "",
            _b(r.kv_bytes),
        )
    )
    steps.append(
        Step(
            "cache",
            "KV + recurrent state",
            f"{_b(r.kv_bytes)} + {_b(r.state_bytes)}",
            _b(r.cache_bytes),
        )
    )
    show(console, f"How the KV cache at {r.ctx:,} tokens is worked out", steps)


def explain_budget_report(r: BudgetReport, console: Console) -> None:
    """weights + KV + buffers + system against the capacity."""
    if r.devices:
        steps = []
        for d in r.devices:
            steps.append(
                Step(
                    d.device,
                    "room - (weights + KV + buffers)",
                    f"{_b(d.room_bytes)} - ({_b(d.weights_bytes)} + {_b(d.kv_bytes)} + "
                    f"{_b(d.buffers_bytes)})",
                    _b(d.free_bytes),
                    f"room = {_b(d.capacity_bytes)} - {_b(d.system_bytes)} system"
                    if d.system_bytes
                    else "",
                )
            )
        steps += _budget_end(r)
        show(console, "How the memory is worked out, device by device", steps)
        return
    room = r.capacity_bytes - r.system_bytes
    steps = [
        Step(
            "used",
            "weights + KV and recurrent state + compute buffers",
            f"{_b(r.weights_bytes)} + {_b(r.cache_bytes)} + {_b(r.buffers_bytes)}",
            _b(r.used_bytes),
            f"at {r.ctx:,} tokens of {r.kv_type} cache"
            + (f" over {r.parallel} streams" if r.parallel > 1 else ""),
        ),
        Step(
            "room",
            "capacity - system",
            f"{_b(r.capacity_bytes)} - {_b(r.system_bytes)}",
            _b(room),
        ),
    ]
    if r.gpu_limit_bytes is not None:
        steps.append(
            Step(
                "room",
                "min(room, what the GPU may hold)",
                f"min({_b(room)}, {_b(r.gpu_limit_bytes)})",
                _b(min(room, r.gpu_limit_bytes)),
                r.gpu_limit_note,
            )
        )
    steps.append(
        Step(
            "free",
            "room - used",
            f"{_b(room if r.gpu_limit_bytes is None else min(room, r.gpu_limit_bytes))} - "
            f"{_b(r.used_bytes)}",
            _b(r.free_bytes),
            f"{r.verdict}: 'with room' keeps 12.5% of the capacity free",
        )
    )
    steps += _budget_end(r)[1:]
    show(console, "How the memory is worked out", steps)


def _budget_end(r: BudgetReport) -> list[Step]:
    """The verdict over devices and the largest context that fits."""
    return [
        Step("fits", "free >= 0 on every device", "", r.verdict),
        Step(
            "largest context",
            "the largest ctx with weights + cache(ctx) + buffers <= room",
            "",
            f"{r.max_fit_ctx:,} tokens",
        ),
    ]


# -- trace, session, spec, tokens ----------------------------------------------------------------


def explain_trace_report(r: TraceReport, console: Console) -> None:
    """load + tokenize + prefill + decode."""
    steps = []
    load = next((p for p in r.phases if p.name == "load from disk"), None)
    if load is not None:
        steps.append(
            Step(
                "load",
                "file bytes / load rate",
                f"{_b(load.data_bytes)} / {_gbs(r.load_gbs)}",
                _s(load.duration_s),
                r.load_from,
            )
        )
    for up in (p for p in r.phases if p.name.startswith("upload")):
        steps.append(
            Step(
                "upload",
                "the remote cards' weights over the network",
                f"{_b(up.data_bytes)} / {_gbs(up.data_bytes / up.duration_s / 1e9)}"
                if up.data_bytes and up.duration_s
                else "",
                _s(up.duration_s),
                up.detail,
            )
        )
    tok = next((p for p in r.phases if p.name == "template + tokenize"), None)
    if tok is not None:
        from tokenwalk.costs.trace import TOKENIZE_S_PER_TOKEN

        assumed = r.prompt_tokens * TOKENIZE_S_PER_TOKEN
        if math.isclose(tok.duration_s, assumed, rel_tol=1e-9):
            steps.append(
                Step(
                    "tokenize",
                    "prompt tokens x time a token",
                    f"{r.prompt_tokens:,} x {_s(TOKENIZE_S_PER_TOKEN)}",
                    _s(tok.duration_s),
                    "a BPE tokenizer runs at about a million tokens a second",
                )
            )
        else:
            steps.append(
                Step(
                    "tokenize", "measured: template + tokenizer", "", _s(tok.duration_s), tok.detail
                )
            )
    restore = next((p for p in r.phases if p.name == "restore KV from disk"), None)
    if restore is not None:
        steps.append(
            Step(
                "restore KV",
                "cached prefix's KV + state / disk read speed",
                f"{_b(restore.data_bytes)} / {_gbs(r.disk_read_gbs)}",
                _s(restore.duration_s),
            )
        )
    chunks = [p for p in r.phases if p.name.startswith("prefill")]
    steps.append(
        Step(
            "prefill",
            "sum of the chunk times (tokenwalk prefill --explain)",
            _sum([_s(p.duration_s) for p in chunks]) if len(chunks) > 1 else "",
            _s(r.prefill_s),
            f"{r.prompt_tokens - r.cached_tokens:,} tokens in {r.n_chunks} chunks",
        )
    )
    before = [p for p in r.phases if p.start_s < r.ttft_s and p.duration_s > 0]
    names = {
        "load from disk": "load",
        "template + tokenize": "tokenize",
        "restore KV from disk": "restore KV",
    }
    names.update({p.name: "upload" for p in r.phases if p.name.startswith("upload")})
    parts = [_s(p.duration_s) for p in before if not p.name.startswith("prefill")]
    parts.append(_s(r.prefill_s))
    what = [names.get(p.name, p.name) for p in before if not p.name.startswith("prefill")]
    steps.append(
        Step(
            "TTFT",
            " + ".join([*what, "prefill"]),
            " + ".join(parts),
            _s(r.ttft_s),
        )
    )
    steps_n = max(r.output_tokens - 1, 0)
    if steps_n:
        steps.append(
            Step(
                "first step",
                "bytes a step reads, in the time model (tokenwalk decode --explain)",
                f"{_b(r.decode_step_read_bytes)} in {_s(r.decode_step_s)}",
                _r(1 / r.decode_step_s) if r.decode_step_s else "",
            )
        )
        steps.append(
            Step(
                "decode",
                "steps / mean speed (the sum of the step times, the context growing)",
                f"{steps_n:,} / {_r(r.decode_tok_s)}",
                _s(r.decode_s),
                f"{steps_n:,} steps: the first of the {r.output_tokens:,} output tokens comes "
                "with the prompt",
            )
        )
    steps.append(
        Step("total", "TTFT + decode", f"{_s(r.ttft_s)} + {_s(r.decode_s)}", _s(r.total_s))
    )
    steps += _energy_steps(
        getattr(r, "energy", None),
        "total - load (a cold load is not counted); tokens: prompt + output",
    )
    show(console, "How the request's time is worked out", steps)


def explain_session_report(r: SessionReport, console: Console) -> None:
    """each call's time, and the session's busy and wall time."""
    steps = [
        Step(
            "a call",
            "load (cold) + tokenize + prefill of the new tokens + decode",
            note="new = prompt - cached: the prefix the previous call left in the cache",
        )
    ]
    for c in r.calls[:3]:
        load = f"{_s(c.load_s)} + " if c.cold else ""
        steps.append(
            Step(
                f"  call {c.index + 1}",
                f"{c.computed_tokens:,} new of {c.prompt_tokens:,}, {c.output_tokens:,} out",
                f"{load}{_s(c.tokenize_s)} + {_s(c.prefill_s)} + {_s(c.decode_s)}",
                _s(c.total_s),
            )
        )
    steps.append(
        Step(
            "busy",
            "sum of the calls",
            _sum([_s(c.total_s) for c in r.calls]),
            _s(r.busy_s),
        )
    )
    gaps = sum(c.gap_s for c in r.calls)
    steps.append(
        Step(
            "wall",
            "busy + idle gaps between calls",
            f"{_s(r.busy_s)} + {_s(gaps)}",
            _s(r.wall_s),
        )
    )
    if r.n_cold_loads:
        steps.append(
            Step(
                "cold loads",
                "the first call with --cold, and any after a gap longer than keep_alive",
                "",
                str(r.n_cold_loads),
                f"each at {r.load_gbs:.3g} GB/s, {r.load_from}",
            )
        )
    steps += _energy_steps(
        getattr(r, "energy", None),
        "busy - cold loads (idle gaps are not counted); tokens: prompts + outputs",
    )
    show(console, "How the session's time is worked out", steps)


def explain_spec_report(r: SpecReport, console: Console) -> None:
    """E[tokens per round], round time, speedup."""
    a, g = r.alpha, r.gamma
    steps = [
        Step(
            "tokens per round",
            "E = (1 - alpha^(gamma+1)) / (1 - alpha)",
            f"(1 - {a:g}^{g + 1}) / (1 - {a:g})",
            f"{r.tokens_per_round:.2f}",
        ),
        Step(
            "round",
            "gamma x t_draft + t_verify(gamma + 1 tokens)",
            f"{g} x {_s(r.draft_step_s)} + {_s(r.verify_s)}",
            _s(r.round_s),
        ),
        Step(
            "with drafts",
            "E / round",
            f"{r.tokens_per_round:.2f} / {_s(r.round_s)}",
            _r(r.tok_s),
        ),
        Step(
            "without",
            "1 / t_target (one decode step)",
            f"1 / {_s(r.target_step_s)}",
            _r(r.baseline_tok_s),
        ),
        Step(
            "speedup",
            "with drafts / without",
            f"{_r(r.tok_s)} / {_r(r.baseline_tok_s)}",
            f"{r.speedup:.2f}x",
            "pays" if r.pays else "does not pay",
        ),
        Step(
            "verify / step",
            "t_verify / t_target",
            f"{_s(r.verify_s)} / {_s(r.target_step_s)}",
            f"{r.verify_over_step:.2f}",
        ),
    ]
    if r.experts_total:
        k, e = r.experts_per_token, r.experts_total
        steps.append(
            Step(
                "experts woken",
                "E (1 - (1 - k/E)^(gamma+1)) per layer in the verify pass",
                f"{e} x (1 - (1 - {k}/{e})^{g + 1})",
                f"{r.experts_woken_per_layer:.1f} of {e}",
                f"one token wakes {k}: the verify pass reads more weights than a step",
            )
        )
    steps.append(
        Step(
            "break-even alpha",
            "the alpha at which speedup = 1",
            "",
            f"{r.break_even_alpha:.2f}" if r.break_even_alpha is not None else "none below 1",
        )
    )
    if r.observed_speedup is not None:
        steps.append(
            Step(
                "observed alpha",
                f"the alpha at which speedup = {r.observed_speedup:g}x (observed)",
                "",
                f"{r.observed_alpha:.2f}" if r.observed_alpha is not None else "out of reach",
            )
        )
    steps += _energy_steps(
        getattr(r, "energy", None), "1 / speed with drafts; tokens: one token out"
    )
    show(console, "How the speedup is worked out", steps)


def explain_token_count(r: TokenCount, console: Console) -> None:
    """where the count comes from."""
    src = {
        "gguf": "the model file's own vocabulary and merges",
        "tokenizer.json": "the repository's tokenizer.json",
        "estimate": "an estimate from characters (no tokenizer)",
    }.get(r.counted_with, r.counted_with)
    steps = [
        Step("counted with", src, "", r.counted_with, r.tokenizer),
        Step(
            "tokens",
            "template tokens + text tokens",
            f"{r.template_tokens:,} + {r.text_tokens:,}",
            f"{r.prompt_tokens:,}",
            "template: roles, turn markers, BOS (chat template of the model)"
            if r.input_kind == "chat"
            else "BOS/EOS the tokenizer adds",
        ),
        Step(
            "tokens a word",
            "tokens / words",
            f"{r.prompt_tokens:,} / {r.n_words:,}",
            f"{r.tokens_per_word:.2f}",
        ),
    ]
    show(console, "How the tokens are counted", steps)


# -- commands that print their own views ----------------------------------------------------------


def explain_catalogue(example: SizeReport | None, console: Console) -> None:
    """How a catalogue size is computed, on one model of the list."""
    if example is None:
        return
    steps = [
        Step(
            "size",
            "sum over tensors of elements x bits of the preset's type / 8, + header",
            note=f"{example.model} at {example.quant}, its tensors built from its config",
        ),
        *_size_by_type(example),
        Step(
            "file",
            "tensor data + header",
            f"{_b(example.tensor_bytes)} + {_b(example.file_bytes - example.tensor_bytes)}",
            _b(example.file_bytes),
        ),
        Step(
            "bits per weight",
            "file bytes x 8 / params",
            f"{_b(example.file_bytes)} x 8 / {_q(params(example.params))}",
            f"{example.bits_per_weight:.2f}",
        ),
    ]
    show(console, f"How a catalogue size is worked out ({example.model})", steps)


def explain_machines(rows: Sequence[Any], console: Console) -> None:
    """Where each rate comes from, and the efficiency terms, on the first machine listed."""
    if not rows:
        return
    m = rows[0]
    what = "the CPU cores' FP32 SIMD rate" if m.backend == "cpu" else "dense FP16"
    steps = [
        Step(
            "BW",
            "the spec sheet's memory bandwidth",
            "",
            _gbs(m.bandwidth_gbs) if m.bandwidth_gbs else "?",
            f"{m.slug}: {m.source}",
        ),
        Step(
            "FLOPS",
            f"{what} for the {m.backend} backend",
            "",
            _tflops(m.tflops) if m.tflops else "?",
        ),
        Step(
            "time of a pass",
            "max(B / (BW x eff_bw), (F + rows_half x R) / (FLOPS x eff_compute)) + L x overhead",
            note="the routed experts' part of F and R counts 1 / eff_experts times",
        ),
        Step(
            "efficiencies",
            "global x vendor x backend x kind x kind/backend x machine factors",
            f"eff_bw {_p(m.eff_bw)}, eff_compute {_p(m.eff_compute)}, rows_half "
            f"{row_count(m.rows_half)}, eff_experts {_p(m.eff_experts)}, "
            f"{_s(m.overhead_per_layer_s)} per layer",
            note=f"from {m.fit_source}",
        ),
    ]
    if m.bandwidth_gbs:
        steps.append(
            Step(
                "usable BW",
                "BW x eff_bw",
                f"{_gbs(m.bandwidth_gbs)} x {_p(m.eff_bw)}",
                _gbs(m.bandwidth_gbs * m.eff_bw),
            )
        )
    if m.tflops:
        steps.append(
            Step(
                "usable FLOPS",
                "FLOPS x eff_compute",
                f"{_tflops(m.tflops)} x {_p(m.eff_compute)}",
                _tflops(m.tflops * m.eff_compute),
                f"a large product; one of n rows runs at n / (n + {row_count(m.rows_half)}) of it"
                f"{_routed(m.eff_experts)}",
            )
        )
    show(console, f"Where a machine's rates come from ({m.slug})", steps)


def explain_probe(r: ProbeReport, console: Console) -> None:
    """bandwidth = bytes streamed / time; GEMM rate = 2 n^3 / time, with the measured numbers."""
    m = r.measured
    if m is None:
        show(console, "How this machine is measured", [], ["nothing measured (--no-measure)"])
        return
    steps = []
    for label, s in (("1 thread", m.read_gbs_1t), (f"{m.n_threads} threads", m.read_gbs_all)):
        t = m.buffer_bytes / (s.median * 1e9) if s.median else 0.0
        steps.append(
            Step(
                f"read, {label}",
                "bytes streamed / time (median of the repeats)",
                f"{_b(m.buffer_bytes)} / {_s(t)}",
                _q(f"{s.median:,.1f} GB/s"),
            )
        )
    n = m.gemm_size
    flops = 2.0 * n**3
    for label, s in (("1 thread", m.gemm_gflops_1t), (f"{m.n_threads} threads", m.gemm_gflops_all)):
        t = flops / (s.median * 1e9) if s.median else 0.0
        steps.append(
            Step(
                f"GEMM, {label}",
                "2 x M x N x K / time, M = N = K = n (f32)",
                f"2 x {n:,}^3 / {_s(t)} = {_flop(flops)} / {_s(t)}",
                _q(f"{s.median:,.1f} GFLOP/s"),
            )
        )
    show(
        console,
        "How this machine is measured",
        steps,
        [f"{m.n_repeats} timed repeats each; the median is shown. {m.gemm_note}."],
    )


def explain_defaults_fit(r: DefaultsFit, console: Console) -> None:
    """The fit of the shipped defaults: what is minimised, the residuals."""
    g = r.global_fit
    steps = [
        Step(
            "parameters",
            "x(machine) = x_global + x_vendor + x_backend + x_kind + x_kind/backend + "
            "x_machine (log units)",
        ),
        Step(
            "minimise",
            "sum over rows of huber(ln(predicted / measured) / 0.15) + sum over offsets of "
            "(offset / prior width)^2",
            note="Huber: linear beyond about 16% error; the prior pulls each offset towards zero",
        ),
        Step(
            "global",
            "eff_bw, eff_compute, overhead per layer, rows_half, eff_experts",
            f"{_p(float(g['eff_bw']))}, {_p(float(g['eff_compute']))}, "
            f"{_s(float(g['overhead_per_layer_s']))}, {rows(float(g['rows_half']))}, "
            f"{_p(float(g.get('eff_experts', 1.0)))}",
            note=f"fitted on {r.rows_used:,} published runs ({r.rows_excluded:,} left out)",
        ),
    ]
    for phase, e in r.errors.get("in_sample", {}).items():
        if e.median_pct is None:
            continue
        steps.append(
            Step(
                f"residual, {phase}",
                "|predicted / measured - 1|, median / 90th percentile",
                "",
                f"{e.median_pct:.1f}% / {e.p90_pct:.1f}% over {e.n_rows:,} rows",
            )
        )
    show(console, "How the timing model is fitted", steps)


def explain_machine_fit(r: MachineFit, console: Console) -> None:
    """One machine's fit: what is minimised, the residuals before and after."""
    steps = [
        Step(
            "minimise",
            "sum over runs of huber(ln(predicted / measured) / 0.15) + (offset / prior width)^2",
            note=f"one offset for {r.machine}, pulled towards its current parameters",
        )
    ]
    for p in r.predictions[:4]:
        after, measured = float(p["after_tok_s"]), float(p["measured_tok_s"])
        steps.append(
            Step(
                f"  {p['test']}",
                "predicted / measured - 1",
                f"{_r(after)} / {_r(measured)} - 1",
                f"{(after / measured - 1) * 100:+.1f}%" if measured else "",
            )
        )
    for label, e in (("before", r.error_before), ("after", r.error_after)):
        if e.median_pct is None:
            continue
        steps.append(
            Step(
                f"error {label}",
                "median / 90th percentile of |predicted / measured - 1|",
                "",
                f"{e.median_pct:.1f}% / {e.p90_pct:.1f}% over {e.n_rows} runs",
            )
        )
    show(console, f"How {r.machine} is fitted", steps)


def explain_sweep_report(r: Any, console: Console) -> None:
    """A sweep's rows are single runs: the first and the last run explained, each as its own
    command's --explain explains it."""
    from tokenwalk.render import _snake

    runs = list(r.runs)
    if not runs:
        return
    picked = runs if len(runs) <= 2 else [runs[0], runs[-1]]
    for i, run in enumerate(picked):
        fn = globals().get(f"explain_{_snake(type(run).__name__)}")
        if fn is None:
            continue
        row = r.rows[runs.index(run)] if len(r.rows) == len(runs) else None
        where = (
            ", ".join(
                f"{k} {v:,}" if isinstance(v, int) and not isinstance(v, bool) else f"{k} {v}"
                for k, v in row.inputs.items()
            )
            if row is not None
            else ""
        )
        label = "first row" if i == 0 else "last row"
        console.print(Text(f"\n{label}: {where}" if where else f"\n{label}", style="italic"))
        fn(run, console)


def explain_compare_report(r: Any, console: Console) -> None:
    """Each row of `compare` is the answer of budget, decode and trace for its pair: their
    formulas, each row's numbers, and the commands whose --explain shows every term."""
    steps = [
        Step(
            "a row",
            "budget + decode + trace of the model on the machine, at ctx = prompt + output",
            f"{r.prompt_tokens:,} + {r.output_tokens:,}"
            if r.ctx == r.prompt_tokens + r.output_tokens
            else "",
            f"{r.ctx:,} tokens",
        ),
        Step("free", "room - (weights + KV and state + buffers) at ctx; fits = free >= 0"),
        Step("ceiling", "BW / bytes a decode step reads at ctx"),
        Step("decode", "1 / (max(memory, compute) + overhead) at ctx"),
        Step("total", "TTFT (tokenize + prefill) + decode of the output"),
    ]
    one_model = len({row.model for row in r.rows}) == 1
    one_machine = len({row.machine for row in r.rows}) == 1
    for i, row in enumerate(r.rows):
        name = row.machine if one_model else row.model if one_machine else f"row {i + 1}"
        free = "" if row.free_bytes is None else f"free {human_bytes(row.free_bytes)}, "
        steps.append(
            Step(
                f"  {visible(name)}",
                "TTFT + decode",
                f"{_s(row.ttft_s)} + {_s(row.total_s - row.ttft_s)}",
                _s(row.total_s),
                f"{row.model} on {row.machine}: {free}ceiling {rate(row.ceiling_tok_s)}, "
                f"estimate {rate(row.tok_s)}; every term: tokenwalk decode {row.model} "
                f"-m {row.machine} --ctx {r.ctx} --explain (and budget, trace)",
            )
        )
    show(console, "How the comparison is worked out", steps)


def explain_models_fit_report(r: Any, console: Console) -> None:
    """`models --fits`: each model is budget and decode on the machine."""
    room = r.capacity_bytes - r.system_bytes
    steps = [
        Step(
            "room",
            "capacity - system",
            f"{_b(r.capacity_bytes)} - {_b(r.system_bytes)}",
            _b(room),
        ),
        Step(
            "fits",
            "weights + KV and state at ctx + buffers <= room (tokenwalk budget --explain)",
        ),
        Step(
            "largest context",
            "the largest ctx whose cache still fits next to the weights and buffers",
        ),
        Step("speed", "decode at ctx: 1 / (max(memory, compute) + overhead)"),
    ]
    for m in r.models[:3]:
        steps.append(
            Step(
                f"  {visible(m.slug)}",
                f"decode at {m.ctx:,} tokens",
                "",
                _r(m.tok_s),
                f"{human_bytes(m.weights_bytes)} weights, free {human_bytes(m.free_bytes)}, "
                f"up to {m.max_fit_ctx:,} tokens: {m.verdict}",
            )
        )
    show(console, f"How the models are fitted to {r.machine}", steps)
