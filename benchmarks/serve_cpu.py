#!/usr/bin/env python3
"""`tokenwalk serve`'s pass model against the recorded batched ground truth of 2-core CPUs.

Reads every tests/data/batched-ground-truth*/ (llama-batched-bench -npp 128,512 -ntg 128 -npl
B, B = 1 to 32, recorded by scripts/batched_ground_truth.py on one 2-core guest each: an AMD
EPYC and four Intel Xeon records with gemma-3-270m Q4_K_M and SmolLM2-135M Q4_1, and an Emerald
Rapids Xeon with files of TinyLlama 1.1B's shape in Q4_K_M and Q8_0, weights of zeros) and prices
every row on the guest that recorded it, the one entry of machine.yaml there (its rates
measured there, its fit calibrated on llama-bench runs of the same files there:
llama-bench/, llama-bench-after/). A row recorded in several rounds counts as their median,
and the spread of its rounds is printed beside it.

The term is fitted on JUDGED, the EPYC's record (one round a row, its rows consistent with
one another), and the 15% bar judged on JUDGING: the EPYC's and the TinyLlama record, whose
rounds agree within 15% in 11 of its 12 rows (15.1% in the last). The other Xeon records judge
nothing: the rounds of -xeon, -emr and -emr2 differ by more than 15% in 23, 24 and 14 of their
24 rows, those of -tinyllama-q8_0 (two rounds) in 4 of 12; -emr3's (two rounds) in 5 of 24,
but there, as on -emr2, SmolLM2's 98 MB stay in the guest's L3 and a step reads faster than
the DRAM rate the probe measures, which the model does not know (docs/serve.md, "CPU ground
truth").

`fit_cpu_sequence_attention` fits what a CPU pays per FLOP of the one-query attention of each
sequence beyond the first (costs.serve.SEQUENCE_ATTENTION_S_PER_FLOP): for each row with
B >= 2, its measured decoding time T_TG beyond the pass model's without the term, over the
FLOPs the term counts in its 128 steps; the median over the rows.

Usage: python benchmarks/serve_cpu.py
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

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
sys.path.insert(0, str(ROOT / "scripts"))
from batched_ground_truth import rounds  # noqa: E402  (the recording script's own grouping)

GUESTS = sorted(p.parent for p in (ROOT / "tests" / "data").glob("batched-ground-truth*/runs.json"))
HEADERS = ROOT / "tests" / "data" / "cpu-ground-truth" / "headers"
BAR = 0.15  # the bar: S_PP and S_TG within 15%
JUDGED = "batched-ground-truth"  # the record the term is fitted on
# the records the bar judges: the EPYC's, and the Emerald Rapids guest's with a model that
# streams its weights from DRAM (its rounds within 15% of one another)
JUDGING = (JUDGED, "batched-ground-truth-tinyllama")


@dataclass(frozen=True)
class BenchRun:
    """One row llama-batched-bench printed (its JSON line's fields; the median of its rounds)."""

    guest: str  # the folder it was recorded in (tests/data/batched-ground-truth*)
    model: str  # the file's stem
    pp: int
    tg: int
    pl: int
    t_pp_s: float
    s_pp_tok_s: float
    t_tg_s: float
    s_tg_tok_s: float
    spread: float  # the rounds' largest / smallest speed - 1, the worse of S_PP and S_TG


def machine_slug(guest: Path) -> str:
    """The recording guest's entry in its machine.yaml (one entry)."""
    (entry,) = yaml.safe_load((guest / "machine.yaml").read_text(encoding="utf-8"))
    return entry["slug"]


def runs() -> list[BenchRun]:
    """Every recorded row, the median of its rounds (t_pp, t_tg; the speeds follow from them)."""
    out = []
    for guest in GUESTS:
        for path in sorted(guest.glob("*.jsonl")):
            lines = [json.loads(x) for x in path.read_text().splitlines() if x]
            for (pp, tg, pl), group in rounds(lines).items():
                t_pp = statistics.median(r["t_pp"] for r in group)
                t_tg = statistics.median(r["t_tg"] for r in group)
                spread = max(
                    max(r[k] for r in group) / min(r[k] for r in group) - 1
                    for k in ("speed_pp", "speed_tg")
                )
                out.append(
                    BenchRun(
                        guest.name,
                        path.stem,
                        pp,
                        tg,
                        pl,
                        t_pp,
                        pl * pp / t_pp,
                        t_tg,
                        pl * tg / t_tg,
                        spread,
                    )
                )
    return out


def header(guest: Path, stem: str) -> Path:
    """The header-only copy of a recorded model file: the one its guest's llama-bench
    recording wrote (scripts/cpu_ground_truth.py, before or after the batched rounds), else
    tests/data/cpu-ground-truth's."""
    for runs_dir in ("llama-bench", "llama-bench-after"):
        own = guest / runs_dir / "headers" / f"{stem}.header.gguf"
        if own.is_file():
            return own
    return HEADERS / f"{stem}.header.gguf"


def pricers(seq_attention_s_per_flop: float | None = None) -> dict[tuple[str, str], PoolPricer]:
    """A pricer per recording guest and model; None takes the shipped per-FLOP term."""
    out = {}
    recorded = runs()
    for guest in GUESTS:
        machine = resolve_machine(machine_slug(guest), machines_file=guest / "machine.yaml")
        for stem in sorted({r.model for r in recorded if r.guest == guest.name}):
            model = load_model(str(header(guest, stem))).model
            out[guest.name, stem] = PoolPricer(
                model, machine, seq_attention_s_per_flop=seq_attention_s_per_flop
            )
    return out


def implied_s_per_flop() -> list[tuple[BenchRun, float]]:
    """Each row with B >= 2 and what it implies per FLOP of its extra sequences' one-query
    attention: (T_TG measured - T_TG of the pass model without the term) / those FLOPs."""
    bare = pricers(0.0)
    out = []
    for r in runs():
        if r.pl < 2:
            continue
        p = bare[r.guest, r.model]
        steps = [decode_batch([r.pp + i] * r.pl) for i in range(r.tg)]
        modelled = sum(p.price(s).time_s for s in steps)
        flops = sum(extra_sequence_attention_flops(p.model, s) for s in steps)
        out.append((r, (r.t_tg_s - modelled) / flops))
    return out


def fit_cpu_sequence_attention() -> float:
    """Seconds per FLOP of an extra sequence's one-query attention on a CPU: the median of
    `implied_s_per_flop` over the JUDGED record's rows."""
    return statistics.median(x for r, x in implied_s_per_flop() if r.guest == JUDGED)


def within(predicted: float, measured: float) -> bool:
    return abs(predicted / measured - 1) <= BAR


def main() -> int:
    implied = dict(implied_s_per_flop())
    fitted = fit_cpu_sequence_attention()
    shipped = SEQUENCE_ATTENTION_S_PER_FLOP["cpu"]
    n_fit = sum(r.guest == JUDGED for r in implied)
    print(
        f"per FLOP of an extra sequence's one-query attention: fitted {fitted * 1e12:.1f} ps "
        f"(median of {n_fit} rows of {JUDGED}), shipped {shipped * 1e12:.1f} ps"
    )
    print("S_PP and S_TG, predicted / measured - 1, without and with it\n")
    width = max(len(g.name) for g in GUESTS)
    print(
        f"{'guest':{width}} {'model':28} {'pp':>4} {'B':>3} {'S_PP':>7} {'err':>5} {'S_TG':>7} "
        f"{'without':>8} {'with':>6} {'ps/FLOP':>8} {'rounds':>7}"
    )
    bare, shipped_pricers = pricers(0.0), pricers()
    count: dict[tuple[str, str], int] = {}
    rows = runs()
    for r in rows:
        a = batched_bench(bare[r.guest, r.model], r.pp, r.tg, r.pl)
        b = batched_bench(shipped_pricers[r.guest, r.model], r.pp, r.tg, r.pl)
        for name, row in (("without", a), ("with", b)):
            ok = within(row.s_pp_tok_s, r.s_pp_tok_s) and within(row.s_tg_tok_s, r.s_tg_tok_s)
            count[r.guest, name] = count.get((r.guest, name), 0) + ok
        x = implied.get(r)
        print(
            f"{r.guest:{width}} {r.model:28} {r.pp:4} {r.pl:3} {r.s_pp_tok_s:7.1f} "
            f"{b.s_pp_tok_s / r.s_pp_tok_s - 1:+5.0%} {r.s_tg_tok_s:7.1f} "
            f"{a.s_tg_tok_s / r.s_tg_tok_s - 1:+8.0%} {b.s_tg_tok_s / r.s_tg_tok_s - 1:+6.0%} "
            + (f"{x * 1e12:8.1f}" if x is not None else f"{'-':>8}")
            + f" {r.spread:+7.0%}"
        )
    print(
        f"\nrows with S_PP and S_TG within {BAR:.0%}, without the term and with it, and rows "
        f"whose rounds differ by {BAR:.0%} or less ('rounds': how far a row's rounds differ)"
    )
    for guest in GUESTS:
        mine = [r for r in rows if r.guest == guest.name]
        steady = sum(r.spread <= BAR for r in mine)
        print(
            f"  {guest.name:{width}} {count[guest.name, 'without']:3} "
            f"{count[guest.name, 'with']:3}"
            f" of {len(mine)}   rounds within: {steady}"
            + ("   (judged)" if guest.name in JUDGING else "")
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
