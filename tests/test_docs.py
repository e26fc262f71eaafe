"""docs/ stays true: every command a page shows still prints what the page says."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("docs_tool", ROOT / "scripts" / "docs.py")
docs_tool = importlib.util.module_from_spec(spec)
spec.loader.exec_module(docs_tool)

PAGES = [
    p
    for p in [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
    if "<!-- run:" in p.read_text(encoding="utf-8")
]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_page_output_is_current(page, monkeypatch):
    monkeypatch.chdir(ROOT)
    text = page.read_text(encoding="utf-8")
    assert docs_tool.render_page(text) == text, (
        f"{page.name} is out of date: run `python scripts/docs.py {page.relative_to(ROOT)}`"
    )
