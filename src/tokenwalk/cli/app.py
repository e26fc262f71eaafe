"""The Typer application, the options every command shares, and the error boundary."""

from __future__ import annotations

import math
import os
import re
import sys
from typing import Annotated, Any

import typer

from tokenwalk.cli.complete import complete_model
from tokenwalk.errors import TokenwalkError

# -- numbers on the command line ---------------------------------------------------------------

_TOKEN_SUFFIX = {"": 1, "k": 1024, "m": 1024**2}  # 8k = 8,192 and 1M = 1,048,576, as contexts go
# a size is in the option's own unit (GB, or GiB as cards are sold); a G/GB/GiB suffix may say so
_SIZE_SUFFIX = {"": 1.0, "g": 1.0, "gb": 1.0, "gib": 1.0}
_NUMBER = re.compile(r"\s*([+-]?[0-9][0-9_,]*(?:\.[0-9]*)?(?:e[+-]?[0-9]+)?)\s*([a-z]*)\s*", re.I)
TOKENS_NOTE = " Takes 8192, 8k (8,192), 32k, 1M (1,048,576)."


def _number(
    value: str, suffixes: dict[str, float], what: str, examples: str, least: int = 0
) -> float:
    match = _NUMBER.fullmatch(value)
    if not match or match[2].lower() not in suffixes:
        raise typer.BadParameter(f"'{value}' is not {what} (for example {examples})")
    number = float(match[1].replace("_", "").replace(",", "")) * suffixes[match[2].lower()]
    if not math.isfinite(number):
        raise typer.BadParameter(f"'{value}' is not {what} (for example {examples})")
    if number < least:
        below = "negative" if number < 0 else f"less than {least}"
        raise typer.BadParameter(f"'{value}' is {below}; give {what} of {least} or more")
    return number


def parse_tokens(value: str | int) -> int:
    """A count of tokens: 8192, 8,192, 8k (x 1,024) or 1M (x 1,048,576); never negative, never
    fractional, never nan or inf. The parser of every option that takes tokens."""
    if isinstance(value, int):  # a default, already a number
        return value
    n = _number(str(value), _TOKEN_SUFFIX, "a count of tokens", "8192, 8k, 32k or 1M")
    if n != int(n):
        raise typer.BadParameter(f"'{value}' is not a whole number of tokens")
    return int(n)


def parse_count(value: str | int, least: int = 0) -> int:
    """A plain count (streams, layers): a whole number, `least` (0) or more, no suffix."""
    if isinstance(value, int):
        return value
    n = _number(str(value), {"": 1}, "a whole number", "4 or 32", least)
    if n != int(n):
        raise typer.BadParameter(f"'{value}' is not a whole number")
    return int(n)


def parse_positive_count(value: str | int) -> int:
    """A count of things of which there must be one (users): a whole number, 1 or more."""
    return parse_count(value, least=1)


def parse_gb(value: str | float) -> float:
    """A size in the option's unit (GB or GiB): 24, 24.5, 24GB; finite and never negative."""
    if isinstance(value, (int, float)):
        return float(value)
    return _number(str(value), _SIZE_SUFFIX, "a size in GB", "24, 24.5 or 24GB")


def tokens_option(*names: str, help: str, **kw: Any) -> Any:
    """A `typer.Option` that takes a count of tokens through `parse_tokens`."""
    return typer.Option(
        *names, help=help + TOKENS_NOTE, parser=parse_tokens, metavar="TOKENS", **kw
    )


# What --ctx means wherever it is taken: llama.cpp's -c, the total of every stream.
CTX_MEANING = (
    "the total of all --parallel streams, as llama.cpp's -c: each stream holds ctx / parallel."
)

# -- exit codes, one table for every command (shown in each --help) ----------------------------

EXIT_ONE = {
    "budget": "1 when the models do not fit",
    "spec": "1 when speculation does not pay at the asked --alpha and --gamma, or target and "
    "draft do not fit in memory",
}


# What `tokenwalk --help` lists, in the README's order: a one-line summary and an example that
# each command's --help ends with.
COMMANDS: dict[str, tuple[str, str]] = {
    "size": (
        "How big a model is: parameters, file size, bits per weight, bytes read per token.",
        "tokenwalk size qwen3.6-35b-a3b --quant Q4_K_M",
    ),
    "kv": (
        "How much memory the context takes: KV per token by layer kind, total at a context.",
        "tokenwalk kv qwen3.6-35b-a3b --ctx 32k",
    ),
    "models": ("The model catalogue.", "tokenwalk models qwen"),
    "machines": ("The machine catalogue, with what each entry lacks.", "tokenwalk machines rtx"),
    "decode": (
        "How fast a model writes on a machine: the bandwidth ceiling and the estimate.",
        "tokenwalk decode qwen3.6-35b-a3b --machine radeon-860m",
    ),
    "prefill": (
        "Time to first token: the prompt in chunks and what bounds each.",
        "tokenwalk prefill qwen3.6-35b-a3b --machine radeon-860m --prompt 6500",
    ),
    "budget": (
        "Does it fit next to the system: memory per device, the largest context, settings.",
        "tokenwalk budget qwen3.6-35b-a3b --machine rtx-5080 --cpu-moe",
    ),
    "trace": (
        "The whole request as a timeline: load, tokenize, prefill, first token, decode.",
        "tokenwalk trace qwen3.6-35b-a3b --machine radeon-860m --prompt 6500",
    ),
    "spec": (
        "When speculative decoding pays: speedup by acceptance rate and draft length.",
        "tokenwalk spec qwen3-32b --draft qwen3-0.6b --machine radeon-860m",
    ),
    "serve": (
        "Several users on one box: speed per user and in all, slots, queue, memory.",
        "tokenwalk serve qwen3.6-35b-a3b --machine radeon-860m --prompt 2k --users 1,2,4,8",
    ),
    "compare": (
        "Machines and models side by side: fit, speed, first token, request time and price.",
        "tokenwalk compare qwen3.6-35b-a3b --machine radeon-860m,rtx-5090,h100-sxm --prompt 6500",
    ),
    "tokens": (
        "Count a text or a chat with the model's own tokenizer and template.",
        "tokenwalk tokens model.gguf prompt.txt",
    ),
    "probe": (
        "Describe and measure this machine; --write stores it as --machine this.",
        "tokenwalk probe --write",
    ),
    "calibrate": (
        "Fit the timing model to published runs or your own llama-bench.",
        "tokenwalk calibrate --machine this --from bench.json",
    ),
}


# The module of each command. `main` imports only the module of the command it runs, so that a
# command loads only what it uses (`tokenwalk kv` never what `compare` needs).
COMMAND_MODULES: dict[str, str] = {
    "size": "size_cmd",
    "kv": "size_cmd",
    "models": "models_cmd",
    "machines": "machines_cmd",
    "decode": "time_cmd",
    "prefill": "time_cmd",
    "budget": "plan_cmd",
    "trace": "plan_cmd",
    "spec": "plan_cmd",
    "compare": "compare_cmd",
    "tokens": "tokens_cmd",
    "probe": "probe_cmd",
    "calibrate": "machines_cmd",
    "serve": "serve_cmd",
}


def load_commands(command: str | None = None) -> None:
    """Register `command` (its module's commands), or every command when `command` is None or
    not a command's name (the app's --help, a misspelt name that click suggests a name for)."""
    import importlib

    if command in COMMAND_MODULES:
        modules = [COMMAND_MODULES[command]]
    else:
        modules = sorted(set(COMMAND_MODULES.values()))
    for module in modules:
        importlib.import_module(f"tokenwalk.cli.{module}")
    _add_exit_codes()


def _command_of(argv: list[str]) -> str | None:
    """The command an argument list runs: its first word that is not an option (the options
    before a command take no value); None for shell completion, which may complete any."""
    if os.environ.get("_TOKENWALK_COMPLETE"):
        return None
    return next((a for a in argv if not a.startswith("-")), None)


def exit_codes(command: str) -> str:
    """The epilog of a command's --help: what its exit codes mean."""
    one = EXIT_ONE.get(command, "1 is not used")
    return (
        f"Exit codes: 0 answered (warnings included; a closed pipe too); {one}; "
        "2 refused input or an error, one line on stderr."
    )


def _flags_without_metavar() -> None:
    """Typer 0.2x on click 8.2+ prints `<bool>` beside every flag in --help; a flag takes no
    value, so show none (left as it is where typer's internals differ)."""
    from typer.core import TyperOption

    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is None or getattr(shown, "_tokenwalk", False):
        return

    def display_type_rich(self: Any, ctx: Any) -> str | None:
        return None if getattr(self, "is_flag", False) else shown(self, ctx)

    display_type_rich._tokenwalk = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


_flags_without_metavar()

app = typer.Typer(
    name="tokenwalk",
    help="Inference-cost calculator for local language models: size, KV cache, decode and "
    "prefill time, memory budgets. Every command has --json for scripts.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
    add_completion=True,  # --install-completion / --show-completion SHELL
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    if value:
        from tokenwalk import __version__

        sys.stdout.write(f"tokenwalk {__version__}\n")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            "-V",
            help="Print tokenwalk's version and exit.",
            callback=_print_version,
            is_eager=True,
        ),
    ] = False,
) -> None:
    """Options before the command."""


ModelArg = Annotated[
    str,
    typer.Argument(
        help="A GGUF file or URL, hf://org/repo or hf://org/repo/file.gguf, ollama:name:tag, "
        "a config.json or YAML spec, or a catalogue name (see `tokenwalk models`).",
        show_default=False,
        metavar="MODEL",
        autocompletion=complete_model,
    ),
]
QuantOpt = Annotated[
    str | None,
    typer.Option(
        "--quant",
        "-q",
        help="Quant preset for configs and catalogue models (Q4_K_M, Q8_0, F16, ...); "
        "picks the file of an hf:// repository. Default: Q4_K_M; a GGUF file has its own.",
        show_default=False,
    ),
]
JsonOpt = Annotated[
    bool,
    typer.Option("--json", help="Print the result as JSON for scripts.", rich_help_panel="Output"),
]
KvTypeOpt = Annotated[
    str,
    typer.Option(
        "--kv-type", "-t", help="KV cache type: f16, bf16, q8_0, q4_0, ... (llama.cpp -ctk/-ctv)."
    ),
]
SwaFullOpt = Annotated[
    bool,
    typer.Option(
        "--swa-full",
        help="Give sliding-window layers a cache of the full context instead of window + "
        "ubatch cells (llama.cpp --swa-full, off by default there too): more memory, and their "
        "attention reads the whole context.",
    ),
]
UbatchOpt = Annotated[
    int,
    tokens_option(
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
        help="Parallel sequences (llama.cpp -np, at most 256): streams that split --ctx between "
        "them and share each read of the weights.",
        parser=parse_count,
        metavar="N",
    ),
]
PromptOpt = Annotated[
    int,
    tokens_option(
        "--prompt",
        "-p",
        help="Prompt length in tokens; no default: this, --prompt-file or --chat is needed.",
        show_default=False,
    ),
]
OutputOpt = Annotated[int, tokens_option("--output", "-n", help="Tokens written.")]
CachedOpt = Annotated[
    int, tokens_option("--cached", help="Prompt tokens reused from a prefix cache.")
]
NoCacheOpt = Annotated[
    bool, typer.Option("--no-cache", help="Fetch remote headers again, bypassing the cache.")
]


class PipeClosed(Exception):  # noqa: N818  (not an error: the reader has read enough)
    """The reader of stdout closed the pipe; the command ends with exit code 0."""


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush finds no closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def stdout_console():  # noqa: ANN201
    """The Rich console of a command's answer. A reader that closes the pipe early
    (`tokenwalk machines | head -1`) has had its answer: that exits 0, not Rich's 1."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            raise PipeClosed

    from tokenwalk.cli.output import current

    out = current()
    if out.console is None:  # one console per command, so --svg / --html save all it printed
        # data never reaches it as markup (see tokenwalk.render.safe); emoji codes stay text too
        out.console = _Console(highlight=False, emoji=False, record=out.record)
    return out.console


def warn(message: str) -> None:
    """One line on stderr that does not stop the command; control characters made visible.
    The runs of a sweep say each warning once."""
    from tokenwalk.cli.output import current

    collected = current().collected
    if collected is not None:
        if message in collected.warned:
            return
        collected.warned.add(message)
    sys.stderr.write(f"tokenwalk: warning: {one_line(message)}\n")


def one_line(message: object) -> str:
    """A message from data (a metadata value, a file name) made safe for one stderr line."""
    from tokenwalk.render.safe import MESSAGE_CHARS, visible

    return visible(message, MESSAGE_CHARS)


def emit_json(obj: Any) -> None:
    """Dump a pydantic result object to stdout.

    JSON already escapes C0 controls; the characters it may leave raw (DEL, C1 controls, bidi
    overrides, ...) are written as \\uNNNN escapes too, so strings parse back exactly and no
    control character reaches a terminal.
    """
    from tokenwalk.cli.output import current
    from tokenwalk.render.safe import json_visible

    if current().csv:
        emit_csv(obj)
        return
    try:
        sys.stdout.write(json_visible(obj.model_dump_json(indent=2)))
        sys.stdout.write("\n")
        sys.stdout.flush()
    except BrokenPipeError:
        raise PipeClosed from None


def emit_csv(obj: Any) -> None:
    """Print a result's rows (`tokenwalk.render.rows.csv_rows`) as CSV: a header line of
    column names, then one line per row; text cells made safe as in JSON."""
    import csv

    from tokenwalk.render.rows import csv_rows
    from tokenwalk.render.safe import visible

    rows = [
        {visible(k, None): visible(v, None) if isinstance(v, str) else v for k, v in r.items()}
        for r in csv_rows(obj)
    ]
    columns = list(dict.fromkeys(k for r in rows for k in r))
    writer = csv.DictWriter(sys.stdout, fieldnames=columns, lineterminator="\n")
    try:
        writer.writeheader()
        writer.writerows(rows)
        sys.stdout.flush()
    except BrokenPipeError:
        raise PipeClosed from None


def respond(report: Any, json: bool) -> None:
    """Print a result: JSON or CSV for scripts, else its Rich view (`tokenwalk.render.render`)
    with, when asked, its arithmetic (--explain) and chart (--chart)."""
    from tokenwalk.cli.output import current

    out = current()
    if out.collected is not None:  # a run of a sweep: the sweep prints all runs together
        out.collected.answers.append(report)
        return
    if json or out.for_scripts:
        emit_json(report)
        return
    from tokenwalk.render import render

    render(report, stdout_console(), explain=out.explain, chart=out.chart)


def load(  # noqa: ANN201
    ref: str,
    quant: str | None,
    *,
    json: bool,
    no_cache: bool = False,
    keep_tokens: bool = False,
    swa_full: bool = False,
):
    """Resolve a model argument (see `tokenwalk.model.resolve.load_model`); `keep_tokens` keeps
    a GGUF's vocabulary for counting text; `swa_full` gives its sliding layers a full cache."""
    from dataclasses import replace

    from tokenwalk.model.resolve import load_model

    loaded = load_model(ref, quant, no_cache=no_cache, progress=not json, keep_tokens=keep_tokens)
    if swa_full:
        loaded = replace(loaded, model=loaded.model.with_swa_full())
        if not loaded.model.swa_full:
            warn(f"--swa-full changes nothing: {loaded.model.name} has no sliding-window layers")
    if quant and loaded.model.source == "gguf" and not loaded.quant_used:
        warn(f"--quant {quant} ignored: '{ref}' is a GGUF file with its own quant types")
    elif quant and loaded.model.source != "gguf":
        from tokenwalk.model.quant import ud_note

        note = ud_note(quant)
        if note:
            warn(note)
    return loaded


def _usage_error(exc: Any) -> int:
    """A click usage error (missing argument, unknown option, bad value) as one line, exit 2."""
    if type(exc).__name__ == "NoArgsIsHelpError":  # `tokenwalk` alone: the help is the answer
        exc.show()
        return 0
    # what the user typed is echoed: control characters are shown, never sent to the terminal
    message = one_line(" ".join(str(exc.format_message()).split()).rstrip("."))
    path = exc.ctx.command_path if getattr(exc, "ctx", None) is not None else "tokenwalk"
    sys.stderr.write(f"tokenwalk: error: {message} (see `{path} --help`)\n")
    return 2


def _add_exit_codes() -> None:
    """Finish every command's help once the commands are registered: its one-line summary in
    `tokenwalk --help`, in the README's order, and an example and its exit codes at the end of
    its own --help (`app` may already be a built click command, which keeps what it has)."""
    infos = getattr(app, "registered_commands", None)
    if not infos:
        return
    order = list(COMMANDS)

    def name_of(info: Any) -> str:
        return info.name or (info.callback.__name__ if info.callback else "")

    infos.sort(key=lambda i: order.index(name_of(i)) if name_of(i) in order else len(order))
    for info in infos:
        name = name_of(info)
        summary, example = COMMANDS.get(name, (None, None))
        if summary and not info.short_help:
            info.short_help = summary
        if not info.epilog:
            info.epilog = (f"Example: {example}\n\n" if example else "") + exit_codes(name)


def main(argv: list[str] | None = None) -> int:
    """Console entry point: a `TokenwalkError` or a usage error becomes one line on stderr and
    exit code 2; a closed pipe exits 0 (see `exit_codes`)."""
    load_commands(_command_of(sys.argv[1:] if argv is None else argv))
    try:
        # one name however it is started (python -m tokenwalk too): the usage lines say it, and
        # shell completion asks through $_TOKENWALK_COMPLETE
        rv = app(args=argv, prog_name="tokenwalk", standalone_mode=False)
        if isinstance(rv, int):  # click returns the code of a typer.Exit in this mode
            return rv
    except TokenwalkError as exc:
        sys.stderr.write(f"tokenwalk: error: {one_line(exc)}\n")
        return 2
    except typer.Exit as exc:
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("tokenwalk: interrupted\n")
        return 130
    except (PipeClosed, BrokenPipeError):
        _quiet_stdout()
        return 0
    except SystemExit:
        if type(sys.stdout).__name__ == "PacifyFlushWrapper":  # click's own exit on EPIPE
            _quiet_stdout()
            return 0
        raise
    except Exception as exc:  # the last line of defence: never a traceback for users
        if type(exc).__name__ == "Abort":
            sys.stderr.write("tokenwalk: aborted\n")
            return 1
        if hasattr(exc, "format_message") and getattr(exc, "exit_code", None) == 2:
            return _usage_error(exc)  # click's usage errors
        if hasattr(exc, "show") and hasattr(exc, "exit_code"):  # other click exceptions
            exc.show()
            return int(exc.exit_code) or 2
        if os.environ.get("TOKENWALK_DEBUG"):
            raise
        sys.stderr.write(
            f"tokenwalk: internal error ({type(exc).__name__}: {one_line(exc)}); "
            "set TOKENWALK_DEBUG=1 to see where\n"
        )
        return 2
    return 0


def run() -> None:
    code = main()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_stdout()
    sys.exit(code)
