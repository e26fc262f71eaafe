"""ollama: references against a fake store laid out as Ollama lays it out."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from ggufmake import write_header_only

from tokenwalk.errors import SourceError
from tokenwalk.sources import load_headers


def _install(store: Path, name: str, tag: str, gguf: Path) -> None:
    """Put `gguf` in the store as Ollama does: a blob by sha256 and a manifest naming it."""
    digest = hashlib.sha256(gguf.read_bytes()).hexdigest()
    blobs = store / "blobs"
    blobs.mkdir(parents=True, exist_ok=True)
    (blobs / f"sha256-{digest}").write_bytes(gguf.read_bytes())
    parts = name.split("/")
    if len(parts) == 1:
        parts = ["library", *parts]
    manifest = store / "manifests" / "registry.ollama.ai" / Path(*parts) / tag
    manifest.parent.mkdir(parents=True, exist_ok=True)
    layers = [
        {"mediaType": "application/vnd.ollama.image.template", "digest": "sha256:" + "1" * 64},
        {"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{digest}"},
    ]
    manifest.write_text(json.dumps({"schemaVersion": 2, "layers": layers}))


@pytest.fixture
def store(tmp_path, monkeypatch):
    gguf = tmp_path / "src.gguf"
    write_header_only(gguf, n_tokens=100, sparse_size=False)
    root = tmp_path / "models"
    _install(root, "qwen3.6", "35b-a3b", gguf)
    _install(root, "qwen3.6", "latest", gguf)
    _install(root, "someone/tiny", "q8", gguf)
    monkeypatch.setenv("OLLAMA_MODELS", str(root))
    return root


def test_name_and_tag(store):
    r = load_headers("ollama:qwen3.6:35b-a3b")
    assert r.headers[0].architecture == "qwen2"
    assert Path(r.locations[0]).parent == store / "blobs"


def test_default_tag_is_latest(store):
    assert load_headers("ollama:qwen3.6").headers[0].architecture == "qwen2"


def test_namespaced_name(store):
    assert load_headers("ollama:someone/tiny:q8").headers


def test_unknown_name_lists_what_is_installed(store):
    with pytest.raises(SourceError, match=r"'llama3:8b' is not in .* \(installed: qwen3.6:35b-a3b"):
        load_headers("ollama:llama3:8b")


def test_missing_blob(store):
    for blob in (store / "blobs").iterdir():
        blob.unlink()
    with pytest.raises(SourceError, match="is missing from"):
        load_headers("ollama:qwen3.6")


def test_no_store(tmp_path, monkeypatch):
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path / "nowhere"))
    with pytest.raises(SourceError, match="OLLAMA_MODELS is .* not a directory"):
        load_headers("ollama:qwen3.6")


def test_bad_names(store):
    with pytest.raises(SourceError, match="not an Ollama model name"):
        load_headers("ollama:../../etc:x")
