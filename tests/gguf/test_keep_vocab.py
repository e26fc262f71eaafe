"""The vocabulary is read only when asked: keep_tokens keeps every tokenizer.ggml.* array."""

from __future__ import annotations

from pathlib import Path

from tokenwalk.gguf.reader import ArrayInfo, read_header

VOCAB = Path(__file__).parents[1] / "fixtures" / "vocab"


def _read(name: str, keep: bool):
    with open(VOCAB / name, "rb") as fh:
        return read_header(fh, keep_tokens=keep)


def test_skipped_by_default() -> None:
    h = _read("ggml-vocab-gpt-2.gguf", False)
    assert isinstance(h.metadata["tokenizer.ggml.tokens"], ArrayInfo)
    assert isinstance(h.metadata["tokenizer.ggml.merges"], ArrayInfo)
    assert h.tokens is None


def test_kept_whole_when_asked() -> None:
    h = _read("ggml-vocab-gpt-2.gguf", True)
    md = h.metadata
    assert len(md["tokenizer.ggml.tokens"]) == 50257 and md["tokenizer.ggml.tokens"][0] == "!"
    assert len(md["tokenizer.ggml.merges"]) == 50000 and md["tokenizer.ggml.merges"][0] == "Ġ t"
    assert len(md["tokenizer.ggml.token_type"]) == 50257
    assert h.tokens is md["tokenizer.ggml.tokens"]


def test_scores_kept_for_sentencepiece() -> None:
    md = _read("ggml-vocab-phi-3.gguf", True).metadata
    assert len(md["tokenizer.ggml.scores"]) == 32064
    assert isinstance(md["tokenizer.ggml.scores"][100], float)
