#!/usr/bin/env python3
"""How well the timing model predicts published speeds it was not fitted on.

For every row of data/benchmarks.yaml that the fit uses, predicts tok/s four ways:

- CV: leave-one-device-out cross-validation of the model. The whole fit (global and every
  group) is redone without the device's rows, then the device is predicted from the groups it
  belongs to (vendor, peak, backend, kind, kind/backend; its own machine fit cannot be used: it has
  no rows left). This is the number to trust for a machine tokenwalk has never seen.
- tiles: the same cross-validation with one more term, the routed experts' empty tile columns
  F_pad of llama.cpp's `mul_mat_id` (`tokenwalk.timing.passes.expert_tile_flops`), a candidate
  kept out of the shipped model while this column says it does not help.
- previous: the same cross-validation of the first timing model (no row term, groups by
  kind/backend only), to show what the current one changes.
- in sample: the shipped fit, per-machine offsets included (how well it fits, not predicts).
- naive: the roofline at 100% of bandwidth and compute, no per-layer cost.

and prints the median and 90th percentile of |predicted / measured - 1| and the median signed
error, for decode and prefill, overall, per device class, per backend and dense / MoE, then the
seed device's rows.

It then prints leave-one-group-out cross-validation beside it: the fit redone without every row
of a group at once, for each group of four groupings in turn (`GROUP_LEVELS`): a kind (gpu,
igpu, ...), a maker's segment (`machine_segment`: nvidia geforce, nvidia pro (workstation and
data-center), amd apu, apple, intel cpu, ...), a backend, a source (one publication's rows).
Leaving out one device keeps its class's other devices in the fit; this leaves out the class,
and says what to expect of hardware whose class the data has no runs of. For each grouping the
median over all rows (each predicted with its group left out) and each group's own (sources of
fewer than 5 rows together), under the segments each kind's rows (the figure a machine of a
class without runs quotes: `tokenwalk.timing.accuracy`), then every grouping's predictions
pooled; beside each, the device-out figure of the same rows.

Targets (issue tracker): prefill CV median <= 15% overall, <= 25% in every class with at least
5 rows and on MoE rows, p90 <= 60%; decode CV median <= 8%; the seed device within 2x.

It then prints the headline figures with the 5th to 95th percentile of each over 1,000
resamples of the devices (drawn with replacement, each with all its rows, the predictions as
they are): how much a figure owes to which devices happen to be in the data.

With `--draws N` it also refits the cross-validation N times with every measured speed moved by
a random 1% (seeded, so the same N draws every run) and prints, for the headline figures, the
value on the data as it is and the range over the draws: how much of a figure is the data and
how much is where the fit happens to settle.

With `--save FILE` it writes the cross-validated predictions (JSON, one per row label; the
device-out ones and each grouping's group-out ones), and with `--against FILE` it compares them
with such a file written by another version of the model: over 2,000 resamples of the devices
(the same devices for both), the median change of each headline figure, its 5th to 95th
percentile, and in how many resamples the figure is lower; then the same for the group-out
figures (the pooled decode and prefill medians, and the number of kind, segment and backend
groups of 5+ rows above 30%). That is how a change to the model is judged against the one
before it, by both cross-validations.

With `--seed-influence` it refits once more for each device but the seed laptop, with that
device left out as well, and prints the seed laptop's left-out prefill each time (the range,
and the devices that move it most): a figure of one row, decided by the shared parameters,
and so by which other devices the data holds.

With `--write-data` it writes data/accuracy.yaml: the errors `decode`, `prefill` and `trace`
quote next to an estimate (`tokenwalk.timing.accuracy`). Redo it after every refit.

Usage: python benchmarks/accuracy.py [--draws N] [--save FILE] [--against FILE] [--seed-influence]
                                     [--write-data]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import yaml

from tokenwalk.timing.accuracy import CLASS_LEVEL, CLASS_QUOTE, PHASES, fit_fingerprint
from tokenwalk.timing.calibrate import (
    GROUP_LEVELS,
    benchmark_observations,
    cross_validate,
    cross_validate_groups,
    device_of,
    error_stats,
    group_of,
    naive_predictions,
)
from tokenwalk.timing.fit import Design, fit_hierarchy, predict_tok_s

DATA = Path(__file__).resolve().parents[1] / "data"  # the checkout's shipped data
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


DRAW_SIGMA = 0.01  # the random change of every measured speed in a draw (log units)
CLASS_MIN_ROWS = 5  # the per-class targets count classes of at least this many rows


def headline(obs: list, pred: np.ndarray, measured: np.ndarray) -> dict[str, float]:
    """The figures the issue's targets name: mean |ln(predicted / measured)|, the decode and
    prefill medians (and prefill's 90th percentile), each class's and the MoE rows' prefill
    median, and the seed device's prefill ratio."""
    phase = np.array([o.phase for o in obs])
    kind = np.array([o.meta["kind"] for o in obs])
    moe = np.array([o.meta["moe"] for o in obs])

    def stats(rows: np.ndarray):
        return error_stats(pred[rows], measured[rows])

    out = {"mean |ln(predicted / measured)|": float(np.mean(np.abs(np.log(pred / measured))))}
    dec, pre = phase == "decode", phase == "prefill"
    out["decode median %"] = stats(dec).median_pct
    out["prefill median %"] = stats(pre).median_pct
    out["prefill p90 %"] = stats(pre).p90_pct
    for k in sorted(set(kind)):
        rows = pre & (kind == k)
        if rows.sum() >= CLASS_MIN_ROWS:
            out[f"prefill {k} median %"] = stats(rows).median_pct
    out["prefill MoE median %"] = stats(pre & moe).median_pct
    seed = [i for i, o in enumerate(obs) if o.machine == SEED_MACHINE and o.phase == "prefill"]
    if seed:
        out["seed prefill, x measured"] = float(pred[seed[0]] / measured[seed[0]])
    return out


RESAMPLES = 1000  # device resamples for the headline figures' intervals
INTERVAL = (5.0, 95.0)  # percentiles of the resampled figures printed


def device_resamples(obs: list, n: int, seed: int) -> Iterator[np.ndarray]:
    """n resamples of the devices, each the row indices of as many machines as the data has,
    drawn with replacement, each with all its rows (seeded)."""
    machines = sorted({o.machine for o in obs})
    rows = {m: np.array([i for i, o in enumerate(obs) if o.machine == m]) for m in machines}
    rng = np.random.default_rng(seed)
    for _ in range(n):
        yield np.concatenate([rows[m] for m in rng.choice(machines, len(machines))])


def device_intervals(
    obs: list, pred: np.ndarray, measured: np.ndarray, n: int = RESAMPLES, seed: int = 0
) -> dict[str, tuple[float, float]]:
    """The 5th and 95th percentiles of each headline figure over n resamples of the devices
    (drawn with replacement, each with all its rows; the predictions as they are, no refit):
    how much a figure owes to which devices happen to be in the data. A class median of seven
    rows from four devices moves a lot; the seed's ratio, one row, is left out."""
    seen: dict[str, list[float]] = {}
    for idx in device_resamples(obs, n, seed):
        figures = headline([obs[i] for i in idx], pred[idx], measured[idx])
        for name, value in figures.items():
            if not name.startswith("seed") and value is not None and np.isfinite(value):
                seen.setdefault(name, []).append(value)
    return {k: tuple(np.percentile(v, INTERVAL)) for k, v in seen.items()}  # type: ignore[misc]


PAIRED_RESAMPLES = 2000  # device resamples for --against


def paired_changes(
    obs: list,
    before: np.ndarray,
    after: np.ndarray,
    measured: np.ndarray,
    n: int = PAIRED_RESAMPLES,
    seed: int = 0,
) -> dict[str, tuple[float, float, float, float]]:
    """How each headline figure changes from `before` to `after` (two sets of predictions of
    the same rows) over n resamples of the devices, the same devices for both: (median change,
    5th and 95th percentile of the change, share of resamples in which it is lower)."""

    def figures(pred: np.ndarray) -> Callable[[np.ndarray], dict[str, float]]:
        return lambda idx: headline([obs[i] for i in idx], pred[idx], measured[idx])

    return _paired(obs, figures(before), figures(after), n, seed)


def group_figures(
    phase: np.ndarray,
    labels: dict[str, np.ndarray],
    by_level: dict[str, np.ndarray],
    measured: np.ndarray,
) -> dict[str, float]:
    """The leave-one-group-out figures #29's targets name: the median of every grouping's
    predictions pooled, per phase, and how many groups of GROUPS_KEPT's levels with at least
    CLASS_MIN_ROWS rows miss by a median of more than 30% (a group counted once per phase).
    `labels`: each level's group of each row; all arrays of the same rows."""
    out: dict[str, float] = {}
    above = 0
    for p in PHASES:
        rows = phase == p
        if not rows.any():
            continue
        pooled = np.concatenate([pred[rows] for pred in by_level.values()])
        stats = error_stats(pooled, np.tile(measured[rows], len(by_level)))
        out[f"group-out {p} median %"] = stats.median_pct
        for lv in GROUPS_KEPT:
            if lv not in by_level:
                continue
            for g in set(labels[lv][rows]):
                m = rows & (labels[lv] == g)
                if m.sum() >= CLASS_MIN_ROWS:
                    above += error_stats(by_level[lv][m], measured[m]).median_pct > 30
    out["groups of 5+ rows above 30%"] = float(above)
    return out


def paired_group_changes(
    obs: list,
    before: dict[str, np.ndarray],
    after: dict[str, np.ndarray],
    measured: np.ndarray,
    n: int = PAIRED_RESAMPLES,
    seed: int = 0,
) -> dict[str, tuple[float, float, float, float]]:
    """`paired_changes` of the `group_figures`: two versions' leave-one-group-out predictions
    (level -> predictions of every row), over the same resamples of the devices."""
    phase = np.array([o.phase for o in obs])
    labels = {lv: np.array([group_of(o, lv) for o in obs], dtype=object) for lv in before}

    def figures(by_level: dict[str, np.ndarray]) -> Callable[[np.ndarray], dict[str, float]]:
        return lambda idx: group_figures(
            phase[idx],
            {lv: g[idx] for lv, g in labels.items()},
            {lv: pred[idx] for lv, pred in by_level.items()},
            measured[idx],
        )

    return _paired(obs, figures(before), figures(after), n, seed)


def _paired(
    obs: list,
    before: Callable[[np.ndarray], dict[str, float]],
    after: Callable[[np.ndarray], dict[str, float]],
    n: int,
    seed: int,
) -> dict[str, tuple[float, float, float, float]]:
    """The change of each figure from `before(idx)` to `after(idx)` over n resamples of the
    devices (`device_resamples`): median, 5th and 95th percentile, share lower."""
    seen: dict[str, list[float]] = {}
    for idx in device_resamples(obs, n, seed):
        a, b = before(idx), after(idx)
        for name in a.keys() & b.keys():
            if name.startswith("seed") or a[name] is None or b[name] is None:
                continue
            seen.setdefault(name, []).append(b[name] - a[name])
    out = {}
    for name, changes in seen.items():
        v = np.array(changes)
        lo, hi = np.percentile(v, INTERVAL)
        out[name] = (float(np.median(v)), float(lo), float(hi), float(np.mean(v < 0)))
    return out


def row_keys(obs: list) -> list[str]:
    """A key per row for --save and --against: its label, and its place among the rows of the
    same label (two sources can publish the same device, model and test)."""
    seen: dict[str, int] = {}
    keys = []
    for o in obs:
        seen[o.label] = seen.get(o.label, 0) + 1
        keys.append(f"{o.label} #{seen[o.label]}")
    return keys


def read_saved(path: Path, keys: list[str], level: str | None = None) -> np.ndarray:
    """The predictions of a --save file, in the order of `keys` (NaN where it has none): the
    device-out ones, or with `level` that grouping's leave-one-group-out ones (all NaN in a
    file saved before they were)."""
    saved = json.loads(path.read_text(encoding="utf-8"))
    table = saved["cv_tok_s"] if level is None else saved.get("group_out_tok_s", {}).get(level, {})
    return np.array([float(table.get(key, np.nan)) for key in keys])


def draws(obs: list, n: int) -> list[dict[str, float]]:
    """The headline figures of n cross-validations, each with every measured speed moved by a
    random DRAW_SIGMA (seeds 1 to n)."""
    out = []
    for seed in range(1, n + 1):
        design = Design(obs)
        rng = np.random.default_rng(seed)
        design.measured = design.measured * np.exp(rng.normal(0.0, DRAW_SIGMA, design.n))
        out.append(headline(obs, cross_validate(design, "rows"), design.measured))
    return out


def without_each(
    devices: list[str], figure: Callable[[str | None], float]
) -> list[tuple[float, str]]:
    """`figure(d)` with each device d left out of the fit as well, smallest first: how much a
    figure of one row owes to which other devices are in the data."""
    return sorted((figure(d), d) for d in sorted(set(devices)))


def seed_without_each(obs: list, design: Design) -> tuple[float, list[tuple[float, str]]]:
    """The seed laptop's prefill, left out (predicted / measured), as cross-validation has it
    and with each other device left out as well: one fit each, started from the full fit."""
    devices = np.array([device_of(o.machine) for o in obs])
    seed_device = device_of(SEED_MACHINE)
    row = next(i for i, o in enumerate(obs) if o.machine == SEED_MACHINE and o.phase == "prefill")
    full = fit_hierarchy(design)

    def figure(other: str | None) -> float:
        train = (devices != seed_device) & (devices != other)
        fit = fit_hierarchy(design, train, machines=False, start=full)
        return float(predict_tok_s(design, fit.x_rows(design, use_machine=False))[row]) / float(
            design.measured[row]
        )

    others = [d for d in devices if d != seed_device]
    return figure(None), without_each(others, figure)


GROUPS_KEPT = ("kind", "segment", "backend")  # levels whose every group data/accuracy.yaml keeps


def group_out_table(
    obs: list, by_level: dict[str, np.ndarray], measured: np.ndarray
) -> dict[str, dict[str, dict[str, dict]]]:
    """Leave-one-group-out error stats: phase -> level -> "all" (every row, each predicted
    with its group left out) and each group of it -> stats; phase -> "pooled" -> "all": every
    level's predictions of every row together; and phase -> CLASS_QUOTE -> each kind: the
    rows of that kind, each predicted with its class (CLASS_LEVEL) left out, what a machine of
    a class never measured quotes."""
    phase = np.array([o.phase for o in obs])
    out: dict[str, dict[str, dict[str, dict]]] = {}
    for p in PHASES:
        rows = phase == p
        pooled = np.concatenate([by_level[lv][rows] for lv in by_level])
        table = {"pooled": {"all": error_stats(pooled, np.tile(measured[rows], len(by_level)))}}
        for lv, pred in by_level.items():
            groups = np.array([group_of(o, lv) for o in obs], dtype=object)
            table[lv] = {"all": error_stats(pred[rows], measured[rows])}
            for g in sorted(set(groups[rows])):
                m = rows & (groups == g)
                table[lv][g] = error_stats(pred[m], measured[m])
        if CLASS_LEVEL in by_level:
            kind = np.array([o.meta["kind"] for o in obs], dtype=object)
            table[CLASS_QUOTE] = {
                k: error_stats(by_level[CLASS_LEVEL][m], measured[m])
                for k in sorted(set(kind[rows]))
                for m in [rows & (kind == k)]
            }
        out[p] = {lv: {g: s.model_dump() for g, s in t.items()} for lv, t in table.items()}
    return out


def print_group_out(
    obs: list, by_level: dict[str, np.ndarray], cv: np.ndarray, measured: np.ndarray
) -> None:
    """The leave-one-group-out table, with the device-out figure of the same rows beside it."""
    phase = np.array([o.phase for o in obs])
    table = group_out_table(obs, by_level, measured)
    print(
        "leave-one-group-out: every row of a group left out of the fit at once, predicted from "
        "the groups of the other levels it belongs to"
    )
    head = f"{'':46}{'rows':>5}  {'CV (group out)':>22}{'CV (device out)':>22}"
    for ph in PHASES:
        rows = phase == ph
        print(ph)
        print(head)
        pooled = table[ph]["pooled"]["all"]
        print(f"  {'pooled: the four groupings together':44}{pooled['n_rows']:5}  {_cell(pooled)}")
        for lv, pred in by_level.items():
            groups = np.array([group_of(o, lv) for o in obs])
            print(
                f"  {lv + ': every group left out in turn':44}{int(rows.sum()):5}  "
                f"{cell(pred, measured, rows, True)}{cell(cv, measured, rows, True)}"
            )
            small = np.zeros(len(obs), bool)
            for g in sorted(set(groups[rows])):
                m = rows & (groups == g)
                if lv == "source" and m.sum() < CLASS_MIN_ROWS:
                    small |= m
                    continue
                name = g.removeprefix("https://github.com/")[:40]
                flag = (
                    "  <- above 30%"
                    if m.sum() >= CLASS_MIN_ROWS and table[ph][lv][g]["median_pct"] > 30
                    else ""
                )
                print(
                    f"    {name:42}{int(m.sum()):5}  {cell(pred, measured, m, True)}"
                    f"{cell(cv, measured, m, True)}{flag}"
                )
            if lv == CLASS_LEVEL:
                print(f"    {'per kind (quoted for a class never measured)':42}")
                kind = np.array([o.meta["kind"] for o in obs], dtype=object)
                for k in table[ph][CLASS_QUOTE]:
                    m = rows & (kind == k)
                    print(
                        f"      {k:40}{int(m.sum()):5}  {cell(pred, measured, m, True)}"
                        f"{cell(cv, measured, m, True)}"
                    )
            if small.any():
                n = len({groups[i] for i in np.flatnonzero(small)})
                print(
                    f"    {f'{n} sources of fewer than {CLASS_MIN_ROWS} rows':42}"
                    f"{int(small.sum()):5}  {cell(pred, measured, small, True)}"
                    f"{cell(cv, measured, small, True)}"
                )
        print()


def print_group_against(
    obs: list, path: Path, by_level: dict[str, np.ndarray], measured: np.ndarray
) -> None:
    """--against for leave-one-group-out: the `group_figures` of a --save file's group-out
    predictions and of these, and their paired change over resamples of the devices."""
    keys = row_keys(obs)
    before = {lv: read_saved(path, keys, lv) for lv in by_level}
    both = np.flatnonzero(np.all([np.isfinite(b) for b in before.values()], axis=0))
    if not both.size:
        print(f"\n{path} has no leave-one-group-out predictions (saved before they were)")
        return
    sub = [obs[i] for i in both]
    old = {lv: b[both] for lv, b in before.items()}
    new = {lv: p[both] for lv, p in by_level.items()}
    phase = np.array([o.phase for o in sub])
    labels = {lv: np.array([group_of(o, lv) for o in sub], dtype=object) for lv in by_level}
    a = group_figures(phase, labels, old, measured[both])
    b = group_figures(phase, labels, new, measured[both])
    changes = paired_group_changes(sub, old, new, measured[both])
    print(f"leave-one-group-out, against {path} ({both.size} rows in both):")
    for name in a:
        med, c_lo, c_hi, lower = changes[name]
        print(
            f"  {name:34} {a[name]:7.1f} -> {b[name]:7.1f}   {med:+7.1f}  {c_lo:+7.1f} to "
            f"{c_hi:+7.1f}  {lower:4.0%}"
        )


def _cell(s: dict) -> str:
    """A `group_out_table` entry as `cell` prints one."""
    out = f"{s['median_pct']:6.1f}% {s['p90_pct']:6.1f}% {s['signed_median_pct']:+6.0f}%"
    return f"{out:>22}"


def accuracy_yaml(
    obs: list,
    cv: np.ndarray,
    ins: np.ndarray,
    measured: np.ndarray,
    by_level: dict[str, np.ndarray],
) -> str:
    """The text of data/accuracy.yaml (`tokenwalk.timing.accuracy`): the cross-validated error per
    phase, overall and per device class, the in-sample error per phase, each benchmarked
    machine's rows per phase, and the leave-one-group-out error per phase (`group_out_table`:
    over all rows and per group of GROUPS_KEPT, per kind with each class left out
    (CLASS_QUOTE), over all rows of the other levels); stamped with the data/timing.yaml it was
    measured with."""
    phase = np.array([o.phase for o in obs])
    kind = np.array([o.meta["kind"] for o in obs])

    def stats(pred: np.ndarray, rows: np.ndarray) -> dict:
        return error_stats(pred[rows], measured[rows]).model_dump()

    machine_rows: dict[str, dict[str, int]] = {}
    for o in obs:
        counts = machine_rows.setdefault(o.machine, {p: 0 for p in PHASES})
        counts[o.phase] += 1
    data = {
        "source": (
            "leave-one-device-out and leave-one-group-out cross-validation of "
            "data/benchmarks.yaml, and the shipped fit in sample (python "
            "benchmarks/accuracy.py --write-data)"
        ),
        "timing_sha256": fit_fingerprint((DATA / "timing.yaml").read_text(encoding="utf-8")),
        "cross_validated": {
            p: {"all": stats(cv, phase == p)}
            | {str(k): stats(cv, (phase == p) & (kind == k)) for k in sorted(set(kind[phase == p]))}
            for p in PHASES
        },
        "in_sample": {p: stats(ins, phase == p) for p in PHASES},
        "machine_rows": dict(sorted(machine_rows.items())),
        "group_out": {
            p: {
                lv: groups if lv in (*GROUPS_KEPT, CLASS_QUOTE) else {"all": groups["all"]}
                for lv, groups in t.items()
            }
            for p, t in group_out_table(obs, by_level, measured).items()
        },
    }
    head = (
        "# The timing model's error on published runs, quoted by decode, prefill and trace\n"
        "# (tokenwalk.timing.accuracy). Written by benchmarks/accuracy.py --write-data; redo it "
        "after\n"
        "# every refit of data/timing.yaml (a test checks timing_sha256).\n"
    )
    return head + yaml.safe_dump(data, sort_keys=False, width=100, default_flow_style=None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--draws",
        type=int,
        default=0,
        metavar="N",
        help="also cross-validate N times with every measured speed moved by a random 1%%",
    )
    ap.add_argument("--save", type=Path, metavar="FILE", help="write the CV predictions (JSON)")
    ap.add_argument(
        "--against",
        type=Path,
        metavar="FILE",
        help="compare with the CV predictions of another version of the model (a --save file)",
    )
    ap.add_argument(
        "--write-data",
        action="store_true",
        help="write the errors the commands quote to data/accuracy.yaml",
    )
    ap.add_argument(
        "--seed-influence",
        action="store_true",
        help="also refit with each other device left out and print the seed laptop's prefill",
    )
    args = ap.parse_args()
    if args.draws < 0:
        ap.error("--draws must be 0 or more")
    if args.against is not None:
        try:
            json.loads(args.against.read_text(encoding="utf-8"))["cv_tok_s"].items()
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            ap.error(f"--against {args.against}: not a file written by --save ({e})")
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
    for ph in PHASES:
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
    by_level = {lv: cross_validate_groups(design, lv, fit) for lv in GROUP_LEVELS}
    print_group_out(obs, by_level, cv, meas)
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
    figures = headline(obs, cv, meas)
    mean_log = figures["mean |ln(predicted / measured)|"]
    print(f"\nmean |ln(predicted / measured)|, CV: {mean_log:.3f}")
    intervals = device_intervals(obs, cv, meas)
    spread = draws(obs, args.draws) if args.draws else []
    lo, hi = INTERVAL
    print(
        f"\nheadline figures, CV: on the data; {lo:.0f}th to {hi:.0f}th percentile over "
        f"{RESAMPLES:,} resamples of the devices"
        + (
            f"; the range over {args.draws} draws with every measured speed moved by a random "
            f"{DRAW_SIGMA:.0%}"
            if spread
            else ""
        )
    )
    for name, value in figures.items():
        f = ".1f" if name.endswith("%") else ".3f"
        line = f"  {name:34} {value:7{f}}"
        line += (
            f"   {intervals[name][0]:7{f}} to {intervals[name][1]:7{f}}"
            if name in intervals
            else f"   {'':18}"
        )
        if spread:
            vals = [d[name] for d in spread if name in d]
            line += f"   {min(vals):7{f}} to {max(vals):7{f}}"
        print(line)
    if args.against is not None:
        before = read_saved(args.against, row_keys(obs))
        both = np.flatnonzero(np.isfinite(before))
        sub = [obs[i] for i in both]
        lo, hi = INTERVAL
        print(
            f"\nagainst {args.against} ({both.size} of {len(obs)} rows in both): the change of "
            f"each figure over {PAIRED_RESAMPLES:,} resamples of the devices; median, {lo:.0f}th "
            f"to {hi:.0f}th percentile, share of resamples lower"
        )
        old = headline(sub, before[both], meas[both])
        new = headline(sub, cv[both], meas[both])
        changes = paired_changes(sub, before[both], cv[both], meas[both])
        for name in old:
            if name not in new:
                continue
            f = ".1f" if name.endswith("%") else ".3f"
            line = f"  {name:34} {old[name]:7{f}} -> {new[name]:7{f}}"
            if name in changes:
                med, c_lo, c_hi, lower = changes[name]
                line += f"   {med:+7{f}}  {c_lo:+7{f}} to {c_hi:+7{f}}  {lower:4.0%}"
            print(line)
        print_group_against(obs, args.against, by_level, meas)
    if args.seed_influence:
        base, each = seed_without_each(obs, design)
        ratios = np.array([r for r, _ in each])
        print(
            f"\nthe seed laptop's prefill left out ({base:.2f}x), with one more device left out "
            f"as well ({len(each)} fits): {ratios.min():.2f}x to {ratios.max():.2f}x, median "
            f"{np.median(ratios):.2f}x, within 2x in {int((ratios <= 2.0).sum())} of "
            f"{len(each)}; the device's rows in brackets"
        )
        rows = {d: sum(device_of(o.machine) == d for o in obs) for _, d in each}
        print(f"  {'lowest':38}highest")
        for (lo_r, lo_d), (hi_r, hi_d) in zip(each[:5], each[::-1][:5], strict=True):
            low = f"{lo_r:.2f}x without {lo_d} ({rows[lo_d]})"
            print(f"  {low:38}{hi_r:.2f}x without {hi_d} ({rows[hi_d]})")
    if args.write_data:
        path = DATA / "accuracy.yaml"
        path.write_text(accuracy_yaml(obs, cv, ins, meas, by_level), encoding="utf-8")
        print(f"\nthe errors the commands quote written to {path}")
    if args.save is not None:
        keys = row_keys(obs)
        payload = {
            "cv_tok_s": dict(zip(keys, map(float, cv), strict=True)),
            "group_out_tok_s": {
                lv: dict(zip(keys, map(float, pred), strict=True)) for lv, pred in by_level.items()
            },
        }
        args.save.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
        print(f"\nthe CV predictions written to {args.save}")
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
