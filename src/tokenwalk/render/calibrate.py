"""Rich views of a refit of the shipped defaults and of one machine's calibration."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console, Group

from tokenwalk.render.fmt import seconds
from tokenwalk.render.layout import FitTable, left_out_note
from tokenwalk.render.safe import safe_markup, safe_text
from tokenwalk.timing.calibrate import DefaultsFit, ErrorStats, MachineFit
from tokenwalk.timing.passes import experts_at_dense_rate

__all__ = ["render_defaults", "render_machine_fit"]


def _err(s: ErrorStats) -> str:
    if s.median_pct is None:
        return "-"
    return f"{s.median_pct:.1f}% / {s.p90_pct:.1f}%"


_COLUMNS = ("eff_bw", "eff_compute", "overhead per layer", "rows_half", "eff_experts", "rows")


def _experts(p: dict, backend: str = "") -> str:
    """eff_experts as a share; '-' where the experts run at the dense rate (a cpu backend)."""
    if experts_at_dense_rate(backend):
        return "-"
    return f"{p.get('eff_experts', 1.0):.0%}"


def _short_peak(group: str) -> str:
    """'gpu/cuda matrix' -> 'gpu/cuda m', as the machines table marks a rate (m, v)."""
    kb, _, peak = group.partition(" ")
    return f"{kb} {peak[0]}" if peak else kb


def _params(name: str, p: dict, backend: str = "") -> dict[str, str]:
    """A row of fitted parameters as the tables show them (eff_experts: '-' on a cpu backend)."""
    rows = p.get("n_rows")
    return {
        "fit": name,
        "eff_bw": f"{p['eff_bw']:.0%}",
        "eff_compute": f"{p['eff_compute']:.0%}",
        "overhead per layer": seconds(p["overhead_per_layer_s"]),
        "rows_half": f"{p['rows_half']:,.0f}",
        "eff_experts": _experts(p, backend),
        "rows": "" if rows is None else str(int(rows)),
    }


def _backend_of(group: str) -> str:
    """The backend of a composed group's name: 'gpu/cuda m' -> 'cuda' ('global': none)."""
    return group.partition(" ")[0].rpartition("/")[2]


def render_defaults(fit: DefaultsFit, console: Console, *, written: Path | None) -> None:
    t = FitTable(
        title=f"Timing model fitted on {fit.rows_used} published runs "
        f"({fit.rows_excluded} left out)",
        title_justify="left",
    )
    rows = [_params("global", fit.global_fit)]
    rows += [_params(_short_peak(g), p, _backend_of(g)) for g, p in fit.group_fits.items()]
    # kind/backend and parameter names, as the machine file spells them, are never cut: a
    # narrow terminal leaves the run counts out, and says so
    dropped = t.fill(
        rows, console.width, ("rows", "eff_experts"), left=("fit",), wrap={_COLUMNS[2]: 8}
    )
    e = FitTable(
        title="Fit residuals: |predicted / measured - 1|, median / 90th percentile",
        title_justify="left",
    )
    for col in ("", "decode", "prefill"):
        e.add_column(col, justify="left" if not col else "right")
    names = {
        "in_sample": "in sample (machine fits)",
        "naive": "naive roofline (100%, no overhead)",
    }
    for k, v in fit.errors.items():
        e.add_row(names.get(k, k), _err(v["decode"]), _err(v["prefill"]))
    tail = f"written to {safe_markup(written)}" if written else "not written (use --write-defaults)"
    console.print(
        Group(
            t,
            *([left_out_note(dropped, console.width)] if dropped else []),
            "[dim]Each kind/backend row (m, v: the peak its compute rate is, matrix or vector "
            "units) composes the global fit with the factors of its vendor, peak, backend, kind "
            "and kind/backend groups.[/dim]",
            "",
            e,
            "",
            f"[dim]{len(fit.machine_fits)} machine fits; leave-one-device-out error: "
            f"python benchmarks/accuracy.py; {tail}[/dim]",
        )
    )


def render_machine_fit(fit: MachineFit, console: Console, written: Path | None) -> None:
    title = (
        f"{safe_markup(fit.machine)}: {fit.n_runs} llama-bench runs, tok/s measured and "
        "predicted before and after the fit"
    )
    t = FitTable(title=title, title_justify="left")
    for col in ("run", "measured", "before", "after"):
        t.add_column(col, justify="left" if col == "run" else "right")
    for r in fit.predictions:
        t.add_row(
            safe_text(r["test"]),
            f"{r['measured_tok_s']:,.1f}",
            f"{r['before_tok_s']:,.1f}",
            f"{r['after_tok_s']:,.1f}",
        )
    rows = []
    for name, d, err in (
        ("before", fit.before, fit.error_before),
        ("after", fit.after, fit.error_after),
    ):
        row = _params(name, d, fit.backend)
        del row["rows"]
        if experts_at_dense_rate(fit.backend):  # the experts run at the dense rate
            del row["eff_experts"]
        rows.append({**row, "median error": f"{err.median_pct:.1f}%"})
    p = FitTable()
    # parameter names (as in the machine file) are never broken; a narrow terminal leaves
    # rows_half, then eff_experts out, and says so
    dropped = p.fill(
        rows,
        console.width,
        ("rows_half", "eff_experts"),
        left=("fit",),
        wrap={_COLUMNS[2]: 8, "median error": 6},
    )
    tail = f"stored in {safe_markup(written)}" if written else "not written (--dry-run)"
    note = [left_out_note(dropped, console.width)] if dropped else []
    if fit.at_bound:
        rate = {"eff_bw": "bandwidth", "eff_compute": "compute rate"}
        what = " and ".join(rate[k] for k in fit.at_bound)
        note.append(
            f"[yellow]{' and '.join(fit.at_bound)} at 100%: the fit would go past the machine's "
            f"{what}, which may understate what llama.cpp reaches there (a run above that "
            "stays too slow is one it cannot reach)[/yellow]"
        )
    console.print(Group(t, "", p, *note, "", f"[dim]{tail}[/dim]"))
