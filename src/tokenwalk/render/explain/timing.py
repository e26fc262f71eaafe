"""--explain of decode and prefill: the pass model's arithmetic, step by step."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tokenwalk.render.explain.steps import (
    Step,
    energy_steps,
    flop,
    gbs,
    nbytes,
    pct_of,
    routed_note,
    secs,
    show,
    summed,
    tflops_of,
    tps,
)
from tokenwalk.render.fmt import kernel_times, row_count, rows
from tokenwalk.timing.passes import cpu_matvec_kernels

if TYPE_CHECKING:
    from rich.console import Console

    from tokenwalk.timing.efficiency import Efficiency
    from tokenwalk.timing.passes import DecodeReport, PrefillChunk, PrefillReport, SplitInfo


__all__ = [
    "explain_decode_report",
    "explain_prefill_report",
]


# -- the timing model, shared by decode, prefill, trace ---------------------------------------


def _efficiency(fit: Efficiency) -> Step:
    return Step(
        "efficiencies",
        "eff_bw, eff_compute, rows_half, eff_experts, overhead per layer",
        f"{pct_of(fit.eff_bw)}, {pct_of(fit.eff_compute)}, {rows(fit.rows_half)}, "
        f"{pct_of(fit.eff_experts)}, {secs(fit.overhead_per_layer_s)} per layer",
        note=f"fitted on published runs; from {fit.source} (see tokenwalk calibrate --explain)",
    )


def _layers(overhead_s: float, fit: Efficiency) -> str:
    """L of the overhead term, overhead_s = L x overhead per layer (`PassWork.overhead_layers`,
    a float when a scan layer counts a fraction more)."""
    per = fit.overhead_per_layer_s
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
    (`unhidden`: the share of the compute that waits on the read, `passes.unhidden_share`: 1
    in a CPU's decoding step, where memory and compute add, 1 / tokens in a larger CPU pass)."""
    steps = [
        Step(
            "memory",
            "B / (BW x eff_bw)",
            f"{nbytes(bytes_)} / ({gbs(bandwidth_gbs)} x {pct_of(fit.eff_bw)})",
            secs(memory_s),
            f"B: the bytes {what} reads",
        )
    ]
    if tflops and flops is not None and row_flops is not None:
        steps.append(
            Step(
                "compute",
                "(F + rows_half x R) / (FLOPS x eff_compute)",
                f"({flop(flops)} + {row_count(fit.rows_half)} x {flop(row_flops)}) / "
                f"({tflops_of(tflops)} x {pct_of(fit.eff_compute)})",
                secs(compute_s),
                note="F: the FLOPs counted; R: sum over products of F_i / rows_i"
                + (f"; {compute_note}" if compute_note else ""),
            )
        )
    elif tflops:
        steps.append(
            Step("compute", "(F + rows_half x R) / (FLOPS x eff_compute)", "", secs(compute_s))
        )
    from tokenwalk.timing.passes import LLAMA_LAYER_NODES

    layers = _layers(overhead_s, fit)
    steps.append(
        Step(
            "overhead",
            "L x overhead per layer (L: llama.cpp's graph nodes / "
            f"{LLAMA_LAYER_NODES:.1f}, a llama layer's)",
            f"{layers} x {secs(fit.overhead_per_layer_s)}",
            secs(overhead_s),
        )
    )
    if unhidden == 1.0:
        steps.append(
            Step(
                "time",
                "memory + compute + overhead",
                f"{secs(memory_s)} + {secs(compute_s)} + {secs(overhead_s)}",
                secs(time_s),
                "a CPU core reads a weight and multiplies it in turn: the two add",
            )
        )
        return steps
    if unhidden:
        steps.append(
            Step(
                "time",
                "max(memory, compute) + min(memory, compute / tokens) + overhead",
                f"max({secs(memory_s)}, {secs(compute_s)}) + min({secs(memory_s)}, "
                f"{secs(compute_s)} / {tokens}) + {secs(overhead_s)}",
                secs(time_s),
                "a CPU core reads a weight, then multiplies it for each token: the first "
                "token's arithmetic waits on the read",
            )
        )
        return steps
    steps.append(
        Step(
            "time",
            "max(memory, compute) + overhead",
            f"max({secs(memory_s)}, {secs(compute_s)}) + {secs(overhead_s)}",
            secs(time_s),
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
                    secs(p.time_s),
                    p.how,
                )
            )
            continue
        steps.append(
            Step(
                f"  {p.device}",
                f"{nbytes(p.weight_bytes)} weights + {nbytes(p.kv_read_bytes)} KV, at its own "
                "bandwidth, rate and efficiencies",
                "",
                secs(p.time_s),
                p.how or (f"{p.bound}-bound" if p.bound else ""),
            )
        )
    steps.append(
        Step(
            "time",
            f"sum over devices of their part of {what} (they run one after another)",
            summed([secs(p.time_s) for p in sp.parts], limit=6),
            secs(total_s),
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
            f"{nbytes(r.weight_read_bytes)} + {nbytes(r.kv_read_bytes)} + "
            f"{nbytes(r.state_traffic_bytes)}",
            nbytes(r.step_read_bytes),
        )
    ]
    if r.parallel > 1:
        steps.append(
            Step(
                "bytes per token",
                "bytes per step / streams",
                f"{nbytes(r.step_read_bytes)} / {r.parallel}",
                nbytes(r.read_bytes_per_token),
            )
        )
    if split:
        steps.append(
            Step(
                "ceiling",
                "1 / sum over devices of B_d / BW_d (each at its full bandwidth)",
                "",
                tps(r.ceiling_tok_s),
            )
        )
    else:
        steps.append(
            Step(
                "ceiling",
                "BW / bytes per step",
                f"{gbs(r.bandwidth_gbs)} / {nbytes(r.step_read_bytes)}",
                tps(r.ceiling_tok_s),
            )
        )
    if split and r.split is not None:
        steps += _split_steps(r.split, r.ms_per_token / 1e3, "a step")
    else:
        note = ""
        if r.backend != "cpu" and r.parallel <= 8:
            note = (
                f"the weights' {flop(r.flops_per_token)} per token run on mat-vec kernels, "
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
    steps.append(Step("estimate", "1 / time", f"1 / {secs(r.ms_per_token / 1e3)}", tps(r.tok_s)))
    if r.ceiling_tok_s:
        steps.append(
            Step(
                "of the ceiling",
                "estimate / ceiling",
                f"{tps(r.tok_s)} / {tps(r.ceiling_tok_s)}",
                pct_of(r.tok_s / r.ceiling_tok_s),
            )
        )
    if r.parallel > 1:
        steps.append(
            Step(
                "all streams",
                "streams / time",
                f"{r.parallel} / {secs(r.ms_per_token / 1e3)}",
                tps(r.aggregate_tok_s),
            )
        )
    if not split:
        steps.append(_efficiency(r.fit))
    steps += energy_steps(getattr(r, "energy", None), "one step; tokens: one per stream")
    show(console, "How decode is worked out", steps)


# -- prefill -----------------------------------------------------------------------------------


def _chunk_step(r: PrefillReport, c: PrefillChunk) -> Step:
    what = f"chunk {c.index + 1}"
    if r.split is not None and len(r.split.parts) > 1 or c.row_flops is None:
        return Step(what, f"{c.tokens:,} tokens at context {c.ctx:,}", "", secs(c.time_s), c.bound)
    rate_ = f"{tflops_of(r.tflops or 0)} x {pct_of(r.fit.eff_compute)}"
    bound = "routed experts" if c.bound == "experts" else c.bound
    h = f"{row_count(r.fit.rows_half)}"
    if c.expert_flops and r.fit.eff_experts != 1.0:
        # dense products, then routed experts at eff_experts of the rate
        work = (
            f"{flop(c.flops - c.expert_flops)} + {h} x {flop(c.row_flops - c.expert_row_flops)}"
            f" + ({flop(c.expert_flops)} + {h} x {flop(c.expert_row_flops)}) / "
            f"{pct_of(r.fit.eff_experts)}"
        )
    elif c.kernel_time != 1.0:
        # a CPU: the weight products at their types' kernel time, attention as counted
        attn = c.flops * c.attention_share
        work = (
            f"{flop(attn)} + {c.kernel_time:.2f} x {flop(c.flops - attn)}"
            f" + {h} x {flop(c.row_flops)}"
        )
    else:
        work = f"{flop(c.flops)} + {h} x {flop(c.row_flops)}"
    memory = f"{nbytes(c.read_bytes)} / ({gbs(r.bandwidth_gbs)} x {pct_of(r.fit.eff_bw)})"
    if c.unhidden:  # a CPU's chunk: its first token's arithmetic waits on the read
        worked = (
            f"max({memory}, ({work}) / ({rate_})) + min(memory, compute / {c.tokens:,}) + "
            f"{secs(c.overhead_s)}",
            f"max({secs(c.memory_s)}, {secs(c.compute_s)}) + min({secs(c.memory_s)}, "
            f"{secs(c.compute_s)} / {c.tokens:,}) + {secs(c.overhead_s)}",
        )
    else:
        worked = (
            f"max({memory}, ({work}) / ({rate_})) + {secs(c.overhead_s)}",
            f"max({secs(c.memory_s)}, {secs(c.compute_s)}) + {secs(c.overhead_s)}",
        )
    return Step(
        what,
        f"{c.tokens:,} tokens at context {c.ctx:,}",
        worked,
        secs(c.time_s),
        f"{bound}-bound; attention {pct_of(c.attention_share)} of its FLOPs",
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
                f"the matrix rate{routed_note(r.experts_fit().eff_experts)}",
            )
        )
    steps.append(
        Step(
            "attention share",
            "attention FLOPs / all FLOPs",
            f"{flop(r.attention_flops)} / {flop(r.flops)}",
            pct_of(r.attention_share),
        )
    )
    steps.append(
        Step(
            "TTFT",
            "sum of the chunk times",
            summed([secs(c.time_s) for c in r.chunks]),
            secs(r.ttft_s),
        )
    )
    steps.append(
        Step(
            "useful rate",
            "FLOPs / TTFT",
            f"{flop(r.flops)} / {secs(r.ttft_s)}",
            tflops_of(r.flops / r.ttft_s / 1e12) if r.ttft_s else "",
            f"{pct_of(r.flops / r.ttft_s / 1e12 / r.tflops)} of the spec sheet's "
            f"{tflops_of(r.tflops)}; FLOPs per token: {flop(r.flops_per_token)}"
            if r.tflops and r.ttft_s
            else "",
        )
    )
    steps.append(
        Step(
            "prefill speed",
            "computed tokens / TTFT",
            f"{r.computed_tokens:,} / {secs(r.ttft_s)}",
            tps(r.tok_s),
        )
    )
    if r.split is not None and len(r.split.parts) > 1:
        steps += _split_steps(r.split, r.ttft_s, "the prefill")
    else:
        steps.append(_efficiency(r.fit))
    steps += energy_steps(getattr(r, "energy", None), "TTFT; tokens: those computed")
    show(console, "How prefill is worked out", steps)
