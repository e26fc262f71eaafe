"""Rows of a result for --csv (and for the rows of a sweep): flat dicts of plain values.

Numbers stay plain: bytes as integers, seconds and rates as floats, no units, no markup. A
timing answer is one row: what it is of (model, machine, context: `_identity`) then the
headline columns its sweep shows (`headline`); a sweep is its inputs then those columns;
tables (kv's contexts, the catalogues) are their rows."""

from __future__ import annotations

from typing import Any

from tokenwalk.costs.sweep import Cell, SweepColumn
from tokenwalk.errors import InputError

__all__ = ["csv_rows", "headline", "compare_rows"]


def _col(key: str, label: str, unit: str = "") -> SweepColumn:
    return SweepColumn(key=key, label=label, unit=unit)


# report type -> its headline columns, the first the answer a chart plots
_HEADLINES: dict[str, list[SweepColumn]] = {
    "DecodeReport": [
        _col("tok_s", "estimate", "tok/s"),
        _col("ceiling_tok_s", "ceiling", "tok/s"),
        _col("step_read_bytes", "read per step", "B"),
        _col("bound", "bound"),
    ],
    "PrefillReport": [
        _col("ttft_s", "TTFT", "s"),
        _col("tok_s", "prefill", "tok/s"),
        _col("n_chunks", "chunks"),
    ],
    "TraceReport": [
        _col("ttft_s", "TTFT", "s"),
        _col("total_s", "total", "s"),
        _col("decode_tok_s", "decode", "tok/s"),
    ],
    "ServeReport": [
        _col("user_tok_s", "each user", "tok/s"),
        _col("aggregate_tok_s", "all users", "tok/s"),
        _col("ttft_busy_s", "TTFT busy", "s"),
        _col("users_at_min_tok_s", "users at min"),
        _col("bound", "bound"),
    ],
    "SessionReport": [
        _col("busy_s", "busy", "s"),
        _col("wall_s", "wall", "s"),
        _col("n_cold_loads", "cold loads"),
    ],
    "SpecReport": [
        _col("speedup", "speedup", "x"),
        _col("tok_s", "with draft", "tok/s"),
        _col("baseline_tok_s", "without", "tok/s"),
        _col("pays", "pays"),
    ],
    "BudgetReport": [
        _col("free_bytes", "free", "B"),
        _col("max_fit_ctx", "largest ctx", "tokens"),
        _col("fits", "fits"),
    ],
    "KvReport": [
        _col("cache_bytes", "KV total", "B"),
        _col("kv_bytes_per_token", "per token", "B"),
    ],
    "SizeReport": [
        _col("file_bytes", "file size", "B"),
        _col("bits_per_weight", "bpw"),
        _col("params", "params"),
        _col("active_params", "active"),
    ],
}


def headline(report: Any) -> tuple[list[SweepColumn], dict[str, Cell]]:
    """The headline columns of a result and its values in them (a sweep's row)."""
    columns = _HEADLINES.get(type(report).__name__)
    if columns is None:
        raise InputError(f"a list of values is not available for this answer ({_name(report)})")
    return columns, {c.key: getattr(report, c.key) for c in columns}


def _name(report: Any) -> str:
    return type(report).__name__


def _plain(value: Any) -> Cell:
    """A cell of CSV: numbers, text and booleans as they are; lists joined by ';'."""
    if isinstance(value, (list, tuple)):
        return ";".join(str(v) for v in value)
    if isinstance(value, dict):
        return ";".join(f"{k}={v}" for k, v in value.items())
    return value


def _flat(row: dict[str, Any]) -> dict[str, Cell]:
    return {k: _plain(v) for k, v in row.items()}


def _probe_row(r: Any) -> dict[str, Cell]:
    d = r.detected
    gpu = d.gpus[0] if d.gpus else None
    row: dict[str, Cell] = {
        "os": d.os,
        "cpu": d.cpu.name,
        "threads": d.cpu.n_usable_threads,
        "memory_bytes": d.memory.total_bytes,
        "gpu": gpu.name if gpu else None,
        "gpu_memory_bytes": gpu.memory_bytes if gpu else None,
        "backend": d.backend,
        "cpu_match": r.cpu_match.slug if r.cpu_match else None,
        "gpu_match": r.gpu_match.slug if r.gpu_match else None,
    }
    m = r.measured
    for key in ("read_gbs_1t", "read_gbs_all", "gemm_gflops_1t", "gemm_gflops_all"):
        row[key] = getattr(m, key).median if m is not None else None
    return row


def csv_rows(report: Any) -> list[dict[str, Cell]]:
    """The rows of a result object, each a flat dict of plain values."""
    name = _name(report)
    if name == "SweepReport":
        return [{**row.inputs, **row.values} for row in report.rows]
    if name == "KvReport":
        return [row.model_dump() for row in report.sweep]
    if name == "MachineList":
        return [_flat(row.model_dump()) for row in report.machines]
    if name == "CatalogueList":
        return [_flat(row.model_dump()) for row in report.models]
    if name == "TokenCount":  # a conversation: a row per call; a text: its count
        if len(report.calls) > 1:
            return [{"model": report.model, **row.model_dump()} for row in report.calls]
        return [report.model_dump(exclude={"calls"})]
    if name == "SessionReport":  # trace --chat: a row per call, as its table shows them
        head = {"model": report.model, "machine": report.machine}
        return [{**head, **call.model_dump()} for call in report.calls]
    if name == "ProbeReport":
        return [_probe_row(report)]
    if name == "MachineFit":
        return [{"machine": report.machine, **_flat(p)} for p in report.predictions]
    if name == "DefaultsFit":
        return [
            {"fit": fit, "phase": phase, **stats.model_dump()}
            for fit, phases in report.errors.items()
            for phase, stats in phases.items()
        ]
    if name in ("CompareReport", "ModelsFitReport"):
        return compare_rows(report)
    if name in _HEADLINES:
        return [{**_identity(report), **headline(report)[1]}]
    raise InputError(f"--csv is not available for this answer ({name})")


# what a single answer is of, ahead of its headline columns (a sweep's row has its inputs)
_IDENTITY = ("model", "target", "draft", "quant", "machine", "ctx", "prompt_tokens")
_IDENTITY += ("output_tokens", "kv_type")


def _identity(report: Any) -> dict[str, Cell]:
    """The model, machine and context a single answer is of, under their JSON keys."""
    row: dict[str, Cell] = {}
    models = getattr(report, "models", None)
    if models and hasattr(models[0], "model"):  # budget: the models loaded together
        row["model"] = " + ".join(m.model for m in models)
    for key in _IDENTITY:
        value = getattr(report, key, None)
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            row.setdefault(key, value)
    return row


def compare_rows(report: Any) -> list[dict[str, Any]]:
    """`compare`: one row per model and machine, the request's sizes in each; `models --fits`:
    one row per model, the machine and quant in each. The keys are the JSON's, the request's
    energy and price (`energy.energy_wh`, `energy.cost`, ...) and the median of its quoted
    errors brought up into the row; lists (a row's warnings) are left out, as the JSON has
    them."""
    if type(report).__name__ == "ModelsFitReport":
        head = {"machine": report.machine, "quant": report.quant, "kv_type": report.kv_type}
        return [{**head, **m.model_dump()} for m in report.models]
    head = {
        "prompt_tokens": report.prompt_tokens,
        "output_tokens": report.output_tokens,
        "ctx": report.ctx,
        "kv_type": report.kv_type,
    }
    energy = ("power_w", "energy_wh", "cost", "currency")
    return [
        {
            **r.model_dump(exclude={"warnings", "energy", "prefill_error", "decode_error"}),
            **_error_cells("prefill", r.prefill_error),
            **_error_cells("decode", r.decode_error),
            **{k: getattr(r.energy, k) for k in energy},
            **head,
        }
        for r in report.rows
    ]


def _error_cells(phase: str, e: Any) -> dict[str, Cell]:
    """A quoted typical error as cells: the group it is of, the median on devices of the group
    never measured, what that cross-validation left out (a device, or a class for a machine
    whose class has no runs), and in sample where the machine's fit is its own
    (`tokenwalk.timing.accuracy`)."""
    return {
        f"{phase}_error_group": e.group if e is not None else None,
        f"{phase}_error_pct": e.cross_validated.median_pct if e is not None else None,
        f"{phase}_error_left_out": e.left_out if e is not None else None,
        f"{phase}_error_in_sample_pct": (
            e.in_sample.median_pct if e is not None and e.in_sample is not None else None
        ),
    }
