"""A remote GGUF's vocabulary: read from the header over HTTP (and from the header cache) when
text is given, so a URL or hf:// counts with the model's own tokenizer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("tokenizers")
pytest.importorskip("jinja2")

from vocabmake import VOCAB_DIR, model_with_vocab  # noqa: E402

from tokenwalk.cli import main  # noqa: E402

FIXTURES = Path(__file__).parents[1] / "fixtures"


def test_url_counts_with_the_header_vocabulary(site, tmp_path: Path, capsys) -> None:
    model = model_with_vocab(
        FIXTURES / "deepseek-r1-distill-qwen-7b-q4_k_m.header.gguf",
        VOCAB_DIR / "ggml-vocab-gpt-2.gguf",
        tmp_path / "m.gguf",
    )
    doc = tmp_path / "doc.txt"
    doc.write_text("Hello world, this is a test.")
    s = site({"/m.gguf": model})
    counts = []
    for _ in range(2):  # the second answer comes from the header cache
        code = main(["tokens", s.url("/m.gguf"), str(doc), "--json"])
        out, err = capsys.readouterr()
        assert code == 0, err
        d = json.loads(out)
        assert d["counted_with"] == "gguf" and d["exact"]
        counts.append(d["prompt_tokens"])
    local = main(["tokens", str(model), str(doc), "--json"])
    assert local == 0
    assert counts == [json.loads(capsys.readouterr()[0])["prompt_tokens"]] * 2 == [8, 8]
