"""Every timing command says when the model and its KV do not fit; refusals and warnings alike
in every command."""

from __future__ import annotations

import json
import re

import pytest

from tokenwalk.cli import main

CARD = ["-m", "rtx-4090"]  # 24 GB


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


ALL = ["--gpu-layers", "all"]  # every layer on the card, as asked, whether it fits or not
TOO_BIG = [
    ["decode", "llama-3.1-70b", *CARD, *ALL],
    ["prefill", "llama-3.1-70b", *CARD, *ALL, "-p", "2000"],
    ["trace", "llama-3.1-70b", *CARD, *ALL, "-p", "2000", "-n", "50"],
]


@pytest.mark.parametrize("argv", TOO_BIG)
def test_timing_commands_say_when_the_model_does_not_fit(capsys, argv):
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0  # a timing question still gets its answer
    d = json.loads(out)
    assert d["fits"] is False
    assert d["memory"]["needed_bytes"] > 40e9 and d["memory"]["free_bytes"] < 0
    assert "does not fit" in d["memory"]["note"] and "does not fit" in err
    code, out, _ = run(capsys, *argv)
    assert code == 0
    assert "warning: llama-3.1-70b does not fit" in " ".join(out.split())


@pytest.mark.parametrize(
    "argv",
    [
        ["decode", "llama-3-8b", *CARD],
        ["prefill", "llama-3-8b", *CARD, "-p", "2000"],
        ["trace", "llama-3-8b", *CARD, "-p", "2000", "-n", "50"],
    ],
)
def test_a_model_that_fits_says_so_quietly(capsys, argv):
    code, out, err = run(capsys, *argv, "--json")
    d = json.loads(out)
    assert code == 0 and d["fits"] is True and d["memory"]["free_bytes"] > 0
    assert not err
    assert "does not fit" not in run(capsys, *argv)[1]


def test_a_machine_without_memory_size_leaves_fits_open(capsys):
    d = json.loads(
        run(capsys, "decode", "llama-3-8b", "--bandwidth", "100", "--tflops", "5", "--json")[1]
    )
    assert d["fits"] is None and d["memory"] is None


def test_the_kv_of_a_long_request_counts(capsys):
    # 8B at Q4_K_M fits a 24 GB card, but not with 160k tokens of f16 KV next to it (its token
    # embedding stays in RAM, as llama.cpp keeps it)
    d = json.loads(
        run(capsys, "trace", "llama-3.1-8b", *CARD, *ALL, "-p", "160k", "-n", "10", "--json")[1]
    )
    assert d["fits"] is False and d["memory"]["ctx"] == 160 * 1024 + 10


@pytest.mark.parametrize("argv", [a[:4] + a[6:] for a in TOO_BIG])
def test_the_default_placement_is_llama_cpps_fit(capsys, argv):
    # no --gpu-layers: llama.cpp's -ngl auto / --fit on, which keeps layers of a 70B in RAM
    d = json.loads(run(capsys, *argv, "--json")[1])
    assert d["fits"] is True and d["memory"]["free_bytes"] > 0
    assert "fits as placed" in d["memory"]["note"]
    if argv[0] != "trace":  # trace's answer names no placement
        assert re.fullmatch(r"-ngl 4[45]", d["split"]["placement"])


def test_compare_does_not_rank_a_card_that_cannot_hold_the_model_at_an_all_on_card_speed(capsys):
    d = json.loads(
        run(capsys, "compare", "llama-3.1-70b", "-m", "rtx-4090,apple-m4-max", "--json")[1]
    )
    rows = {r["machine"]: r for r in d["rows"]}
    assert rows["rtx-4090"]["fits"] and rows["rtx-4090"]["placement"].startswith("-ngl 4")
    assert rows["rtx-4090"]["tok_s"] < rows["apple-m4-max"]["tok_s"]


def test_spec_exit_codes(capsys):
    # pays on speed, but 70B and its draft do not fit a 24 GB card: the answer is no
    code, out, err = run(capsys, "spec", "llama-3.1-70b", "-d", "llama-3.2-1b", *CARD, "--json")
    d = json.loads(out)
    assert d["pays"] and d["fits"] is False and code == 1
    assert "do not fit" in run(capsys, "spec", "llama-3.1-70b", "-d", "llama-3.2-1b", *CARD)[1]
    code, out, _ = run(capsys, "spec", "llama-3.1-8b", "-d", "llama-3.2-1b", *CARD, "--json")
    assert code == 0 and json.loads(out)["pays"]


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["kv", "llama-3-8b", "--parallel", "9000"], "256 parallel sequences"),
        (["budget", "llama-3-8b", *CARD, "--parallel", "100000"], "256 parallel sequences"),
        (["decode", "llama-3-8b", *CARD, "--parallel", "9000"], "256 parallel sequences"),
        (["decode", "llama-3-8b", *CARD, "-c", "100", "-np", "200"], "less than one token"),
        (["budget", "llama-3-8b", *CARD, "-c", "100", "-np", "200"], "less than one token"),
        (["kv", "llama-3-8b", "-c", "100", "-np", "200"], "less than one token"),
        (["spec", "llama-3-8b", "-d", "llama-3.2-1b", *CARD, "--observed-speedup", "50"], "5x"),
        (["trace", "llama-3-8b", *CARD, "-p", "9", "--cached", "9"], "--cached"),
        (["prefill", "llama-3-8b", *CARD, "-p", "2G"], "count of tokens"),
    ],
)
def test_impossible_is_refused_in_every_command(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2 and not out
    assert err.count("\n") == 1 and needle in err


@pytest.mark.parametrize(
    "argv",
    [
        ["kv", "llama-3-8b", "-c", "100k"],
        ["budget", "llama-3-8b", "-m", "h100-sxm", "-c", "100k"],
        ["decode", "llama-3-8b", *CARD, "-c", "100k"],
        ["prefill", "llama-3-8b", *CARD, "-p", "100k"],
        ["trace", "llama-3-8b", *CARD, "-p", "100k", "-n", "10"],
        ["spec", "llama-3-8b", "-d", "llama-3.2-1b", *CARD, "-c", "100k"],
    ],
)
def test_beyond_the_trained_context_warns_in_every_command(capsys, argv):
    code, out, err = run(capsys, *argv, "--json")
    assert code in (0, 1)
    assert "beyond its trained maximum of 8,192 tokens" in err
    d = json.loads(out)
    assert any("trained maximum" in w for w in d["warnings"])


def test_decode_splits_the_context_like_kv_and_budget(capsys):
    # --ctx is llama.cpp's -c: 32k over 8 streams is 4k each, in decode as in kv
    one = json.loads(run(capsys, "decode", "llama-3.1-8b", *CARD, "-c", "4096", "--json")[1])
    eight = json.loads(
        run(capsys, "decode", "llama-3.1-8b", *CARD, "-c", "32768", "-np", "8", "--json")[1]
    )
    assert eight["ctx"] == 32768
    assert eight["kv_read_bytes"] == pytest.approx(8 * one["kv_read_bytes"], rel=1e-9)
    kv = json.loads(run(capsys, "kv", "llama-3.1-8b", "-c", "32768", "-np", "8", "--json")[1])
    assert kv["kv_bytes"] == pytest.approx(eight["kv_read_bytes"], rel=0.01)
    out = run(capsys, "decode", "llama-3.1-8b", *CARD, "-c", "32768", "-np", "8")[1]
    assert "in 8 streams of 4,096" in " ".join(out.split())


def test_decode_compute_line_says_it_is_attention_only(capsys):
    out = " ".join(run(capsys, "decode", "llama-3-8b", *CARD, "-c", "8k")[1].split())
    assert "attention only" in out and "mat-vec kernels" in out
    line = next(x for x in out.split("compute")[1:] if "attention only" in x)
    assert not line.strip().startswith("0 ms")
