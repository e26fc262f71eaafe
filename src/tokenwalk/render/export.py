"""Save what the terminal showed: Rich's own SVG and HTML export of a recording console."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tokenwalk.errors import InputError

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["export_svg", "export_html"]


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write '{path}': {exc.strerror or exc}") from None


def export_svg(console: Console, path: Path) -> None:
    """An SVG of everything the recording console printed, titled with the file's name."""
    _write(path, console.export_svg(title=path.stem, clear=False))


def export_html(console: Console, path: Path) -> None:
    """A stand-alone HTML page of everything the recording console printed, colours inline."""
    _write(path, console.export_html(inline_styles=True, clear=False))
