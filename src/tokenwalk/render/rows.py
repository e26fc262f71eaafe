"""Rows of a result for --csv (and for the rows of a sweep): flat dicts of plain values."""

from __future__ import annotations

from typing import Any

from tokenwalk.errors import InputError

__all__ = ["csv_rows", "compare_rows"]


def csv_rows(report: Any) -> list[dict[str, Any]]:
    """The rows of a result object; refused for results that have no rows yet."""
    if type(report).__name__ in ("CompareReport", "ModelsFitReport"):
        return compare_rows(report)
    raise InputError(f"--csv is not available for this answer ({type(report).__name__})")


def compare_rows(report: Any) -> list[dict[str, Any]]:
    """`compare`: one row per model and machine, the request's sizes in each; `models --fits`:
    one row per model, the machine and quant in each. The keys are the JSON's; lists (a row's
    warnings) are left out, as the JSON has them."""
    if type(report).__name__ == "ModelsFitReport":
        head = {"machine": report.machine, "quant": report.quant, "kv_type": report.kv_type}
        return [{**head, **m.model_dump()} for m in report.models]
    head = {
        "prompt_tokens": report.prompt_tokens,
        "output_tokens": report.output_tokens,
        "ctx": report.ctx,
        "kv_type": report.kv_type,
    }
    return [{**r.model_dump(exclude={"warnings"}), **head} for r in report.rows]
