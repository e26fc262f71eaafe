"""The shipped catalogues load and agree with each other; bad files fail with one useful line."""

from __future__ import annotations

import csv
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tokenwalk import catalog
from tokenwalk.catalog import (
    find_machine,
    find_model,
    load_benchmarks,
    load_machines,
    load_models,
)
from tokenwalk.errors import SpecError, UnknownNameError

REPO = Path(__file__).resolve().parents[1]
# shared/ sits beside the checkout (main, CI) or beside the folder of worktrees
BENCHMARKS_CSV = next(
    (
        p
        for p in (
            REPO.parent / "shared" / "data" / "benchmarks-train.csv",
            REPO.parent.parent / "shared" / "data" / "benchmarks-train.csv",
        )
        if p.is_file()
    ),
    REPO.parent / "shared" / "data" / "benchmarks-train.csv",
)


def test_counts() -> None:
    assert len(load_models()) >= 20
    assert len(load_machines()) >= 40
    assert len(load_benchmarks()) >= 218


# reference rows not imported, and why: (device, test, quant) -> reason
NOT_IMPORTED = {
    ("AMD Radeon 680M (Ryzen 7 6800H)", "tg256", "Q4_K_M"): (
        "Qwen3.5-0.8B: no sourced config.json of it, so no catalogue model to tie the row to"
    ),
}


def _imported_reference_rows() -> list[dict[str, str]]:
    with BENCHMARKS_CSV.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return [r for r in rows if (r["device"], r["test"], r["quant"]) not in NOT_IMPORTED]


@pytest.mark.skipif(not BENCHMARKS_CSV.is_file(), reason="reference CSV not present")
def test_every_reference_row_is_a_benchmark() -> None:
    """Every reference row but those NOT_IMPORTED says why is a benchmark."""
    assert len(_reference_rows()) == len(_imported_reference_rows())


def _reference_rows() -> list:
    """The rows imported from the reference CSV (the project's own measurements follow them)."""
    return [b for b in load_benchmarks() if not b.source.startswith(MEASURED)]


# the project's own machine: small real files, then catalogue models with weights of zeros
MEASURED = ("tests/data/cpu-ground-truth/", "tests/data/cpu-ground-truth-sized/")


def test_measured_rows_are_the_recorded_runs() -> None:
    """The rows measured on the project's own machine are the llama-bench JSON in tests/data."""
    import json

    measured = [b for b in load_benchmarks() if b.source.startswith(MEASURED)]
    assert len(measured) == 36
    for b in measured:
        runs = json.loads((REPO / b.source.split()[0]).read_text())
        assert any(abs(r["avg_ts"] - b.tok_s) < 0.006 for r in runs), b.source


@pytest.mark.skipif(not BENCHMARKS_CSV.is_file(), reason="reference CSV not present")
def test_rows_keep_the_reference_values() -> None:
    """Row i of the YAML is row i of the reference CSV: same device, test, quant and speed."""
    rows = _imported_reference_rows()
    for i, (b, r) in enumerate(zip(_reference_rows(), rows, strict=True), 1):
        assert (b.device, b.test, b.quant) == (r["device"], r["test"], r["quant"]), i
        # "seed" names the seed article, which the YAML cites by file
        assert b.source == r["source"] or b.source.startswith(r["source"] + " article"), i
        assert b.tok_s == float(r["tok_s"]), i
        assert b.backend == r["backend"].lower(), i
        if r["model_file_gb"].replace(".", "", 1).isdigit():
            assert b.model_file_gb == float(r["model_file_gb"]), i


_LABEL = re.compile(r"^(pp|tg)(\d+)")


def test_benchmark_fields_agree_with_the_test_label() -> None:
    """`@ dN` is the depth, `-ub N` the micro-batch, ppN / tgN the tokens, `(... KV)` the cache."""
    for b in load_benchmarks():
        where = f"{b.machine} {b.model} {b.test}"
        m = _LABEL.match(b.test)
        if m:
            assert b.n_tokens == int(m.group(2)), where
        depth = re.search(r"@ d(\d+)", b.test)
        assert b.depth == (int(depth.group(1)) if depth else 0), where
        ub = re.search(r"-ub (\d+)", b.test)
        if ub:
            assert b.ubatch == int(ub.group(1)), where
        kv = re.search(r"(q\d_\w+|f16) KV\)", b.test)
        if kv:
            assert b.kv_type == kv.group(1), where
        if b.standard:
            assert re.fullmatch(r"(pp|tg)\d+", b.test), where
            assert b.engine == "llama.cpp" and b.depth == 0, where


def test_benchmark_fields_of_known_rows() -> None:
    rows = {(b.machine, b.model, b.quant, b.test): b for b in load_benchmarks()}
    deep = rows[("rx-7900-xtx", "lfm2-8b-a1b", "Q4_K_M", "pp2048 @ d4096")]
    assert (deep.n_tokens, deep.depth, deep.ubatch, deep.standard) == (2048, 4096, 512, False)
    ub = rows[("rtx-4090", "gpt-oss-20b", "MXFP4", "pp4096 (-ub 2048)")]
    assert (ub.n_tokens, ub.depth, ub.ubatch, ub.standard) == (4096, 0, 2048, False)
    kv = rows[("radeon-pro-w7800", "qwen3-30b-a3b", "Q4_K_M", "pp512")]
    assert (kv.kv_type, kv.kv_type_v, kv.flash_attn, kv.standard) == ("q8_0", "f16", True, False)
    long = rows[("arc-pro-b70", "qwen3.5-27b", "Q4_K_M", "pp65536 (q8_0 KV)")]
    assert (long.n_tokens, long.kv_type, long.standard) == (65536, "q8_0", False)
    plain = rows[("arc-pro-b70", "qwen3.5-27b", "Q4_K_M", "pp32768")]
    assert (plain.n_tokens, plain.kv_type, plain.flash_attn, plain.standard) == (
        32768,
        "f16",
        True,
        True,
    )
    fa_off = rows[("rx-7900-xt", "qwen3.6-35b-a3b", "UD-Q2_K_XL", "pp8192")]
    assert fa_off.flash_attn is False and fa_off.standard
    assert rows[("ryzen-9-5950x", "mixtral-8x22b", "Q6_K", "pp512")].engine == "llamafile"


def test_every_entry_has_a_source() -> None:
    for entry in (*load_models(), *load_machines(), *load_benchmarks()):
        assert entry.source.strip()


def test_benchmarks_name_catalogue_entries() -> None:
    for b in load_benchmarks():
        assert find_model(b.model).slug == b.model
        machine = find_machine(b.machine)
        assert machine.slug == b.machine
        assert b.device in machine.benchmark_names
        assert (b.phase == "prefill") == b.test.startswith("pp")
        if b.standard:
            assert b.n_tokens is not None


def test_the_seed_laptop() -> None:
    m = find_machine("radeon-860m")
    assert (m.memory_gb, m.bandwidth_gbs, m.backend, m.kind) == (64, 128, "vulkan", "igpu")
    model = find_model("Qwen3.6")
    assert model.slug == "qwen3.6-35b-a3b"
    assert model.config["model_type"] == "qwen3_5_moe"
    assert model.config["full_attention_interval"] == 4


def test_lookup_is_case_insensitive_and_knows_aliases() -> None:
    assert find_machine("RTX-4090").slug == "rtx-4090"
    assert find_machine("strix-halo").slug == "ryzen-ai-max-395"
    assert find_model("DeepSeek-R1").slug == "deepseek-v3"
    assert find_model("llama-7b").slug == "llama-2-7b"


def test_did_you_mean() -> None:
    with pytest.raises(UnknownNameError, match=r"did you mean radeon-\d\d0m\?.*machines"):
        find_machine("radeon-670m")
    with pytest.raises(UnknownNameError, match=r"did you mean qwen3-8b\?.*tokenwalk models"):
        find_model("qwen3-8")
    with pytest.raises(UnknownNameError, match="tokenwalk machines"):
        find_machine("zzzzzz")


# -- user machine files -------------------------------------------------------------------------


def _write(tmp_path: Path, text: str, name: str = "machines.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_user_file_adds_and_overrides(tmp_path: Path) -> None:
    f = _write(
        tmp_path,
        """
- slug: rtx-4090
  bandwidth_gbs: 900
  fit: {eff_bw: 0.8, eff_compute: 0.4, overhead_s: 0.00002, source: my llama-bench}
- slug: my-box
  name: My box
  aliases: [box]
  kind: cpu
  backend: cpu
  bandwidth_gbs: 60
  source: measured
""",
    )
    changed = find_machine("4090", extra_files=[f])
    assert changed.bandwidth_gbs == 900
    assert changed.memory_gb == 24  # untouched fields keep the catalogue's values
    assert changed.fit is not None and changed.fit["eff_bw"] == 0.8
    assert find_machine("BOX", extra_files=[f]).slug == "my-box"
    assert find_machine("rtx-4090").bandwidth_gbs == 1008  # the catalogue is unchanged


def test_later_user_file_wins(tmp_path: Path) -> None:
    a = _write(tmp_path, "- {slug: h100-sxm, bandwidth_gbs: 3000}\n", "a.yaml")
    b = _write(tmp_path, "- {slug: h100, bandwidth_gbs: 3100}\n", "b.yaml")
    assert find_machine("h100-sxm", extra_files=[a, b]).bandwidth_gbs == 3100


def test_broken_yaml_names_the_file(tmp_path: Path) -> None:
    f = _write(tmp_path, "- slug: x\n  name: [unclosed\n")
    with pytest.raises(SpecError, match=r"machines\.yaml.*line \d+.*not valid YAML"):
        load_machines([f])


def test_wrong_type_names_file_entry_and_key(tmp_path: Path) -> None:
    f = _write(tmp_path, "- {slug: rtx-4090, bandwidth_gbs: fast}\n")
    with pytest.raises(SpecError) as exc:
        load_machines([f])
    msg = str(exc.value)
    assert str(f) in msg and "'rtx-4090'" in msg and "'bandwidth_gbs'" in msg
    assert "\n" not in msg


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("- {slug: m, name: M, kind: toaster, backend: cpu, source: s}\n", "kind"),
        ("- {slug: m, kind: cpu, backend: cpu}\n", "name"),
        ("- {slug: rtx-4090, memory_unit: GiB/s}\n", "memory_unit"),
        ("- {slug: m, name: M, kind: cpu, backend: cpu, source: s, speed: 3}\n", "speed"),
        ("- {slug: rtx-4090, memory_gb: -1}\n", "memory_gb"),
    ],
)
def test_invalid_machine_entries(tmp_path: Path, text: str, key: str) -> None:
    f = _write(tmp_path, text)
    with pytest.raises(SpecError, match=rf"machines\.yaml: entry .*key '{key}'"):
        load_machines([f])


def test_own_machine_needs_no_source(tmp_path: Path) -> None:
    f = _write(tmp_path, "- {slug: my-box, name: My box, kind: cpu, backend: cpu}\n")
    box = find_machine("my-box", extra_files=[f])
    assert str(f) in box.source  # the file is its source
    assert all(m.source != box.source for m in load_machines())


def test_wrong_type_is_reported_before_a_missing_key(tmp_path: Path) -> None:
    # 'kind' and 'backend' are missing too; the value the user wrote wrong comes first
    f = _write(tmp_path, "- {slug: my-box, name: My box, bandwidth_gbs: fast}\n")
    with pytest.raises(SpecError, match=r"key 'bandwidth_gbs'.*'fast'.*and 2 more errors"):
        load_machines([f])


def test_gpu_limit_within_memory(tmp_path: Path) -> None:
    f = _write(tmp_path, "- {slug: apple-m1, gpu_limit_gb: 20}\n")
    with pytest.raises(SpecError, match="gpu_limit_gb cannot exceed memory_gb"):
        load_machines([f])


def test_what_an_entry_lacks() -> None:
    assert find_machine("rtx-4090").lacks() == []
    assert find_machine("cix-cp8180").lacks() == ["memory", "bandwidth", "compute"]
    assert find_machine("desktop-ddr5-5600").lacks() == ["memory"]


def test_not_a_list(tmp_path: Path) -> None:
    f = _write(tmp_path, "slug: x\n")
    with pytest.raises(SpecError, match="expected a YAML list"):
        load_machines([f])


# -- the shipped files, swapped for broken ones ---------------------------------------------------


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Point the loaders at `tmp_path` instead of the shipped data, with cold caches."""
    monkeypatch.setattr(catalog, "data_path", lambda name: tmp_path / name)
    load_models.cache_clear()
    yield tmp_path
    load_models.cache_clear()


def test_model_entry_with_an_unknown_key(data_dir: Path) -> None:
    _write(
        data_dir,
        "- slug: a\n  name: A\n  source: s\n  layers: 3\n  config: {model_type: llama}\n",
        "models.yaml",
    )
    with pytest.raises(SpecError, match=r"models\.yaml: entry 'a', key 'layers': unknown key"):
        load_models()


def test_config_keys_are_free_but_need_a_model_type(data_dir: Path) -> None:
    _write(data_dir, "- {slug: a, name: A, source: s, config: {any_key: 1}}\n", "models.yaml")
    with pytest.raises(SpecError, match=r"models\.yaml: entry 'a': .*model_type"):
        load_models()


def test_duplicate_names(data_dir: Path) -> None:
    _write(
        data_dir,
        "- {slug: a, name: A, source: s, config: {model_type: llama}}\n"
        "- {slug: b, name: B, aliases: [A], source: s, config: {model_type: llama}}\n",
        "models.yaml",
    )
    with pytest.raises(SpecError, match="already used by 'a'"):
        load_models()


@pytest.fixture
def bench_dir(data_dir: Path) -> Iterator[Path]:
    """`data_dir` with the shipped models and machines, for a benchmarks file of a test's own."""
    for name in ("models.yaml", "machines.yaml"):
        shutil.copy(REPO / "data" / name, data_dir / name)
    catalog._catalogue_machines.cache_clear()
    load_benchmarks.cache_clear()
    yield data_dir
    catalog._catalogue_machines.cache_clear()
    load_benchmarks.cache_clear()


_ROW = (
    "- {source: s, machine: rtx-4090, device: NVIDIA RTX 4090, backend: cuda,\n"
    "   model: llama-3.1-8b, quant: Q4_K_M, test: 'pp512 @ d4096', phase: prefill,\n"
    "   n_tokens: 512, tok_s: 1000.0, %s}\n"
)


@pytest.mark.parametrize(
    "fields",
    [
        "depth: 4096, standard: true",
        "ubatch: 2048, standard: true",
        "kv_type: q8_0, standard: true",
        "kv_type_v: q8_0, standard: true",
        "engine: llamafile, standard: true",
    ],
)
def test_standard_rows_are_plain(bench_dir: Path, fields: str) -> None:
    _write(bench_dir, _ROW % fields, "benchmarks.yaml")
    with pytest.raises(SpecError, match=r"benchmarks\.yaml: entry 1: .*standard is for plain") as e:
        load_benchmarks()
    assert "\n" not in str(e.value)


def test_depth_and_ubatch_are_read(bench_dir: Path) -> None:
    _write(bench_dir, _ROW % "depth: 4096, ubatch: 1024, standard: false", "benchmarks.yaml")
    (b,) = load_benchmarks()
    assert (b.depth, b.ubatch, b.kv_type, b.flash_attn) == (4096, 1024, None, None)
    _write(bench_dir, _ROW % "depth: -1, standard: false", "benchmarks.yaml")
    load_benchmarks.cache_clear()
    with pytest.raises(SpecError, match="key 'depth'"):
        load_benchmarks()


def test_kv_types_are_ggml_type_names(bench_dir: Path) -> None:
    _write(bench_dir, _ROW % "kv_type: q8_0, kv_type_v: f16, standard: false", "benchmarks.yaml")
    (b,) = load_benchmarks()
    assert (b.kv_type, b.kv_type_v) == ("q8_0", "f16")
    _write(bench_dir, _ROW % "kv_type: q8_0/f16, standard: false", "benchmarks.yaml")
    load_benchmarks.cache_clear()
    with pytest.raises(SpecError, match="kv_type 'q8_0/f16' is not a ggml type name"):
        load_benchmarks()
