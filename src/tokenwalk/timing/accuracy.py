"""How far the timing model's estimates land from measured speeds, for the commands to quote.

`benchmarks/accuracy.py --write-data` writes `data/accuracy.yaml`: for decode and prefill, the
error of tok/s over the published runs of `data/benchmarks.yaml`, leave-one-device-out
(each device predicted from a fit without its rows: what to expect of a machine tokenwalk has
no runs of), overall and per device class, in sample (the shipped fit, each benchmarked
machine's own offsets included: what to expect of a machine fitted to its own runs), and
leave-one-group-out (every row of a class left out at once: a kind, a maker's segment, a
backend, a source; what to expect of a machine whose class the data has no runs of). The file
names the `data/timing.yaml` it was measured with (`fit_fingerprint`), so that a refit which
leaves it stale fails the tests instead of quoting another model's errors.
"""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from tokenwalk.errors import SpecError
from tokenwalk.machine import Machine
from tokenwalk.timing.efficiency import machine_segment

__all__ = [
    "CLASS_MIN_ROWS",
    "PHASES",
    "CLASS_LEVEL",
    "CLASS_QUOTE",
    "PhaseError",
    "AccuracyData",
    "ExpectedError",
    "fit_fingerprint",
    "accuracy_data",
    "expected_error",
]

CLASS_MIN_ROWS = 5  # a class's own figures are quoted from this many rows; else all rows'
PHASES = ("decode", "prefill")
# the leave-one-group-out level whose groups are the classes a machine is told apart by
# (`machine_segment`), and the key of its figures per kind: a machine of a class with no rows
# quotes its kind's (all rows' where the kind has fewer than CLASS_MIN_ROWS)
CLASS_LEVEL = "segment"
CLASS_QUOTE = "segment, per kind"


class PhaseError(BaseModel):
    """Error of tok/s over some rows: median and 90th percentile of |predicted / measured - 1|
    and the median of predicted / measured - 1, in percent."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    n_rows: int
    median_pct: float
    p90_pct: float
    signed_median_pct: float


class AccuracyData(BaseModel):
    """`data/accuracy.yaml`."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    source: str
    timing_sha256: str  # `fit_fingerprint` of the data/timing.yaml it was measured with
    cross_validated: dict[str, dict[str, PhaseError]]  # phase -> "all" or a class -> error
    in_sample: dict[str, PhaseError]  # phase -> error
    # benchmarked machines -> phase -> rows of that phase in the fit
    machine_rows: dict[str, dict[str, int]]
    # leave-one-group-out: phase -> level (kind, segment, backend, source) -> "all" (every
    # group of the level left out in turn) or a group -> error; "pooled" -> "all": every
    # level's predictions together; CLASS_QUOTE -> a kind: its rows, each class left out
    group_out: dict[str, dict[str, dict[str, PhaseError]]] = {}


class ExpectedError(BaseModel):
    """The error to expect of an estimate on this machine, from how the model did on published
    runs: on devices of its class it had no runs of, and, for a machine fitted to its own runs
    of the phase, on those runs (another model on it lands between the two)."""

    model_config = ConfigDict(frozen=True)
    group: str  # the rows `cross_validated` is of: a device class ("gpu") or "all"
    cross_validated: PhaseError
    # what the cross-validation left out of the fit: each device in turn, or, for a machine
    # whose class (`machine_segment`) the data has no runs of, each class in turn
    left_out: Literal["device", "class"] = "device"
    in_sample: PhaseError | None = None  # where the machine is fitted to its own runs


def fit_fingerprint(timing_yaml: str) -> str:
    """SHA-256 of data/timing.yaml's text without its `fitted:` date: the same fit, refitted
    on another day, has the same fingerprint."""
    text = re.sub(r"(?m)^fitted:.*\n", "", timing_yaml)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@functools.cache
def accuracy_data(path: Path | None = None) -> AccuracyData:
    """`data/accuracy.yaml` (or `path`), checked."""
    from tokenwalk.catalog import data_path, read_data, read_yaml

    raw = read_yaml(path) if path else read_data("accuracy.yaml")
    path = path or data_path("accuracy.yaml")
    try:
        return AccuracyData.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise SpecError(f"{path}: {where}: {first['msg']}") from None


def expected_error(machine: Machine, phase: str) -> ExpectedError | None:
    """What to expect of `machine`'s `phase` estimate: the cross-validated error of its class
    (of all rows where the class has fewer than CLASS_MIN_ROWS), and the in-sample error where
    its efficiencies are fitted to its own runs of that phase (a benchmarked machine's, or a
    user's `tokenwalk calibrate`). A machine of a class (`machine_segment`) the data has no
    runs of that phase of quotes leave-one-group-out instead, every class left out in turn:
    leaving out one device keeps its class's others in the fit, which says too little of a
    class never measured. None for a phase the data has no rows of."""
    data = accuracy_data()
    fitted_to = machine.fit.fitted_to
    own = fitted_to == "machine file" or (
        fitted_to == "benchmarks" and data.machine_rows.get(machine.slug, {}).get(phase, 0) > 0
    )
    in_sample = data.in_sample.get(phase) if own else None
    group_out = data.group_out.get(phase, {})
    classes = group_out.get(CLASS_LEVEL, {})
    segment = machine_segment(
        machine.kind, machine.vendor, machine.name, machine.backend, machine.unified_memory
    )
    unseen = "all" in classes and segment not in classes
    by_kind, left_out = (
        ({"all": classes["all"], **group_out.get(CLASS_QUOTE, {})}, "class")
        if unseen
        else (data.cross_validated.get(phase, {}), "device")
    )
    group = machine.kind
    e = by_kind.get(group)
    if e is None or e.n_rows < CLASS_MIN_ROWS:
        group, e = "all", by_kind.get("all")
    if e is None:
        return None
    return ExpectedError(group=group, cross_validated=e, left_out=left_out, in_sample=in_sample)
