"""The recorded CPU ground truth (tests/data/cpu-ground-truth and, of larger models with weights
of zeros, tests/data/cpu-ground-truth-sized, both made by scripts/cpu_ground_truth.py) reads
through tokenwalk's llama-bench reader, and every model it names resolves to the same size and
parameter count in tokenwalk: from its header-only copy, and from the catalogue when the model is
a catalogue model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tokenwalk.catalog import load_models
from tokenwalk.model.resolve import load_model
from tokenwalk.timing.calibrate import read_llama_bench

DIRS = [Path(__file__).parent / "data" / d for d in ("cpu-ground-truth", "cpu-ground-truth-sized")]
BENCH_FILES = [p for d in DIRS for p in sorted(d.glob("*.t[0-9]*.json"))]
EXPECTED_TESTS = {"pp512", "pp128", "tg128"}


def _test_name(n_prompt: int, n_gen: int) -> str:
    return f"pp{n_prompt}" if n_prompt else f"tg{n_gen}"


def _header(model_filename: str) -> Path:
    name = Path(model_filename).name.removesuffix(".gguf") + ".header.gguf"
    found = [d / "headers" / name for d in DIRS if (d / "headers" / name).is_file()]
    return found[0] if found else DIRS[0] / "headers" / name


def _catalogue_slug(model_filename: str) -> str | None:
    """The catalogue model whose slug or alias the file name contains (longest match)."""
    stem = Path(model_filename).name.lower().replace("_", "-")
    hits = [
        (len(n), e.slug)
        for e in load_models()
        for n in (e.slug, *e.aliases)
        if n.lower().replace("_", "-") in stem
    ]
    return max(hits)[1] if hits else None


@pytest.mark.parametrize("data", DIRS, ids=lambda d: d.name)
def test_there_are_two_thread_counts_of_at_least_two_models(data: Path):
    raw = [json.loads(p.read_text()) for p in sorted(data.glob("*.t[0-9]*.json"))]
    models = {Path(r["model_filename"]).name for rows in raw for r in rows}
    threads = {r["n_threads"] for rows in raw for r in rows}
    assert len(models) >= 2
    assert {1, 2} <= threads


@pytest.mark.parametrize("path", BENCH_FILES, ids=lambda p: p.name)
def test_llama_bench_file_reads_through_calibrate(path: Path):
    runs = read_llama_bench(path)
    raw = json.loads(path.read_text())
    assert len(runs) == len(raw)
    assert {_test_name(r.n_prompt, r.n_gen) for r in runs} == EXPECTED_TESTS
    assert all(r.avg_ts > 0 and r.backends == "CPU" and r.n_depth == 0 for r in runs)
    assert len({(r.model_filename, r.model_size, r.model_n_params) for r in runs}) == 1
    threads = {row["n_threads"] for row in raw}
    assert threads == {int(path.name.rsplit(".t", 1)[1].removesuffix(".json"))}


@pytest.mark.parametrize("path", BENCH_FILES, ids=lambda p: p.name)
def test_model_resolves_from_its_header(path: Path):
    run = read_llama_bench(path)[0]
    header = _header(run.model_filename)
    assert header.is_file(), f"no header-only copy of {run.model_filename}"
    model = load_model(str(header)).model
    assert model.params == run.model_n_params
    assert model.tensor_bytes == run.model_size


@pytest.mark.parametrize("path", BENCH_FILES, ids=lambda p: p.name)
def test_catalogue_model_has_the_same_size(path: Path):
    run = read_llama_bench(path)[0]
    slug = _catalogue_slug(run.model_filename)
    if slug is None:
        pytest.skip(f"{Path(run.model_filename).name} is not a catalogue model")
    quant = load_model(str(_header(run.model_filename))).model.quant
    model = load_model(slug, quant).model
    assert model.params == pytest.approx(run.model_n_params, rel=0.01)
    assert model.tensor_bytes == pytest.approx(run.model_size, rel=0.01)


@pytest.mark.parametrize("data", DIRS, ids=lambda d: d.name)
def test_host_measurements(data: Path):
    host = json.loads((data / "host.json").read_text())
    bw = host["read_bandwidth_gbs"]
    assert bw["buffer_bytes"] >= 1 << 30  # well above the last-level cache
    for per_threads in (bw["threads"], *host["gemm_gflops"]["n"].values()):
        assert {"1", "2"} <= set(per_threads)
        for s in per_threads.values():
            assert 0 < s["min"] <= s["median"] <= s["max"]
    assert host["blas"], "the BLAS in use is recorded"


@pytest.mark.parametrize("data", DIRS, ids=lambda d: d.name)
def test_readme_says_how_it_was_made(data: Path):
    text = (data / "README.md").read_text()
    for needle in ("llama-bench", "Model name", "L3 cache", "RAM", "build_commit", "load"):
        assert needle in text
    runs = json.loads((data / "runs.json").read_text())["runs"]
    assert all(r["exit_code"] == 0 and r["loadavg_at_start"] for r in runs)
