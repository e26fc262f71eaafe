"""`tokenwalk decode`, `prefill` and `machines`: JSON, the seed numbers, refusals."""

from __future__ import annotations

import json

import pytest

from tokenwalk.cli import main


def run_json(capsys, *argv: str) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_decode_seed(capsys):
    r = run_json(capsys, "decode", "qwen3.6-35b-a3b", "--machine", "radeon-860m")
    assert 55 <= r["ceiling_tok_s"] <= 75
    assert r["tok_s"] == pytest.approx(11.7, rel=0.25)
    assert r["ms_per_token"] == pytest.approx(1000 / r["tok_s"])
    assert r["read_bytes_per_token"] > 1.8e9
    r = run_json(capsys, "decode", "qwen3.6-27b", "-m", "radeon-860m")
    assert 7 <= r["ceiling_tok_s"] <= 9
    assert r["tok_s"] == pytest.approx(2.6, rel=0.30)


def test_prefill_seed(capsys):
    r = run_json(capsys, "prefill", "qwen3.6-35b-a3b", "-m", "radeon-860m", "--prompt", "6500")
    assert 50 <= r["ttft_s"] <= 95
    assert r["computed_tokens"] == 6500 and len(r["chunks"]) == 13
    assert r["tok_s"] == pytest.approx(6500 / r["ttft_s"])


def test_parallel_and_inline_machine(capsys):
    r = run_json(
        capsys,
        "decode",
        "llama-2-7b",
        "--bandwidth",
        "400",
        "--tflops",
        "10",
        "--parallel",
        "4",
        "--ctx",
        "2048",
    )
    assert r["parallel"] == 4 and r["aggregate_tok_s"] > 3 * r["tok_s"]


def test_the_kind_of_peak_changes_an_inline_prefill(capsys):
    """--tflops-kind says what an inline --tflops is the peak of; a vector-ALU peak is reached
    in a larger share than a matrix-unit peak, so the same rate fills a prompt faster."""
    argv = [
        "prefill",
        "llama-3.1-8b",
        "-p",
        "4096",
        "--bandwidth",
        "900",
        "--tflops",
        "80",
        "--json",
    ]
    speeds = {}
    for kind in ("matrix", "vector"):
        assert main([*argv, "--tflops-kind", kind]) == 0
        speeds[kind] = json.loads(capsys.readouterr().out)["tok_s"]
    assert speeds["vector"] > speeds["matrix"]


def test_cached_prefix(capsys):
    r = run_json(
        capsys,
        "prefill",
        "qwen3.6-35b-a3b",
        "-m",
        "radeon-860m",
        "--prompt",
        "6500",
        "--cached",
        "6000",
    )
    assert r["cached_tokens"] == 6000 and r["computed_tokens"] == 500


def test_rich_output(capsys):
    assert main(["decode", "qwen3.6-35b-a3b", "-m", "radeon-860m"]) == 0
    out = capsys.readouterr().out
    assert "ceiling" in out and "vs reading" in out
    assert main(["prefill", "qwen3.6-35b-a3b", "-m", "radeon-860m", "-p", "1000"]) == 0
    assert "time to first token" in capsys.readouterr().out


def test_machines(capsys):
    r = run_json(capsys, "machines", "radeon")
    slugs = [m["slug"] for m in r["machines"]]
    assert "radeon-860m" in slugs
    assert main(["machines"]) == 0
    assert "radeon-860m" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["decode", "qwen3.6-35b-a3b"], "no machine given"),
        (["decode", "qwen3.6-35b-a3b", "-m", "radeon-670m"], "did you mean"),
        (["prefill", "qwen3.6-35b-a3b", "-m", "radeon-860m", "-p", "0"], "--prompt"),
        (
            ["prefill", "qwen3.6-35b-a3b", "-m", "radeon-860m", "-p", "9", "--cached", "9"],
            "--cached",
        ),
        (["decode", "qwen3.6-35b-a3b", "-m", "radeon-860m", "--ctx", "-1"], "--ctx"),
        (["prefill", "qwen3.6-35b-a3b", "-m", "radeon-860m", "-p", "0"], "(at least 1 token)"),
        (["decode", "qwen3.6-35b-a3b", "--bandwidth", "0", "--tflops", "1"], "--bandwidth"),
        (["decode", "qwen3.6-35b-a3b", "-m", "radeon-860m", "--parallel", "-2"], "--parallel"),
        (
            [
                "prefill",
                "qwen3.6-35b-a3b",
                "-p",
                "512",
                "--bandwidth",
                "900",
                "--tflops",
                "80",
                "--tflops-kind",
                "x",
            ],
            "--tflops-kind must be matrix or vector",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


@pytest.mark.parametrize(
    "argv, warned",
    [
        (["prefill", "qwen3.6-35b-a3b", "--machine", "rtx-4090", "--ubatch", "2048"], True),
        (["trace", "qwen3.6-35b-a3b", "-m", "rtx-4090", "--output", "8", "--ubatch", "1024"], True),
        (["prefill", "qwen3.6-35b-a3b", "--machine", "rtx-4090"], False),  # llama.cpp's 512
        (["prefill", "qwen3-8b", "--machine", "rtx-4090", "--ubatch", "2048"], False),  # dense
        # a CPU's routed experts run its dense kernels: no row term to over-credit
        (["prefill", "qwen3.6-35b-a3b", "--machine", "i9-13900k", "--ubatch", "2048"], False),
        # experts in the host's RAM: a larger micro-batch also spreads their copy to the card
        (["prefill", "qwen3.6-35b-a3b", "-m", "rtx-5080", "--cpu-moe", "--ubatch", "2048"], False),
        (["compare", "qwen3.6-35b-a3b", "-m", "rtx-4090,i9-13900k", "--ubatch", "2048"], True),
        # 7,900 of the 8,192 tokens cached: 292 computed, one chunk below 512 whatever --ubatch says
        (
            [
                "prefill",
                "qwen3.6-35b-a3b",
                "-m",
                "rtx-4090",
                "--ubatch",
                "2048",
                "--cached",
                "7900",
            ],
            False,
        ),
    ],
)
def test_a_larger_micro_batch_on_a_moe_warns(capsys, argv, warned):
    # from two to four times the micro-batch the row term gives a MoE's prefill 41 to 152%,
    # where four of six published sweeps gained 8 to 29% (docs/prefill.md)
    r = run_json(capsys, *argv, "--prompt", "8192")
    rows = r.get("rows", [r])  # compare: one row per model and machine
    said = [w for row in rows for w in row["warnings"] if "micro-batch" in w]
    assert bool(said) is warned
    if warned:
        assert "qwen3.6-35b-a3b" in said[0] and "too short" in said[0]
