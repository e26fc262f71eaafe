"""--explain of compare, models --fits and sweeps."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from rich.text import Text

from tokenwalk.render.explain.steps import Step, nbytes, secs, show, tps
from tokenwalk.render.fmt import free as free_text
from tokenwalk.render.fmt import human_bytes, rate
from tokenwalk.render.safe import visible

if TYPE_CHECKING:
    from rich.console import Console


__all__ = [
    "explain_sweep_report",
    "explain_compare_report",
    "explain_models_fit_report",
]


def explain_sweep_report(r: Any, console: Console) -> None:
    """A sweep's rows are single runs: the first and the last run explained, each as its own
    command's --explain explains it."""
    from tokenwalk.render import snake_case

    runs = list(r.runs)
    if not runs:
        return
    picked = runs if len(runs) <= 2 else [runs[0], runs[-1]]
    for i, run in enumerate(picked):
        fn = getattr(import_module(__package__), f"explain_{snake_case(type(run).__name__)}", None)
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
        free = "" if row.free_bytes is None else f"free {free_text(row.free_bytes)}, "
        steps.append(
            Step(
                f"  {visible(name)}",
                "TTFT + decode",
                f"{secs(row.ttft_s)} + {secs(row.total_s - row.ttft_s)}",
                secs(row.total_s),
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
            f"{nbytes(r.capacity_bytes)} - {nbytes(r.system_bytes)}",
            nbytes(room),
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
                tps(m.tok_s),
                f"{human_bytes(m.weights_bytes)} weights, free {free_text(m.free_bytes)}, "
                f"up to {m.max_fit_ctx:,} tokens: {m.verdict}",
            )
        )
    show(console, f"How the models are fitted to {r.machine}", steps)
