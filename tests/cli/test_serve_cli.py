"""`tokenwalk serve`: the answer, a sweep over --users, vLLM, the simulation, refusals."""

from __future__ import annotations

import csv
import io
import json

import pytest

from tokenwalk.cli import main


def run_json(capsys, *argv: str) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_serve_answers_with_the_decode_and_prefill_of_one_user(capsys):
    r = run_json(
        capsys, "serve", "qwen3.6-35b-a3b", "-m", "radeon-860m", "--prompt", "2k", "-u", "1"
    )
    d = run_json(capsys, "decode", "qwen3.6-35b-a3b", "-m", "radeon-860m", "--ctx", "2198")
    p = run_json(capsys, "prefill", "qwen3.6-35b-a3b", "-m", "radeon-860m", "--prompt", "2k")
    assert r["user_tok_s"] == pytest.approx(d["tok_s"], rel=1e-12)
    assert r["ttft_alone_s"] == pytest.approx(p["ttft_s"], rel=1e-12)
    assert r["fits"] is True and r["memory"]["ctx"] == 2048 + 300
    assert r["users_at_min_tok_s"] >= 1 and r["max_users_fit"] >= 1
    assert [x["users"] for x in r["by_users"]][:4] == [1, 2, 4, 8]


def test_users_take_a_list(capsys):
    argv = ["serve", "llama-3.1-8b", "-m", "rtx-4090", "--prompt", "512", "-u", "1,2,4,8"]
    assert main([*argv, "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [int(r["users"]) for r in rows] == [1, 2, 4, 8]
    each = [float(r["user_tok_s"]) for r in rows]
    total = [float(r["aggregate_tok_s"]) for r in rows]
    assert each == sorted(each, reverse=True) and total == sorted(total)
    assert main(argv) == 0
    assert "each user" in capsys.readouterr().out


def test_the_table_and_chart(capsys):
    argv = ["serve", "qwen3.6-35b-a3b", "-m", "radeon-860m", "--prompt", "1k", "--chart"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "users at 5 tok/s" in out and "against the number of users" in out
    assert "tok/s against the number of users" in out


def test_rate_simulates_the_server(capsys):
    argv = ("serve", "llama-3.1-8b", "-m", "rtx-4090", "--prompt", "1k", "-n", "128", "-u", "4")
    r = run_json(capsys, *argv, "--rate", "2", "--requests", "50")
    sim = r["simulation"]
    assert sim["n_requests"] == 50 and sim["slots"] == 4
    assert 0 < sim["ttft_median_s"] <= sim["ttft_p95_s"]
    again = run_json(capsys, *argv, "--rate", "2", "--requests", "50")  # seeded: the same
    assert again["simulation"] == sim


def test_a_card_and_its_host(capsys):
    r = run_json(
        capsys,
        "serve",
        "qwen3.6-35b-a3b",
        "-m",
        "rtx-5080",
        "--cpu-moe",
        "--prompt",
        "1k",
        "-u",
        "2",
    )
    assert r["fits"] is not None and r["max_users_fit"] >= 2
    assert r["bound"].startswith(("gpu", "host", "link"))


def test_vllm_prints_its_start_up_lines(capsys):
    r = run_json(
        capsys,
        "serve",
        "llama-3.1-8b",
        "-m",
        "h100-sxm",
        "--engine",
        "vllm",
        "--prompt",
        "1k",
        "--max-model-len",
        "8k",
    )
    v = r["vllm"]
    assert r["quant"] == "BF16" and r["engine"] == "vllm"
    assert v["kv_tokens"] % 16 == 0
    assert v["max_concurrency"] == pytest.approx(v["kv_tokens"] / 8192)
    assert v["lines"][-1] == (
        f"Maximum concurrency for 8,192 tokens per request: {v['max_concurrency']:.2f}x"
    )
    assert v["max_num_seqs"] == 1024 and v["max_num_batched_tokens"] == 8192


@pytest.mark.parametrize(
    "argv, message",
    [
        (["-u", "4", "-np", "2"], "fewer than --users"),
        (["--engine", "sglang"], "--engine"),
        (["--ctx", "1000", "-u", "2"], "larger --ctx"),
        (["--rate", "0"], "--rate"),
        (["-n", "0"], "--output"),
        (["-u", "300"], "--parallel"),
        (["--engine", "vllm", "-m", "xeon-kvm-2c-2t"], "one GPU"),
    ],
)
def test_refusals(capsys, argv, message):
    base = ["serve", "llama-3.1-8b", "--prompt", "512"]
    if "-m" not in argv:
        base += ["-m", "rtx-4090"]
    assert main([*base, *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1


def test_no_prompt_is_refused(capsys):
    assert main(["serve", "llama-3.1-8b", "-m", "rtx-4090"]) == 2
    assert "give the prompt" in capsys.readouterr().err


def test_a_chat_is_the_prompt(capsys):
    chat = ["--chat", "docs/examples/clinical-chat.json"]
    r = run_json(capsys, "serve", "qwen3-0.6b", "-m", "rtx-4090", *chat, "-u", "2")
    assert r["prompt_tokens"] > 1000
    assert main(["serve", "qwen3-0.6b", "-m", "rtx-4090", *chat, "--prompt", "5"]) == 2
    assert "one way" in capsys.readouterr().err


def test_no_users_is_refused_under_its_own_name(capsys):
    from tokenwalk.cli import main

    for users, said in (("0", "'0' is less than 1"), ("-3", "'-3' is negative")):
        argv = ["serve", "qwen3-8b", "-m", "rtx-4090", "--prompt", "1k", "--users", users]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "--users" in err and said in err and "of 1 or more" in err
        assert "--parallel" not in err and err.count("\n") == 1


def test_memory_holds_the_users_whose_kv_fits_the_card_as_placed(capsys):
    """The KV of more users than the card holds is not 'fits' on a card whose command pins
    every layer to it (`-ngl all`): 26 users of 2,548 tokens next to qwen3-30b-a3b's 18.6 GB
    on a 24 GB RTX 4090 (docs/serve.md), not the 256 a placement of their own would put in
    RAM."""
    argv = ["serve", "qwen3-30b-a3b", "-m", "rtx-4090", "-u", "8", "--prompt", "2048"]
    r = run_json(capsys, *argv, "--output", "500")
    assert "-ngl all" in r["command"]
    assert r["max_users_fit"] == 26
    fits = {x["users"]: x["fits"] for x in r["by_users"]}
    assert fits[16] is True and fits[32] is False and fits[256] is False
