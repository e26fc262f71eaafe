#!/usr/bin/env python3
"""`tokenwalk serve`'s pass model against the recorded batched ground truth of a 2-core CPU.

Reads tests/data/batched-ground-truth (llama-batched-bench -npp 128,512 -ntg 128 -npl B, B = 1
to 32, on gemma-3-270m Q4_K_M and SmolLM2-135M Q4_1, recorded by
scripts/batched_ground_truth.py on a 2-core AMD EPYC guest) and prices every row on
that guest, `epyc-kvm-2c-2t` in machine.yaml there (its rates measured there, its fit
calibrated on llama-bench runs of the same files there: llama-bench/).

`fit_cpu_sequence_attention` fits what a CPU pays per FLOP of the one-query attention of each
sequence beyond the first (costs.serve.SEQUENCE_ATTENTION_S_PER_FLOP): for each row with
B >= 2, its measured decoding time T_TG beyond the pass model's without the term, over the
FLOPs the term counts in its 128 steps; the median over the rows.

Usage: python benchmarks/serve_cpu.py
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path

from tokenwalk.costs.serve import (
    SEQUENCE_ATTENTION_S_PER_FLOP,
    PoolPricer,
    batched_bench,
    decode_batch,
    extra_sequence_attention_flops,
)
from tokenwalk.machine import resolve_machine
from tokenwalk.model.resolve import load_model

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "batched-ground-truth"
HEADERS = ROOT / "tests" / "data" / "cpu-ground-truth" / "headers"
MACHINE = "epyc-kvm-2c-2t"  # the recording guest, calibrated on its llama-bench runs
MACHINE_FILE = DATA / "machine.yaml"
BAR = 0.15  # the bar: S_PP and S_TG within 15%


@dataclass(frozen=True)
class BenchRun:
    """One row llama-batched-bench printed (its JSON line's fields)."""

    model: str  # the file's stem
    pp: int
    tg: int
    pl: int
    t_pp_s: float
    s_pp_tok_s: float
    t_tg_s: float
    s_tg_tok_s: float


def runs() -> list[BenchRun]:
    out = []
    for path in sorted(DATA.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            if line:
                r = json.loads(line)
                out.append(
                    BenchRun(
                        path.stem,
                        r["pp"],
                        r["tg"],
                        r["pl"],
                        r["t_pp"],
                        r["speed_pp"],
                        r["t_tg"],
                        r["speed_tg"],
                    )
                )
    return out


def pricers(seq_attention_s_per_flop: float | None = None) -> dict[str, PoolPricer]:
    """A pricer per recorded model on MACHINE; None takes the shipped per-FLOP term."""
    machine = resolve_machine(MACHINE, machines_file=MACHINE_FILE)
    return {
        stem: PoolPricer(
            load_model(str(HEADERS / f"{stem}.header.gguf")).model,
            machine,
            seq_attention_s_per_flop=seq_attention_s_per_flop,
        )
        for stem in sorted({r.model for r in runs()})
    }


def implied_s_per_flop() -> list[tuple[BenchRun, float]]:
    """Each row with B >= 2 and what it implies per FLOP of its extra sequences' one-query
    attention: (T_TG measured - T_TG of the pass model without the term) / those FLOPs."""
    bare = pricers(0.0)
    out = []
    for r in runs():
        if r.pl < 2:
            continue
        p = bare[r.model]
        steps = [decode_batch([r.pp + i] * r.pl) for i in range(r.tg)]
        modelled = sum(p.price(s).time_s for s in steps)
        flops = sum(extra_sequence_attention_flops(p.model, s) for s in steps)
        out.append((r, (r.t_tg_s - modelled) / flops))
    return out


def fit_cpu_sequence_attention() -> float:
    """Seconds per FLOP of an extra sequence's one-query attention on a CPU: the median of
    `implied_s_per_flop` over the rows."""
    return statistics.median(x for _, x in implied_s_per_flop())


def within(predicted: float, measured: float) -> bool:
    return abs(predicted / measured - 1) <= BAR


def main() -> int:
    implied = dict(implied_s_per_flop())
    fitted = fit_cpu_sequence_attention()
    shipped = SEQUENCE_ATTENTION_S_PER_FLOP["cpu"]
    print(
        f"per FLOP of an extra sequence's one-query attention: fitted {fitted * 1e12:.1f} ps "
        f"(median of {len(implied)} rows), shipped {shipped * 1e12:.1f} ps"
    )
    print(f"machine {MACHINE}; S_PP and S_TG, predicted / measured - 1, without and with it\n")
    print(
        f"{'model':28} {'pp':>4} {'B':>3} {'S_PP':>7} {'err':>5} {'S_TG':>7} {'without':>8} "
        f"{'with':>6} {'ps/FLOP':>8}"
    )
    bare, shipped_pricers = pricers(0.0), pricers()
    count = {"without": 0, "with": 0}
    rows = runs()
    for r in rows:
        a = batched_bench(bare[r.model], r.pp, r.tg, r.pl)
        b = batched_bench(shipped_pricers[r.model], r.pp, r.tg, r.pl)
        for name, row in (("without", a), ("with", b)):
            count[name] += within(row.s_pp_tok_s, r.s_pp_tok_s) and within(
                row.s_tg_tok_s, r.s_tg_tok_s
            )
        x = implied.get(r)
        print(
            f"{r.model:28} {r.pp:4} {r.pl:3} {r.s_pp_tok_s:7.1f} "
            f"{b.s_pp_tok_s / r.s_pp_tok_s - 1:+5.0%} {r.s_tg_tok_s:7.1f} "
            f"{a.s_tg_tok_s / r.s_tg_tok_s - 1:+8.0%} {b.s_tg_tok_s / r.s_tg_tok_s - 1:+6.0%} "
            + (f"{x * 1e12:8.1f}" if x is not None else f"{'-':>8}")
        )
    print(
        f"\nrows with S_PP and S_TG within {BAR:.0%}: {count['without']} of {len(rows)} "
        f"without the term, {count['with']} with it"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
