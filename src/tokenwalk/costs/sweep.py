"""A sweep: one command run at every value of the options given as lists (`--prompt 512,8k`,
`--machine a,b`), one row per run. The rows are flat (what --csv prints); `runs` holds each
run's whole answer, equal to the single run's --json."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

__all__ = ["SweepColumn", "SweepRow", "SweepReport"]

Cell = int | float | str | bool | None


class SweepColumn(BaseModel):
    """A column of a sweep's rows: its key in each row, its heading, and its unit."""

    key: str
    label: str
    unit: str = ""  # "s", "tok/s", "B" (bytes), "" for counts and names


class SweepRow(BaseModel):
    """One run: the swept inputs by option name, then the answer's headline numbers."""

    inputs: dict[str, Cell]  # e.g. {"machine": "rtx-5090", "prompt": 8192}
    values: dict[str, Cell]  # keyed by SweepColumn.key


class SweepReport(BaseModel):
    """Every run of a sweep. `axes` are the swept option names in the order given; `columns`
    the headline numbers each row carries (the first is the answer a chart plots)."""

    command: str
    axes: list[str]
    columns: list[SweepColumn]
    rows: list[SweepRow]
    runs: list[Any]  # each run's result object, as its single run's --json
