"""`tokenwalk.render.safe`: data shown as text, never as markup or terminal control."""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.table import Table

from tokenwalk.render.safe import (
    DISPLAY_CHARS,
    json_visible,
    safe_markup,
    safe_text,
    unsafe_chars,
    visible,
)


@pytest.mark.parametrize(
    "raw, shown",
    [
        ("plain name", "plain name"),
        ("evil\x1b[2J", "evil\\x1b[2J"),
        ("\x1b]8;;http://x\x07click", "\\x1b]8;;http://x\\x07click"),
        ("tab\there\nnew\rline", "tab\\there\\nnew\\rline"),
        ("nul\x00del\x7f", "nul\\x00del\\x7f"),
        ("csi\x9b31m", "csi\\x9b31m"),
        ("abc\u202edcba\u2066x\u2069", "abc\\u202edcba\\u2066x\\u2069"),
        ("zero\u200bwidth\ufeff", "zero\\u200bwidth\\ufeff"),
        ("line\u2028para\u2029", "line\\u2028para\\u2029"),
        ("lone \ud800 surrogate", "lone \\ud800 surrogate"),
        ("tag \U000e0041", "tag \\U000e0041"),
        ("Qwen3 · café 模型 😀", "Qwen3 · café 模型 😀"),
        ("[link=http://x]click[/link]", "[link=http://x]click[/link]"),
    ],
)
def test_visible_shows_controls_as_escapes(raw: str, shown: str) -> None:
    assert visible(raw) == shown
    assert not unsafe_chars(visible(raw))


def test_visible_cuts_long_text_and_says_so() -> None:
    out = visible("x" * 1_000_000)
    assert out.startswith("x" * DISPLAY_CHARS)
    assert out.endswith(f"… ({1_000_000 - DISPLAY_CHARS:,} more characters)")
    assert visible("y" * 10, None) == "y" * 10
    assert visible(12) == "12"


def _render(*renderables: object, terminal: bool = True, width: int = 200) -> str:
    buf = io.StringIO()
    console = Console(
        file=buf,
        force_terminal=terminal,
        color_system="truecolor" if terminal else None,
        width=width,
        emoji=False,
    )
    for r in renderables:
        console.print(r)
    return buf.getvalue()


HOSTILE = "[link=http://x]click[/link] [/] [bold red]x \x1b[2J \x1b]8;;http://x\x07y \x9b \u202e"


def test_markup_and_text_print_the_data_itself() -> None:
    t = Table(title=f"model {safe_markup(HOSTILE)}")
    t.add_column("name")
    t.add_row(safe_text(HOSTILE))
    t.add_row(f"[bold]{safe_markup(HOSTILE)}[/bold]")
    out = _render(t)
    assert "\x1b]8;" not in out  # no hyperlink
    assert out.count("[link=http://x]click[/link] [/] [bold red]x \\x1b[2J") == 3
    assert not [c for c in out.replace("\x1b[", "") if c == "\x1b" or 0x80 <= ord(c) <= 0x9F]


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.text(alphabet=st.characters(codec=None), max_size=40))
def test_any_text_renders_without_control_or_markup(s: str) -> None:
    shown = visible(s)
    assert not unsafe_chars(shown)
    out = _render(safe_text(s), f"[dim]{safe_markup(s)}[/dim]", terminal=False, width=1000)
    assert out == f"{shown}\n{shown}\n"


@settings(max_examples=200, derandomize=True, deadline=None)
@given(st.text(alphabet=st.characters(codec=None), max_size=40))
def test_json_visible_parses_back_exactly(s: str) -> None:
    text = json_visible(json.dumps({"name": s}, ensure_ascii=False))
    assert json.loads(text) == {"name": s}
    assert not unsafe_chars(text.replace("\n", ""))


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_bar_shows_its_label_as_data(monkeypatch: pytest.MonkeyPatch) -> None:
    """A remote read's progress line names the URL: markup and escapes in it stay text."""
    import sys

    from tokenwalk.sources.progress import FetchProgress

    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "300")
    err = _Tty()
    monkeypatch.setattr(sys, "stderr", err)
    label = "http://h/[link=http://x]click[/link][/]\x1b[2J\x1b]8;;http://x\x07.gguf"
    bar = FetchProgress(label, delay_s=0.0)
    bar.update(1000)
    bar.finish()
    out = err.getvalue()
    assert "[link=http://x]click[/link][/]\\x1b[2J\\x1b]8;;http://x\\x07.gguf" in out
    assert "\x1b[2J" not in out and "\x1b]8;" not in out
