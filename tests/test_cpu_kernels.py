"""The CPU kernel measurements (tests/data/cpu-kernels, made by scripts/cpu_kernels.py) and the
table docs/timing-model.md shows of them: one model quantized --pure to each type, pp512 on
one thread of the project's own machine."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "cpu-kernels"


def _measured() -> dict[str, float]:
    """pp512 tok/s per weight type, as llama-bench wrote it."""
    out = {}
    for path in sorted(DATA.glob("*.json")):
        runs = json.loads(path.read_text(encoding="utf-8"))
        (pp,) = [r for r in runs if r["n_prompt"] == 512 and r["n_gen"] == 0]
        assert pp["n_threads"] == 1 and pp["n_batch"] >= 512
        out[path.stem] = pp["avg_ts"]
    return out


def _documented() -> dict[str, tuple[float, float]]:
    """(pp512, time vs Q4_K) per type, from the table in docs/timing-model.md."""
    page = (ROOT / "docs" / "timing-model.md").read_text(encoding="utf-8")
    section = page.split("### CPU kernels per weight type")[1]
    table = "\n".join(x for x in section.split("On this machine")[0].splitlines() if x[:2] == "| ")
    cells = re.findall(r"\| ([A-Z0-9_]+) \| ([\d,]+) \| ([\d.]+) \|", table)
    return {t: (float(pp.replace(",", "")), float(r)) for t, pp, r in cells}


def test_every_type_was_measured_on_the_same_model():
    runs = [json.loads(p.read_text(encoding="utf-8"))[0] for p in sorted(DATA.glob("*.json"))]
    assert len(runs) == 14
    assert {r["model_n_params"] for r in runs} == {runs[0]["model_n_params"]}
    assert {r["build_commit"] for r in runs} == {runs[0]["build_commit"]}


def test_the_documented_table_is_the_measurement():
    measured, shown = _measured(), _documented()
    assert shown.keys() == measured.keys()
    for qtype, (pp, ratio) in shown.items():
        assert pp == pytest.approx(measured[qtype], abs=0.51), qtype
        assert ratio == pytest.approx(measured["Q4_K"] / measured[qtype], abs=0.005), qtype
