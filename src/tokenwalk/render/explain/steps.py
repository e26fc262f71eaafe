"""What every explanation is made of: steps, printed with the numbers as the views print them.

Every explanation is a list of steps, each printed as

    name = formula
         = the numbers plugged in = result unit

with the numbers read from the report the answer came from, formatted as the view formats
them, so that the last number of a step is the number the answer printed. Lines are wrapped
to the console's width, before an operator where one is near, never inside a quantity. The
steps several commands share (the energy and price of a request) are here too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.text import Text

from tokenwalk.render.fmt import NBSP, human_bytes, pct, rate, seconds
from tokenwalk.render.safe import visible

if TYPE_CHECKING:
    from rich.console import Console


__all__ = [
    "Step",
    "show",
    "unbroken",
    "nbytes",
    "secs",
    "tps",
    "pct_of",
    "gbs",
    "tflops_of",
    "flop",
    "summed",
    "routed_note",
    "energy_steps",
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


def unbroken(text: str) -> str:
    return text.replace(" ", NBSP)


def nbytes(n: float) -> str:
    """Bytes: '2.11 GB'."""
    return unbroken(human_bytes(n))


def secs(s: float) -> str:
    """Seconds in the largest sensible unit, as the views print them."""
    return unbroken(seconds(s))


def tps(tok_s: float) -> str:
    return unbroken(rate(tok_s))


def pct_of(x: float) -> str:
    return pct(x)


def gbs(x: float) -> str:
    return unbroken(f"{x:,.0f} GB/s" if x >= 10 else f"{x:,.3g} GB/s")


def tflops_of(x: float) -> str:
    return unbroken(f"{x:,.1f} TFLOPS" if x >= 1 else f"{x:,.3g} TFLOPS")


def flop(x: float) -> str:
    """FLOP counts: '6.0 GFLOP', '3.1 TFLOP'."""
    for unit, scale in (("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6)):
        if abs(x) >= scale:
            v = x / scale
            return unbroken(f"{v:,.2f} {unit}" if v < 10 else f"{v:,.1f} {unit}")
    return unbroken(f"{x:,.0f} FLOP")


def summed(terms: Sequence[str], limit: int = 4) -> str:
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
    out.append(unbroken(visible(title)).replace(NBSP, " "), style="bold underline")
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


def routed_note(eff_experts: float) -> str:
    """What a routed expert's product runs at, after the row term's words; nothing where the
    experts run at the dense rate."""
    return f", a routed expert's at {pct_of(eff_experts)} of that" if eff_experts != 1.0 else ""


# -- energy and price (costs.energy: power x time) --------------------------------------------


def energy_steps(e: Any, what: str) -> list[Step]:
    """energy = P x t, in Wh, per million tokens; cost = Wh / 1000 x price per kWh, or
    t / 3600 x price per hour. `e` is the answer's `energy` (None: not asked)."""
    if e is None:
        return []
    from tokenwalk.render.energy import joules, money, wh

    steps: list[Step] = []
    t = unbroken(f"{e.time_s:,.3g} s")
    if e.power_w is not None and e.energy_j is not None and e.energy_wh is not None:
        bound = "; rated power at full load: an upper bound" if e.upper_bound else ""
        if e.host_w and e.device_w is not None:
            steps.append(
                Step(
                    "power",
                    "P = cards + the host's share",
                    f"{e.device_w:,.0f} W + {e.host_w:,.0f} W",
                    unbroken(f"{e.power_w:,.0f} W"),
                    f"{e.power_from}{bound}",
                )
            )
        else:
            steps.append(
                Step(
                    "power",
                    "P, the power drawn while it works",
                    "",
                    unbroken(f"{e.power_w:,.0f} W"),
                    f"{e.power_from}{bound}",
                )
            )
        steps.append(
            Step(
                "energy",
                "P x t",
                f"{e.power_w:,.0f} W x {t}",
                unbroken(joules(e.energy_j)),
                f"t: {what}",
            )
        )
        steps.append(
            Step(
                "  in Wh",
                "J / 3600",
                f"{unbroken(joules(e.energy_j))} / 3600",
                unbroken(wh(e.energy_wh)),
            )
        )
        if e.wh_per_million_tokens is not None:
            steps.append(
                Step(
                    "Wh per 1M tokens",
                    "Wh x 1e6 / tokens",
                    f"{unbroken(wh(e.energy_wh))} x 1e6 / {e.tokens:,}",
                    unbroken(wh(e.wh_per_million_tokens)),
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
                    unbroken(money(e.cost, cur)),
                )
            )
        elif e.energy_wh is not None:
            steps.append(
                Step(
                    "cost",
                    "Wh / 1000 x price per kWh",
                    f"{unbroken(wh(e.energy_wh))} / 1000 x {e.price_per_kwh or 0.0:g}",
                    unbroken(money(e.cost, cur)),
                )
            )
        if e.cost_per_million_tokens is not None:
            steps.append(
                Step(
                    "cost per 1M tokens",
                    "cost x 1e6 / tokens",
                    f"{unbroken(money(e.cost, cur))} x 1e6 / {e.tokens:,}",
                    unbroken(money(e.cost_per_million_tokens, cur)),
                )
            )
    return steps
