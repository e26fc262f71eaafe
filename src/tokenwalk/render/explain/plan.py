"""--explain of budget, trace and spec: memory against capacity, a request's timeline."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from tokenwalk.numbers import counted
from tokenwalk.render.explain.steps import Step, energy_steps, gbs, nbytes, secs, show, summed, tps

if TYPE_CHECKING:
    from rich.console import Console

    from tokenwalk.costs.budget import BudgetReport
    from tokenwalk.costs.spec import SpecReport
    from tokenwalk.costs.trace import TraceReport


__all__ = [
    "explain_budget_report",
    "explain_trace_report",
    "explain_spec_report",
]


def explain_budget_report(r: BudgetReport, console: Console) -> None:
    """weights + KV + buffers + system against the capacity."""
    if r.devices:
        steps = []
        for d in r.devices:
            steps.append(
                Step(
                    d.device,
                    "room - (weights + KV + buffers)",
                    f"{nbytes(d.room_bytes)} - ({nbytes(d.weights_bytes)} + {nbytes(d.kv_bytes)} + "
                    f"{nbytes(d.buffers_bytes)})",
                    nbytes(d.free_bytes),
                    f"room = {nbytes(d.capacity_bytes)} - {nbytes(d.system_bytes)} system"
                    + (
                        f" - {nbytes(d.capacity_bytes - d.system_bytes - d.room_bytes)} the GPU's"
                        if d.shared
                        else ""
                    )
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
            f"{nbytes(r.weights_bytes)} + {nbytes(r.cache_bytes)} + {nbytes(r.buffers_bytes)}",
            nbytes(r.used_bytes),
            f"at {r.ctx:,} tokens of {r.kv_type} cache"
            + (f" over {r.parallel} streams" if r.parallel > 1 else ""),
        ),
        Step(
            "room",
            "capacity - system",
            f"{nbytes(r.capacity_bytes)} - {nbytes(r.system_bytes)}",
            nbytes(room),
        ),
    ]
    if r.gpu_limit_bytes is not None:
        steps.append(
            Step(
                "room",
                "min(room, what the GPU may hold)",
                f"min({nbytes(room)}, {nbytes(r.gpu_limit_bytes)})",
                nbytes(min(room, r.gpu_limit_bytes)),
                r.gpu_limit_note,
            )
        )
    steps.append(
        Step(
            "free",
            "room - used",
            f"{nbytes(room if r.gpu_limit_bytes is None else min(room, r.gpu_limit_bytes))} - "
            f"{nbytes(r.used_bytes)}",
            nbytes(r.free_bytes),
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
                f"{nbytes(load.data_bytes)} / {gbs(r.load_gbs)}",
                secs(load.duration_s),
                r.load_from,
            )
        )
    for up in (p for p in r.phases if p.name.startswith("upload")):
        steps.append(
            Step(
                "upload",
                "the remote cards' weights over the network",
                f"{nbytes(up.data_bytes)} / {gbs(up.data_bytes / up.duration_s / 1e9)}"
                if up.data_bytes and up.duration_s
                else "",
                secs(up.duration_s),
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
                    f"{r.prompt_tokens:,} x {secs(TOKENIZE_S_PER_TOKEN)}",
                    secs(tok.duration_s),
                    "a BPE tokenizer runs at about a million tokens a second",
                )
            )
        else:
            steps.append(
                Step(
                    "tokenize",
                    "measured: template + tokenizer",
                    "",
                    secs(tok.duration_s),
                    tok.detail,
                )
            )
    restore = next((p for p in r.phases if p.name == "restore KV from disk"), None)
    if restore is not None:
        steps.append(
            Step(
                "restore KV",
                "cached prefix's KV + state / load rate",
                f"{nbytes(restore.data_bytes)} / {gbs(r.load_gbs)}",
                secs(restore.duration_s),
                r.load_from,
            )
        )
    chunks = [p for p in r.phases if p.name.startswith("prefill")]
    steps.append(
        Step(
            "prefill",
            "sum of the chunk times (tokenwalk prefill --explain)",
            summed([secs(p.duration_s) for p in chunks]) if len(chunks) > 1 else "",
            secs(r.prefill_s),
            f"{r.prompt_tokens - r.cached_tokens:,} tokens in {counted(r.n_chunks, 'chunk')}",
        )
    )
    before = [p for p in r.phases if p.start_s < r.ttft_s and p.duration_s > 0]
    names = {
        "load from disk": "load",
        "template + tokenize": "tokenize",
        "restore KV from disk": "restore KV",
    }
    names.update({p.name: "upload" for p in r.phases if p.name.startswith("upload")})
    parts = [secs(p.duration_s) for p in before if not p.name.startswith("prefill")]
    parts.append(secs(r.prefill_s))
    what = [names.get(p.name, p.name) for p in before if not p.name.startswith("prefill")]
    steps.append(
        Step(
            "TTFT",
            " + ".join([*what, "prefill"]),
            " + ".join(parts),
            secs(r.ttft_s),
        )
    )
    steps_n = max(r.output_tokens - 1, 0)
    if steps_n:
        steps.append(
            Step(
                "first step",
                "bytes a step reads, in the time model (tokenwalk decode --explain)",
                f"{nbytes(r.decode_step_read_bytes)} in {secs(r.decode_step_s)}",
                tps(1 / r.decode_step_s) if r.decode_step_s else "",
            )
        )
        steps.append(
            Step(
                "decode",
                "steps / mean speed (the sum of the step times, the context growing)",
                f"{steps_n:,} / {tps(r.decode_tok_s)}",
                secs(r.decode_s),
                f"{steps_n:,} steps: the first of the {r.output_tokens:,} output tokens comes "
                "with the prompt",
            )
        )
    steps.append(
        Step("total", "TTFT + decode", f"{secs(r.ttft_s)} + {secs(r.decode_s)}", secs(r.total_s))
    )
    steps += energy_steps(
        getattr(r, "energy", None),
        "total - load (a cold load is not counted); tokens: prompt + output",
    )
    show(console, "How the request's time is worked out", steps)


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
            f"{g} x {secs(r.draft_step_s)} + {secs(r.verify_s)}",
            secs(r.round_s),
        ),
        Step(
            "with drafts",
            "E / round",
            f"{r.tokens_per_round:.2f} / {secs(r.round_s)}",
            tps(r.tok_s),
        ),
        Step(
            "without",
            "1 / t_target (one decode step)",
            f"1 / {secs(r.target_step_s)}",
            tps(r.baseline_tok_s),
        ),
        Step(
            "speedup",
            "with drafts / without",
            f"{tps(r.tok_s)} / {tps(r.baseline_tok_s)}",
            f"{r.speedup:.2f}x",
            "pays" if r.pays else "does not pay",
        ),
        Step(
            "verify / step",
            "t_verify / t_target",
            f"{secs(r.verify_s)} / {secs(r.target_step_s)}",
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
    steps += energy_steps(
        getattr(r, "energy", None), "1 / speed with drafts; tokens: one token out"
    )
    show(console, "How the speedup is worked out", steps)
