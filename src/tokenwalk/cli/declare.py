"""Options declared once and shared by many commands: `with_options` adds a group of options
(the system, energy and price, output) to a command's signature and hands them to the command
gathered, so no command repeats them in its own signature."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["OptionTable", "with_options"]

F = TypeVar("F", bound=Callable[..., Any])

# name -> (Annotated typer option, default), in --help order
OptionTable = dict[str, tuple[Any, Any]]


def with_options(
    fn: F,
    options: OptionTable,
    call: Callable[[dict[str, Any], dict[str, Any]], Any],
    *,
    replaces: str | None = None,
) -> F:
    """`fn` with the keyword options of `options` added to its signature (in place of its
    parameter `replaces`, if given). When the command runs, `call(gathered, rest)` receives the
    values of those options and the command's other arguments, and runs `fn` with them."""
    sig = inspect.signature(fn, eval_str=True)
    params = [
        p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
        for p in sig.parameters.values()
        if p.name != replaces
    ]
    extra = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=ann)
        for name, (ann, default) in options.items()
    ]

    @functools.wraps(fn)
    def command(**kwargs: Any) -> Any:
        return call({name: kwargs.pop(name) for name in options}, kwargs)

    command.__signature__ = sig.replace(parameters=[*params, *extra])  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in [*params, *extra]}
    return command  # type: ignore[return-value]
