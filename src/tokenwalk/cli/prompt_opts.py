"""The prompt options shared by `prefill`, `trace`, `budget` and `tokens`: a length in tokens
(--prompt), or the text itself (--prompt-file, --chat), counted with the model's tokenizer."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tokenwalk.cli.app import load, one_line
from tokenwalk.errors import InputError

if TYPE_CHECKING:
    from tokenwalk.model.resolve import ModelLoad
    from tokenwalk.text.prompt import TokenCount

__all__ = ["PromptFileOpt", "ChatOpt", "count_text", "note", "check_one_prompt", "load_counted"]

PromptFileOpt = Annotated[
    str | None,
    typer.Option(
        "--prompt-file",
        "-f",
        help="The prompt as a text file ('-' reads stdin), sent as is with special-token text "
        "parsed, as llama-server gets it; counted with the model's own tokenizer (GGUF) or "
        "estimated (catalogue). Instead of --prompt.",
        show_default=False,
        metavar="FILE",
    ),
]
ChatOpt = Annotated[
    str | None,
    typer.Option(
        "--chat",
        help="A conversation: a JSON list of {role, content} messages, or {messages, tools}, "
        "rendered with the model's chat template and counted. Instead of --prompt.",
        show_default=False,
        metavar="FILE",
    ),
]


def note(message: str) -> None:
    """One informational line on stderr (what a count was made with)."""
    sys.stderr.write(f"tokenwalk: {one_line(message)}\n")


def check_one_prompt(prompt: int | None, prompt_file: str | None, chat: str | None) -> bool:
    """True when text is given; refuses two ways of giving the prompt at once."""
    given = [
        n for n, v in (("--prompt", prompt), ("--prompt-file", prompt_file), ("--chat", chat)) if v
    ]
    if len(given) > 1:
        raise InputError(f"give the prompt one way: {' or '.join(given)}, not both")
    return bool(prompt_file or chat)


def count_text(
    ref: str,
    name: str,
    metadata: Mapping[str, Any] | None,
    source: str,
    prompt_file: str | None,
    chat: str | None,
) -> TokenCount:
    """Count the text of --prompt-file or --chat for model `ref` (`metadata`: its GGUF header's,
    vocabulary kept; None for a config or catalogue model) and say on stderr what counted it."""
    from tokenwalk.text.prompt import count_prompt, read_chat, read_text
    from tokenwalk.text.source import counter_for

    counter = counter_for(ref, metadata, source)
    if chat:
        counted = count_prompt(counter, model=name, chat=read_chat(chat), source=chat)
    else:
        assert prompt_file is not None
        counted = count_prompt(counter, model=name, text=read_text(prompt_file), source=prompt_file)
    where = "stdin" if counted.input == "-" else counted.input
    if counted.prompt_tokens < 1:
        raise InputError(f"the prompt from {where} is empty: no token to count")
    template = ""
    if counted.input_kind == "chat":
        template = f", {counted.template_tokens:,} of them the template's"
    how = "" if counted.counted_with == "estimate" else "counted with "
    n = counted.prompt_tokens
    note(
        f"prompt: {n:,} token{'' if n == 1 else 's'} from {where}{template}, "
        f"{how}{counted.tokenizer}"
    )
    return counted


def load_counted(
    ref: str,
    quant: str | None,
    prompt_file: str | None,
    chat: str | None,
    *,
    json: bool,
    no_cache: bool,
    swa_full: bool = False,
) -> tuple[ModelLoad, TokenCount]:
    """Load a model with its vocabulary and count the given text."""
    loaded = load(ref, quant, json=json, no_cache=no_cache, keep_tokens=True, swa_full=swa_full)
    counted = count_text(
        ref, loaded.model.name, loaded.metadata, loaded.model.source, prompt_file, chat
    )
    return loaded, counted
