"""Fixtures for source tests: a sparse multi-GB GGUF, local HTTP servers, a private cache."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from ggufmake import write_header_only  # noqa: E402
from servers import Site  # noqa: E402


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own header cache, and no offline switch from the environment."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("TOKENWALK_CACHE_DIR", str(cache))
    for var in ("TOKENWALK_OFFLINE", "HF_HUB_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    return cache


@pytest.fixture(scope="session")
def big_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, int]:
    """A 4.4 GB sparse GGUF whose header (100k tokens) is about 3.3 MB: (path, header, size)."""
    path = tmp_path_factory.mktemp("models") / "big.gguf"
    header_bytes, size = write_header_only(path, n_tokens=100_000, huge_rows=1_000_000)
    return path, header_bytes, size


@pytest.fixture(scope="session")
def small_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, int]:
    path = tmp_path_factory.mktemp("models") / "small.gguf"
    header_bytes, size = write_header_only(path, n_tokens=500)
    return path, header_bytes, size


@pytest.fixture
def site() -> Iterator[Callable[..., Site]]:
    """Start servers on demand; all are stopped after the test."""
    started: list[Site] = []

    def start(files: dict[str, Path | bytes] | None = None, host: str = "127.0.0.1") -> Site:
        s = Site(files, host=host)
        started.append(s)
        return s

    yield start
    for s in started:
        s.close()
