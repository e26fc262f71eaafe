"""The README's Python runs: every ```python block, as a user would paste it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", README.read_text(encoding="utf-8"), re.S | re.M)


def test_the_readme_has_python_to_run():
    assert BLOCKS


@pytest.mark.parametrize("code", BLOCKS, ids=lambda c: c.splitlines()[-1][:40])
def test_a_readme_python_block_runs(code, capsys):
    exec(compile(code, str(README), "exec"), {"__name__": "__readme__"})  # noqa: S102
    assert capsys.readouterr().out.strip()  # it prints what it says it prints
