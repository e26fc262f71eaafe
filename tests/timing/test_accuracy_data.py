"""data/accuracy.yaml: the errors decode and prefill quote, and which of them a machine gets."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tokenwalk.cli import main
from tokenwalk.errors import SpecError
from tokenwalk.machine import resolve_machine
from tokenwalk.timing.accuracy import (
    CLASS_MIN_ROWS,
    CLASS_QUOTE,
    AccuracyData,
    accuracy_data,
    expected_error,
    fit_fingerprint,
)

DATA = Path(__file__).parents[2] / "data"


def test_the_quoted_errors_were_measured_with_the_shipped_fit():
    """A refit leaves data/accuracy.yaml stale: `python benchmarks/accuracy.py --write-data`."""
    timing = (DATA / "timing.yaml").read_text(encoding="utf-8")
    assert accuracy_data().timing_sha256 == fit_fingerprint(timing)


def test_the_fingerprint_is_the_fit_not_its_date():
    text = "fitted: '2026-12-03'\nglobal:\n  eff_bw: 0.5\n"
    assert fit_fingerprint(text) == fit_fingerprint(text.replace("12-03", "12-04"))
    assert fit_fingerprint(text) != fit_fingerprint(text.replace("0.5", "0.6"))


def test_the_quoted_errors_are_the_accuracy_pages():
    """The figures docs/accuracy.md prints for all rows are the ones quoted."""
    page = (Path(__file__).parents[2] / "docs" / "accuracy.md").read_text(encoding="utf-8")
    d = accuracy_data()
    for phase in ("decode", "prefill"):
        e = d.cross_validated[phase]["all"]
        row = rf"\n  all\s+{e.n_rows}\s+{e.median_pct:.1f}%\s+{e.p90_pct:.1f}%"
        assert re.search(row, page), (phase, row)


def _quoted(slug: str, phase: str, **kw):
    return expected_error(resolve_machine(slug, **kw), phase)


def test_a_machine_with_runs_of_the_phase_gets_the_in_sample_error_too():
    d = accuracy_data()
    e = _quoted("rtx-4090", "prefill")
    assert e.in_sample == d.in_sample["prefill"]
    assert (e.group, e.cross_validated) == ("gpu", d.cross_validated["prefill"]["gpu"])


def test_a_machine_without_runs_gets_its_class_error():
    d = accuracy_data()
    e = _quoted("h200", "prefill")  # never benchmarked
    assert (e.group, e.in_sample) == ("datacenter", None)
    assert e.cross_validated == d.cross_validated["prefill"]["datacenter"]
    # benchmarked for decode only: its prefill is its groups'
    assert d.machine_rows["jetson-agx-orin-64"]["prefill"] == 0
    assert _quoted("jetson-agx-orin-64", "prefill").in_sample is None
    assert _quoted("jetson-agx-orin-64", "decode").in_sample is not None
    # another backend than its runs': composed from groups
    assert _quoted("rtx-4090", "prefill", backend="vulkan").in_sample is None


def test_a_machine_calibrated_to_its_own_runs_gets_the_in_sample_error_too(tmp_path):
    mine = tmp_path / "machines.yaml"
    mine.write_text(
        "- slug: my-m2\n  name: my M2 Pro\n  kind: apple\n  backend: metal\n"
        "  bandwidth_gbs: 200\n  fp16_tflops: 13.6\n  fp16_kind: vector\n"
        "  fit: {eff_bw: 0.8, eff_compute: 0.6, overhead_per_layer_s: 0.0001, rows_half: 12,"
        " eff_experts: 1, source: tokenwalk calibrate --from runs.json (2 runs)}\n",
        encoding="utf-8",
    )
    e = _quoted("my-m2", "prefill", machines_file=mine)
    assert e.in_sample == accuracy_data().in_sample["prefill"] and e.group == "apple"
    assert resolve_machine("my-m2", machines_file=mine).fit.fitted_to == "machine file"


def test_a_class_of_few_rows_quotes_all_rows():
    d = accuracy_data()
    assert "sbc" not in d.cross_validated["prefill"]
    # a board of a maker's CPUs the data has runs of ('amd cpu'): device-out, of all rows
    e = _quoted("ryzen-ai-max-395-cpu", "prefill", kind="sbc")
    assert (e.group, e.left_out) == ("all", "device")
    assert e.cross_validated == d.cross_validated["prefill"]["all"]
    small = [k for k, v in d.cross_validated["decode"].items() if v.n_rows < CLASS_MIN_ROWS]
    for kind in small:  # none today; the rule stands for data to come
        assert kind != "all"


def test_a_machine_of_a_class_without_runs_quotes_the_group_out_error():
    """A class (maker x segment) with no published runs of the phase: the error of every
    class left out of the fit in turn, not of one device left out beside its class's others."""
    d = accuracy_data()
    for phase in ("decode", "prefill"):
        assert "other cpu" not in d.group_out[phase]["segment"]
        e = _quoted("raspberry-pi-5", phase)  # 'other cpu'
        assert (e.group, e.left_out, e.in_sample) == ("all", "class", None)
        assert e.cross_validated == d.group_out[phase]["segment"]["all"]
    # a Jetson's class has decode runs (its own) and no prefill runs: its kind's rows, each
    # class left out
    assert _quoted("jetson-agx-orin-64", "decode").left_out == "device"
    e = _quoted("jetson-agx-orin-64", "prefill")
    assert (e.group, e.left_out) == ("gpu", "class")
    assert e.cross_validated == d.group_out["prefill"][CLASS_QUOTE]["gpu"]
    # an inline machine whose maker is not given
    inline = expected_error(
        resolve_machine(None, bandwidth=100.0, tflops=10.0, kind="igpu"), "prefill"
    )
    assert inline is not None and (inline.group, inline.left_out) == ("igpu", "class")
    assert inline.cross_validated == d.group_out["prefill"][CLASS_QUOTE]["igpu"]
    # a class with runs: its kind's device-out figure, as before
    e = _quoted("rtx-5090", "decode")
    assert (e.group, e.left_out) == ("gpu", "device")
    assert e.cross_validated == d.cross_validated["decode"]["gpu"]


def test_the_group_out_figures_are_every_class_left_out():
    d = accuracy_data()
    for phase in ("decode", "prefill"):
        by_level = d.group_out[phase]
        assert set(by_level) == {"pooled", "kind", "segment", "backend", "source", CLASS_QUOTE}
        n = d.cross_validated[phase]["all"].n_rows
        assert all(by_level[lv]["all"].n_rows == n for lv in ("kind", "segment", "backend"))
        assert by_level["pooled"]["all"].n_rows == 4 * n
        assert sum(e.n_rows for g, e in by_level["segment"].items() if g != "all") == n
        assert set(by_level[CLASS_QUOTE]) == set(d.cross_validated[phase]) - {"all"}
        assert sum(e.n_rows for e in by_level[CLASS_QUOTE].values()) == n


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[str, str]:
    """A command's stdout and stderr, apart (as every click version keeps them)."""
    assert main(list(argv)) == 0
    captured = capsys.readouterr()
    return captured.out, captured.err


def test_decode_and_prefill_quote_it(capsys):
    out, _ = _run(capsys, "prefill", "qwen3-8b", "-m", "h200", "--prompt", "4k")
    shown = " ".join(out.split())
    assert "typical error" in shown and "datacenter devices never measured" in shown
    quoted = json.loads(_run(capsys, "decode", "qwen3-8b", "-m", "h200", "--json")[0])
    assert quoted["decode_error"]["group"] == "datacenter"
    assert quoted["decode_error"]["in_sample"] is None
    assert "expected_error" not in quoted  # one name per phase, as trace and compare say it
    out, _ = _run(capsys, "decode", "qwen3-8b", "-m", "raspberry-pi-5")
    assert "on devices of classes never measured, as this one's" in " ".join(out.split())
    pi = json.loads(_run(capsys, "decode", "qwen3-8b", "-m", "raspberry-pi-5", "--json")[0])
    assert (pi["decode_error"]["group"], pi["decode_error"]["left_out"]) == ("all", "class")
    assert quoted["decode_error"]["left_out"] == "device"
    out, _ = _run(capsys, "trace", "qwen3-8b", "-m", "h200", "--prompt", "4k", "--json")
    trace = json.loads(out)
    assert trace["prefill_error"]["group"] == trace["decode_error"]["group"] == "datacenter"
    argv = ["compare", "qwen3.6-35b-a3b", "-m", "radeon-890m,rtx-5080", "--cpu-moe", "--json"]
    rows = {r["machine"]: r for r in json.loads(_run(capsys, *argv)[0])["rows"]}
    assert rows["radeon-890m"]["prefill_error"]["group"] == "igpu"
    assert rows["rtx-5080"]["decode_error"] is None  # the experts in the host's RAM
    # a model split over a card and its host has no quoted error
    out, _ = _run(capsys, "decode", "qwen3.6-35b-a3b", "-m", "rtx-5080", "--cpu-moe", "--json")
    assert json.loads(out)["decode_error"] is None


def test_a_conversation_quotes_it(capsys, monkeypatch):
    """`trace --chat` of several calls quotes the error of both phases, as one call's trace does;
    none where the model is split over the card and its host."""
    chat = ["trace", "qwen3-0.6b", "--chat", "docs/examples/clinical-chat.json"]
    argv = [*chat, "-m", "h200"]
    session = json.loads(_run(capsys, *argv, "--json")[0])
    assert len(session["calls"]) == 3
    assert session["prefill_error"]["group"] == session["decode_error"]["group"] == "datacenter"
    monkeypatch.setenv("COLUMNS", "120")
    shown = " ".join(_run(capsys, *argv)[0].split())
    quoted = accuracy_data().cross_validated
    prefill = round(quoted["prefill"]["datacenter"].median_pct)
    decode = round(quoted["decode"]["datacenter"].median_pct)
    assert f"median error: prefill {prefill}%, decode {decode}%" in shown
    split = json.loads(_run(capsys, *chat, "-m", "rtx-4090", "--gpu-layers", "10", "--json")[0])
    assert split["prefill_error"] is None and split["decode_error"] is None


def test_a_bad_accuracy_file_is_a_spec_error(tmp_path):
    bad = tmp_path / "accuracy.yaml"
    bad.write_text("source: x\ntiming_sha256: y\ncross_validated: 3\n", encoding="utf-8")
    with pytest.raises(SpecError, match="cross_validated"):
        accuracy_data(bad)
    assert AccuracyData.model_validate(
        {
            "source": "s",
            "timing_sha256": "h",
            "cross_validated": {},
            "in_sample": {},
            "machine_rows": {},
        }
    )


def test_the_quoted_range_runs_from_the_lower_median_to_the_higher():
    from tokenwalk.render.timing import error_range
    from tokenwalk.timing.accuracy import ExpectedError, PhaseError

    def err(median: float) -> PhaseError:
        return PhaseError(n_rows=9, median_pct=median, p90_pct=50.0, signed_median_pct=0.0)

    assert error_range(ExpectedError(group="gpu", cross_validated=err(14.9))) == "15%"
    assert error_range(ExpectedError(group="gpu", cross_validated=err(14.9), in_sample=err(4))) == (
        "4-15%"
    )
    assert error_range(
        ExpectedError(group="apple", cross_validated=err(2.6), in_sample=err(5.4))
    ) == ("3-5%")
    assert error_range(
        ExpectedError(group="apple", cross_validated=err(4.6), in_sample=err(5.2))
    ) == ("5%")
