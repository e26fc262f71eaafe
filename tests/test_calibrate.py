"""Calibration: a user's llama-bench JSON -> one machine's efficiencies in their machine file."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tokenwalk.calibrate import (
    calibrate_machine,
    observation,
    preset_for,
    read_llama_bench,
    write_machine_fit,
)
from tokenwalk.errors import InputError, SpecError
from tokenwalk.fit import Design, Params, fit_params, predict_tok_s
from tokenwalk.machine import resolve_machine
from tokenwalk.model.resolve import load_model


def bench_row(n_prompt: int, n_gen: int, avg_ts: float) -> dict:
    """One result as `llama-bench -o json` prints it (build 2024, Metal, Llama 2 7B Q4_0)."""
    return {
        "build_commit": "8e672ef",
        "build_number": 1578,
        "cpu_info": "Apple M1 Max",
        "gpu_info": "Apple M1 Max",
        "backends": "Metal,BLAS",
        "model_filename": "models/llama-2-7b.Q4_0.gguf",
        "model_type": "llama 7B Q4_0",
        "model_size": 3825065984,
        "model_n_params": 6738415616,
        "n_batch": 2048,
        "n_ubatch": 512,
        "n_threads": 8,
        "type_k": "f16",
        "type_v": "f16",
        "n_gpu_layers": 99,
        "flash_attn": False,
        "n_prompt": n_prompt,
        "n_gen": n_gen,
        "n_depth": 0,
        "test_time": "2024-01-01T00:00:00Z",
        "avg_ns": int(1e9 * max(n_prompt, n_gen) / avg_ts),
        "stddev_ns": 1000,
        "avg_ts": avg_ts,
        "stddev_ts": 0.1,
    }


@pytest.fixture
def bench_json(tmp_path):
    p = tmp_path / "bench.json"
    p.write_text(json.dumps([bench_row(512, 0, 530.06), bench_row(0, 128, 61.19)], indent=2))
    return p


def test_read_json_and_jsonl(bench_json, tmp_path):
    runs = read_llama_bench(bench_json)
    assert [(r.n_prompt, r.n_gen) for r in runs] == [(512, 0), (0, 128)]
    jl = tmp_path / "bench.jsonl"
    jl.write_text("\n".join(json.dumps(r) for r in json.loads(bench_json.read_text())))
    assert read_llama_bench(jl) == runs


def test_bad_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('[{"model": 1}]')
    with pytest.raises(SpecError):
        read_llama_bench(bad)
    bad.write_text("not json")
    with pytest.raises(SpecError):
        read_llama_bench(bad)


def test_calibrate_one_machine_and_store_it(bench_json, tmp_path):
    m = resolve_machine("apple-m1-max")
    fit = calibrate_machine(m, read_llama_bench(bench_json))
    assert fit.runs == 2
    assert fit.error_after.median_pct <= fit.error_before.median_pct + 0.5
    assert fit.error_after.median_pct < 5
    target = tmp_path / "machines.yaml"
    write_machine_fit(target, m.slug, fit, "test")
    again = resolve_machine("apple-m1-max", machines_file=target)
    assert again.fit.eff_bw == pytest.approx(fit.after["eff_bw"])
    assert again.fit.source == "test"
    write_machine_fit(target, m.slug, fit, "second")  # replaces, does not duplicate
    assert target.read_text().count("slug: apple-m1-max") == 1


def test_cli_calibrate_writes_nothing_on_failure(tmp_path, capsys):
    from tokenwalk.cli import main

    target = tmp_path / "machines.yaml"
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    rc = main(
        [
            "calibrate",
            "--machine",
            "apple-m1-max",
            "--from",
            str(bad),
            "--machines-file",
            str(target),
        ]
    )
    assert rc == 2 and not target.exists()


def test_cli_calibrate(bench_json, tmp_path, capsys):
    from tokenwalk.cli import main

    target = tmp_path / "machines.yaml"
    target.write_text("[]\n")
    rc = main(
        [
            "calibrate",
            "--machine",
            "apple-m1-max",
            "--from",
            str(bench_json),
            "--machines-file",
            str(target),
            "--json",
        ]
    )
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["machine"] == "apple-m1-max" and out["runs"] == 2
    assert "apple-m1-max" in target.read_text()
    assert main(["calibrate", "--from", str(bench_json)]) == 2  # no --machine


def test_unmatched_model_needs_model_flag():
    m = resolve_machine("apple-m1-max")
    row = bench_row(512, 0, 500.0) | {
        "model_filename": "x.gguf",
        "model_n_params": 123,
        "model_size": 456,
    }
    from tokenwalk.calibrate import BenchRun

    run = BenchRun(**{k: row[k] for k in BenchRun.__dataclass_fields__})
    with pytest.raises(InputError, match="--model"):
        calibrate_machine(m, [run])


def test_preset_for_labels_and_sizes():
    assert preset_for("llama-2-7b", "Q4_0", None) == "Q4_0"
    assert preset_for("llama-2-7b", "unknown (likely Q4_0)", 3.82) in ("Q4_0", "Q4_K_M")
    assert preset_for("llama-2-7b", "4-bit (unspecified)", None) == "Q4_K_M"


def test_fit_recovers_known_parameters():
    """Speeds generated with known efficiencies are fitted back (no noise)."""
    model = load_model("llama-2-7b", "Q4_0").model
    truth = Params(0.6, 0.4, 1e-4).to_x()
    obs = []
    for bw, tf in ((100, 4), (400, 10), (1000, 160), (300, 30)):
        for phase, n in (("decode", 128), ("prefill", 512)):
            obs.append(
                observation(
                    model,
                    label="x",
                    machine="m",
                    kind="gpu",
                    backend="cuda",
                    bandwidth_gbs=bw,
                    tflops=tf,
                    phase=phase,
                    n_tokens=n,
                    tok_s=1.0,
                )
            )
    design = Design(obs)
    measured = predict_tok_s(design, truth)
    obs = [
        o.__class__(**{**o.__dict__, "measured_tok_s": float(v)})
        for o, v in zip(obs, measured, strict=True)
    ]
    design = Design(obs)
    x = fit_params(design, np.ones(design.n, dtype=bool))
    assert np.allclose(np.exp(x), np.exp(truth), rtol=0.05)
