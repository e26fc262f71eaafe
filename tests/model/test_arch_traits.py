"""What one architecture does differently is a property of its spec (tokenwalk.model.spec):
the cost and view layers ask the spec and never compare architecture names themselves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tokenwalk.catalog import find_model
from tokenwalk.costs.offload import logits_floats
from tokenwalk.model.hf import spec_from_config
from tokenwalk.model.resolve import load_model

SRC = Path(__file__).parents[2] / "src" / "tokenwalk"
ARCH_TEST = re.compile(r"\.arch\s*(==|!=|in\b|not in\b)")


def test_dense_ffn_beside_experts_is_gemma4s():
    assert spec_from_config(find_model("gemma-4-26b-a4b").config).dense_ffn_beside_experts
    assert not spec_from_config(find_model("qwen3-30b-a3b").config).dense_ffn_beside_experts


def test_rows_held_at_the_head_per_architecture():
    """DeepSeek-V2-Lite at ubatch 512: the head holds n_vocab + 2 n_embd + n_embd (k + shared)
    f32 per token = 102,400 + 4,096 + 2,048 x (6 + 2) = 122,880; Qwen3-Next one n_embd more
    than the usual two, Granite 4.0 H two (tests/data/fit_params.md)."""
    lite = load_model("deepseek-v2-lite", "Q4_K_M").model
    assert lite.spec.head_extra_rows == 6 + 2
    assert logits_floats(lite) == 102_400 + 2 * 2048 + 2048 * (6 + 2)
    qwen = load_model("qwen3-30b-a3b", "Q4_K_M").model
    assert qwen.spec.head_extra_rows == 0
    assert logits_floats(qwen) == qwen.spec.n_vocab + 2 * qwen.spec.n_embd
    nxt = load_model("qwen3-next-80b-a3b", "Q4_K_M").model
    assert logits_floats(nxt) == 151_936 + 3 * 2048
    granite = load_model("granite-4.0-h-small", "Q4_K_M").model
    assert logits_floats(granite) == 100_352 + 4 * 4096
    kimi = load_model("kimi-k2", "Q4_K_M").model  # deepseek2 with a compressed query
    assert logits_floats(kimi) == 163_840 + 4 * 7168


@pytest.mark.parametrize("layer", ["costs", "render", "cli"])
def test_no_architecture_names_compared_outside_the_model(layer):
    found = [
        f"{p.relative_to(SRC)}:{i}"
        for p in sorted((SRC / layer).rglob("*.py"))
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if ARCH_TEST.search(line)
    ]
    assert not found, found
