"""Calibration: a user's llama-bench JSON -> one machine's efficiencies in their machine file."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tokenwalk.errors import InputError, SpecError
from tokenwalk.machine import resolve_machine
from tokenwalk.model.resolve import load_model
from tokenwalk.timing.calibrate import (
    GROUP_LEVELS,
    benchmark_observations,
    calibrate_machine,
    cross_validate,
    cross_validate_groups,
    device_of,
    named_preset,
    observation,
    preset_for,
    read_llama_bench,
    source_group,
    write_machine_fit,
)
from tokenwalk.timing.efficiency import fit_keys
from tokenwalk.timing.fit import Design, Params, fit_hierarchy, predict_tok_s


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
    assert fit.n_runs == 2
    assert fit.error_after.median_pct <= fit.error_before.median_pct + 0.5
    assert fit.error_after.median_pct < 5
    target = tmp_path / "machines.yaml"
    write_machine_fit(target, m.slug, fit, "test")
    again = resolve_machine("apple-m1-max", machines_file=target)
    assert again.fit.eff_bw == pytest.approx(fit.after["eff_bw"])
    assert again.fit.source == "test"
    write_machine_fit(target, m.slug, fit, "second")  # replaces, does not duplicate
    assert target.read_text().count("slug: apple-m1-max") == 1


def test_a_model_that_is_not_the_runs_one_is_refused(bench_json, tmp_path, capsys):
    # the runs say Llama 2 7B (6.74 B parameters, 3.83 GB); a 70B --model is refused, and
    # nothing is written
    from tokenwalk.cli import main

    m = resolve_machine("apple-m1-max")
    with pytest.raises(InputError, match="llama-3.1-70b.*not the model"):
        calibrate_machine(m, read_llama_bench(bench_json), load_model("llama-3.1-70b").model)
    target = tmp_path / "machines.yaml"
    argv = ["calibrate", "-m", "apple-m1-max", "--from", str(bench_json)]
    assert main([*argv, "--model", "llama-3.1-70b", "--machines-file", str(target)]) == 2
    assert "not the model" in capsys.readouterr().err and not target.exists()
    # the right model, by name and quant, is taken
    fit = calibrate_machine(
        m, read_llama_bench(bench_json), load_model("llama-2-7b", quant="Q4_0").model
    )
    assert fit.error_after.median_pct < 5


def test_a_fit_that_misses_its_runs_is_never_stored(tmp_path):
    # runs ten times faster than the machine can read its weights: no efficiency explains them
    fast = tmp_path / "fast.json"
    fast.write_text(json.dumps([bench_row(512, 0, 5300.6), bench_row(0, 128, 611.9)]))
    with pytest.raises(InputError, match="not stored"):
        calibrate_machine(resolve_machine("apple-m1-max"), read_llama_bench(fast))


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


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"\x86\xc0n\x8c\x00\xff", "not UTF-8 text"),
        (b'[{"avg_ts": "fast", "n_prompt": 512}]', "positive avg_ts"),
        (b'[{"avg_ts": NaN, "n_gen": 128}]', "positive avg_ts"),
    ],
)
def test_a_bad_llama_bench_file_is_one_clear_line(tmp_path, capsys, content, says):
    from tokenwalk.cli import main

    bad = tmp_path / "bench.json"
    bad.write_bytes(content)
    assert main(["calibrate", "--machine", "rtx-4090", "--from", str(bad), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1 and "internal error" not in err


def test_the_machine_file_docs_calibrate_shows_is_what_calibrate_writes(tmp_path, capsys):
    """docs/calibrate.md shows, by hand, the fit its example llama-bench file writes."""
    import yaml

    from tokenwalk.cli import main

    root = Path(__file__).parents[2]
    target = tmp_path / "my-machines.yaml"
    bench = root / "docs" / "examples" / "llama-bench-m2-pro.json"
    argv = ["calibrate", "--machine", "apple-m2-pro", "--from", str(bench)]
    assert main([*argv, "--machines-file", str(target)]) == 0
    written = yaml.safe_load(target.read_text())[0]["fit"]
    page = (root / "docs" / "calibrate.md").read_text(encoding="utf-8")
    shown = page[page.index("$ cat my-machines.yaml") :]
    shown = yaml.safe_load(shown[shown.index("\n") : shown.index("```")])[0]["fit"]
    for key in ("eff_bw", "eff_compute", "overhead_per_layer_s", "rows_half", "eff_experts"):
        assert shown[key] == pytest.approx(written[key], rel=1e-3), key


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
    assert out["machine"] == "apple-m1-max" and out["n_runs"] == 2
    assert "apple-m1-max" in target.read_text()
    assert main(["calibrate", "--from", str(bench_json)]) == 2  # no --machine


def test_unmatched_model_needs_model_flag():
    m = resolve_machine("apple-m1-max")
    row = bench_row(512, 0, 500.0) | {
        "model_filename": "x.gguf",
        "model_n_params": 123,
        "model_size": 456,
    }
    from tokenwalk.timing.calibrate import BenchRun

    run = BenchRun(**{k: row[k] for k in BenchRun.__dataclass_fields__})
    with pytest.raises(InputError, match="--model"):
        calibrate_machine(m, [run])


def test_calibrate_stores_where_probe_does(bench_json, tmp_path, capsys, monkeypatch):
    """With $TOKENWALK_MACHINES set and no --machines-file, calibrate writes that file, as
    `probe --write` does, and leaves the config directory alone."""
    from tokenwalk.cli import main

    target = tmp_path / "mine.yaml"
    target.write_text("[]\n")
    monkeypatch.setenv("TOKENWALK_MACHINES", str(target))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("HOME", str(tmp_path))
    argv = ["calibrate", "--machine", "apple-m1-max", "--from", str(bench_json), "--json"]
    assert main(argv) == 0
    assert "apple-m1-max" in target.read_text()
    assert not (tmp_path / "config").exists()


@pytest.mark.parametrize(
    "model_type, preset",
    [
        ("llama 256M Q4_1", "Q4_1"),
        ("gemma3 270M Q4_K - Medium", "Q4_K_M"),
        ("llama 8B Q4_K - Small", "Q4_K_S"),
        ("llama 8B IQ4_XS - 4.25 bpw", "IQ4_XS"),
        ("llama 7B F16", "F16"),
        ("llama 7B all F32", None),
        ("llama 7B", None),
    ],
)
def test_the_file_type_llama_bench_names_is_the_preset(model_type, preset):
    assert named_preset(model_type) == preset


def test_a_q4_1_file_is_matched_as_q4_1_not_by_size():
    """SmolLM2 135M Q4_1 (96.6 MB) was matched by size alone to Q4_K_S."""
    m = resolve_machine("xeon-kvm-2c-2t")
    row = bench_row(0, 128, 119.1) | {
        "model_filename": "/models/SmolLM2-135M-Instruct.Q4_1.gguf",
        "model_type": "llama 256M Q4_1",
        "model_size": 96576768,
        "model_n_params": 134515008,
    }
    from tokenwalk.timing.calibrate import BenchRun

    run = BenchRun(**{k: row[k] for k in BenchRun.__dataclass_fields__})
    assert [p["test"] for p in calibrate_machine(m, [run]).predictions] == [
        "smollm2-135m Q4_1 tg128"
    ]


def test_a_fit_at_its_bound_says_so(bench_json):
    """Runs faster than the machine's bandwidth allows leave eff_bw at 100%: the answer names
    it (`at_bound` in --json, a line in the view); at its catalogue bandwidth it is not named."""
    from rich.console import Console

    from tokenwalk.render.calibrate import render_machine_fit

    runs = read_llama_bench(bench_json)
    assert "eff_bw" not in calibrate_machine(resolve_machine("apple-m1-max"), runs).at_bound
    fit = calibrate_machine(resolve_machine("apple-m1-max", bandwidth=200), runs)
    assert "eff_bw" in fit.at_bound
    console = Console(width=200, record=True)
    render_machine_fit(fit, console, None)
    text = " ".join(console.export_text().split())
    assert "at 100%: the fit would go past the machine's bandwidth" in text
    assert text.count("eff_bw") >= 2  # its column, and the line that names it


def test_preset_for_labels_and_sizes():
    assert preset_for("llama-2-7b", "Q4_0", None) == "Q4_0"
    assert preset_for("llama-2-7b", "unknown (likely Q4_0)", 3.82) in ("Q4_0", "Q4_K_M")
    assert preset_for("llama-2-7b", "4-bit (unspecified)", None) == "Q4_K_M"


def _synthetic(models, machines, truth_for):
    """Observations whose measured speeds are the model's own predictions with known parameters:
    decode, and prefill of short and long prompts (so that the row term is pinned)."""
    obs = []
    for slug, kind, backend, bw, tf in machines:
        for model in models:
            for phase, n in (("decode", 128), ("prefill", 64), ("prefill", 512), ("prefill", 2048)):
                obs.append(
                    observation(
                        model,
                        label=f"{slug} {model.name} {phase}{n}",
                        machine=slug,
                        kind=kind,
                        backend=backend,
                        vendor="nvidia" if backend == "cuda" else "amd",
                        bandwidth_gbs=bw,
                        tflops=tf,
                        phase=phase,
                        n_tokens=n,
                        tok_s=1.0,
                    )
                )
    design = Design(obs)
    truth = np.array([truth_for(o) for o in obs])
    measured = predict_tok_s(design, truth)
    obs = [replace(o, measured_tok_s=float(v)) for o, v in zip(obs, measured, strict=True)]
    return Design(obs)


@pytest.fixture(scope="module")
def dense_and_moe():
    return [load_model("llama-2-7b", "Q4_0").model, load_model("qwen3-30b-a3b", "Q4_K_M").model]


def test_fit_recovers_known_parameters(dense_and_moe):
    """Speeds generated with known efficiencies are fitted back (no noise); the routed
    experts' share too, which only the mixture of experts' prefill pins."""
    truth = Params(0.6, 0.4, 1e-4, 48.0, 0.35).to_x()
    machines = [
        ("a", "gpu", "cuda", 100, 4),
        ("b", "gpu", "cuda", 400, 10),
        ("c", "gpu", "cuda", 1000, 160),
        ("d", "gpu", "cuda", 300, 30),
    ]
    design = _synthetic(dense_and_moe, machines, lambda o: truth)
    fit = fit_hierarchy(design, machines=False, levels=())
    assert np.allclose(np.exp(fit.global_x), np.exp(truth), rtol=0.05)


def test_routed_experts_share_moves_only_mixture_of_experts_prefill(dense_and_moe):
    """eff_experts scales the routed-expert products of a GPU's prefill and nothing else: a
    dense model's prefill and every decode (mat-vec kernels) are unchanged, and on a cpu
    backend (whose experts run the dense kernels) the Design carries no expert part."""
    machines = [("g", "gpu", "cuda", 1000, 80), ("c", "cpu", "cpu", 100, 2)]
    design = _synthetic(dense_and_moe, machines, lambda o: Params(0.6, 0.4, 1e-4, 48.0).to_x())
    one = predict_tok_s(design, Params(0.6, 0.4, 1e-4, 48.0, 1.0).to_x())
    half = predict_tok_s(design, Params(0.6, 0.4, 1e-4, 48.0, 0.5).to_x())
    for o, a, b in zip(design.obs, one, half, strict=True):
        moe_prefill = o.meta["moe"] and o.phase == "prefill" and o.meta["backend"] == "cuda"
        if moe_prefill:
            assert b < 0.9 * a, o.label
        else:
            assert b == pytest.approx(a, rel=1e-12), o.label


def test_groups_carry_what_their_machines_share(dense_and_moe):
    """Two groups with different compute efficiencies: each group's offset recovers its own,
    and a machine never seen is predicted from its group, not from the other one."""
    fast = Params(0.8, 0.6, 4e-5, 32.0).to_x()
    slow = Params(0.5, 0.15, 4e-5, 128.0).to_x()
    machines = [
        ("n1", "gpu", "cuda", 1000, 80),
        ("n2", "gpu", "cuda", 500, 40),
        ("a1", "igpu", "vulkan", 120, 20),
        ("a2", "igpu", "vulkan", 250, 30),
    ]
    design = _synthetic(
        dense_and_moe, machines, lambda o: fast if o.meta["backend"] == "cuda" else slow
    )
    fit = fit_hierarchy(design, machines=False)
    keys = fit_keys("amd", "igpu", "vulkan")
    got = Params.from_x(fit.x_for(keys))
    assert got.eff_compute == pytest.approx(0.15, rel=0.2)
    assert got.rows_half == pytest.approx(128, rel=0.35)
    assert Params.from_x(fit.x_for(fit_keys("nvidia", "gpu", "cuda"))).eff_compute == (
        pytest.approx(0.6, rel=0.2)
    )


def test_a_machine_fit_is_pulled_towards_its_group(dense_and_moe):
    """One machine whose rows disagree with its group: its own offset moves it, and the prior
    keeps the parameters its rows cannot see (no prefill rows: compute stays the group's)."""
    group = Params(0.8, 0.5, 4e-5, 32.0).to_x()
    machines = [("g1", "gpu", "cuda", 1000, 80), ("g2", "gpu", "cuda", 500, 40)]
    design = _synthetic(dense_and_moe, machines, lambda o: group)
    odd = observation(
        dense_and_moe[0],
        label="odd decode",
        machine="odd",
        kind="gpu",
        backend="cuda",
        vendor="nvidia",
        bandwidth_gbs=800,
        tflops=60,
        phase="decode",
        n_tokens=128,
        tok_s=1.0,
    )
    slow = Design([odd])
    measured = predict_tok_s(slow, Params(0.4, 0.5, 4e-5, 32.0).to_x())[0]
    design = Design([*design.obs, replace(odd, measured_tok_s=float(measured))])
    fit = fit_hierarchy(design)
    own = Params.from_x(fit.x_for(fit_keys("nvidia", "gpu", "cuda", "odd")))
    assert own.eff_bw < 0.6  # its decode pins the bandwidth share
    assert own.eff_compute == pytest.approx(0.5, rel=0.2)  # nothing pins compute: the group's


# -- the refit of the shipped defaults: where it writes, what it shows while it runs -----------


@pytest.fixture(scope="module")
def refit():
    """One refit of the shipped defaults (a few seconds), shared by the tests below."""
    from tokenwalk.timing.calibrate import fit_defaults

    steps: list[tuple[str, int, int | None]] = []
    fit = fit_defaults(lambda what, done, total: steps.append((what, done, total)))
    return fit, steps


def test_a_run_partly_from_system_ram_is_not_fitted(refit):
    """A row marked `offloaded` (the source says part of the model ran from RAM) measures the
    card and the host together: the fit of the card leaves it out, and says why."""
    fit, _ = refit
    why = "part of the model ran from system RAM"
    gone = [e for e in fit.excluded if e.endswith(why)]
    assert any(e.startswith("rtx-3060-12gb gpt-oss-20b MXFP4 tg128") for e in gone)
    assert not any(u.startswith("rtx-3060-12gb gpt-oss-20b") for u in fit.used)


def test_the_refit_reports_its_progress(refit):
    fit, steps = refit
    reading = [s for s in steps if s[0] == "reading published runs"]
    assert [d for _, d, _ in reading] == list(range(len(reading)))  # one step per row, in order
    assert reading[0][2] == fit.rows_used + fit.rows_excluded
    assert steps[-1] == (f"fitting the timing model to {fit.rows_used:,} runs", 0, None)


def _terminal_stderr(monkeypatch):
    """Make the progress bar draw into a buffer, as on a terminal."""
    import io

    from rich.console import Console

    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=80)
    monkeypatch.setattr("tokenwalk.cli.progress._stderr_console", lambda: console)
    return buffer


@pytest.mark.parametrize("flags", [[], ["--json"], ["--csv"]])
def test_calibrate_shows_progress_on_stderr_unless_for_scripts(refit, capsys, monkeypatch, flags):
    from tokenwalk.cli import main

    fit, _ = refit

    def fake_fit(progress=None):
        for i in range(3):
            progress("reading published runs", i, 3)
        progress("fitting the timing model to 307 runs", 0, None)
        return fit

    monkeypatch.setattr("tokenwalk.timing.calibrate.fit_defaults", fake_fit)
    buffer = _terminal_stderr(monkeypatch)
    # --csv of a refit may be refused (no rows for it), after the fit: silent either way
    assert main(["calibrate", *flags]) in ((0, 2) if "--csv" in flags else (0,))
    out = capsys.readouterr().out
    drawn = buffer.getvalue()
    if flags:
        assert drawn == ""
        assert "Fit residuals" not in out
    else:
        assert "reading published runs" in drawn and "fitting the timing model" in drawn
        assert "Fit residuals" in out and "Error:" not in out


def test_calibrate_from_shows_progress(bench_json, tmp_path, capsys, monkeypatch):
    from tokenwalk.cli import main

    buffer = _terminal_stderr(monkeypatch)
    argv = ["calibrate", "-m", "apple-m1-max", "--from", str(bench_json), "--dry-run"]
    assert main(argv) == 0
    assert "reading your runs" in buffer.getvalue()
    assert "fitting apple-m1-max to 2 runs" in buffer.getvalue()


def test_write_defaults_refuses_an_installed_package(capsys, monkeypatch):
    """Run from a wheel, --write-defaults writes nothing and says where to look instead."""
    from tokenwalk.cli import main

    def never(progress=None):
        raise AssertionError("refused before fitting")

    monkeypatch.setattr("tokenwalk.timing.calibrate._checkout_root", lambda: None)
    monkeypatch.setattr("tokenwalk.timing.calibrate.fit_defaults", never)
    assert main(["calibrate", "--write-defaults"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("tokenwalk: error: --write-defaults")
    assert "source checkout" in err and "pip install -e ." in err


def test_write_defaults_writes_the_checkout_it_runs_from(refit, tmp_path, capsys, monkeypatch):
    from tokenwalk.cli import main
    from tokenwalk.timing.calibrate import defaults_target

    fit, _ = refit
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'tokenwalk'\n")
    (tmp_path / "data").mkdir()
    target = tmp_path / "data" / "timing.yaml"
    target.write_text("fitted: old\n")
    monkeypatch.setattr("tokenwalk.timing.calibrate._checkout_root", lambda: tmp_path)
    monkeypatch.setattr("tokenwalk.catalog.data_path", lambda name: tmp_path / "data" / name)
    monkeypatch.setattr("tokenwalk.timing.calibrate.fit_defaults", lambda progress=None: fit)
    assert defaults_target() == target
    assert main(["calibrate", "--write-defaults"]) == 0
    captured = capsys.readouterr()
    assert f"wrote {target}" in captured.err
    assert target.read_text().count("prior_width:") == 1 and "fitted: old" not in target.read_text()
    assert "written to" in " ".join(captured.out.split())
    from tokenwalk.timing.efficiency import timing_defaults

    timing_defaults.cache_clear()  # the next test reads the real file again


def test_the_checkout_of_this_test_run_is_found_or_the_install_is_refused():
    """Run from a checkout (pip install -e .), --write-defaults writes its data/timing.yaml;
    from an installed copy (CI's `pip install .`), it refuses."""
    from pathlib import Path

    import tokenwalk
    from tokenwalk.timing.calibrate import defaults_target

    root = Path(__file__).resolve().parents[2]
    if Path(tokenwalk.__file__).resolve().is_relative_to(root / "src"):
        assert defaults_target() == root / "data" / "timing.yaml"
    else:
        with pytest.raises(InputError, match="installed package"):
            defaults_target()


def test_progress_shows_a_hostile_name_as_data(monkeypatch):
    from tokenwalk.cli.progress import StepProgress

    buffer = _terminal_stderr(monkeypatch)
    with StepProgress() as progress:
        progress("fitting \x1b[2Jbox to 2 runs", 0, None)
    assert "\x1b[2J" not in buffer.getvalue()


def test_progress_never_draws_into_a_pipe(monkeypatch):
    from tokenwalk.cli.progress import StepProgress

    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setattr("sys.stderr.isatty", lambda: False, raising=False)
    assert StepProgress().enabled is False


def test_the_tiles_variant_adds_expert_tile_time_to_moe_prefill_only(dense_and_moe):
    """Cross-validation's "tiles" variant adds F_pad / FLOPS to the compute of MoE prefill
    passes on a padding backend; the shipped model ("rows") carries none."""
    from tokenwalk.timing.calibrate import variant_design

    machines = [("n1", "gpu", "cuda", 1000, 80), ("c1", "cpu", "cpu", 100, 2)]
    design = _synthetic(dense_and_moe, machines, lambda o: Params(0.7, 0.5, 1e-4, 32.0).to_x())
    shipped, _, _ = variant_design(design, "rows")
    tiled, _, _ = variant_design(design, "tiles")
    assert not shipped.tile.any()
    for i, o in enumerate(design.obs):
        has = tiled.tile[tiled.row == i] > 0
        padded = o.meta["moe"] and o.phase == "prefill" and o.meta["backend"] == "cuda"
        assert has.all() if padded else not has.any(), o.label


def test_the_shipped_fit_is_what_the_data_gives(refit):
    """data/timing.yaml is `tokenwalk calibrate --write-defaults` on data/benchmarks.yaml: a
    change to the data, the catalogue or the model's passes must come with its refit."""
    import yaml

    from tokenwalk.catalog import data_path
    from tokenwalk.timing.calibrate import timing_yaml

    fit, _ = refit
    fresh = yaml.safe_load(timing_yaml(fit))
    shipped = yaml.safe_load(data_path("timing.yaml").read_text(encoding="utf-8"))
    assert fresh["used"] == shipped["used"] and fresh["excluded"] == shipped["excluded"]
    assert fresh["prior_width"] == shipped["prior_width"]

    def close(a, b, where):
        if isinstance(a, dict):
            assert a.keys() == b.keys(), where
            for k in a:
                close(a[k], b[k], f"{where}.{k}")
        else:
            assert a == pytest.approx(b, rel=2e-3, abs=1e-9), where

    for key in ("global", "factors", "groups", "machines"):
        close(fresh[key], shipped[key], key)


@pytest.mark.parametrize(
    ("slug", "quant", "machine"),
    [
        ("qwen3.6-35b-a3b", "Q4_K_M", "radeon-860m"),  # hybrid MoE: scan layers, experts
        ("llama-3.1-8b", "Q4_K_M", "rtx-4090"),
        ("gemma-3-270m", "Q8_0", "xeon-kvm-2c-1t"),  # a cpu backend: mat-vec products count
    ],
)
def test_the_fit_prices_a_pass_as_the_commands_do(slug, quant, machine):
    """`fit.Design` is the vectorised copy of `costs.timing.pass_seconds`: with a machine's
    parameters it predicts the decode and prefill the commands answer."""
    from tokenwalk.timing.calibrate import observation
    from tokenwalk.timing.passes import decode_report, prefill_report

    model = load_model(slug, quant).model
    m = resolve_machine(machine)
    x = Params.of(m.fit).to_x()
    common = dict(
        label="t", machine=m.slug, kind=m.kind, backend=m.backend, vendor=m.vendor,
        bandwidth_gbs=m.bandwidth_gbs, tflops=m.tflops, tok_s=1.0, peak=m.peak,
    )  # fmt: skip
    dec = observation(model, phase="decode", n_tokens=128, **common)
    pre = observation(model, phase="prefill", n_tokens=2048, **common)
    got = predict_tok_s(Design([dec, pre]), x)
    assert got[0] == pytest.approx(decode_report(model, m, ctx=64).tok_s, rel=1e-6)
    assert got[1] == pytest.approx(prefill_report(model, m, prompt=2048).tok_s, rel=1e-6)


def test_the_fit_does_not_move_with_the_data_s_last_digits():
    """One published row changed by 0.1% moves the fitted global parameters by a hair, not by a
    jump to another stopping point (the iterative LSMR step moved them by 4e-3 and the cross-
    validated prefill median by a point; the exact step by about 1e-4)."""
    import tokenwalk.timing.fit
    from tokenwalk.timing.calibrate import benchmark_observations

    obs, _ = benchmark_observations()
    # through the module: the suite fits the shipped data once (conftest.py)
    base = tokenwalk.timing.fit.fit_hierarchy(Design(obs)).global_x
    nudged = list(obs)
    nudged[200] = replace(nudged[200], measured_tok_s=nudged[200].measured_tok_s * 1.001)
    moved = tokenwalk.timing.fit.fit_hierarchy(Design(nudged)).global_x
    assert np.max(np.abs(moved - base)) < 1e-3


def test_a_failed_gesdd_is_redone_with_gesvd_for_the_length_of_a_fit(monkeypatch):
    """The fit's SVD: gesdd first, gesvd where gesdd does not converge (the nudge above made
    it fail), and scipy's own function back afterwards."""
    import scipy.linalg
    import scipy.optimize._lsq.trf as trf

    from tokenwalk.timing.fit import _svd_that_converges

    original = trf.svd
    calls = []
    real = scipy.linalg.svd

    def flaky(a, full_matrices=True, lapack_driver="gesdd", **kw):
        calls.append(lapack_driver)
        if lapack_driver == "gesdd":
            raise np.linalg.LinAlgError("SVD did not converge")
        return real(a, full_matrices=full_matrices, lapack_driver=lapack_driver, **kw)

    monkeypatch.setattr(scipy.linalg, "svd", flaky)
    a = np.arange(12.0).reshape(4, 3)
    with _svd_that_converges():
        u, s, vt = trf.svd(a, full_matrices=False)
    assert calls == ["gesdd", "gesvd"]
    assert np.allclose((u * s) @ vt, a)
    assert trf.svd is original


def test_a_run_the_data_marks_doubtful_is_not_fitted(refit):
    """Meteor Lake's decode rows are marked `doubtful` (a third of the Arrow Lake laptop's speed
    on similar memory): the fit leaves them out and says why; its prefill rows are used."""
    fit, _ = refit
    gone = [e for e in fit.excluded if e.endswith("the data marks the run doubtful")]
    assert sorted(e.split(":")[0] for e in gone) == [
        "arc-graphics-155h gpt-oss-20b MXFP4 tg128",
        "arc-graphics-155h gpt-oss-20b MXFP4 tg128 @ d4096",
    ]
    assert sum(u.startswith("arc-graphics-155h gpt-oss-20b MXFP4 pp512") for u in fit.used) == 2


@pytest.mark.parametrize(
    "slug, device",
    [
        ("xeon-kvm-2c-1t", "xeon-kvm-2c"),
        ("xeon-kvm-2c-2t", "xeon-kvm-2c"),
        ("xeon-kvm-2c-r2-1t", "xeon-kvm-2c"),
        ("arc-140t", "arc-140t"),  # a model number, not a thread count
        ("rtx-4090", "rtx-4090"),
    ],
)
def test_cross_validation_holds_out_a_device_with_all_its_entries(slug, device):
    assert device_of(slug) == device


def _classed(design: Design, segment_of) -> Design:
    """The same rows, each with its class (`segment`) and a source of its own machine."""
    obs = [
        replace(o, meta={**o.meta, "segment": segment_of(o), "source": o.machine})
        for o in design.obs
    ]
    return Design(obs)


def test_leaving_out_a_class_predicts_it_without_any_of_its_rows(dense_and_moe):
    """Leave-one-group-out: the rows of a class are predicted by a fit that saw none of them,
    so moving every speed of the class leaves its predictions where they were, where
    leave-one-device-out still sees the class's other device."""
    machines = [
        ("n1", "gpu", "cuda", 1000, 80),
        ("n2", "gpu", "cuda", 500, 40),
        ("a1", "igpu", "vulkan", 120, 20),
        ("a2", "igpu", "vulkan", 250, 30),
        ("c1", "cpu", "cpu", 100, 2),
        ("c2", "cpu", "cpu", 60, 1.5),
    ]
    fast = Params(0.8, 0.6, 4e-5, 32.0).to_x()
    slow = Params(0.5, 0.15, 1e-4, 128.0).to_x()
    base = _synthetic(dense_and_moe, machines, lambda o: slow if o.machine[0] == "a" else fast)
    classes = {"n": "nvidia geforce", "a": "amd apu", "c": "amd cpu"}
    design = _classed(base, lambda o: classes[o.machine[0]])
    apu = np.array([o.meta["segment"] == "amd apu" for o in design.obs])
    moved = Design(design.obs)
    moved.measured = design.measured * np.where(apu, 3.0, 1.0)
    pred = cross_validate_groups(design, "segment")
    again = cross_validate_groups(moved, "segment")
    assert np.all(np.isfinite(pred)) and np.all(pred > 0)
    assert again[apu] == pytest.approx(pred[apu], rel=1e-3)
    assert not np.allclose(again[~apu], pred[~apu], rtol=1e-3)  # the others saw the class
    device_out = cross_validate(design)
    assert not np.allclose(cross_validate(moved)[apu], device_out[apu], rtol=1e-3)
    with pytest.raises(InputError, match="unknown group level 'colour'"):
        cross_validate_groups(design, "colour")


def test_every_published_row_has_a_class_and_a_source():
    obs, _ = benchmark_observations()
    for o in obs:
        assert all(o.meta[level] for level in GROUP_LEVELS), o.label
    by_machine = {o.machine: o.meta["segment"] for o in obs}
    assert by_machine["rtx-a5000"] == by_machine["l40s"] == "nvidia pro"
    assert by_machine["radeon-760m"] == by_machine["radeon-860m"] == "amd apu"
    assert by_machine["rtx-4090"] == "nvidia geforce"
    # the project's own recordings: a file per model and thread count, one source per directory
    assert {o.meta["source"] for o in obs if o.machine.startswith("xeon-kvm-2c")} == {
        "tests/data/cpu-ground-truth",
        "tests/data/cpu-ground-truth-sized",
    }
    assert source_group("https://github.com/ggml-org/llama.cpp/discussions/4167") == (
        "https://github.com/ggml-org/llama.cpp/discussions/4167"
    )
