#!/usr/bin/env python3
"""Record what llama.cpp counts for long real texts, with every vocabulary it ships.

Runs llama.cpp's own tokenizer over each text of tests/data/llama-tokenize/ (an article, code,
special-token text, non-Latin scripts, a file with a byte order mark and CRLF) with each
models/ggml-vocab-*.gguf:

    llama-tokenize -m VOCAB.gguf -f TEXT --ids --log-disable --no-escape

(the file read as bytes, escapes such as a backslash and an n left as they are, special-token
text parsed and a BOS added where the vocabulary asks: how llama-server tokenizes a prompt).
Each count, a digest of its ids and the SHA-256 of every text and vocabulary go to
tests/data/llama-tokenize/counts.json; tests/text/test_token_counts.py checks tokenwalk
against it. A vocabulary llama-tokenize refuses is recorded with its error.

Usage: python scripts/record_token_counts.py LLAMA_CPP_DIR
  LLAMA_CPP_DIR  llama.cpp's source with a build (vendor/llama.cpp of the llama-cpp-python
                 sdist, built with cmake --target llama-tokenize): build/bin/llama-tokenize,
                 models/ggml-vocab-*.gguf
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "llama-tokenize"
FLAGS = ["--ids", "--log-disable", "--no-escape"]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def ids_digest(ids: list[int]) -> str:
    """A short digest of a list of token ids: equal ids, equal digest."""
    return hashlib.sha256(",".join(map(str, ids)).encode()).hexdigest()[:16]


def texts() -> list[Path]:
    return sorted(p for p in DATA.iterdir() if p.suffix == ".txt")


def tokenize(binary: Path, vocab: Path, text: Path) -> list[int] | str:
    """llama-tokenize's ids, or its error in one line."""
    run = subprocess.run(
        [str(binary), "-m", str(vocab), "-f", str(text), *FLAGS],
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = run.stdout.strip().splitlines()
    if run.returncode != 0 or not out or not out[-1].startswith("["):
        err = (run.stderr.strip().splitlines() or ["no output"])[-1]
        return f"exit {run.returncode}: {err}"
    body = out[-1].strip("[]").strip()
    return [int(x) for x in body.split(",")] if body else []


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    llama = Path(argv[0])
    binary = llama / "build" / "bin" / "llama-tokenize"
    vocabs = sorted((llama / "models").glob("ggml-vocab-*.gguf"))
    if not binary.exists() or not vocabs:
        print(f"no {binary} or no models/ggml-vocab-*.gguf under {llama}", file=sys.stderr)
        return 2
    files = texts()
    counts: dict[str, dict[str, object]] = {}
    refused: dict[str, str] = {}
    for vocab in vocabs:
        row: dict[str, object] = {}
        for text in files:
            got = tokenize(binary, vocab, text)
            if isinstance(got, str):
                refused[vocab.name] = got
                break
            row[text.name] = {"tokens": len(got), "ids": ids_digest(got)}
        if vocab.name not in refused:
            counts[vocab.name] = row
        print(vocab.name, refused.get(vocab.name) or row, file=sys.stderr)
    record = {
        "how": "llama-tokenize -m VOCAB -f TEXT " + " ".join(FLAGS),
        "llama_cpp": "llama-cpp-python 0.3.36 sdist, vendor/llama.cpp built with cmake "
        "(target llama-tokenize)",
        "ids": "first 16 hex digits of the SHA-256 of the ids joined by commas",
        "texts": {t.name: {"bytes": t.stat().st_size, "sha256": sha256(t)} for t in files},
        "vocabs": {v.name: sha256(v) for v in vocabs},
        "refused": refused,
        "counts": counts,
    }
    out = DATA / "counts.json"
    out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {out.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
