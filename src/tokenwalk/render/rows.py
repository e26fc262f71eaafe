"""Rows of a result for --csv (and for the rows of a sweep): flat dicts of plain values."""

from __future__ import annotations

from typing import Any

from tokenwalk.errors import InputError

__all__ = ["csv_rows"]


def csv_rows(report: Any) -> list[dict[str, Any]]:
    """The rows of a result object; refused for results that have no rows yet."""
    raise InputError(f"--csv is not available for this answer ({type(report).__name__})")
