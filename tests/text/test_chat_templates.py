"""Real chat templates (Qwen3, Llama 3.1, Gemma 3, gpt-oss) rendered on a fixed conversation,
against tests/data/template_counts.json (made by scripts/record_template_counts.py with
llama.cpp's llama-tokenize, which says how).

The renders are checked everywhere. The counts need the vocabularies (5-8 MB each, not
shipped): set TOKENWALK_LLAMA_CPP to llama.cpp's source tree (qwen2 and llama-bpe vocabularies)
and TOKENWALK_GEMMA3 to a Gemma 3 GGUF; the count cases skip without them.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pytest

pytest.importorskip("jinja2")

from tokenwalk.text.prompt import read_chat  # noqa: E402
from tokenwalk.text.template import render_chat  # noqa: E402

DATA = Path(__file__).parents[1] / "data"
RECORD = json.loads((DATA / "template_counts.json").read_text(encoding="utf-8"))
NOW = datetime.fromisoformat(RECORD["strftime_now"])
CHAT = read_chat(str(DATA / "chat-fixed.json"))


def _render(case: dict) -> str:
    template = (Path(__file__).parents[2] / case["template"]).read_text(encoding="utf-8")
    special = {"bos_token": case["bos_token"], "eos_token": case["eos_token"]}
    return render_chat(template, CHAT.messages, special=special, now=NOW)


@pytest.mark.parametrize("name", sorted(RECORD["cases"]))
def test_render_is_the_recorded_one(name: str) -> None:
    case = RECORD["cases"][name]
    text = _render(case)
    assert len(text) == case["rendered_chars"]
    assert hashlib.sha256(text.encode()).hexdigest() == case["rendered_sha256"]


def _vocab_path(case: dict) -> Path | None:
    if case["vocab"] is None:
        return None
    if case["vocab"].startswith("gemma-3"):
        p = os.environ.get("TOKENWALK_GEMMA3")
        return Path(p) if p else None
    root = os.environ.get("TOKENWALK_LLAMA_CPP")
    return Path(root) / "models" / case["vocab"] if root else None


@pytest.mark.parametrize("name", sorted(RECORD["cases"]))
def test_count_equals_llama_tokenize(name: str) -> None:
    pytest.importorskip("tokenizers")
    from tokenwalk.gguf.reader import read_header
    from tokenwalk.text.prompt import GgufCounter
    from tokenwalk.text.vocab import Vocab

    case = RECORD["cases"][name]
    if case["vocab"] is None:
        pytest.skip(f"{name}: no vocabulary was at hand when recording; the render is checked")
    path = _vocab_path(case)
    if path is None or not path.exists():
        pytest.skip(f"{name}: set TOKENWALK_LLAMA_CPP / TOKENWALK_GEMMA3 for its vocabulary")
    with open(path, "rb") as fh:
        vocab = Vocab.from_metadata(read_header(fh, keep_tokens=True).metadata)
    counter = GgufCounter(replace(vocab, chat_template="x"))
    text = _render(case)
    bos = case["bos_token"]
    sent = text[len(bos) :] if vocab.add_bos and bos and text.startswith(bos) else text
    ids = counter.encode(sent, add_special=True, parse_special=True)
    assert len(ids) == case["llama_tokenize_tokens"]
    assert ids == case["llama_tokenize_ids"]
