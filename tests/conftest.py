"""Shared fixtures: real header-only GGUF files cut by scripts/make_fixtures.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True, scope="session")
def _no_user_machine_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every test sees the catalogue alone: not the machine file of whoever runs the suite (a
    `probe --write` or `calibrate --from` of theirs would change the numbers tests pin), and a
    command that stores a machine without `--machines-file` writes to a scratch directory.
    Session-wide, so that module fixtures resolving a machine see it too."""
    scratch = tmp_path_factory.mktemp("config") / "machines.yaml"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("tokenwalk.machine.user_machines_path", lambda: scratch)
        mp.delenv("TOKENWALK_MACHINES", raising=False)
        yield


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
