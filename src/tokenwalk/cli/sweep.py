"""Sweeps: options that take a list of values (`--prompt 512,2k,8k`, `--machine a,b`), the
command run once per combination, and one table (or --json, --csv) of all the runs.

`split_list` is the one parser of lists on the command line; `sweep` gives a command's options
lists. A single value runs the command exactly as before; several lists run their Cartesian
product in the order the options were given, the first list varying slowest."""

from __future__ import annotations

import functools
import inspect
import itertools
import math
import re
from collections.abc import Callable, Sequence
from typing import Annotated, Any, TypeVar, get_args, get_origin

import typer

from tokenwalk.errors import InputError

__all__ = ["LIST_NOTE", "MODELS_NOTE", "NAMES_NOTE", "Values", "model_items", "split_list", "sweep"]

# What every option that takes a list says in its --help: numbers, then names.
LIST_NOTE = (
    " A list runs once per value: 1,2,4 or 2k,8k,32k (8,192 is one number; '512, 256' a list)."
)
NAMES_NOTE = " A list (a,b) runs once per value."
MODELS_NOTE = " Several models (a,b) run once each."

# 8,192 and 1,048,576 are one number, as README "Numbers" says; 0,128 and 0,128k are two
_THOUSANDS = re.compile(r"\s*[+-]?[1-9]\d{0,2}(?:,\d{3})+(?:\.\d+)?\s*")


def _sweep_value(group: str) -> bool:
    """A group that reads as a value of a sweep in its own right: no leading zero, and a
    power of two from 16 or a multiple of 100 (128, 512, 2048, 300)."""
    n = int(group)
    return group[0] != "0" and (n >= 16 and n & (n - 1) == 0 or n >= 100 and n % 100 == 0)


def _ambiguous(part: str) -> bool:
    """'128,512' reads as well as a list of two sweep values as one number grouped by threes;
    '8,192', '32,768', '131,072' and '1,048,576' read only as one number."""
    groups = part.strip().lstrip("+-").split(".")[0].split(",")
    return all(_sweep_value(g) for g in groups)


class Values(list):  # type: ignore[type-arg]
    """The values of an option given as a list, parsed."""


def split_list(value: str, *, numbers: bool = True) -> list[str]:
    """The items of an option's value: '512,2k,8k' -> ['512', '2k', '8k']; 'a, b' -> ['a', 'b'].

    With `numbers`, a value of digits grouped by threes (8,192; 1,048,576) is ONE item, a
    thousands separator; a comma followed by a space always separates items ('512, 256';
    '8,192, 16,384' is two). A value without a comma is one item, unchanged. An empty item is
    refused, and so is a grouped value whose groups read as sweep values too ('128,512')."""
    if "," not in value:
        return [value]
    items: list[str] = []
    for part in re.split(r",\s+", value) if numbers else [value]:
        if numbers and _THOUSANDS.fullmatch(part):
            if _ambiguous(part):
                one = part.strip().replace(",", "")
                listed = ", ".join(part.strip().split(","))
                raise typer.BadParameter(
                    f"'{part.strip()}' reads as one number ({one}) or as a list: write {one} "
                    f"for the number, or '{listed}' (a comma and a space) for a sweep"
                )
            items.append(part.strip())
        else:
            items += [item.strip() for item in part.split(",")]
    if not all(items):
        raise typer.BadParameter(f"'{value}' has an empty item; give a value between each comma")
    return items


def _item_parser(annotation: Any, info: Any) -> tuple[Callable[[str], Any], bool]:
    """(parser of one item, whether the items are numbers) of an option."""
    if info.parser is not None:
        return info.parser, True
    kind = _base(annotation)
    if kind in (int, float):
        what = "a whole number" if kind is int else "a number"

        def number(value: str) -> Any:
            try:
                return kind(value)
            except ValueError:
                raise typer.BadParameter(f"'{value}' is not {what}") from None

        return number, True
    return str, False


def _base(annotation: Any) -> Any:
    """int for `int`, `int | None` and `Annotated[int | None, ...]`."""
    if get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    args = [a for a in get_args(annotation) if a is not type(None)]
    return args[0] if len(args) == 1 else annotation


def _option_info(annotation: Any) -> Any:
    if get_origin(annotation) is Annotated:
        for meta in get_args(annotation)[1:]:
            if isinstance(meta, (typer.models.OptionInfo, typer.models.ArgumentInfo)):
                return meta
    return None


def model_items(value: str) -> list[str]:
    """The models of a MODEL argument: 'qwen3-8b,llama-3.1-8b' -> two; a file that exists or
    a URL stays one, commas and all."""
    from pathlib import Path

    if "," not in value or "://" in value or Path(value).exists():
        return [value]
    return split_list(value, numbers=False)


def _flag(annotation: Any) -> str:
    """The first name of an option (typer keeps it as the default under Annotated)."""
    info = _option_info(annotation)
    names = [info.default, *info.param_decls] if info is not None else []
    return next((n for n in names if isinstance(n, str) and n.startswith("-")), "the option")


def _listed(annotation: Any) -> Any:
    """The same option, taking a list: its parser splits the value (`split_list`) and parses
    each item as the option did; its help ends with LIST_NOTE (NAMES_NOTE for names)."""
    import copy

    info = _option_info(annotation)
    if info is None:
        raise TypeError("only an Annotated typer.Option can take a list")
    item, numbers = _item_parser(annotation, info)
    metavar = info.metavar or {int: "<int>", float: "<float>"}.get(_base(annotation), "<str>")

    model = isinstance(info, typer.models.ArgumentInfo)  # MODEL: a list of models

    def parse(value: Any) -> Any:
        if not isinstance(value, str):  # a default, already a value
            return value
        items = model_items(value) if model else split_list(value, numbers=numbers)
        if len(items) == 1:
            return Values([item(value)])
        return Values(item(v) for v in items)

    listed = copy.copy(info)
    listed.parser = parse
    listed.metavar = metavar
    listed.help = (info.help or "") + (
        MODELS_NOTE if model else LIST_NOTE if numbers else NAMES_NOTE
    )
    return Annotated[get_args(annotation)[0], listed]


F = TypeVar("F", bound=Callable[..., Any])

_ARGUMENTS = ("model", "target")  # the MODEL arguments that take a list
_CONTEXT = "sweep_context"  # the parameter Typer fills with the command's context
MAX_RUNS = 1000  # a product of lists grows fast: more runs than this is a typing slip


def sweep(names: Sequence[str], single: Sequence[str] = ()) -> Callable[[F], F]:
    """Let the options `names` of a command take lists (placed above `system_options`, which
    declares --machine); `single` names options that take one value, where a list is refused.

    A sweep runs the command body once per combination, its answers collected instead of
    printed (`tokenwalk.cli.output.Collected`), then prints one `SweepReport`: a table, or
    its --json or --csv. The exit code is the largest of the runs'."""

    def decorate(fn: F) -> F:
        sig = inspect.signature(fn, eval_str=True)
        params = [
            p.replace(annotation=_listed(p.annotation)) if p.name in names else p
            for p in sig.parameters.values()
        ]
        decls = {p.name: _flag(p.annotation) for p in params if p.name in single}

        # the command's context, to learn the order the options were given in
        context = inspect.Parameter(
            _CONTEXT, inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context
        )
        params.append(context)

        @functools.wraps(fn)
        def command(**kwargs: Any) -> Any:
            given = kwargs.pop(_CONTEXT, None)
            for name, decl in decls.items():
                value = kwargs.get(name)
                if isinstance(value, str) and "," in value:
                    raise InputError(f"{decl} takes one value, not a list ('{value}')")
            lists = {n: v for n, v in kwargs.items() if isinstance(v, Values)}
            axes = {n: list(v) for n, v in lists.items() if len(v) > 1}
            axes = {n: axes[n] for n in sorted(axes, key=_given_order(given))}
            kwargs |= {n: v[0] for n, v in lists.items() if len(v) == 1}
            if not axes:
                return fn(**kwargs)
            runs = math.prod(len(v) for v in axes.values())
            if runs > MAX_RUNS:
                sizes = " x ".join(str(len(v)) for v in axes.values())
                raise InputError(
                    f"{sizes} = {runs:,} runs is too many for one sweep (at most "
                    f"{MAX_RUNS:,}); give shorter lists"
                )
            return _run(fn.__name__, fn, kwargs, axes)

        command.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        return command  # type: ignore[return-value]

    return decorate


def _given_order(context: Any) -> Callable[[str], int]:
    """Sort key of option names: the order they were given on the command line (click fills
    its context's params in that order), else the command's own."""
    order = list(getattr(context, "params", None) or [])
    # the models (the command's argument) vary slowest: a table reads model by model
    return lambda name: (
        -1 if name in _ARGUMENTS else order.index(name) if name in order else len(order)
    )


def _run(
    command: str, fn: Callable[..., Any], kwargs: dict[str, Any], axes: dict[str, list[Any]]
) -> None:
    """Run `fn` at every combination of `axes` (the first varying slowest), then print the
    `SweepReport` of all the runs."""
    from tokenwalk.cli.app import respond
    from tokenwalk.cli.output import Collected, Output, answering, using
    from tokenwalk.costs.sweep import SweepReport, SweepRow
    from tokenwalk.render.rows import headline

    shown = dict(kwargs)
    code = 0
    with answering(shown) as out:  # the options of the printed report, checked first
        collected = Collected()
        combos = list(itertools.product(*axes.values()))
        with using(Output(collected=collected)):
            for combo in combos:
                try:
                    fn(**(kwargs | dict(zip(axes, combo, strict=True))))
                except typer.Exit as exc:  # budget and spec say "no" with 1: a row says it
                    code = max(code, exc.exit_code or 0)
        rows, columns = [], []
        for combo, answer in zip(combos, collected.answers, strict=True):
            columns, values = headline(answer)
            rows.append(SweepRow(inputs=dict(zip(axes, combo, strict=True)), values=values))
        report = SweepReport(
            command=command,
            axes=list(axes),
            columns=columns,
            rows=rows,
            runs=collected.answers,
        )
        respond(report, out.for_scripts)
    if code:
        raise typer.Exit(code)
