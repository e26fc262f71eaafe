"""docs/prompts.md lists exactly the `.pre` values tokenwalk supports."""

from __future__ import annotations

import re
from pathlib import Path

from tokenwalk.text.vocab import PRE_ALIASES, PRE_REGEXES

DOC = Path(__file__).parents[2] / "docs" / "prompts.md"


def test_docs_list_every_supported_pre() -> None:
    text = DOC.read_text(encoding="utf-8")
    block = text.split("<!-- pre-list -->")[1].split("<!-- end pre-list -->")[0]
    assert re.findall(r"`([^`]+)`", block) == sorted(PRE_ALIASES)


def test_every_alias_has_expressions() -> None:
    assert all(family in PRE_REGEXES for family, _, _ in PRE_ALIASES.values())
