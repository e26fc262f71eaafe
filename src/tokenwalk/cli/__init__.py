"""Command-line interface: parse -> resolve -> compute -> render; no arithmetic here."""

from tokenwalk.cli import (  # noqa: F401  (command registration)
    compare_cmd,
    machines_cmd,
    models_cmd,
    plan_cmd,
    probe_cmd,
    serve_cmd,
    size_cmd,
    time_cmd,
    tokens_cmd,
)
from tokenwalk.cli.app import _add_exit_codes, app, main, run

_add_exit_codes()  # every command registered: each --help gets its exit codes

__all__ = ["app", "main", "run"]
