"""The Typer application, the options every command shares, and the error boundary."""

from __future__ import annotations

import os
import sys
from typing import Annotated, Any

import typer

from tokenwalk.errors import TokenwalkError

app = typer.Typer(
    name="tokenwalk",
    help="Inference-cost calculator for local language models: size, KV cache, decode and "
    "prefill time, memory budgets. Every command has --json for scripts.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

ModelArg = Annotated[
    str,
    typer.Argument(
        help="A GGUF file or URL, hf://org/repo or hf://org/repo/file.gguf, ollama:name:tag, "
        "a config.json or YAML spec, or a catalogue name (see `tokenwalk models`).",
        show_default=False,
    ),
]
QuantOpt = Annotated[
    str | None,
    typer.Option(
        "--quant",
        "-q",
        help="Quant preset for configs and catalogue models (Q4_K_M, Q8_0, F16, ...); "
        "picks the file of an hf:// repository. Default Q4_K_M.",
        show_default=False,
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON for scripts.")]
KvTypeOpt = Annotated[
    str,
    typer.Option(
        "--kv-type", "-t", help="KV cache type: f16, bf16, q8_0, q4_0, ... (llama.cpp -ctk/-ctv)."
    ),
]
UbatchOpt = Annotated[
    int,
    typer.Option(
        "--ubatch",
        help="Micro-batch: tokens per prefill pass (llama.cpp -ub); sliding-window layers keep "
        "window + ubatch cells.",
    ),
]
ParallelOpt = Annotated[
    int,
    typer.Option(
        "--parallel",
        "-np",
        help="Parallel sequences: streams sharing the context and each read of the weights.",
    ),
]
PromptOpt = Annotated[
    int, typer.Option("--prompt", "-p", help="Prompt length in tokens.", show_default=False)
]
CachedOpt = Annotated[
    int, typer.Option("--cached", help="Prompt tokens reused from a prefix cache.")
]
SystemGbOpt = Annotated[
    float | None,
    typer.Option(
        "--system-gb",
        help="Memory the system and other apps already use, GB. Default: 8 GB on shared memory "
        "(a quarter of small machines), 0.5 GB on a discrete GPU.",
        show_default=False,
    ),
]
NoCacheOpt = Annotated[
    bool, typer.Option("--no-cache", help="Fetch remote headers again, bypassing the cache.")
]


def stdout_console():  # noqa: ANN201
    from rich.console import Console

    # data never reaches it as markup (see tokenwalk.render.safe); emoji codes stay text too
    return Console(highlight=False, emoji=False)


def warn(message: str) -> None:
    """One line on stderr that does not stop the command; control characters made visible."""
    sys.stderr.write(f"tokenwalk: warning: {_line(message)}\n")


def _line(message: object) -> str:
    """A message from data (a metadata value, a file name) made safe for one stderr line."""
    from tokenwalk.render.safe import MESSAGE_CHARS, visible

    return visible(message, MESSAGE_CHARS)


def emit_json(obj: Any) -> None:
    """Dump a pydantic result object to stdout.

    JSON already escapes C0 controls; the characters it may leave raw (DEL, C1 controls, bidi
    overrides, ...) are written as \\uNNNN escapes too, so strings parse back exactly and no
    control character reaches a terminal.
    """
    from tokenwalk.render.safe import json_visible

    sys.stdout.write(json_visible(obj.model_dump_json(indent=2)))
    sys.stdout.write("\n")


def respond(report: Any, json: bool) -> None:
    """Print a result: JSON for scripts, else its Rich view (`tokenwalk.render.render`)."""
    if json:
        emit_json(report)
        return
    from tokenwalk.render import render

    render(report, stdout_console())


def load(ref: str, quant: str | None, *, json: bool, no_cache: bool = False):  # noqa: ANN201
    """Resolve a model argument (see `tokenwalk.model.resolve.load_model`)."""
    from tokenwalk.model.resolve import load_model

    loaded = load_model(ref, quant, no_cache=no_cache, progress=not json)
    if quant and loaded.model.source == "gguf" and not loaded.quant_used:
        warn(f"--quant {quant} ignored: '{ref}' is a GGUF file with its own quant types")
    return loaded


def main(argv: list[str] | None = None) -> int:
    """Console entry point: a `TokenwalkError` becomes one line on stderr and exit code 2."""
    import tokenwalk.cli  # noqa: F401  (registers the commands)

    try:
        rv = app(args=argv, standalone_mode=False)
        if isinstance(rv, int):  # click returns the code of a typer.Exit in this mode
            return rv
    except TokenwalkError as exc:
        sys.stderr.write(f"tokenwalk: error: {_line(exc)}\n")
        return 2
    except typer.Exit as exc:
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("tokenwalk: interrupted\n")
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # the last line of defence: never a traceback for users
        if type(exc).__name__ == "Abort":
            sys.stderr.write("tokenwalk: aborted\n")
            return 1
        if hasattr(exc, "show") and hasattr(exc, "exit_code"):  # click's usage errors
            exc.show()
            return int(exc.exit_code) or 2
        if os.environ.get("TOKENWALK_DEBUG"):
            raise
        sys.stderr.write(
            f"tokenwalk: internal error ({type(exc).__name__}: {_line(exc)}); "
            "set TOKENWALK_DEBUG=1 to see where\n"
        )
        return 2
    return 0


def run() -> None:
    sys.exit(main())
