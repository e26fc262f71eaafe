"""Shared fixtures: real header-only GGUF files cut by scripts/make_fixtures.py."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture(scope="session")
def gemma3_path() -> Path:
    return FIXTURES / "gemma-3-270m-q4_k_m.header.gguf"


@pytest.fixture(scope="session")
def qwen2_path() -> Path:
    return FIXTURES / "deepseek-r1-distill-qwen-7b-q4_k_m.header.gguf"


@pytest.fixture(scope="session")
def gemma4_path() -> Path:
    return FIXTURES / "gemma-4-vocab.header.gguf"
