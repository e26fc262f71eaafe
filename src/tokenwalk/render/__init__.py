"""Views of result objects: Rich tables for people. JSON is the result object itself, dumped."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["render"]

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
}


def render(report: Any, console: Console) -> None:
    """Print the Rich view of a result object; a timing answer whose model does not fit the
    machine's memory (`costs.budget.FitChecked`) ends with that warning, in red."""
    module, name = _VIEWS[type(report).__name__]
    getattr(import_module(module), name)(report, console)
    memory = getattr(report, "memory", None)
    if memory is not None and not memory.fits:
        from tokenwalk.render.safe import safe_text

        console.print(safe_text(f"warning: {memory.note}", style="bold red", limit=None))
