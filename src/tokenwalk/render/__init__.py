"""Views of result objects: Rich tables for people. JSON is the result object itself, dumped."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["render", "snake_case"]

# result type -> (module, function) of its view; imported only when a table is asked for
_VIEWS = {
    "SizeReport": ("tokenwalk.render.size", "render_size"),
    "KvReport": ("tokenwalk.render.kv", "render_kv"),
    "DecodeReport": ("tokenwalk.render.timing", "render_decode"),
    "PrefillReport": ("tokenwalk.render.timing", "render_prefill"),
    "BudgetReport": ("tokenwalk.render.plan", "render_budget"),
    "TraceReport": ("tokenwalk.render.plan", "render_trace"),
    "SpecReport": ("tokenwalk.render.plan", "render_spec"),
    "TokenCount": ("tokenwalk.render.prompt", "render_tokens"),
    "SessionReport": ("tokenwalk.render.prompt", "render_session"),
    "SweepReport": ("tokenwalk.render.sweep", "render_sweep"),
    "ServeReport": ("tokenwalk.render.serve", "render_serve"),
    "CompareReport": ("tokenwalk.render.compare", "render_compare"),
    "ModelsFitReport": ("tokenwalk.render.compare", "render_models_fit"),
}


def snake_case(name: str) -> str:
    """SizeReport -> size_report: the suffix of a report's explain_ and chart_ functions."""
    import re

    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _extra(kind: str, report: Any) -> Any:
    """The `explain_*` or `chart_*` function of a report type, or None where it has none."""
    module = import_module(f"tokenwalk.render.{'explain' if kind == 'explain' else 'charts'}")
    return getattr(module, f"{kind}_{snake_case(type(report).__name__)}", None)


def render(report: Any, console: Console, *, explain: bool = False, chart: bool = False) -> None:
    """Print the Rich view of a result object; a timing answer whose model does not fit the
    machine's memory (`costs.budget.FitChecked`) ends with that warning, in red; one with an
    `energy` (`costs.energy.EnergyCost`) shows its energy and price lines first. `explain` adds
    the arithmetic behind the answer (`render.explain`), `chart` its chart (`render.charts`)."""
    from tokenwalk.errors import InputError

    wanted = [k for k, on in (("explain", explain), ("chart", chart)) if on]
    extras = {k: _extra(k, report) for k in wanted}
    for k, fn in extras.items():
        if fn is None:
            raise InputError(f"--{k} has nothing to add to this answer")
    module, name = _VIEWS[type(report).__name__]
    getattr(import_module(module), name)(report, console)
    energy = getattr(report, "energy", None)
    if energy is not None:
        from tokenwalk.render.energy import energy_view

        console.print(energy_view(energy, type(report).__name__))
    memory = getattr(report, "memory", None)
    if memory is not None and not memory.fits:
        from tokenwalk.render.safe import safe_text

        console.print(safe_text(f"warning: {memory.note}", style="bold red", limit=None))
    for fn in extras.values():
        fn(report, console)
