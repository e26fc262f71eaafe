"""Fixtures for source tests: a sparse multi-GB GGUF, local HTTP servers, a private cache."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from ggufmake import write_header_only  # noqa: E402
from servers import ForwardProxy, Site  # noqa: E402


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own header cache, and no offline switch from the environment."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("TOKENWALK_CACHE_DIR", str(cache))
    for var in ("TOKENWALK_OFFLINE", "HF_HUB_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    return cache


_NETWORK_ENV = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
)


@pytest.fixture(autouse=True)
def no_proxy_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests' servers are reached directly unless a test sets a proxy or a CA itself."""
    for var in _NETWORK_ENV:
        monkeypatch.delenv(var, raising=False)
        monkeypatch.delenv(var.lower(), raising=False)


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


@pytest.fixture(scope="session")
def qwen_sized_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, int]:
    """A sparse GGUF whose header is sized like Qwen3.6's: 248,320 tokens and their types,
    180,000 merges, about 11 MB in all: (path, header bytes, file size)."""
    path = tmp_path_factory.mktemp("models") / "qwen-sized.gguf"
    header_bytes, size = write_header_only(
        path, n_tokens=248_320, n_merges=180_000, huge_rows=248_320
    )
    return path, header_bytes, size


@pytest.fixture
def site() -> Iterator[Callable[..., Site]]:
    """Start servers on demand; all are stopped after the test."""
    started: list[Site] = []

    def start(
        files: dict[str, Path | bytes] | None = None, host: str = "127.0.0.1", tls=None
    ) -> Site:
        s = Site(files, host=host, tls=tls)
        started.append(s)
        return s

    yield start
    for s in started:
        s.close()


@pytest.fixture
def proxy() -> Iterator[ForwardProxy]:
    """A recording forward proxy on 127.0.0.1."""
    p = ForwardProxy()
    yield p
    p.close()
