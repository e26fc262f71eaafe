#!/usr/bin/env python3
"""Record what llama.cpp counts for chat templates rendered on a fixed conversation.

For Qwen3, Llama 3.1, Gemma 3 and gpt-oss, renders tests/data/chat-fixed.json with tokenwalk's
sandboxed renderer (strftime_now fixed at 2026-01-15), writes the text to a file and runs
llama.cpp's own tokenizer on it:

    llama-tokenize -m VOCAB.gguf -f rendered.txt --no-escape --ids --log-disable

(special tokens parsed and a BOS added where the vocabulary asks, as llama-server tokenizes a
rendered prompt). The ids, their count, the rendered text's SHA-256 and the exact command go to
tests/data/template_counts.json; tests/text/test_chat_templates.py checks tokenwalk against it.

Usage: python scripts/record_template_counts.py LLAMA_CPP_DIR GEMMA3_GGUF
  LLAMA_CPP_DIR  llama.cpp's source with a build (vendor/llama.cpp of the llama-cpp-python
                 sdist, built with cmake): build/bin/llama-tokenize, models/ggml-vocab-*.gguf
  GEMMA3_GGUF    any Gemma 3 GGUF (its vocabulary; gemma-3-270m is 253 MB)
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path

from tokenwalk.gguf.reader import read_header
from tokenwalk.text.prompt import Chat, GgufCounter, read_chat
from tokenwalk.text.vocab import Vocab

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
NOW = datetime(2026, 1, 15, 9, 30)
# name -> (template file, vocabulary: a ggml-vocab name under models/, or "gemma3")
CASES = {
    "qwen3": ("Qwen-Qwen3-0.6B.jinja", "ggml-vocab-qwen2.gguf"),
    "llama-3.1": ("meta-llama-Llama-3.1-8B-Instruct.jinja", "ggml-vocab-llama-bpe.gguf"),
    "gemma-3": ("google-gemma-3-it.jinja", "gemma3"),
    "gpt-oss": ("openai-gpt-oss-120b.jinja", None),
}


def vocab_of(path: Path) -> Vocab:
    with open(path, "rb") as fh:
        return Vocab.from_metadata(read_header(fh, keep_tokens=True).metadata)


def render(counter: GgufCounter, chat: Chat) -> str:
    from tokenwalk.text import template

    v = counter.vocab
    return template.render_chat(
        v.chat_template or "",
        chat.messages,
        special={"bos_token": v.token(v.bos_id), "eos_token": v.token(v.eos_id)},
        now=NOW,
    )


def main() -> None:
    llama, gemma = Path(sys.argv[1]), Path(sys.argv[2])
    tool = llama / "build" / "bin" / "llama-tokenize"
    chat = read_chat(str(DATA / "chat-fixed.json"))
    out = {
        "conversation": "tests/data/chat-fixed.json",
        "strftime_now": NOW.isoformat(),
        "llama_cpp": "llama-cpp-python 0.3.36 sdist, vendor/llama.cpp built with cmake",
        "cases": {},
    }
    for name, (tpl, vocab_name) in CASES.items():
        template = (DATA / "templates" / tpl).read_text(encoding="utf-8")
        case: dict = {"template": f"tests/data/templates/{tpl}"}
        if vocab_name is None:
            # no gpt-oss vocabulary (o200k_harmony) is at hand: the render alone is recorded
            from tokenwalk.text.template import render_chat

            text = render_chat(
                template,
                chat.messages,
                special={"bos_token": "<|startoftext|>", "eos_token": "<|return|>"},
                now=NOW,
            )
            case |= {"vocab": None, "bos_token": "<|startoftext|>", "eos_token": "<|return|>"}
        else:
            path = gemma if vocab_name == "gemma3" else llama / "models" / vocab_name
            v = vocab_of(path)
            from dataclasses import replace

            counter = GgufCounter(replace(v, chat_template=template))
            text = render(counter, chat)
            # what llama.cpp tokenizes: the render, less a BOS the template wrote when the
            # tokenizer adds its own (common_chat_template_direct_apply)
            bos = v.token(v.bos_id)
            sent = text[len(bos) :] if v.add_bos and bos and text.startswith(bos) else text
            with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as fh:
                fh.write(sent)
            cmd = [
                str(tool),
                "-m",
                str(path),
                "-f",
                fh.name,
                "--no-escape",
                "--ids",
                "--log-disable",
            ]
            res = subprocess.run(cmd, capture_output=True, text=True, check=True)
            ids = json.loads(res.stdout.strip().splitlines()[-1])
            case |= {
                "vocab": vocab_name if vocab_name != "gemma3" else "gemma-3-270m (any Gemma 3)",
                "bos_token": bos,
                "eos_token": v.token(v.eos_id),
                "add_bos": v.add_bos,
                "command": "llama-tokenize -m VOCAB -f rendered.txt --no-escape --ids "
                "--log-disable",
                "llama_tokenize_tokens": len(ids),
                "llama_tokenize_ids": ids,
            }
        case |= {
            "rendered_chars": len(text),
            "rendered_sha256": hashlib.sha256(text.encode()).hexdigest(),
        }
        out["cases"][name] = case
        print(name, case.get("llama_tokenize_tokens"), len(text))
    (DATA / "template_counts.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
