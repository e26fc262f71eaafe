"""`tokenwalk tokens`: how many tokens a text or a conversation is, for one model."""

from __future__ import annotations

from typing import Annotated

import typer

from tokenwalk.cli.app import JsonOpt, ModelArg, NoCacheOpt, QuantOpt, app, respond
from tokenwalk.cli.output import output_options
from tokenwalk.cli.prompt_opts import (
    ChatOpt,
    PromptFileOpt,
    check_one_prompt,
    count_text,
    load_counted,
)
from tokenwalk.errors import InputError


@app.command()
@output_options(chart=False)
def tokens(
    model: ModelArg,
    file: Annotated[
        str | None,
        typer.Argument(
            help="A text file to count ('-' reads stdin); or give --chat FILE. Counted as "
            "llama-server receives it: its bytes as they are (a byte order mark kept, a "
            "backslash and an n left as two characters), special-token text such as <|im_end|> "
            "parsed as that token, a BOS where the model adds one; as llama-tokenize -f FILE "
            "--no-escape counts it (without --no-escape, it turns \\n into a newline).",
            show_default=False,
        ),
    ] = None,
    prompt_file: PromptFileOpt = None,
    chat: ChatOpt = None,
    quant: QuantOpt = None,
    json: JsonOpt = False,
    no_cache: NoCacheOpt = False,
) -> None:
    """How many tokens a text or a conversation is for a model: the count with the model's own
    tokenizer (from its GGUF header) and chat template, the template's share, tokens per word
    and per character, and each call of a conversation."""
    if file and prompt_file:
        raise InputError("give the text file once: as an argument or with --prompt-file")
    prompt_file = prompt_file or file
    if not check_one_prompt(None, prompt_file, chat):
        raise InputError("give the text: a FILE ('-' for stdin) or --chat FILE")
    from tokenwalk.sources import is_source_ref

    if is_source_ref(model):
        # the header alone: a vocabulary file with no tensors is counted too
        from tokenwalk.model.resolve import model_name
        from tokenwalk.sources import load_headers

        result = load_headers(
            model, quant=quant, no_cache=no_cache, progress=not json, keep_tokens=True
        )
        md = result.headers[0].metadata
        counted = count_text(model, model_name(model, md), md, "gguf", prompt_file, chat)
    else:
        _, counted = load_counted(model, quant, prompt_file, chat, json=json, no_cache=no_cache)
    respond(counted, json)
