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


def export_svg(consoles: list[Console], path: Path) -> None:
    """An SVG of everything the consoles printed, titled with the file's name."""
    _write(path, "".join(c.export_svg(title=path.stem, clear=False) for c in consoles))


def export_html(consoles: list[Console], path: Path) -> None:
    """A stand-alone HTML page of everything the consoles printed, colours inline."""
    _write(path, "".join(c.export_html(inline_styles=True, clear=False) for c in consoles))
