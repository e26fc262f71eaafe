"""The output options, declared once: `--csv`, `--explain`, `--chart`, `--svg FILE` and
`--html FILE` beside each command's `--json`. `output_options` adds them to a command (one
"Output" panel in its --help) and keeps them for the length of the call, where `respond`,
`emit_json` and `stdout_console` (tokenwalk.cli.app) read them."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from tokenwalk.cli.declare import with_options
from tokenwalk.errors import InputError

__all__ = ["Output", "Collected", "current", "output_options", "answering", "OUTPUT_PANEL", "using"]

OUTPUT_PANEL = "Output"


@dataclass
class Collected:
    """What the runs of a sweep (`tokenwalk.cli.sweep`) answer: kept, not printed, and each
    warning said once however many runs give it."""

    answers: list[Any] = field(default_factory=list)
    warned: set[str] = field(default_factory=set)


@dataclass
class Output:
    """How a command's answer is printed. `console` is the one Rich console that printed it,
    kept to export what the terminal showed (`--svg`, `--html`)."""

    json: bool = False
    csv: bool = False
    explain: bool = False
    chart: bool = False
    svg: Path | None = None
    html: Path | None = None
    console: Any = None
    collected: Collected | None = None  # set while the runs of a sweep answer

    @property
    def for_scripts(self) -> bool:
        """JSON or CSV: no table, no chart, no progress on stderr."""
        return self.json or self.csv

    @property
    def shows_curves(self) -> bool:
        """The answer's series against the context (`by_context`) are printed: --json has
        them, --chart draws them; a table and --csv do not."""
        return self.json or self.chart

    @property
    def record(self) -> bool:
        return self.svg is not None or self.html is not None


_CURRENT: ContextVar[Output] = ContextVar("tokenwalk_output", default=Output())  # noqa: B039


def current() -> Output:
    """The output options of the command being run (defaults outside a command)."""
    return _CURRENT.get()


@contextmanager
def using(out: Output) -> Iterator[Output]:
    """Run with `out` as the current output options."""
    token = _CURRENT.set(out)
    try:
        yield out
    finally:
        _CURRENT.reset(token)


def _opt(*names: str, help: str, **kw: Any) -> Any:
    return typer.Option(*names, help=help, show_default=False, rich_help_panel=OUTPUT_PANEL, **kw)


_OUTPUT_OPTIONS: dict[str, tuple[Any, Any]] = {
    "csv": (
        Annotated[
            bool,
            _opt("--csv", help="Print the result's rows as CSV: a header line, then the rows."),
        ],
        False,
    ),
    "explain": (
        Annotated[
            bool,
            _opt(
                "--explain",
                help="Show the arithmetic behind the answer: each formula, then the numbers in it.",
            ),
        ],
        False,
    ),
    "chart": (
        Annotated[bool, _opt("--chart", help="Draw the answer as a chart under the table.")],
        False,
    ),
    "svg": (
        Annotated[
            Path | None,
            _opt("--svg", help="Also save the terminal's view as an SVG image.", metavar="FILE"),
        ],
        None,
    ),
    "html": (
        Annotated[
            Path | None,
            _opt("--html", help="Also save the terminal's view as an HTML page.", metavar="FILE"),
        ],
        None,
    ),
}

F = TypeVar("F", bound=Callable[..., Any])


def _check(out: Output) -> None:
    if out.json and out.csv:
        raise InputError("--json and --csv are two answers for scripts: give one")
    if out.record and out.for_scripts:
        raise InputError("--svg and --html save the terminal's view; --json and --csv print none")
    for path in (out.svg, out.html):
        if path is not None and (path.is_dir() or not path.parent.is_dir()):
            raise InputError(f"cannot write '{path}': not a file in an existing folder")


def _save(out: Output) -> None:
    """Write what the recording console printed (nothing when the command failed)."""
    if not out.record or out.console is None:
        return
    from tokenwalk.render.export import export_html, export_svg

    if out.svg is not None:
        export_svg(out.console, out.svg)
    if out.html is not None:
        export_html(out.console, out.html)


@contextmanager
def answering(kwargs: dict[str, Any]) -> Iterator[Output]:
    """Take the output options out of a command's `kwargs` (its `json` becomes "for scripts")
    and keep them as the current `Output` while the command answers; save what the terminal
    showed (--svg, --html) when it has answered. A sweep's runs keep collecting."""
    out = Output(
        json=bool(kwargs.get("json")),
        collected=current().collected,
        **{name: kwargs.pop(name, default) for name, (_, default) in _OUTPUT_OPTIONS.items()},
    )
    _check(out)
    if "json" in kwargs:
        kwargs["json"] = out.for_scripts
    with using(out):
        yield out
        _save(out)


def output_options(fn: F | None = None, *, chart: bool = True) -> Any:
    """Give command `fn` (which takes `json: bool`) the output options beside it, kept as the
    current `Output` while it runs; with --csv the command runs quiet, as for --json.
    Used as `@output_options`, or `@output_options(chart=False)` for a command whose answers
    have no chart: it offers no --chart."""
    if fn is None:
        return functools.partial(output_options, chart=chart)
    options = {k: v for k, v in _OUTPUT_OPTIONS.items() if chart or k != "chart"}

    def call(gathered: dict[str, Any], rest: dict[str, Any]) -> Any:
        kwargs = rest | gathered
        with answering(kwargs):
            return fn(**kwargs)

    return with_options(fn, options, call)
