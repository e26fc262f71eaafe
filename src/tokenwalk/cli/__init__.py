"""Command-line interface: parse -> resolve -> compute -> render; no arithmetic here.

The commands are registered on demand: `main` imports the module of the command it runs, and
`load_commands()` registers all of them (for `app` used on its own)."""

from tokenwalk.cli.app import app, load_commands, main, run

__all__ = ["app", "load_commands", "main", "run"]
