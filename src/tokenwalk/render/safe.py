"""Untrusted text made safe to show: every string that comes from a file, a URL, a config, a
YAML spec or a machine file is data, never markup and never terminal control.

Two dangers, two rules:

- Rich markup. A GGUF's ``general.name`` of ``[link=http://x]click[/link]`` would print a live
  hyperlink, and ``[/]`` would crash the view. Data goes into a view as a `rich.text.Text`
  (`safe_text`), which Rich never parses, or, inside a markup string, escaped (`safe_markup`).
- Terminal control. An ESC byte in a name (``\\x1b[2J`` clears the screen, ``\\x1b]8;;URL\\x07``
  opens a hyperlink) reaches the terminal through Rich and through plain stderr writes alike.
  `visible` shows every such character as a Python-style escape: C0 controls and DEL as
  ``\\xNN`` (tab, newline and carriage return as ``\\t``, ``\\n``, ``\\r``), C1 controls as
  ``\\x80`` .. ``\\x9f``, and the other invisible characters that can reorder or hide text (bidi
  overrides and isolates, zero-width and other format characters, line and paragraph
  separators, lone surrogates) as ``\\uNNNN`` (``\\UNNNNNNNN`` beyond U+FFFF). The text stays
  on one line and says what it holds.

Display also cuts a string at `DISPLAY_CHARS` characters (a 64 MiB name would otherwise fill the
terminal); `--json` keeps every string exactly as it was read.
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.text import Text

__all__ = [
    "DISPLAY_CHARS",
    "MESSAGE_CHARS",
    "visible",
    "safe_text",
    "safe_markup",
    "json_visible",
    "unsafe_chars",
]

DISPLAY_CHARS = 256  # longest piece of data a view shows, in characters
MESSAGE_CHARS = 2000  # longest error or warning line, in characters

_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
# categories shown as escapes: controls (C0, DEL, C1), format characters (bidi marks, overrides
# and isolates, zero-width joiners, BOM, ...), surrogates, line and paragraph separators
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def _is_unsafe(ch: str) -> bool:
    o = ord(ch)
    if o < 0x7F:
        return o < 0x20
    if o <= 0x9F:
        return True  # DEL and C1
    return unicodedata.category(ch) in _UNSAFE_CATEGORIES


def _escape(ch: str) -> str:
    if ch in _NAMED:
        return _NAMED[ch]
    o = ord(ch)
    if o <= 0xFF:
        return f"\\x{o:02x}"
    return f"\\u{o:04x}" if o <= 0xFFFF else f"\\U{o:08x}"


# the fast path: printable ASCII needs no look at each character
_PLAIN = re.compile(r"[\x20-\x7e]*")
_NON_ASCII = re.compile(r"[^\x00-\x7e]")


def unsafe_chars(text: str) -> list[str]:
    """The characters of `text` that `visible` would escape (for tests and checks)."""
    return [ch for ch in text if _is_unsafe(ch)]


def visible(value: object, limit: int | None = DISPLAY_CHARS) -> str:
    """`value` as text with every control or invisible reordering character shown as an escape.

    ``"evil\\x1b[2J"`` -> ``"evil\\\\x1b[2J"`` (the four characters backslash, x, 1, b). With
    `limit`, text longer than `limit` characters is cut there and says how much was left out.
    Backslashes are kept as they are, so a literal ``\\x1b`` in the data reads the same as an
    escaped ESC; the JSON output tells them apart.
    """
    text = value if isinstance(value, str) else str(value)
    cut = ""
    if limit is not None and len(text) > limit:
        cut = f"… ({len(text) - limit:,} more characters)"
        text = text[:limit]
    if not _PLAIN.fullmatch(text):
        text = "".join(_escape(ch) if _is_unsafe(ch) else ch for ch in text)
    return text + cut


def json_visible(json_text: str) -> str:
    """JSON text with DEL, C1 controls and the other characters `visible` escapes written as
    ``\\uNNNN`` (JSON itself escapes C0 only). Such characters can only occur inside JSON
    strings, so the result parses to exactly the same values."""

    def esc(m: re.Match[str]) -> str:
        ch = m.group()
        if not _is_unsafe(ch):
            return ch
        o = ord(ch)
        if o > 0xFFFF:  # a UTF-16 surrogate pair, as JSON spells characters beyond the BMP
            o -= 0x10000
            return f"\\u{0xD800 + (o >> 10):04x}\\u{0xDC00 + (o & 0x3FF):04x}"
        return f"\\u{o:04x}"

    return _NON_ASCII.sub(esc, json_text) if _NON_ASCII.search(json_text) else json_text


def safe_text(value: object, style: str = "", limit: int | None = DISPLAY_CHARS) -> Text:
    """A Rich `Text` showing `value` as data: no markup is parsed, controls are visible."""
    from rich.text import Text

    return Text(visible(value, limit), style=style)


def safe_markup(value: object, limit: int | None = DISPLAY_CHARS) -> str:
    """`value` escaped for use inside a Rich markup string (a title, a cell with styles)."""
    from rich.markup import escape

    return escape(visible(value, limit))
