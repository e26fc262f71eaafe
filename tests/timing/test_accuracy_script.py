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


def _group_rows(acc):
    """Two kinds of 5 devices each; their group-out predictions 10% and 40% off."""
    obs = [
        SimpleNamespace(
            phase="prefill",
            machine=f"{k}{i}",
            meta={"kind": k, "segment": f"{k} seg", "backend": "b", "moe": False},
        )
        for k in ("gpu", "cpu")
        for i in range(5)
    ]
    measured = np.full(len(obs), 100.0)
    pred = np.array([110.0] * 5 + [140.0] * 5)
    return obs, measured, pred


def test_the_group_out_figures():
    acc = _script()
    obs, measured, pred = _group_rows(acc)
    phase = np.array([o.phase for o in obs])
    labels = {lv: np.array([acc.group_of(o, lv) for o in obs], dtype=object) for lv in ("kind",)}
    f = acc.group_figures(phase, labels, {"kind": pred}, measured)
    assert f["group-out prefill median %"] == pytest.approx(25.0)  # 10 x5, 40 x5
    assert "group-out decode median %" not in f  # no decode rows
    assert f["groups of 5+ rows above 30%"] == 1.0  # cpu (40%), not gpu (10%)


def test_paired_group_changes():
    acc = _script()
    obs, measured, before = _group_rows(acc)
    after = np.array([110.0] * 5 + [120.0] * 5)  # the cpu kind comes within 30%
    ch = acc.paired_group_changes(obs, {"kind": before}, {"kind": after}, measured, n=200)
    median, lo, hi, lower = ch["groups of 5+ rows above 30%"]
    # -1 where a resample draws 5+ cpu devices; 0 where it draws fewer (the group too small)
    assert median == -1.0 and hi == 0.0 and 0.5 < lower < 1.0
    assert ch["group-out prefill median %"][0] < 0
    same = acc.paired_group_changes(obs, {"kind": before}, {"kind": before}, measured, n=50)
    assert same["group-out prefill median %"] == (0.0, 0.0, 0.0, 0.0)


def test_saved_group_out_predictions(tmp_path: Path):
    acc = _script()
    path = tmp_path / "cv.json"
    path.write_text(
        '{"cv_tok_s": {"r1 #1": 10.0}, "group_out_tok_s": {"kind": {"r1 #1": 12.0}}}',
        encoding="utf-8",
    )
    assert acc.read_saved(path, ["r1 #1"], "kind")[0] == 12.0
    assert np.isnan(acc.read_saved(path, ["r1 #1"], "backend")[0])  # a grouping not saved
