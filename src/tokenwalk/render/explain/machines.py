"""--explain of machines, probe and calibrate: rates, measurements and fitted efficiencies."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tokenwalk.render.explain.steps import (
    Step,
    flop,
    gbs,
    nbytes,
    pct_of,
    routed_note,
    secs,
    show,
    tflops_of,
    tps,
    unbroken,
)
from tokenwalk.render.fmt import row_count, rows

if TYPE_CHECKING:
    from rich.console import Console

    from tokenwalk.probe import ProbeReport
    from tokenwalk.timing.calibrate import DefaultsFit, MachineFit


__all__ = [
    "explain_machines",
    "explain_probe",
    "explain_defaults_fit",
    "explain_machine_fit",
]


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
            gbs(m.bandwidth_gbs) if m.bandwidth_gbs else "?",
            f"{m.slug}: {m.source}",
        ),
        Step(
            "FLOPS",
            f"{what} for the {m.backend} backend",
            "",
            tflops_of(m.tflops) if m.tflops else "?",
        ),
        Step(
            "time of a pass",
            "max(B / (BW x eff_bw), (F + rows_half x R) / (FLOPS x eff_compute)) + L x overhead",
            note="the routed experts' part of F and R counts 1 / eff_experts times",
        ),
        Step(
            "efficiencies",
            "global x vendor x backend x kind x kind/backend x machine factors",
            f"eff_bw {pct_of(m.eff_bw)}, eff_compute {pct_of(m.eff_compute)}, rows_half "
            f"{row_count(m.rows_half)}, eff_experts {pct_of(m.eff_experts)}, "
            f"{secs(m.overhead_per_layer_s)} per layer",
            note=f"from {m.fit_source}",
        ),
    ]
    if m.bandwidth_gbs:
        steps.append(
            Step(
                "usable BW",
                "BW x eff_bw",
                f"{gbs(m.bandwidth_gbs)} x {pct_of(m.eff_bw)}",
                gbs(m.bandwidth_gbs * m.eff_bw),
            )
        )
    if m.tflops:
        steps.append(
            Step(
                "usable FLOPS",
                "FLOPS x eff_compute",
                f"{tflops_of(m.tflops)} x {pct_of(m.eff_compute)}",
                tflops_of(m.tflops * m.eff_compute),
                f"a large product; one of n rows runs at n / (n + {row_count(m.rows_half)}) of it"
                f"{routed_note(m.eff_experts)}",
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
                f"{nbytes(m.buffer_bytes)} / {secs(t)}",
                unbroken(f"{s.median:,.1f} GB/s"),
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
                f"2 x {n:,}^3 / {secs(t)} = {flop(flops)} / {secs(t)}",
                unbroken(f"{s.median:,.1f} GFLOP/s"),
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
            f"{pct_of(float(g['eff_bw']))}, {pct_of(float(g['eff_compute']))}, "
            f"{secs(float(g['overhead_per_layer_s']))}, {rows(float(g['rows_half']))}, "
            f"{pct_of(float(g.get('eff_experts', 1.0)))}",
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
                f"{tps(after)} / {tps(measured)} - 1",
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
