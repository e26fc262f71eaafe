"""`--swa-full` (llama.cpp's full-size cache for sliding-window layers) in every command where
the cache's size matters: its memory, its slower decode at depth, and the answer saying so."""

from __future__ import annotations

import json
import shlex

import pytest

from tokenwalk.cli import main

GEMMA = "gemma-3-12b"  # 40 sliding layers (window 1,024) and 8 full of 48

# each command, and a number of its --json that the full-size cache makes larger or smaller
RUNS = {
    "kv": (["kv", GEMMA, "--ctx", "32k"], "kv_bytes", "more"),
    "budget": (["budget", GEMMA, "-m", "rtx-5090", "--ctx", "32k"], "cache_bytes", "more"),
    "decode": (["decode", GEMMA, "-m", "rtx-5090", "--ctx", "32k"], "tok_s", "less"),
    "prefill": (["prefill", GEMMA, "-m", "rtx-5090", "--prompt", "32k"], "ttft_s", "more"),
    "trace": (["trace", GEMMA, "-m", "rtx-5090", "--prompt", "16k"], "ttft_s", "more"),
    "spec": (
        ["spec", GEMMA, "--draft", "gemma-3-270m", "-m", "rtx-5090", "--ctx", "32k"],
        "baseline_tok_s",
        "less",
    ),
    "serve": (
        ["serve", GEMMA, "-m", "rtx-5090", "--prompt", "16k", "-u", "2"],
        "user_tok_s",
        "less",
    ),
}


def run_json(capsys, *argv: str) -> dict:
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    return json.loads(out)


@pytest.mark.parametrize("name", list(RUNS))
def test_each_command_takes_it_and_says_so(capsys, name):
    argv, key, way = RUNS[name]
    without = run_json(capsys, *argv)
    with_it = run_json(capsys, *argv, "--swa-full")
    said = "swa_full_layers" if name == "kv" else "swa_full"
    assert not without[said] and with_it[said]
    if way == "more":
        assert with_it[key] > without[key]
    else:
        assert with_it[key] < without[key]


def test_the_kv_total_is_the_cache_of_every_layer_full(capsys):
    r = run_json(capsys, "kv", GEMMA, "--ctx", "32k", "--swa-full")
    assert r["swa_full_layers"] == 40
    assert [k["attention"] for k in r["kinds"]] == ["full"]
    per_layer = r["kinds"][0]["kv_bytes_per_token"] / r["kinds"][0]["n_layers"]
    assert r["kv_bytes"] == per_layer * 48 * 32768


def test_decode_is_slower_at_depth_only(capsys):
    argv = ["decode", GEMMA, "-m", "rtx-5090"]
    empty = run_json(capsys, *argv, "--ctx", "0")["tok_s"]
    assert run_json(capsys, *argv, "--ctx", "0", "--swa-full")["tok_s"] == pytest.approx(empty)
    deep = run_json(capsys, *argv, "--ctx", "64k")["tok_s"]
    assert run_json(capsys, *argv, "--ctx", "64k", "--swa-full")["tok_s"] < deep / 1.2


def test_budget_prints_the_flag_in_the_llama_cpp_line(capsys):
    r = run_json(capsys, "budget", GEMMA, "-m", "rtx-5090", "--ctx", "32k", "--swa-full")
    assert "--swa-full" in r["settings"]["llama.cpp"].split()
    assert not any(k.startswith("OLLAMA") for k in r["settings"])  # Ollama has no such setting
    plain = run_json(capsys, "budget", GEMMA, "-m", "rtx-5090", "--ctx", "32k")
    assert "--swa-full" not in plain["settings"]["llama.cpp"]


def test_compare_and_models_fits(capsys):
    argv = ["compare", GEMMA, "-m", "rtx-5090", "--ctx", "32k"]
    row = run_json(capsys, *argv)["rows"][0]
    r = run_json(capsys, *argv, "--swa-full")
    assert r["swa_full"] and r["rows"][0]["tok_s"] < row["tok_s"] / 1.2
    argv = ["models", GEMMA, "--fits", "rtx-5090", "--ctx", "32k"]
    fit = run_json(capsys, *argv)["models"][0]
    r = run_json(capsys, *argv, "--swa-full")
    assert r["swa_full"] and r["models"][0]["tok_s"] < fit["tok_s"] / 1.2
    assert r["models"][0]["free_bytes"] < fit["free_bytes"]


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", GEMMA, "-m", "rtx-5090", "--prompt", "1k", "--engine", "vllm", "--swa-full"],
        ["models", GEMMA, "--swa-full"],
    ],
)
def test_refused_where_it_means_nothing(capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--swa-full" in err and len(err.strip().splitlines()) == 1


# each command's printed llama.cpp line in --json, on one card and on a card with its host
LINES = {
    "decode": (["decode", GEMMA, "--ctx", "32k"], lambda r: [r["split"]["placement"]]),
    "prefill": (["prefill", GEMMA, "--prompt", "32k"], lambda r: [r["split"]["placement"]]),
    "compare": (["compare", GEMMA, "--ctx", "32k"], lambda r: [x["placement"] for x in r["rows"]]),
    "serve": (["serve", GEMMA, "--prompt", "16k", "-u", "2"], lambda r: [r["command"]]),
}


@pytest.mark.parametrize("machine", ["rtx-5090", "rtx-3060-12gb"])
@pytest.mark.parametrize("name", list(LINES))
def test_every_printed_line_carries_the_flag(capsys, name, machine):
    argv, lines = LINES[name]
    for line in lines(run_json(capsys, *argv, "-m", machine, "--swa-full")):
        words = shlex.split(line)
        assert words.count("--swa-full") == 1 and all("," not in w for w in words[:-1])
    for line in lines(run_json(capsys, *argv, "-m", machine)):
        assert "--swa-full" not in shlex.split(line)
