"""Machines as a user meets them: capacity units, Apple's GPU working set, incomplete entries,
the cold load rate, and their own machine files."""

from __future__ import annotations

import json

import pytest

from tokenwalk.cli import main

GIB = 2**30


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv: str, expect: int = 0) -> dict:
    code, out, err = run(capsys, *argv, "--json")
    assert code == expect, err
    return json.loads(out)


# -- capacity units ---------------------------------------------------------------------------


def test_rtx_4090_holds_24_gib(capsys):
    """A '24 GB' card is 24 GiB: qwen3.6-35b-a3b at 100,000 tokens fits with ~1.8 GB to spare
    (it was refused when the capacity was read as 24e9 bytes; the token embedding stays in RAM
    and the MTP block is not loaded, as llama.cpp does)."""
    d = run_json(capsys, "budget", "qwen3.6-35b-a3b", "-m", "rtx-4090", "--ctx", "100000")
    assert d["capacity_bytes"] == 24 * GIB
    assert d["fits"] and 1.6e9 < d["free_bytes"] < 1.9e9


def test_inline_memory_is_gib(capsys):
    d = run_json(capsys, "budget", "qwen3-0.6b", "--bandwidth", "100", "--memory", "24")
    assert d["capacity_bytes"] == 24 * GIB


def test_budget_says_what_gb_means(capsys):
    code, out, _ = run(capsys, "budget", "qwen3-0.6b", "-m", "rtx-4090")
    assert code == 0
    assert "25.8 GB (24 GiB)" in out and "GB = 1e9 bytes" in out


# -- Apple's GPU working set ------------------------------------------------------------------


def test_apple_budget_is_held_to_the_metal_working_set(capsys):
    d = run_json(capsys, "budget", "gemma-3-12b", "-m", "apple-m1")
    limit = 16 * GIB * 2 / 3
    assert d["gpu_limit_bytes"] == int(limit) and "2/3" in d["gpu_limit_note"]
    used = d["weights_bytes"] + d["cache_bytes"] + d["buffers_bytes"]
    assert d["free_bytes"] == pytest.approx(limit - used, abs=1)
    # a raised wired limit gives the context back
    raised = run_json(capsys, "budget", "gemma-3-12b", "-m", "apple-m1", "--gpu-limit", "14")
    assert raised["max_fit_ctx"] > d["max_fit_ctx"]
    code, out, _ = run(capsys, "budget", "gemma-3-12b", "-m", "apple-m1")
    assert "the GPU may hold" in out and "iogpu.wired_limit_mb" in out


def test_apple_model_beyond_the_working_set_does_not_fit(capsys):
    # 11.45 GB of GPU memory on a 16 GiB M1: 12.4 GB fit the RAM next to 1 GB but not the GPU
    argv = ["budget", "llama-2-13b", "--quant", "Q6_K", "-m", "apple-m1", "--system-gb", "1"]
    d = run_json(capsys, *argv, "--ctx", "2048", expect=1)
    used = d["weights_bytes"] + d["cache_bytes"] + d["buffers_bytes"]
    assert not d["fits"] and d["gpu_limit_bytes"] < used < d["capacity_bytes"] - 1e9


def test_gpu_limit_above_the_memory_is_refused(capsys):
    code, _, err = run(capsys, "budget", "qwen3-0.6b", "-m", "apple-m1", "--gpu-limit", "32")
    assert code == 2 and "--gpu-limit" in err and err.count("\n") == 1


# -- incomplete machines ----------------------------------------------------------------------


def test_decode_with_bandwidth_alone(capsys):
    d = run_json(capsys, "decode", "llama-3.1-8b", "--bandwidth", "100")
    assert d["tflops"] is None and d["tok_s"] > 0


def test_prefill_without_a_compute_rate_says_what_is_missing(capsys):
    code, _, err = run(capsys, "prefill", "llama-3.1-8b", "--bandwidth", "100", "-p", "512")
    assert code == 2 and "--tflops" in err and err.count("\n") == 1


@pytest.mark.parametrize("slug", ["i9-13900k", "epyc-9004-12ch", "apple-m5", "gb10-dgx-spark"])
def test_once_incomplete_machines_answer_prefill(capsys, slug):
    d = run_json(capsys, "prefill", "llama-3.1-8b", "-m", slug, "-p", "512")
    assert d["ttft_s"] > 0


def test_machines_marks_what_an_entry_lacks(capsys):
    d = run_json(capsys, "machines")
    lacks = {m["slug"]: m["lacks"] for m in d["machines"]}
    assert lacks["rtx-4090"] == [] and lacks["desktop-ddr5-5600"] == ["memory"]
    row = next(m for m in d["machines"] if m["slug"] == "rtx-4090")
    assert row["memory_bytes"] == 24 * GIB and row["memory_unit"] == "GiB"
    code, out, _ = run(capsys, "machines", "desktop-ddr5")
    text = " ".join(out.split())
    assert code == 0 and "? = not known" in text and "1 lack memory" in text
    assert "give --memory" in text and "decimal GB" in text


# -- cold load --------------------------------------------------------------------------------


def test_cold_load_of_the_seed_laptop_takes_55_s(capsys):
    argv = ["trace", "qwen3.6-35b-a3b", "-m", "radeon-860m", "-p", "1000", "--cold"]
    d = run_json(capsys, *argv)
    assert d["load_s"] == pytest.approx(55, abs=1.5)
    assert not d["load_assumed"] and "measured" in d["load_from"]
    code, out, err = run(capsys, *argv)
    assert "no load rate" not in err and "measured cold load" in out


def test_assumed_load_rate_is_said(capsys):
    argv = ["trace", "qwen3-0.6b", "-m", "rtx-4090", "-p", "100", "--cold"]
    d = run_json(capsys, *argv)
    assert d["load_assumed"] and "assumed" in d["load_from"]
    _, _, err = run(capsys, *argv)
    assert "assuming 3 GB/s" in err


# -- your own machines ------------------------------------------------------------------------


def test_own_machine_file_without_source(capsys, tmp_path):
    f = tmp_path / "mine.yaml"
    f.write_text("- {slug: my-box, name: My box, kind: gpu, backend: cuda, bandwidth_gbs: 500}\n")
    d = run_json(capsys, "decode", "llama-3.1-8b", "-m", "my-box", "--machines-file", str(f))
    assert d["machine"] == "my-box"


def test_own_machine_type_error_comes_first(capsys, tmp_path):
    f = tmp_path / "mine.yaml"
    f.write_text("- {slug: my-box, name: My box, bandwidth_gbs: fast}\n")
    code, out, err = run(capsys, "machines", "--machines-file", str(f))
    assert code == 0 and "left out" in err  # the listing goes on without it
    assert "'bandwidth_gbs'" in err and "'fast'" in err and "key 'kind'" in err
    assert "my-box" not in out
    code, _, err = run(capsys, "decode", "qwen3-8b", "-m", "my-box", "--machines-file", str(f))
    assert code == 2 and "'bandwidth_gbs'" in err and "more error" not in err


def test_a_bad_entry_leaves_other_machines_working(capsys, tmp_path):
    f = tmp_path / "mine.yaml"
    f.write_text("- {slug: my-box, name: My box, bandwidth_gbs: fast}\n")
    code, _, err = run(capsys, "decode", "qwen3-8b", "-m", "rtx-4090", "--machines-file", str(f))
    assert code == 0 and "my-box" not in err


def test_a_directory_is_called_a_directory(capsys, tmp_path, monkeypatch):
    code, _, err = run(capsys, "machines", "--machines-file", str(tmp_path))
    assert code == 2 and "is a directory" in err
    monkeypatch.setenv("TOKENWALK_MACHINES", str(tmp_path))
    code, _, err = run(capsys, "machines")
    assert code == 2 and "TOKENWALK_MACHINES" in err and "is a directory" in err


def test_a_gpu_limit_from_the_file_is_not_blamed_on_gpu_limit(capsys, tmp_path):
    f = tmp_path / "mine.yaml"
    f.write_text(
        "- {slug: my-igpu, name: My iGPU, kind: igpu, backend: vulkan, memory_gb: 32,\n"
        "   gpu_limit_gb: 24, bandwidth_gbs: 100}\n"
    )
    argv = ["budget", "qwen3-8b", "-m", "my-igpu", "--machines-file", str(f), "--memory", "16"]
    code, _, err = run(capsys, *argv)
    assert code == 2 and "--gpu-limit 24" not in err
    assert "--memory 16 GiB is less than the GPU limit of 'my-igpu' (24 GiB" in err


@pytest.mark.parametrize("command", ["models", "machines"])
def test_a_query_that_matches_nothing_is_refused(capsys, command):
    code, out, err = run(capsys, command, "zzz")
    assert code == 2 and not out
    assert "name contains 'zzz'" in err and f"`tokenwalk {command}` lists them" in err


def test_every_listed_machine_answers(capsys):
    """A catalogue machine a user can name has a bandwidth: the devices published runs name
    without one (benchmark_only) are neither listed nor answered for, with a line saying why."""
    from tokenwalk.catalog import load_machines

    entries = load_machines()
    hidden = {e.slug for e in entries if e.benchmark_only}
    assert {"adreno-840", "radxa-dragon-q6a", "cix-cp8180", "radeon-pro-w7800"} <= hidden
    assert all(e.bandwidth_gbs for e in entries if not e.benchmark_only)
    assert main(["machines", "--json"]) == 0
    listed = {m["slug"] for m in json.loads(capsys.readouterr().out)["machines"]}
    assert listed and not listed & hidden
    assert main(["decode", "llama-3-8b", "-m", "adreno-840"]) == 2
    err = capsys.readouterr().err
    assert "only named by published runs" in err and len(err.strip().splitlines()) == 1
