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
    assert "Usage" in out and "--json" in out
    assert f"Example: {example}" in out
    assert example.startswith(f"tokenwalk {name}")


@pytest.mark.parametrize("name", RUNNABLE)
def test_the_example_runs(capsys, name):
    argv = shlex.split(COMMANDS[name][1])[1:]
    assert main(argv) in (0, 1)  # 1: budget's "does not fit" is an answer too
    # an example is a run a user can make: no warning (spec's draft shares the vocabulary)
    assert "warning" not in capsys.readouterr().err


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
        if not e.benchmark_only:  # never listed
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


# -- defaults, --version, shell completion ----------------------------------------------------


def _options():
    """(command, click option) for every option of every command."""
    import typer.main

    from tokenwalk.cli.app import app

    group = typer.main.get_command(app)
    for name, command in group.commands.items():
        for p in command.params:
            if p.param_type_name == "option" and p.name != "help":
                yield name, p


def test_every_default_is_stated():
    """An option with a default shows it ([default: ...]) or says it in its help sentence."""
    hidden = []
    for name, p in _options():
        if p.is_flag or p.default in (None, False) or p.show_default is not False:
            continue
        if "default" not in (p.help or "").lower():
            hidden.append(f"{name} {p.opts[0]}")
    assert not hidden


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["budget", "--help"], "Default: 16,384 or the models' shortest maximum"),
        (["kv", "--help"], "Default: 16,384 or the model maximum"),
        (["size", "--help"], "Default: Q4_K_M"),
        (["budget", "--help"], "Default: pc-9950x-64gb"),
        (["trace", "--help"], "Default: 0, none"),  # --n-cpu-moe
        (["calibrate", "--help"], "Default: llama-bench's own"),  # --threads
        (["kv", "--help"], "[default: f16]"),
        # which of a GeForce spec sheet's two dense FP16 tensor figures --tflops means
        (["decode", "--help"], "take the one with FP32 accumulate, the lower (RTX 4090: 165"),
    ],
)
def test_defaults_in_help(capsys, monkeypatch, argv, says):
    monkeypatch.setenv("COLUMNS", "200")
    assert main(argv) == 0
    assert says in " ".join(capsys.readouterr().out.replace("│", " ").split())


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(capsys, flag):
    from tokenwalk import __version__

    assert main([flag]) == 0
    assert capsys.readouterr().out == f"tokenwalk {__version__}\n"


def test_version_matches_the_package_metadata():
    from tokenwalk import __version__

    pyproject = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    assert re.search(r'^version = "(.*)"$', pyproject, flags=re.M)[1] == __version__


def test_top_help_lists_version_and_completion(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for option in ("--version", "-V", "--install-completion", "--show-completion"):
        assert option in out


def _complete(monkeypatch, capsys, words: str) -> list[str]:
    """What bash completion offers for the last of `words`, asked as the shell asks."""
    monkeypatch.setenv("_TOKENWALK_COMPLETE", "complete_bash")
    monkeypatch.setenv("COMP_WORDS", words)
    monkeypatch.setenv("COMP_CWORD", str(len(words.split()) - 1))
    with pytest.raises(SystemExit) as exit_:
        main([])
    assert exit_.value.code == 0
    return capsys.readouterr().out.split()


def test_show_completion_prints_a_bash_script(capsys, monkeypatch):
    # choose the shell as where no shell can be detected: --show-completion then takes one
    monkeypatch.setenv("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION", "1")
    with pytest.raises(SystemExit) as exit_:
        main(["--show-completion", "bash"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "_TOKENWALK_COMPLETE=complete_bash" in out
    assert "complete -o default -F _tokenwalk_completion tokenwalk" in out


def test_completion_of_commands_models_and_machines(capsys, monkeypatch):
    assert _complete(monkeypatch, capsys, "tokenwalk tr") == ["trace"]
    assert "qwen3.6-35b-a3b" in _complete(monkeypatch, capsys, "tokenwalk size qwen3.6-3")
    assert _complete(monkeypatch, capsys, "tokenwalk decode x --machine rtx-509") == ["rtx-5090"]
    assert _complete(monkeypatch, capsys, "tokenwalk decode x -m rtx-3090+rtx-509") == [
        "rtx-3090+rtx-5090"
    ]
    assert _complete(monkeypatch, capsys, "tokenwalk spec x --draft qwen3-0.") == ["qwen3-0.6b"]


def test_completion_leaves_paths_to_the_shell():
    from tokenwalk.cli.complete import complete_machine, complete_model

    assert complete_model("./models/") == []
    assert complete_machine("2xrtx-309") == ["2xrtx-3090"]
    assert complete_machine("2x-rtx-309") == ["2x-rtx-3090"]
    assert complete_machine("rtx-3090+3*rtx-306") == ["rtx-3090+3*rtx-3060-12gb"]
    assert complete_machine("radeon-860m,rtx-509") == ["radeon-860m,rtx-5090"]  # a list
    assert complete_machine("h100-sxm,2xrtx-309") == ["h100-sxm,2xrtx-3090"]
    assert complete_machine("no-such-machine") == []
