"""Fixtures the cost tests share: the Qwen2-7B header model and a plain 200 GB/s machine."""

from __future__ import annotations

import pytest

from tokenwalk.machine import Machine, resolve_machine
from tokenwalk.model.model import Model
from tokenwalk.model.resolve import load_model


@pytest.fixture(scope="module")
def qwen2(qwen2_path) -> Model:
    """DeepSeek-R1-Distill-Qwen-7B Q4_K_M (tests/fixtures, header only)."""
    return load_model(str(qwen2_path)).model


@pytest.fixture(scope="module")
def machine() -> Machine:
    """200 GB/s, 20 TFLOPS, 32 GB: round numbers for timing by hand."""
    return resolve_machine(None, bandwidth=200, tflops=20, memory=32)
