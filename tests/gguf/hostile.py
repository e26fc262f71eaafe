"""Hostile strings and a check that output shown to a person stays inert.

Shared by tests/gguf/test_hostile_output.py (every command, through the CLI), the fuzz tests
(tests/gguf/test_fuzz.py) and benchmarks/fuzz.py. A string in a file is data: it must never
become Rich markup (a live hyperlink, a style, a crash on ``[/]``) nor reach the terminal as a
control sequence (ESC, C1 CSI, BEL, bidi overrides).
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from gguf import GGUFWriter
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

from tokenwalk.render.safe import unsafe_chars, visible

# each piece alone, then all of them in one string
PIECES = {
    "link": "[link=http://x]click[/link]",
    "close": "[/]",
    "style": "[bold red]loud",
    "emoji": ":warning:",
    "clear": "evil\x1b[2J\x1b[H",
    "osc8": "\x1b]8;;http://x\x07hidden\x1b]8;;\x07",
    "title": "\x1b]0;pwned\x07",
    "c1": "csi\x9b31m",
    "bidi": "abc\u202edcba\u2066x\u2069",
    "del": "a\x7fb\x08\x00",
    "newline": "two\nlines\r",
    "backslash": "ends in a backslash\\",
}
ALL = " ".join(PIECES.values())
HOSTILE = [*PIECES.values(), ALL]
HUGE = "H" * 1_000_000
# tensor names must stay under 64 bytes (llama.cpp's GGML_MAX_NAME)
TENSOR_NAMES = ["[/]\x1b[2J\x9b\u202e", "[link=http://x]t[/link]", "\x1b]8;;http://x\x07"]

# raw bytes a file may hold: C1 CSI in UTF-8, a bare C1 byte (not UTF-8: read as U+FFFD),
# RLO and an isolate in UTF-8, ESC, BEL, DEL
RAW = [b"\xc2\x9b", b"\x9b", b"\xe2\x80\xae", b"\xe2\x81\xa6", b"\x1b", b"\x07", b"\x7f"]

_SGR = re.compile(r"\x1b\[[0-9;]*m")


def hostile_string(rng: random.Random, *, short: bool = False) -> bytes:
    """Hostile text as bytes for a GGUF string: markup, escapes, controls, sometimes huge.

    `short` keeps it under 64 bytes, the longest tensor name llama.cpp (and the reader) takes."""
    parts = [
        rng.choice(HOSTILE).encode() if rng.random() < 0.7 else rng.choice(RAW)
        for _ in range(rng.choice([1, 1, 2, 3]))
    ]
    text = b"".join(parts)
    if short:
        return text[: rng.choice([8, 20, 40, 63])]
    if rng.random() < 0.1:
        text = ((text + b" ") * rng.choice([50, 1000, 20_000]))[: rng.choice([5_000, 200_000])]
    return text


def problems(output: str, *, terminal: bool = False) -> list[str]:
    """What makes `output` unsafe on a terminal; empty when it is safe.

    On a terminal Rich styles its own text with SGR sequences (``ESC [ ... m``); those are
    removed first, and nothing else may remain: no hyperlink (OSC 8), no other escape, no C1
    control, no bidi override. Off a terminal no ESC at all is allowed.
    """
    found = []
    if "\x1b]8;" in output:
        found.append("a live hyperlink (OSC 8)")
    rest = _SGR.sub("", output) if terminal else output
    bad = sorted(set(unsafe_chars(rest.replace("\n", ""))))
    if bad:
        found.append(f"control characters {bad!r}")
    if "MarkupError" in output or "internal error" in output or "Traceback" in output:
        found.append("an internal error")
    return found


def shown(value: str) -> str:
    """How `value` reads in a table or an error line."""
    return visible(value)


# -- a header-only GGUF written by gguf.GGUFWriter ------------------------------------------

TINY_LLAMA = {
    "model_type": "llama",
    "num_hidden_layers": 2,
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 64,
    "vocab_size": 1024,
    "max_position_embeddings": 4096,
    "tie_word_embeddings": True,
}


def write_gguf(
    path: Path,
    *,
    name: str | None = None,
    strings: str | None = None,
    architecture: str = "llama",
    extra_tensor: str | None = None,
) -> Path:
    """A header-only GGUF of a tiny llama, with `name` as general.name and `strings` in every
    other free-text key a converter writes (general.*, tokenizer.*). `architecture` replaces
    general.architecture (the hyperparameter keys stay llama's); `extra_tensor` adds an F32
    tensor of that name."""
    from tokenwalk.model.resolve import model_from_config

    model = model_from_config(TINY_LLAMA, "tiny", "Q8_0")
    s = model.spec
    w = GGUFWriter(str(path), architecture)
    if name is not None:
        w.add_name(name)
    if strings is not None:
        for key in (
            "general.type",
            "general.basename",
            "general.finetune",
            "general.size_label",
            "general.license",
            "general.organization",
            "general.quantized_by",
            "general.description",
            "tokenizer.ggml.model",
            "tokenizer.ggml.pre",
            "tokenizer.chat_template",
        ):
            w.add_string(key, strings)
        w.add_array("general.tags", [strings, "ok"])
        w.add_array("tokenizer.ggml.tokens", [strings] * 4)
    w.add_uint32("general.file_type", 7)  # Q8_0
    w.add_uint32("general.quantization_version", 2)
    w.add_uint32("llama.block_count", s.n_layer_all)
    w.add_uint32("llama.context_length", s.n_ctx_train)
    w.add_uint32("llama.embedding_length", s.n_embd)
    w.add_uint32("llama.vocab_size", s.n_vocab)
    w.add_uint32("llama.feed_forward_length", s.n_ff[0])
    w.add_uint32("llama.attention.head_count", s.n_head[0])
    w.add_uint32("llama.attention.head_count_kv", s.n_head_kv[0])
    w.add_uint32("llama.rope.dimension_count", s.head_k)
    for t in model.tensors:
        qtype = GGMLQuantizationType(t.info.ggml_type)
        block, type_bytes = GGML_QUANT_SIZES[qtype]
        byte_shape = (*reversed(t.info.shape[1:]), t.info.shape[0] // block * type_bytes)
        w.add_tensor_info(t.name, byte_shape, np.dtype(np.uint8), t.n_bytes, qtype)
    if extra_tensor is not None:
        w.add_tensor_info(extra_tensor, (8,), np.dtype(np.float32), 32, GGMLQuantizationType.F32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    return path


# -- a case through the CLI, as a terminal would show it ---------------------------------------

RENDER_COMMANDS = [
    ["size"],
    ["kv"],
    ["decode", "-m", "radeon-860m"],
    ["prefill", "-p", "1000", "-m", "radeon-860m"],
    ["budget", "-m", "radeon-860m"],
    ["trace", "-p", "1000", "-m", "radeon-860m"],
    ["spec", "--draft", "{model}", "-m", "radeon-860m"],
    ["size", "--json"],
    ["decode", "-m", "radeon-860m", "--json"],
]


@dataclass
class Rendered:
    ok: bool
    code: int
    error: str
    elapsed_s: float


@contextlib.contextmanager
def _terminal_env():
    """Rich sees a colour terminal (styles and hyperlinks live) and a 120-column width."""
    keys = ("FORCE_COLOR", "NO_COLOR", "COLUMNS", "TERM")
    saved = {k: os.environ.get(k) for k in keys}
    os.environ.update(FORCE_COLOR="1", COLUMNS="120", TERM="xterm-256color")
    os.environ.pop("NO_COLOR", None)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


_DIR: Path | None = None
_CLICK = None


def _click_command():  # noqa: ANN202
    """The click command Typer builds from the app on every call (most of a call's time): built
    once here and put in the app's place, so `main` runs as it does for a user, error
    boundary and all, in a fraction of the time."""
    global _CLICK
    if _CLICK is None:
        import typer.main

        import tokenwalk.cli

        tokenwalk.cli.load_commands()
        _CLICK = typer.main.get_command(tokenwalk.cli.app)
    return _CLICK


def render_check(data: bytes, command: list[str]) -> Rendered:
    """Run `tokenwalk COMMAND FILE` on `data` as the CLI does and check stdout and stderr.

    ok is False when the output is unsafe (`problems`), the exit code is not 0, 1 or 2, or an
    error is not one line."""
    from importlib import import_module
    from unittest import mock

    app_module = import_module("tokenwalk.cli.app")  # the module; tokenwalk.cli.app is the app

    global _DIR
    if _DIR is None:
        _DIR = Path(tempfile.mkdtemp(prefix="tokenwalk-hostile-"))
    path = _DIR / "case.gguf"
    path.write_bytes(data)
    argv = [command[0], str(path), *(a.replace("{model}", str(path)) for a in command[1:])]
    out, err = io.StringIO(), io.StringIO()
    t = time.perf_counter()
    with (
        _terminal_env(),
        mock.patch.object(app_module, "app", _click_command()),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        code = app_module.main(argv)
    elapsed = time.perf_counter() - t
    o, e = out.getvalue(), err.getvalue()
    found = problems(o, terminal="--json" not in command) + problems(e)
    if code not in (0, 1, 2):
        found.append(f"exit code {code}")
    if code == 2 and (o or e.count("\n") != 1 or not e.startswith("tokenwalk: error: ")):
        found.append("an error that is not one line on stderr")
    if code != 2 and len(o) > 200_000:
        found.append(f"{len(o):,} characters of output")
    return Rendered(not found, code, "; ".join(found), elapsed)
