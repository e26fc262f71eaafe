"""Hostile strings from files reach the screen as data: every command that shows a model or a
machine, in table and --json mode, on a terminal and off one.

The strings (tests/gguf/hostile.py) carry Rich markup (``[link=...]``, ``[/]``, ``[bold red]``),
escape sequences (``ESC [2J``, OSC 8 hyperlinks, OSC 0 titles), C1 controls, bidi overrides,
DEL and NUL, newlines and huge lengths. They come in through a GGUF's metadata and tensor names,
a user machine file, a YAML spec, the directory of a config.json and the file name itself.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hostile import ALL, HUGE, PIECES, TENSOR_NAMES, TINY_LLAMA, problems, shown, write_gguf

from tokenwalk.cli import main

MACHINE = "radeon-860m"
COMMANDS = {
    "size": [],
    "kv": [],
    "decode": ["-m", MACHINE],
    "prefill": ["-p", "2000", "-m", MACHINE],
    "budget": ["-m", MACHINE],
    "trace": ["-p", "2000", "-m", MACHINE],
    "spec": ["--draft", "{model}", "-m", MACHINE],
}
# the text of each piece as a table or an error line shows it
SENTINELS = [
    "[link=http://x]click[/link]",
    "[/]",
    "[bold red]loud",
    ":warning:",
    "evil\\x1b[2J",
    "\\x1b]8;;http://x\\x07hidden",
    "csi\\x9b31m",
    "abc\\u202edcba",
    "two\\nlines\\r",
]
_SGR = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch):
    """Make Rich believe stdout is a wide colour terminal (hyperlinks and styles are live)."""

    def use(on: bool) -> None:
        monkeypatch.delenv("NO_COLOR", raising=False)
        monkeypatch.setenv("COLUMNS", "2000")
        monkeypatch.setenv("TERM", "xterm-256color")
        if on:
            monkeypatch.setenv("FORCE_COLOR", "1")
        else:
            monkeypatch.delenv("FORCE_COLOR", raising=False)

    return use


def run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def argv_for(command: str, model: str, *extra: str) -> list[str]:
    return [command, model, *(a.replace("{model}", model) for a in COMMANDS[command]), *extra]


def json_strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in json_strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in json_strings(v)]
    return []


@pytest.fixture(scope="module")
def hostile_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hostile") / "model.gguf"
    return write_gguf(path, name=ALL, strings=ALL, extra_tensor=TENSOR_NAMES[0])


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("mode", ["terminal", "plain"])
def test_every_command_shows_metadata_as_data(
    capsys, terminal, hostile_gguf, command: str, mode: str
) -> None:
    terminal(mode == "terminal")
    code, out, err = run(capsys, argv_for(command, str(hostile_gguf)))
    assert code in (0, 1), err  # 1: a negative answer (budget: does not fit)
    assert not problems(out, terminal=mode == "terminal"), out
    assert not problems(err), err
    if mode == "terminal":
        assert "\x1b[" in out  # styles are on: the check above saw a live terminal
    text = _SGR.sub("", out)
    for s in SENTINELS:
        assert s in text, f"{s!r} not shown by {command}"


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_json_keeps_the_exact_strings(capsys, hostile_gguf, command: str) -> None:
    code, out, err = run(capsys, argv_for(command, str(hostile_gguf), "--json"))
    assert code in (0, 1), err
    assert not problems(out) and not problems(err)
    # the name, byte for byte (the model field adds the file name after it)
    assert any(ALL in s for s in json_strings(json.loads(out))), f"{command} --json lost it"


@pytest.mark.parametrize("piece", sorted(PIECES))
def test_each_piece_alone(capsys, terminal, tmp_path, piece: str) -> None:
    terminal(True)
    path = write_gguf(tmp_path / "m.gguf", name=PIECES[piece], strings=PIECES[piece])
    code, out, err = run(capsys, ["size", str(path)])
    assert code == 0, err
    assert not problems(out, terminal=True) and not problems(err)
    assert shown(PIECES[piece].strip()).rstrip("\\") in _SGR.sub("", out)  # names are stripped


def test_tensor_names_are_data(capsys, tmp_path) -> None:
    for i, name in enumerate(TENSOR_NAMES):
        path = write_gguf(tmp_path / f"t{i}.gguf", name="tiny", extra_tensor=name)
        for argv in (["size", str(path)], ["size", str(path), "--json"]):
            code, out, err = run(capsys, argv)
            assert code == 0, err
            assert not problems(out) and not problems(err)


@pytest.mark.parametrize("command", ["size", "decode", "budget", "spec"])
def test_a_huge_name_is_cut_on_screen_and_whole_in_json(
    capsys, terminal, tmp_path, command: str
) -> None:
    terminal(False)
    path = write_gguf(tmp_path / "huge.gguf", name=HUGE, strings=HUGE)
    code, out, err = run(capsys, argv_for(command, str(path)))
    assert code in (0, 1), err
    assert len(out) < 30_000 and len(err) < 5_000
    assert "more characters)" in out
    code, out, err = run(capsys, argv_for(command, str(path), "--json"))
    assert any(HUGE in s for s in json_strings(json.loads(out)))


def test_an_unknown_architecture_with_escapes_is_one_safe_line(capsys, tmp_path) -> None:
    arch = "evil\x1b[2J\x1b]8;;http://x\x07[/]\x9b\u202e"
    path = write_gguf(tmp_path / "arch.gguf", name=ALL, architecture=arch)
    for argv in (["size", str(path)], ["decode", str(path), "-m", MACHINE, "--json"]):
        code, out, err = run(capsys, argv)
        assert code == 2 and out == ""
        assert err.startswith("tokenwalk: error: ") and err.count("\n") == 1
        assert not problems(err), err
        assert "architecture 'evil\\x1b[2J\\x1b]8;;http://x\\x07[/]\\x9b\\u202e'" in err


def test_a_huge_architecture_gives_a_bounded_error(capsys, tmp_path) -> None:
    path = write_gguf(tmp_path / "arch.gguf", architecture="A" * 1_000_000)
    code, _out, err = run(capsys, ["size", str(path)])
    assert code == 2 and err.count("\n") == 1 and len(err) < 2_200
    assert "more characters)" in err


def test_a_hostile_file_name_in_warnings_errors_and_titles(capsys, terminal, tmp_path) -> None:
    terminal(True)
    path = write_gguf(tmp_path / "m\x1b[2J[bold]\x9b.gguf", name="tiny")
    code, out, err = run(capsys, ["size", str(path), "--quant", "Q4_K_M"])
    assert code == 0
    assert "--quant Q4_K_M ignored" in err and "m\\x1b[2J[bold]\\x9b.gguf" in err
    assert not problems(out, terminal=True) and not problems(err)
    assert "(m\\x1b[2J[bold]\\x9b.gguf)" in _SGR.sub("", out)
    code, out, err = run(capsys, ["size", str(tmp_path / "gone\x1b]8;;x\x07[blink].gguf")])
    assert code == 2 and not problems(err) and "gone\\x1b]8;;x\\x07[blink].gguf" in err


# -- a user machine file ---------------------------------------------------------------------


def _machines_file(tmp_path: Path) -> Path:
    entry = {
        "kind": "igpu",
        "backend": "vulkan",
        "memory_gb": 64,
        "bandwidth_gbs": 100,
        "fp16_tflops": 20,
        "fp16_kind": "matrix",
        "source": ALL,
        "notes": ALL,
        "fit": {"eff_bw": 0.6, "eff_compute": 0.4, "overhead_s": 5e-5, "source": ALL},
    }
    machines = [
        {"slug": "evil-box", "name": ALL, **entry},
        {"slug": "[/]\x1b[2J[link=http://x]box[/link]", "name": "plain", **entry},
    ]
    path = tmp_path / "machines.yaml"
    path.write_text(json.dumps(machines))  # JSON is YAML; \u escapes keep the controls
    return path


MACHINE_COMMANDS = ["decode", "prefill", "budget", "trace", "spec"]


@pytest.mark.parametrize("command", MACHINE_COMMANDS)
@pytest.mark.parametrize("slug", ["evil-box", "[/]\x1b[2J[link=http://x]box[/link]"])
def test_a_user_machine_is_data(capsys, terminal, tmp_path, command: str, slug: str) -> None:
    terminal(True)
    machines = _machines_file(tmp_path)
    model = str(write_gguf(tmp_path / "m.gguf", name="tiny"))
    argv = argv_for(command, model)
    argv[argv.index(MACHINE)] = slug
    argv += ["--machines-file", str(machines)]
    code, out, err = run(capsys, argv)
    assert code in (0, 1), err
    assert not problems(out, terminal=True), out
    assert not problems(err), err
    text = _SGR.sub("", out)
    if slug == "evil-box" and command in ("decode", "prefill"):
        assert "evil\\x1b[2J" in text and "[link=http://x]click[/link]" in text
    if slug != "evil-box" and command in ("budget", "trace", "spec"):
        assert "[/]\\x1b[2J[link=http://x]box[/link]" in text
    code, out, err = run(capsys, [*argv, "--json"])
    assert code in (0, 1) and not problems(out) and not problems(err)
    strings = json_strings(json.loads(out))
    assert ALL in strings or slug in strings


def test_the_machines_list_shows_user_machines_as_data(capsys, terminal, tmp_path) -> None:
    terminal(True)
    machines = _machines_file(tmp_path)
    code, out, err = run(capsys, ["machines", "box", "--machines-file", str(machines)])
    assert code == 0, err
    assert not problems(out, terminal=True) and not problems(err)
    text = _SGR.sub("", out)
    assert "evil-box" in text and "[/]\\x1b[2J[link=http://x]box[/link]" in text
    code, out, err = run(capsys, ["machines", "box", "--machines-file", str(machines), "--json"])
    assert code == 0 and not problems(out)
    rows = json.loads(out)["machines"]
    assert {r["name"] for r in rows} >= {ALL, "plain"}


def test_a_broken_machine_file_error_is_safe(capsys, tmp_path) -> None:
    path = tmp_path / "machines.yaml"
    path.write_text(json.dumps([{"slug": ALL, "name": ALL, "kind": ALL, "source": "x"}]))
    code, out, err = run(capsys, ["decode", "x", "-m", "evil", "--machines-file", str(path)])
    assert code == 2 and err.count("\n") == 1 and not problems(err), err


# -- specs and configs -----------------------------------------------------------------------


def test_a_yaml_spec_name_is_data(capsys, terminal, tmp_path) -> None:
    terminal(True)
    spec = tmp_path / "spec.yaml"
    spec.write_text(json.dumps({"slug": ALL, "name": ALL, "source": ALL, "config": TINY_LLAMA}))
    for command in ("size", "kv", "decode", "budget", "spec"):
        code, out, err = run(capsys, argv_for(command, str(spec)))
        assert code in (0, 1), err
        assert not problems(out, terminal=True) and not problems(err)
        assert "[link=http://x]click[/link] [/] [bold red]loud" in _SGR.sub("", out)
        code, out, err = run(capsys, argv_for(command, str(spec), "--json"))
        assert ALL in json_strings(json.loads(out))


def test_a_config_directory_name_is_data(capsys, terminal, tmp_path) -> None:
    terminal(True)
    folder = tmp_path / "[link=x]m[blink]\x1b[2J\u202e"  # no slash in a file name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(TINY_LLAMA))
    code, out, err = run(capsys, ["size", str(folder / "config.json")])
    assert code == 0, err
    assert not problems(out, terminal=True) and not problems(err)
    assert "[link=x]m[blink]\\x1b[2J\\u202e" in _SGR.sub("", out)


def test_a_config_with_hostile_values_errs_safely(capsys, tmp_path) -> None:
    cfg = {**TINY_LLAMA, "model_type": "evil\x1b[2J[/]", "num_hidden_layers": "\x1b]8;;x\x07"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    code, _out, err = run(capsys, ["size", str(path)])
    assert code == 2 and err.count("\n") == 1 and not problems(err), err
    cfg = {**TINY_LLAMA, "num_hidden_layers": "\x1b]8;;x\x07"}
    path.write_text(json.dumps(cfg))
    code, _out, err = run(capsys, ["size", str(path)])
    assert code == 2 and err.count("\n") == 1 and not problems(err), err


def test_calibrate_shows_a_hostile_machine_and_bench_file_as_data(capsys, terminal, tmp_path):
    terminal(True)
    slug = "[/]\x1b[2J[link=http://x]box[/link]"
    machines = tmp_path / "machines.yaml"
    machines.write_text(
        json.dumps(
            [
                {
                    "slug": slug,
                    "name": ALL,
                    "kind": "apple",
                    "backend": "metal",
                    "memory_gb": 64,
                    "bandwidth_gbs": 400,
                    "fp16_tflops": 21,
                    "fp16_kind": "vector",
                    "source": ALL,
                }
            ]
        )
    )
    row = {
        "model_filename": "models/llama-2-7b.Q4_0.gguf",
        "model_type": ALL,
        "gpu_info": ALL,
        "n_prompt": 512,
        "n_gen": 0,
        "avg_ts": 500.0,
    }
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps([row, {**row, "n_prompt": 0, "n_gen": 128, "avg_ts": 50.0}]))
    argv = ["calibrate", "-m", slug, "--from", str(bench), "--machines-file", str(machines)]
    code, out, err = run(capsys, [*argv, "--dry-run"])
    assert code == 0, err
    assert not problems(out, terminal=True) and not problems(err), out + err
    assert "[/]\\x1b[2J[link=http://x]box[/link]: 2 llama-bench" in _SGR.sub("", out)
    hostile = [{**row, "model_filename": ALL}]
    bench.write_text(json.dumps(hostile))
    code, out, err = run(capsys, [*argv, "--dry-run"])
    assert code == 2 and err.count("\n") == 1 and not problems(err), err
