"""--explain of tokens and of a chat session (trace --chat)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tokenwalk.render.explain.steps import Step, energy_steps, secs, show, summed

if TYPE_CHECKING:
    from rich.console import Console

    from tokenwalk.costs.trace import SessionReport
    from tokenwalk.text.prompt import TokenCount


__all__ = [
    "explain_token_count",
    "explain_session_report",
]


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
        load = f"{secs(c.load_s)} + " if c.cold else ""
        steps.append(
            Step(
                f"  call {c.index + 1}",
                f"{c.computed_tokens:,} new of {c.prompt_tokens:,}, {c.output_tokens:,} out",
                f"{load}{secs(c.tokenize_s)} + {secs(c.prefill_s)} + {secs(c.decode_s)}",
                secs(c.total_s),
            )
        )
    steps.append(
        Step(
            "busy",
            "sum of the calls",
            summed([secs(c.total_s) for c in r.calls]),
            secs(r.busy_s),
        )
    )
    gaps = sum(c.gap_s for c in r.calls)
    steps.append(
        Step(
            "wall",
            "busy + idle gaps between calls",
            f"{secs(r.busy_s)} + {secs(gaps)}",
            secs(r.wall_s),
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
    steps += energy_steps(
        getattr(r, "energy", None),
        "busy - cold loads (idle gaps are not counted); tokens: prompts + outputs",
    )
    show(console, "How the session's time is worked out", steps)


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
