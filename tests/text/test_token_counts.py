"""Long real texts counted as llama.cpp counts them: tests/data/llama-tokenize/counts.json holds
llama-tokenize's ids for each text there with each of llama.cpp's vocabulary files (written by
scripts/record_token_counts.py; see the README beside it). `tokenwalk tokens` must give the same
count, and the same ids, for every pair.

The two vocabularies of tests/fixtures/vocab (phi-3, SentencePiece; gpt-2, byte-level BPE) always
run; set TOKENWALK_LLAMA_CPP to llama.cpp's source (vendor/llama.cpp in the llama-cpp-python
sdist) for every other one.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

pytest.importorskip("tokenizers")

from vocabmake import VOCAB_DIR, read_vocab_file  # noqa: E402

from tokenwalk.text.prompt import GgufCounter, count_prompt, read_text  # noqa: E402
from tokenwalk.text.vocab import SUPPORTED_MODELS, Vocab  # noqa: E402

DATA = Path(__file__).parents[1] / "data" / "llama-tokenize"
RECORD = json.loads((DATA / "counts.json").read_text(encoding="utf-8"))
_LLAMA_CPP = os.environ.get("TOKENWALK_LLAMA_CPP")


def _vocab_path(name: str) -> Path | None:
    for where in (VOCAB_DIR, Path(_LLAMA_CPP) / "models" if _LLAMA_CPP else None):
        if where is not None and (where / name).exists():
            return where / name
    return None


def _ids_digest(ids: list[int]) -> str:
    return hashlib.sha256(",".join(map(str, ids)).encode()).hexdigest()[:16]


_COUNTERS: dict[str, GgufCounter] = {}


def _counter(name: str) -> GgufCounter:
    path = _vocab_path(name)
    if path is None:
        pytest.skip(f"{name} is not shipped: set TOKENWALK_LLAMA_CPP to count with it")
    if hashlib.sha256(path.read_bytes()).hexdigest() != RECORD["vocabs"][name]:
        pytest.skip(f"{path} is not the file the counts were recorded with")
    md = read_vocab_file(path).metadata
    if md.get("tokenizer.ggml.model") not in SUPPORTED_MODELS:
        pytest.skip(f"{name}: tokenizer model {md.get('tokenizer.ggml.model')!r} unsupported")
    if name not in _COUNTERS:
        _COUNTERS[name] = GgufCounter(Vocab.from_metadata(md))
    return _COUNTERS[name]


PAIRS = [(v, t) for v, row in RECORD["counts"].items() for t in row]


def test_the_texts_are_the_recorded_ones() -> None:
    for name, meta in RECORD["texts"].items():
        assert hashlib.sha256((DATA / name).read_bytes()).hexdigest() == meta["sha256"], name


def test_both_shipped_vocabularies_are_recorded() -> None:
    assert {"ggml-vocab-phi-3.gguf", "ggml-vocab-gpt-2.gguf"} <= set(RECORD["counts"])


@pytest.mark.parametrize(("vocab", "text"), PAIRS, ids=[f"{v[11:-5]}-{t[:-4]}" for v, t in PAIRS])
def test_count_matches_llama_tokenize(vocab: str, text: str) -> None:
    counter = _counter(vocab)
    path = str(DATA / text)
    want = RECORD["counts"][vocab][text]
    body = read_text(path)
    counted = count_prompt(counter, model=vocab, text=body, source=path)
    ids = counter.encode(body, add_special=True, parse_special=True)
    assert (counted.prompt_tokens, _ids_digest(ids)) == (want["tokens"], want["ids"])
