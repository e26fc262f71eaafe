"""`budget`, `trace` and `spec` as a user runs them, with the seed article's numbers."""

from __future__ import annotations

import json

import pytest

from tokenwalk.cli import main

LAPTOP = ["--machine", "radeon-860m"]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv: str) -> dict:
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def test_budget_seed_laptop(capsys):
    # 64 GB laptop, 32 GB used by the system, Qwen3.6 Q4_K_M at 16,384 tokens: 8 to 11 GB free,
    # all in the GB Windows prints, which are GiB (32 GiB = 34.36e9 bytes)
    d = run_json(
        capsys, "budget", "qwen3.6-35b-a3b", *LAPTOP, "--system-gb", "34.36", "--ctx", "16384"
    )
    for key in (
        "capacity_bytes",
        "system_bytes",
        "weights_bytes",
        "cache_bytes",
        "buffers_bytes",
        "free_bytes",
        "fits",
        "max_fit_ctx",
    ):
        assert key in d
    # (11.5 GiB: llama.cpp does not load the 0.55 GB MTP block, which the seed counted)
    assert 8 * 2**30 <= d["free_bytes"] <= 11.5 * 2**30
    assert d["fits"] and d["settings"]["OLLAMA_CONTEXT_LENGTH"] == "16384"
    assert d["default_ctx"] == 262144 and 5.3e9 < d["default_cache_bytes"] < 5.5e9


def test_budget_exit_code_1_when_it_does_not_fit(capsys):
    code, out, err = run(capsys, "budget", "qwen3.6-35b-a3b", *LAPTOP, "--memory", "16")
    assert code == 1
    assert "does not fit" in out


def test_budget_adds_a_draft(capsys):
    one = run_json(capsys, "budget", "qwen3.6-27b", *LAPTOP, "--ctx", "4096")
    two = run_json(capsys, "budget", "qwen3.6-27b", "qwen3-0.6b", *LAPTOP, "--ctx", "4096")
    assert len(two["models"]) == 2
    assert two["weights_bytes"] > one["weights_bytes"]


def test_trace_seed_request(capsys):
    d = run_json(capsys, "trace", "qwen3.6-35b-a3b", *LAPTOP, "--prompt", "6500", "--output", "300")
    assert d["n_chunks"] == 13
    assert d["kv_stored_bytes"] == pytest.approx(134e6, rel=0.02)
    assert 50 <= d["prefill_s"] <= 95
    assert 1.7e9 <= d["decode_step_read_bytes"] <= 2.3e9
    assert 18 <= d["decode_s"] <= 35
    names = [p["name"] for p in d["phases"]]
    assert names[0] == "template + tokenize" and names[-1] == "end"
    for p in d["phases"]:
        assert {"name", "start_s", "duration_s"} <= set(p)
    assert d["total_s"] == pytest.approx(d["ttft_s"] + d["decode_s"])


def test_trace_cold_and_restored_prefix(capsys):
    cold = run_json(capsys, "trace", "qwen3.6-35b-a3b", *LAPTOP, "--prompt", "6500", "--cold")
    assert cold["phases"][0]["name"] == "load from disk" and cold["load_s"] > 0
    warm = run_json(
        capsys,
        "trace",
        "qwen3.6-35b-a3b",
        *LAPTOP,
        "--prompt",
        "6500",
        "--cached",
        "6400",
        "--restore-kv",
    )
    assert warm["ttft_s"] < 5 and warm["n_chunks"] == 1
    # the same names as prefill: a count is n_, a prefix is cached_tokens
    assert warm["cached_tokens"] == 6400 and warm["prompt_tokens"] == 6500


def test_trace_takes_a_gguf_path(capsys, qwen2_path):
    d = run_json(capsys, "trace", str(qwen2_path), *LAPTOP, "--prompt", "1000", "--output", "10")
    assert d["n_chunks"] == 2


def test_spec_seed_cases(capsys):
    dense = run_json(
        capsys,
        "spec",
        "qwen3.6-27b",
        "--draft",
        "qwen3-0.6b",
        *LAPTOP,
        "--alpha",
        "0.7",
        "--gamma",
        "4",
    )
    assert dense["tokens_per_round"] == pytest.approx(2.77, abs=0.01)
    assert 1.5 <= dense["speedup"] <= 2.5
    code, out, err = run(
        capsys,
        "spec",
        "qwen3.6-35b-a3b",
        "--draft",
        "qwen3-0.6b",
        *LAPTOP,
        "--alpha",
        "0.7",
        "--gamma",
        "4",
        "--json",
    )
    assert code == 1, err  # speculation loses: the negative answer
    moe = json.loads(out)
    assert moe["speedup"] < 1 and not moe["pays"]
    assert moe["experts_woken_per_layer"] == pytest.approx(37.6, abs=0.5)
    for key in (
        "tokens_per_round",
        "round_s",
        "tok_s",
        "baseline_tok_s",
        "speedup",
        "break_even_alpha",
        "experts_woken_per_layer",
    ):
        assert key in moe


def test_spec_warns_about_the_tokenizer(capsys):
    code, out, err = run(capsys, "spec", "qwen3.6-27b", "--draft", "qwen3-0.6b", *LAPTOP)
    assert code == 0
    assert "needs a draft that shares the target's tokenizer" in err


def test_spec_mtp(capsys):
    d = run_json(capsys, "spec", "qwen3.6-35b-a3b", "--mtp", *LAPTOP, "--gamma", "2")
    assert d["mtp"] and d["draft_step_s"] < d["target_step_s"]


def test_spec_says_why_the_ninth_token_costs_so_much(capsys):
    """A verify pass of 9 tokens is past llama.cpp's mat-vec kernels: on the laptop's iGPU the
    matrix kernels take it far slower, and the view says so under the table; on an RTX 4090
    the column hardly drops, and nothing is said."""
    d = run_json(capsys, "spec", "qwen3.6-35b-a3b", "--mtp", *LAPTOP)
    verify = {c["gamma"]: c["verify_s"] for c in d["table"]}
    assert verify[8] > 5 * verify[7] and verify[4] == pytest.approx(d["verify_s"])
    code, out, _ = run(capsys, "spec", "qwen3.6-35b-a3b", "--mtp", *LAPTOP)
    assert code == 0
    shown = " ".join(out.split())
    assert "its verify pass of 9 tokens is past the 8 of llama.cpp's mat-vec kernels" in shown
    assert "its experts see a token or two each" in shown
    argv = ["spec", "qwen3-8b", "-d", "qwen3-0.6b", "-m", "rtx-4090"]
    d = run_json(capsys, *argv)
    verify = {c["gamma"]: c["verify_s"] for c in d["table"]}
    assert verify[8] < 1.5 * verify[7]
    assert "mat-vec" not in run(capsys, *argv)[1]


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["spec", "qwen3.6-27b", *LAPTOP], "give a draft"),
        (["spec", "qwen3.6-27b", "--mtp", "--draft", "qwen3-0.6b", *LAPTOP], "not both"),
        (["spec", "qwen3.6-27b", "--draft", "qwen3-0.6b", "--alpha", "1.2", *LAPTOP], "--alpha"),
        (["spec", "qwen3.6-27b", "--draft", "qwen3-0.6b", "--gamma", "0", *LAPTOP], "--gamma"),
        (["spec", "qwen3-8b", "--mtp", *LAPTOP], "no multi-token-prediction block"),
        (["trace", "qwen3-8b", *LAPTOP], "--prompt"),
        (["trace", "qwen3-8b", *LAPTOP, "--prompt", "100", "--restore-kv"], "--cached"),
        (["budget", "qwen3-8b", "--machine", "radeon-670m"], "did you mean"),
        (["budget", "qwen3-8b", *LAPTOP, "--system-gb", "70"], "--system-gb"),
        (["budget", "qwen3-8b", "--bandwidth", "-5", "--tflops", "3", "--memory", "8"], "andwidth"),
    ],
)
def test_bad_input(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2, (out, err)
    assert needle in err and err.count("\n") == 1
