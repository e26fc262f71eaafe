"""Ground truth: llama.cpp's tokenizer test vectors (models/ggml-vocab-*.gguf with .inp/.out,
made by llama.cpp's tests/test-tokenizer-0.py from the Hugging Face tokenizers and checked by
its test-tokenizer-0 against llama.cpp). tokenwalk must give the same token ids.

Two vocabularies ship in tests/fixtures/vocab with their .inp/.out: phi-3 (SentencePiece,
Llama 2's 32,000 tokens and Phi-3's chat tokens) and gpt-2 (byte-level BPE). The others
(qwen2, llama-bpe, deepseek ...) are 1-16 MB each: set TOKENWALK_LLAMA_CPP to a llama.cpp
source tree (vendor/llama.cpp in the llama-cpp-python sdist) to run them too; without it those
cases are skipped.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("tokenizers")

from vocabmake import VOCAB_DIR, read_vocab_file  # noqa: E402

from tokenwalk.text.prompt import GgufCounter  # noqa: E402
from tokenwalk.text.vocab import SUPPORTED_MODELS, Vocab  # noqa: E402

SEP = "\n__ggml_vocab_test__\n"
_LLAMA_CPP = os.environ.get("TOKENWALK_LLAMA_CPP")


def _cases(inp: Path, out: Path) -> list[tuple[str, list[int]]]:
    """The (text, ids) pairs of a vector file, split as test-tokenizer-0.cpp splits them."""
    raw = inp.read_bytes().decode("utf-8")
    texts = raw.split(SEP)
    if raw.endswith(SEP):
        texts = texts[:-1]
    outs = out.read_text(encoding="utf-8").split("\n")[: len(texts)]
    assert len(outs) == len(texts)
    return [(t, [int(x) for x in o.split()]) for t, o in zip(texts, outs, strict=True)]


def _shipped() -> list[Path]:
    return sorted(VOCAB_DIR.glob("ggml-vocab-*.gguf"))


def _sdist() -> list[Path]:
    if not _LLAMA_CPP:
        return []
    return sorted((Path(_LLAMA_CPP) / "models").glob("ggml-vocab-*.gguf"))


def _vector_files(vocab: Path) -> tuple[Path, Path]:
    base = str(vocab).removesuffix(".gz")
    return Path(base + ".inp"), Path(base + ".out")


_COUNTERS: dict[Path, GgufCounter] = {}


def _counter(vocab: Path) -> GgufCounter:
    if vocab not in _COUNTERS:
        _COUNTERS[vocab] = GgufCounter(Vocab.from_metadata(read_vocab_file(vocab).metadata))
    return _COUNTERS[vocab]


def _check(vocab: Path) -> None:
    inp, out = _vector_files(vocab)
    if not inp.exists():
        pytest.skip(f"{vocab.name} has no test vectors")
    md = read_vocab_file(vocab).metadata
    if md.get("tokenizer.ggml.model") not in SUPPORTED_MODELS:
        pytest.skip(f"{vocab.name}: tokenizer model {md.get('tokenizer.ggml.model')!r} unsupported")
    counter = _counter(vocab)
    wrong = []
    for text, ids in _cases(inp, out):
        got = counter.encode(text, add_special=False, parse_special=False)
        if got != ids:
            wrong.append((text[:40], len(got), len(ids)))
    assert not wrong, f"{len(wrong)} texts differ (text, ours, llama.cpp's): {wrong[:5]}"


@pytest.mark.parametrize("vocab", _shipped(), ids=lambda p: p.name.split(".")[0])
def test_shipped_vocab_matches_llama_cpp(vocab: Path) -> None:
    _check(vocab)


def test_two_vocabularies_ship() -> None:
    names = {p.name for p in _shipped()}
    assert "ggml-vocab-phi-3.gguf" in names and "ggml-vocab-gpt-2.gguf" in names


@pytest.mark.skipif(
    not _LLAMA_CPP, reason="set TOKENWALK_LLAMA_CPP to llama.cpp's source for every vocabulary"
)
@pytest.mark.parametrize("vocab", _sdist() or [None], ids=lambda p: p.name if p else "none")
def test_every_llama_cpp_vocab(vocab: Path | None) -> None:
    if vocab is None:
        pytest.skip(f"no ggml-vocab files under {_LLAMA_CPP}/models")
    _check(vocab)
