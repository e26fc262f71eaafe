"""Which counter a model gets: GGUF vocabulary, the repository's tokenizer.json, or an estimate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("tokenizers")
pytest.importorskip("huggingface_hub")

from vocabmake import VOCAB_DIR, read_vocab_file  # noqa: E402

from tokenwalk.text.prompt import Chat, GgufCounter, HubCounter, count_prompt  # noqa: E402
from tokenwalk.text.source import counter_for, repo_of_source  # noqa: E402
from tokenwalk.text.vocab import Vocab  # noqa: E402


def test_repo_from_catalogue_source() -> None:
    assert (
        repo_of_source("https://huggingface.co/Qwen/Qwen3.6-35B-A3B/blob/main/config.json (x)")
        == "Qwen/Qwen3.6-35B-A3B"
    )
    assert repo_of_source("the model card") is None


def test_unsupported_tokenizer_model_is_an_estimate() -> None:
    c = counter_for("x.gguf", {"tokenizer.ggml.model": "bert"}, "gguf")
    assert c.name == "estimate" and "'bert'" in c.description


def test_catalogue_model_reads_the_repository_tokenizer(monkeypatch, tmp_path: Path) -> None:
    gpt2 = GgufCounter(
        Vocab.from_metadata(read_vocab_file(VOCAB_DIR / "ggml-vocab-gpt-2.gguf").metadata)
    )
    gpt2.tokenizer.pieces.save(str(tmp_path / "tokenizer.json"))
    (tmp_path / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "chat_template": "{% for m in messages %}{{ m.content }}\n{% endfor %}",
                "bos_token": {"content": "<|endoftext|>"},
            }
        )
    )
    seen = []

    def download(repo: str, filename: str, **kw: object) -> str:
        seen.append(repo)
        return str(tmp_path / filename)

    monkeypatch.setattr("huggingface_hub.hf_hub_download", download)
    c = counter_for("qwen3.6-35b-a3b", None, "catalogue")
    assert isinstance(c, HubCounter) and seen[0] == "Qwen/Qwen3.6-35B-A3B"
    r = count_prompt(
        c, model="m", chat=Chat([{"role": "user", "content": "Hello world"}]), source="c"
    )
    assert (
        r.exact and r.counted_with == "tokenizer.json" and r.prompt_tokens == 3
    )  # Hello, world, \n


def test_catalogue_offline_is_an_estimate(monkeypatch) -> None:
    def fail(*a: object, **kw: object) -> str:
        raise OSError("offline")

    monkeypatch.setattr("huggingface_hub.hf_hub_download", fail)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # no name lookup either
    c = counter_for("qwen3.6-35b-a3b", None, "catalogue")
    assert c.name == "estimate" and "Qwen/Qwen3.6-35B-A3B was not reachable" in c.description
