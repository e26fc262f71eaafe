"""Local paths and local split files."""

from __future__ import annotations

from pathlib import Path

import pytest
from ggufmake import write_header_only

from tokenwalk.errors import SourceError
from tokenwalk.sources import is_source_ref, load_headers

FIXTURES = Path(__file__).parent.parent / "fixtures"


def test_local_file_reads_only_the_header(big_model):
    path, header_bytes, size = big_model
    r = load_headers(str(path))
    assert r.headers[0].data_offset == header_bytes
    assert r.headers[0].file_size == size
    assert r.fetched_bytes <= header_bytes + (2 << 20)
    assert r.requests == 0 and r.locations == (str(path),)


def test_real_fixture():
    r = load_headers(str(FIXTURES / "gemma-3-270m-q4_k_m.header.gguf"))
    assert r.headers[0].architecture == "gemma3"


def _split(tmp_path: Path, count: int, *, lie_count: int | None = None) -> list[Path]:
    paths = []
    for i in range(1, count + 1):
        p = tmp_path / f"model-{i:05d}-of-{count:05d}.gguf"
        write_header_only(p, n_tokens=20, split=(i - 1, lie_count or count))
        paths.append(p)
    return paths


def test_split_files_all_shards_in_order(tmp_path):
    paths = _split(tmp_path, 3)
    r = load_headers(str(paths[1]))  # any shard names the whole set
    assert [h.metadata["split.no"] for h in r.headers] == [0, 1, 2]
    assert r.locations == tuple(str(p) for p in paths)


def test_split_files_missing_shard(tmp_path):
    paths = _split(tmp_path, 3)
    paths[2].unlink()
    with pytest.raises(SourceError, match=r"missing shard .*00003-of-00003.gguf of the 3-part"):
        load_headers(str(paths[0]))


def test_split_files_disagreeing_with_their_names(tmp_path):
    paths = _split(tmp_path, 2, lie_count=5)
    with pytest.raises(SourceError, match="says the model has 5 shards, its name says 2"):
        load_headers(str(paths[0]))


def test_missing_file():
    with pytest.raises(SourceError, match="no such file"):
        load_headers("/nonexistent/model.gguf")


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("https://x/y.gguf", True),
        ("hf://org/repo", True),
        ("ollama:qwen3.6:35b-a3b", True),
        ("model.GGUF", True),
        ("llama-3.1-8b", False),
    ],
)
def test_is_source_ref(ref, expected):
    assert is_source_ref(ref) is expected
