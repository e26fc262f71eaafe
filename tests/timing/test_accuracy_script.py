"""benchmarks/accuracy.py's headline figures: the numbers the issue's targets name, computed
the way docs/accuracy.md says."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "accuracy.py"


def _script():
    spec = importlib.util.spec_from_file_location("accuracy_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _row(phase: str, kind: str, moe: bool = False, machine: str = "m") -> SimpleNamespace:
    return SimpleNamespace(phase=phase, machine=machine, meta={"kind": kind, "moe": moe})


def test_the_headline_figures():
    acc = _script()
    obs = [_row("decode", "gpu")] * 3 + [_row("prefill", "gpu", moe=True)] * 5
    obs += [_row("prefill", "igpu", machine=acc.SEED_MACHINE)]
    measured = np.full(len(obs), 100.0)
    pred = np.array([110, 90, 105, 120, 80, 100, 100, 130, 200.0])
    h = acc.headline(obs, pred, measured)
    assert h["decode median %"] == pytest.approx(10.0)
    assert h["prefill median %"] == pytest.approx(20.0)  # 20, 20, 0, 0, 30, 100
    assert h["prefill gpu median %"] == pytest.approx(20.0)
    assert "prefill igpu median %" not in h  # a class of fewer than CLASS_MIN_ROWS rows
    assert h["prefill MoE median %"] == pytest.approx(20.0)
    assert h["seed prefill, x measured"] == pytest.approx(2.0)
    assert h["mean |ln(predicted / measured)|"] == pytest.approx(
        np.mean(np.abs(np.log(pred / measured)))
    )


def test_device_intervals():
    acc = _script()
    # three devices whose prefill rows are 10%, 20% and 30% off, and the seed's one row
    obs = [_row("prefill", "gpu", machine=m) for m in ("a", "a", "b", "b", "c", "c")]
    obs += [_row("prefill", "igpu", machine=acc.SEED_MACHINE)]
    pred = np.array([110, 110, 120, 120, 130, 130, 300.0])
    measured = np.full(len(obs), 100.0)
    iv = acc.device_intervals(obs, pred, measured, n=200)
    lo, hi = iv["prefill gpu median %"]
    assert 10.0 <= lo < hi <= 30.0  # which devices are drawn moves the median
    assert "seed prefill, x measured" not in iv  # one row: no interval
    assert iv == acc.device_intervals(obs, pred, measured, n=200)  # seeded
    # devices that agree leave nothing to resample
    same = np.array([120.0] * 6 + [300.0])
    assert acc.device_intervals(obs, same, measured, n=50)["prefill gpu median %"] == (
        pytest.approx(20.0),
        pytest.approx(20.0),
    )


def test_paired_changes():
    acc = _script()
    obs = [_row("prefill", "gpu", machine=m) for m in ("a", "a", "b", "b", "c", "c")]
    measured = np.full(len(obs), 100.0)
    before = np.array([110, 110, 120, 120, 130, 130.0])
    after = np.array([105, 105, 110, 110, 120, 120.0])  # every device closer
    ch = acc.paired_changes(obs, before, after, measured, n=200)
    median, lo, hi, lower = ch["prefill median %"]
    assert hi < 0 and lower == 1.0
    assert median == pytest.approx(-10.0, abs=5.0)
    same = acc.paired_changes(obs, before, before.copy(), measured, n=50)["prefill median %"]
    assert same == (0.0, 0.0, 0.0, 0.0)
    assert ch == acc.paired_changes(obs, before, after, measured, n=200)  # seeded


def test_saved_predictions_are_keyed_by_row(tmp_path: Path):
    acc = _script()
    obs = [SimpleNamespace(label=x) for x in ("r1", "r2", "r1")]  # a label published twice
    keys = acc.row_keys(obs)
    assert keys == ["r1 #1", "r2 #1", "r1 #2"]
    path = tmp_path / "cv.json"
    path.write_text('{"cv_tok_s": {"r1 #1": 10.0, "r1 #2": 30.0}}', encoding="utf-8")
    got = acc.read_saved(path, keys)
    assert got[0] == 10.0 and np.isnan(got[1]) and got[2] == 30.0


def test_a_figure_without_each_device():
    acc = _script()
    left_out: list[str | None] = []

    def figure(device):
        left_out.append(device)
        return {"a": 2.5, "b": 1.5, "c": 2.0}[device]

    assert acc.without_each(["c", "a", "b", "a"], figure) == [(1.5, "b"), (2.0, "c"), (2.5, "a")]
    assert sorted(left_out) == ["a", "b", "c"]  # each device once, however many rows it has


def test_the_group_out_table():
    acc = _script()
    # two kinds; the gpu rows 10% and 30% off with their kind left out, the cpu row 50%
    obs = [
        SimpleNamespace(phase="decode", machine=m, meta={"kind": k, "segment": s, "moe": False})
        for m, k, s in (("a", "gpu", "nvidia geforce"), ("b", "gpu", "nvidia pro"))
    ]
    obs += [SimpleNamespace(phase="decode", machine="c", meta={"kind": "cpu", "segment": "x cpu"})]
    measured = np.full(3, 100.0)
    by_level = {"kind": np.array([110, 130, 150.0]), "segment": np.array([105, 95, 120.0])}
    t = acc.group_out_table(obs, by_level, measured)["decode"]
    assert t["kind"]["all"]["median_pct"] == pytest.approx(30.0)
    assert t["kind"]["gpu"]["median_pct"] == pytest.approx(20.0)
    assert t["kind"]["cpu"]["n_rows"] == 1
    assert t["segment"]["nvidia pro"]["signed_median_pct"] == pytest.approx(-5.0)
    # every level's predictions of every row together: 5, 5, 10, 20, 30, 50
    assert t["pooled"]["all"]["n_rows"] == 6
    assert t["pooled"]["all"]["median_pct"] == pytest.approx(15.0)
    # what a machine of a class never measured quotes: its kind's rows, each class left out
    assert t["segment, per kind"]["gpu"]["median_pct"] == pytest.approx(5.0)
    assert t["segment, per kind"]["cpu"]["median_pct"] == pytest.approx(20.0)
