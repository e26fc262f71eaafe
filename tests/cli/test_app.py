"""The command line itself: numbers with suffixes, usage errors, exit codes, closed pipes."""

from __future__ import annotations

import fcntl
import json
import math
import os
import re
import subprocess
import sys

import pytest
import typer
from hypothesis import given
from hypothesis import strategies as st

from tokenwalk.cli import main
from tokenwalk.cli.app import COMMANDS, EXIT_ONE, exit_codes, parse_gb, parse_tokens


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def help_text(capsys, command: str) -> str:
    """A command's --help as one line of words, the panel borders taken out."""
    out = run(capsys, command, "--help")[1]
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", out).split())


@pytest.mark.parametrize(
    "text, tokens",
    [
        ("8192", 8192),
        ("8,192", 8192),
        ("8k", 8192),
        ("8K", 8192),
        ("32k", 32768),
        ("128k", 131072),
        ("1M", 1 << 20),
        ("1.5k", 1536),
        ("0", 0),
    ],
)
def test_token_counts_take_suffixes(text, tokens):
    assert parse_tokens(text) == tokens


@pytest.mark.parametrize("text", ["nan", "inf", "-5", "8x", "1.3", "k", "", "1e400", "0.1k"])
def test_token_counts_refuse_nonsense(text):
    with pytest.raises(typer.BadParameter):
        parse_tokens(text)


@given(st.integers(min_value=0, max_value=1 << 40))
def test_token_counts_read_back_plain_integers(n):
    assert parse_tokens(str(n)) == n
    assert parse_tokens(f"{n:,}") == n


@pytest.mark.parametrize(
    "text, gb", [("24", 24.0), ("24.5", 24.5), ("24GB", 24.0), ("24 GiB", 24.0), ("0", 0.0)]
)
def test_sizes_take_units(text, gb):
    assert parse_gb(text) == pytest.approx(gb)


@pytest.mark.parametrize(
    "text", ["nan", "NaN", "inf", "-inf", "-3", "big", "3 parsecs", "512MB", "1TB"]
)
def test_sizes_refuse_nan_inf_and_negative(text):
    with pytest.raises(typer.BadParameter):
        parse_gb(text)


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_sizes_are_finite_and_never_negative(x):
    try:
        gb = parse_gb(repr(x))
    except typer.BadParameter:
        assert not math.isfinite(x) or x < 0
    else:
        assert math.isfinite(gb) and gb >= 0


def test_suffixed_counts_work_in_every_command(capsys):
    kv = json.loads(run(capsys, "kv", "llama-3.1-8b", "--ctx", "32k", "--json")[1])
    assert kv["ctx"] == 32768
    dec = json.loads(
        run(capsys, "decode", "llama-3.1-8b", "-m", "rtx-4090", "-c", "8k", "--json")[1]
    )
    assert dec["ctx"] == 8192
    pre = json.loads(
        run(capsys, "prefill", "llama-3.1-8b", "-m", "rtx-4090", "-p", "4k", "--json")[1]
    )
    assert pre["prompt_tokens"] == 4096
    code, out, _ = run(
        capsys, "budget", "llama-3.1-8b", "-m", "rtx-4090", "-c", "16k", "--system-gb", "1.5GB",
        "--json",
    )  # fmt: skip
    assert code == 0 and json.loads(out)["system_bytes"] == int(1.5 * 2**30)  # GiB, as --memory


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["decode"], "Missing argument"),
        (["decode", "llama-3-8b", "-m", "rtx-4090", "--bogus"], "No such option: --bogus"),
        (["decode", "llama-3-8b", "-m", "rtx-4090", "-c", "lots"], "'lots' is not a count"),
        (["budget", "llama-3-8b", "-m", "rtx-4090", "--system-gb", "nan"], "'nan' is not a size"),
        (["budget", "llama-3-8b", "-m", "rtx-4090", "--system-gb", "-1"], "negative"),
        (["kv", "llama-3-8b", "--ctx", "1.5"], "whole number"),
        (["nosuchcommand"], "No such command"),
    ],
)
def test_usage_errors_are_one_line_exit_2(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert err.startswith("tokenwalk: error: ") and needle in err
    assert err.count("\n") == 1 and "--help" in err and "Usage" not in err
    assert not out


@pytest.mark.parametrize("command", ["budget", "decode", "compare"])
def test_an_absurd_system_size_is_refused_not_an_internal_error(capsys, command):
    code, _, err = run(capsys, command, "llama-3-8b", "-m", "rtx-4090", "--system-gb", "1e308")
    assert code == 2 and "--system-gb must be at most 1,000,000 GB" in err
    assert "internal error" not in err


@pytest.mark.parametrize(
    "command", ["size", "kv", "prefill", "spec", "trace", "decode", "budget", "compare"]
)
def test_the_model_argument_is_called_model(capsys, command):
    code, _, err = run(capsys, command)
    assert code == 2 and "Missing argument 'MODEL'" in err
    usage = next(ln for ln in run(capsys, command, "--help")[1].splitlines() if "Usage:" in ln)
    assert "{MODEL}" in usage and "<str>" not in usage


def test_no_command_prints_the_help(capsys):
    code, out, err = run(capsys)
    assert code == 0 and "Usage" in out + err


@pytest.mark.parametrize("command", COMMANDS)
def test_every_help_states_the_exit_codes(capsys, command):
    flat = help_text(capsys, command)
    assert "Exit codes: 0 answered" in flat and "2 refused input" in flat
    if command in EXIT_ONE:
        assert " ".join(EXIT_ONE[command].split()[:4]) in flat


def test_ctx_means_the_same_in_every_help(capsys):
    for command in ("kv", "budget", "decode"):
        out = help_text(capsys, command)
        assert "the total of all --parallel streams" in out, command
    assert "1 is not used" in exit_codes("size")


@pytest.mark.parametrize(
    "argv",
    [["machines"], ["machines", "--json"], ["models"], ["models", "--json"]],
)
def test_a_closed_pipe_exits_0(argv):
    # `tokenwalk machines | head -1`: the reader leaves after one line. The pipe holds a page
    # only, so the command is still writing when the reader closes it.
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, getattr(fcntl, "F_SETPIPE_SZ", 1031), 4096)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tokenwalk", *argv],
        stdout=write_end,
        stderr=subprocess.PIPE,
        env={**os.environ, "COLUMNS": "100"},
    )
    os.close(write_end)
    with os.fdopen(read_end, "rb") as reader:
        reader.readline()
    assert proc.stderr is not None
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0, err
    assert "Traceback" not in err and "Exception ignored" not in err


def test_usage_errors_show_control_characters_instead_of_sending_them(capsys):
    code, _, err = run(capsys, "kv", "llama-3-8b", "--ctx", "8\x1b[2Jk")
    assert code == 2 and "\x1b" not in err and "\\x1b[2J" in err


def test_memory_takes_a_size_with_its_unit(capsys):
    argv = ["budget", "llama-3-8b", "--bandwidth", "100", "--tflops", "5", "--json"]
    code, out, _ = run(capsys, *argv, "--memory", "16GB")
    assert code == 0 and json.loads(out)["capacity_bytes"] == run_capacity(capsys, argv, "16")
    code, _, err = run(capsys, *argv, "--memory", "nan")
    assert code == 2 and "'nan' is not a size in GB" in err


def run_capacity(capsys, argv: list[str], memory: str) -> int:
    return json.loads(run(capsys, *argv, "--memory", memory)[1])["capacity_bytes"]


def test_install_hints_name_what_pip_can_install(capsys, monkeypatch):
    """tokenwalk is not on PyPI: a missing optional package is named as pip finds it, and the
    extra as a checkout installs it."""
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # import fails
    code, _, err = run(capsys, "size", "hf://org/repo/model-Q4_K_M.gguf")
    assert code == 2
    assert "pip install huggingface_hub " in err and "pip install '.[hf]'" in err
    assert "tokenwalk[" not in err
