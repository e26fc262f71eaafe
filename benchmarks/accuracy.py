#!/usr/bin/env python3
"""How well the timing model predicts published speeds it was not fitted on.

For every row of data/benchmarks.yaml that the fit uses, predicts tok/s three ways:

- CV: leave-one-device-out cross-validation. The whole fit (global, groups) is redone without
  the device's rows, then the device is predicted with its group's efficiencies (per-machine
  fits cannot be used: the machine has no rows left). This is the honest number.
- in sample: the shipped fit, per-machine efficiencies included (how well it fits, not predicts).
- naive: the roofline at 100% of bandwidth and compute, no per-layer cost.

and prints the median and 90th percentile of |predicted / measured - 1|, for decode and prefill,
overall and per machine kind, then the seed device's rows.

Target (issue tracker): CV median <= 15% for decode and <= 25% for prefill.

Usage: python benchmarks/accuracy.py [--grouping backend|kind|kind+backend|global]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from tokenwalk.calibrate import (
    GROUPINGS,
    benchmark_observations,
    cross_validate,
    error_stats,
    fit_hierarchy,
    naive_predictions,
)
from tokenwalk.fit import Design, predict_tok_s
from tokenwalk.machine import timing_defaults

SEED_MACHINE = "radeon-860m"


def cell(pred: np.ndarray, measured: np.ndarray, mask: np.ndarray) -> str:
    s = error_stats(pred[mask], measured[mask])
    if not s.rows:
        return f"{'-':>17}"
    return f"{s.median_pct:6.1f}% {s.p90_pct:7.1f}%  "


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grouping", choices=GROUPINGS, default=timing_defaults().grouping)
    args = ap.parse_args()
    t0 = time.perf_counter()
    obs, excluded = benchmark_observations()
    design = Design(obs)
    cv = cross_validate(design, args.grouping)
    fit = fit_hierarchy(design, args.grouping)
    ins = predict_tok_s(design, np.array([fit.x_for(o) for o in obs]))
    naive = naive_predictions(design)
    meas = design.measured
    phase = np.array([o.phase for o in obs])
    kind = np.array([o.meta["kind"] for o in obs])

    print(f"{len(obs)} rows used, {len(excluded)} left out; grouping: {args.grouping}")
    print("absolute percentage error of tok/s: median, 90th percentile\n")
    head = f"{'':22}{'rows':>5}  {'CV (device out)':>17}{'in sample':>17}{'naive roofline':>17}"
    for ph in ("decode", "prefill"):
        print(ph)
        print(head)
        groups = [("all", np.ones(len(obs), bool))] + [(k, kind == k) for k in sorted(set(kind))]
        for name, g in groups:
            m = (phase == ph) & g
            if not m.any():
                continue
            print(
                f"  {name:20}{int(m.sum()):5}  {cell(cv, meas, m)}{cell(ins, meas, m)}"
                f"{cell(naive, meas, m)}"
            )
        print()
    seed = np.array([o.machine == SEED_MACHINE for o in obs])
    print(f"seed device ({SEED_MACHINE}), tok/s: measured, CV prediction, in sample, naive")
    for i in np.flatnonzero(seed):
        o = obs[i]
        print(
            f"  {o.label:55} {meas[i]:7.1f} {cv[i]:7.1f} ({cv[i] / meas[i] - 1:+.0%})"
            f" {ins[i]:7.1f} ({ins[i] / meas[i] - 1:+.0%}) {naive[i]:7.1f}"
        )
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
