"""The arithmetic behind each answer (--explain): formula first, then the numbers in it.

A report type `FooReport` is explained by a function `explain_foo_report(report, console)` in
one of this package's modules, by command: `timing` (decode, prefill), `size` (size, kv, the
catalogue), `plan` (budget, trace, spec), `prompt` (tokens, a chat session), `machines`
(machines, probe, calibrate's fits), `compare` (compare, models --fits, sweeps). Every module
builds `Step`s and prints them with `steps.show`; `steps` also holds the number formats and
the steps several commands share. `tokenwalk.render.render` asks this package for
`explain_<report>` by name, which imports only the module that has it; commands that print
their own view (`models`, `machines`, `probe`, `calibrate`) import theirs directly.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__all__ = [
    "explain_sweep_report",
    "explain_compare_report",
    "explain_models_fit_report",
    "explain_machines",
    "explain_probe",
    "explain_defaults_fit",
    "explain_machine_fit",
    "explain_budget_report",
    "explain_trace_report",
    "explain_spec_report",
    "explain_session_report",
    "explain_token_count",
    "explain_size_report",
    "explain_kv_report",
    "explain_catalogue",
    "explain_decode_report",
    "explain_prefill_report",
]

# each explanation's module, imported when the explanation is first asked for
_MODULES = {
    "explain_sweep_report": "compare",
    "explain_compare_report": "compare",
    "explain_models_fit_report": "compare",
    "explain_machines": "machines",
    "explain_probe": "machines",
    "explain_defaults_fit": "machines",
    "explain_machine_fit": "machines",
    "explain_budget_report": "plan",
    "explain_trace_report": "plan",
    "explain_spec_report": "plan",
    "explain_session_report": "prompt",
    "explain_token_count": "prompt",
    "explain_size_report": "size",
    "explain_kv_report": "size",
    "explain_catalogue": "size",
    "explain_decode_report": "timing",
    "explain_prefill_report": "timing",
}


def __getattr__(name: str) -> Any:
    """`explain_<report>` from the module that has it."""
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_MODULES[name]}"), name)
