"""A command loads only what it uses: the module of its own command, no catalogue parser and no
library that only other commands need (benchmarks/startup.py times the result)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tokenwalk.cli import app, load_commands
from tokenwalk.cli.app import COMMAND_MODULES, COMMANDS


def test_every_command_is_found_in_its_module() -> None:
    load_commands()
    registered = {
        (info.name or info.callback.__name__): info.callback.__module__
        for info in app.registered_commands
    }
    assert set(COMMAND_MODULES) == set(COMMANDS) == set(registered)
    for name, module in registered.items():
        assert module == f"tokenwalk.cli.{COMMAND_MODULES[name]}", name


def _modules_after(*argv: str) -> set[str]:
    """The modules a fresh interpreter holds after running `tokenwalk ARGV`, the catalogues
    compiled beforehand (as any run but the first finds them)."""
    from tokenwalk.catalog import read_data

    for name in ("models", "machines", "timing", "graph_nodes", "accuracy"):
        read_data(f"{name}.yaml")
    code = (
        "import sys, io, json, contextlib\n"
        "from tokenwalk.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    code = main({list(argv)!r})\n"
        "print(json.dumps([code, sorted(sys.modules)]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=os.environ.copy()
    )
    assert done.returncode == 0, done.stderr
    code, modules = json.loads(done.stdout)
    assert code == 0
    return set(modules)


NEVER = {"yaml", "numpy", "scipy", "plotext", "gguf", "urllib3", "ssl", "tokenwalk.timing.fit"}


@pytest.mark.parametrize(
    ("argv", "also_never"),
    [
        (("kv", "llama-3-8b", "--ctx", "8k"), {"tokenwalk.cli.time_cmd", "tokenwalk.system"}),
        (("size", "llama-3-8b"), {"tokenwalk.cli.time_cmd", "tokenwalk.cli.cost_opts"}),
        (("decode", "llama-3-8b", "-m", "rtx-4090"), {"tokenwalk.cli.size_cmd"}),
    ],
)
def test_a_command_loads_only_what_it_uses(argv: tuple[str, ...], also_never: set[str]) -> None:
    modules = _modules_after(*argv)
    others = {f"tokenwalk.cli.{m}" for m in ("compare_cmd", "plan_cmd", "models_cmd", "probe_cmd")}
    assert not modules & (NEVER | others | also_never)
