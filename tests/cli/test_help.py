"""`tokenwalk --help` lists every command on one line, in the README's order, and each command's
--help ends with an example that runs."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tokenwalk.cli import main
from tokenwalk.cli.app import COMMANDS

README = Path(__file__).parents[2] / "README.md"
RUNNABLE = [c for c in COMMANDS if c not in ("tokens", "probe", "calibrate")]  # files or writes


def test_top_help_lists_commands_in_readme_order(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    listed = re.findall(r"^│ (\w+) {2,}", out, flags=re.M)
    assert listed == list(COMMANDS)
    readme = re.findall(r"^\| `tokenwalk (\w+)", README.read_text(), flags=re.M)
    order = list(dict.fromkeys(readme))
    assert order == list(COMMANDS)
    for name, (summary, _) in COMMANDS.items():
        assert summary in " ".join(out.split()), name  # whole, on one line at 100 columns


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_help_ends_with_an_example(capsys, monkeypatch, name):
    monkeypatch.setenv("COLUMNS", "100")
    assert main([name, "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    example = COMMANDS[name][1]
    assert f"Example: {example}" in out
    assert example.startswith(f"tokenwalk {name}")


@pytest.mark.parametrize("name", RUNNABLE)
def test_the_example_runs(capsys, name):
    argv = shlex.split(COMMANDS[name][1])[1:]
    assert main(argv) in (0, 1)  # 1: budget's "does not fit" is an answer too
    capsys.readouterr()


@pytest.mark.parametrize("width", [60, 80, 120])
def test_models_fits_the_terminal_and_says_what_it_leaves_out(capsys, monkeypatch, width):
    """The names a user must type are never cut; a column left out is named under the table."""
    from tokenwalk.catalog import load_models

    monkeypatch.setenv("COLUMNS", str(width))
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= width
    header = out.splitlines()[2]
    assert "Q4_K_M" in header and "params" in header
    if width >= 80:
        assert "layers" in header  # every number at 80 columns
    for e in load_models():
        assert re.search(rf"^ ?{re.escape(e.slug)} ", out, flags=re.M), e.slug
    for col in ("arch", "layers", "active"):
        if col not in header:
            assert col in " ".join(out.split()[-30:]), col


@pytest.mark.parametrize("width", [60, 80, 120])
def test_machines_fits_the_terminal_and_says_what_it_leaves_out(capsys, monkeypatch, width):
    from tokenwalk.catalog import load_machines

    monkeypatch.setenv("COLUMNS", str(width))
    assert main(["machines"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= width
    for e in load_machines():
        assert re.search(rf"^ ?{re.escape(e.slug)} ", out, flags=re.M), e.slug
    header = out.splitlines()[2]
    for col in ("fit", "name", "kind/backend"):
        if col not in header:  # left out: the note under the table says so
            assert col in " ".join(out.split()[-40:]), col


@pytest.mark.parametrize("name", list(COMMANDS))
def test_flags_show_no_bool_metavar(capsys, monkeypatch, name):
    monkeypatch.setenv("COLUMNS", "100")
    assert main([name, "--help"]) == 0
    assert "<bool>" not in capsys.readouterr().out


def test_counts_and_this_say_what_they_are(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("TOKENWALK_MACHINES", raising=False)
    assert main(["decode", "qwen3.6-35b-a3b", "-m", "rtx-5080", "--n-cpu-moe", "-3"]) == 2
    err = capsys.readouterr().err
    assert "whole number" in err and "tokens" not in err
    assert main(["decode", "qwen3-0.6b", "-m", "this"]) == 2
    assert "tokenwalk probe --write" in capsys.readouterr().err
