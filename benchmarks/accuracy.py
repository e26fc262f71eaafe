#!/usr/bin/env python3
"""How well the timing model predicts published speeds it was not fitted on.

For every row of data/benchmarks.yaml that the fit uses, predicts tok/s four ways:

- CV: leave-one-device-out cross-validation of the model. The whole fit (global and every
  group) is redone without the device's rows, then the device is predicted from the groups it
  belongs to (vendor, peak, backend, kind, kind/backend; its own machine fit cannot be used: it has
  no rows left). This is the number to trust for a machine tokenwalk has never seen.
- tiles: the same cross-validation with one more term, the routed experts' empty tile columns
  F_pad of llama.cpp's `mul_mat_id` (`tokenwalk.costs.timing.expert_tile_flops`), a candidate
  kept out of the shipped model while this column says it does not help.
- previous: the same cross-validation of the first timing model (no row term, groups by
  kind/backend only), to show what the current one changes.
- in sample: the shipped fit, per-machine offsets included (how well it fits, not predicts).
- naive: the roofline at 100% of bandwidth and compute, no per-layer cost.

and prints the median and 90th percentile of |predicted / measured - 1| and the median signed
error, for decode and prefill, overall, per device class, per backend and dense / MoE, then the
seed device's rows.

Targets (issue tracker): prefill CV median <= 15% overall, <= 25% in every class with at least
5 rows and on MoE rows, p90 <= 60%; decode CV median <= 8%; the seed device within 2x.

Usage: python benchmarks/accuracy.py [--markdown]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from tokenwalk.calibrate import (
    benchmark_observations,
    cross_validate,
    error_stats,
    naive_predictions,
)
from tokenwalk.fit import Design, fit_hierarchy, predict_tok_s

SEED_MACHINE = "radeon-860m"
OWN_MACHINE = "xeon-kvm-2c"  # the project's own measured machine (tests/data/cpu-ground-truth)


def cell(pred: np.ndarray, measured: np.ndarray, mask: np.ndarray, signed: bool = False) -> str:
    s = error_stats(pred[mask], measured[mask])
    if not s.n_rows:
        return f"{'-':>22}"
    out = f"{s.median_pct:6.1f}% {s.p90_pct:6.1f}%"
    if signed:
        out += f" {s.signed_median_pct:+6.0f}%"
    return f"{out:>22}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.parse_args()
    t0 = time.perf_counter()
    obs, excluded = benchmark_observations()
    design = Design(obs)
    cv = cross_validate(design, "rows")
    tiles = cross_validate(design, "tiles")
    prev = cross_validate(design, "previous")
    fit = fit_hierarchy(design)
    ins = predict_tok_s(design, fit.x_rows(design))
    naive = naive_predictions(design)
    meas = design.measured
    phase = np.array([o.phase for o in obs])
    kind = np.array([o.meta["kind"] for o in obs])
    backend = np.array([o.meta["backend"] for o in obs])
    moe = np.array([o.meta["moe"] for o in obs])

    print(f"{len(obs)} rows used, {len(excluded)} left out")
    print("error of tok/s: median |error|, 90th percentile |error|, median signed error\n")
    head = (
        f"{'':22}{'rows':>5}  {'CV (device out)':>22}{'+ expert tiles, CV':>22}"
        f"{'previous model, CV':>22}"
        f"{'in sample':>15}{'naive roofline':>15}"
    )
    for ph in ("decode", "prefill"):
        print(ph)
        print(head)
        groups = (
            [("all", np.ones(len(obs), bool))]
            + [(f"class {k}", kind == k) for k in sorted(set(kind))]
            + [(f"backend {b}", backend == b) for b in sorted(set(backend))]
            + [("dense", ~moe), ("mixture of experts", moe)]
        )
        for name, g in groups:
            m = (phase == ph) & g
            if not m.any():
                continue
            print(
                f"  {name:20}{int(m.sum()):5}  {cell(cv, meas, m, True)}"
                f"{cell(tiles, meas, m, True)}{cell(prev, meas, m, True)}"
                f"{cell(ins, meas, m)[7:]:>15}{cell(naive, meas, m)[7:]:>15}"
            )
        print()
    seed = np.array([o.machine == SEED_MACHINE for o in obs])
    print(
        f"seed device ({SEED_MACHINE}), tok/s: measured, CV, + expert tiles CV, previous model CV,"
        " in sample"
    )
    for i in np.flatnonzero(seed):
        o = obs[i]
        print(
            f"  {o.label:58} {meas[i]:7.1f} {cv[i]:7.1f} ({cv[i] / meas[i] - 1:+.0%})"
            f" {tiles[i]:7.1f} ({tiles[i] / meas[i] - 1:+.0%})"
            f" {prev[i]:7.1f} ({prev[i] / meas[i] - 1:+.0%})"
            f" {ins[i]:7.1f} ({ins[i] / meas[i] - 1:+.0%})"
        )
    print(
        f"\nthe project's own machine ({OWN_MACHINE}-1t/-2t: 1 and 2 threads, rates measured with "
        "scripts/measure_host.py), tok/s: measured, CV, in sample"
    )
    for i, o in enumerate(obs):
        if o.machine.startswith(OWN_MACHINE):
            print(
                f"  {o.label:58} {meas[i]:7.1f} {cv[i]:7.1f} ({cv[i] / meas[i] - 1:+.0%})"
                f" {ins[i]:7.1f} ({ins[i] / meas[i] - 1:+.0%})"
            )
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
