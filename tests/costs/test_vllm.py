"""`costs.vllm`: vLLM's start-up memory accounting and the line it ends in."""

from __future__ import annotations

import pytest

from tokenwalk.costs.vllm import (
    CUDA_GRAPH_BYTES,
    NON_TORCH_BYTES,
    VLLM_BLOCK_TOKENS,
    activation_peak_bytes,
    max_concurrency,
    vllm_defaults,
    vllm_memory,
)
from tokenwalk.errors import InputError
from tokenwalk.machine import resolve_machine
from tokenwalk.model.resolve import load_model


@pytest.mark.parametrize(
    "kv_tokens, length, printed",
    [
        # ../shared/research/serving.md: the lines vLLM printed at start-up
        (75_278, 8192, "9.19"),
        (1_062_157, 8192, "129.66"),
    ],
)
def test_concurrency_is_tokens_over_the_request(kv_tokens, length, printed):
    assert f"{max_concurrency(kv_tokens, length):.2f}" == printed


def test_accounting_adds_up():
    model = load_model("llama-3.1-8b", "BF16").model
    card = resolve_machine("h100-sxm")
    v = vllm_memory(model, card, max_model_len=8192)
    assert v.requested_bytes == int(card.memory_bytes * 0.9)
    assert v.kv_available_bytes == (
        v.requested_bytes
        - v.checkpoint_bytes
        - v.activation_bytes
        - NON_TORCH_BYTES
        - CUDA_GRAPH_BYTES
    )
    # Llama 3.1 8B: 32 layers x 8 KV heads x 128 x (K + V) x 2 bytes = 128 KiB a token
    assert v.kv_bytes_per_token == 131_072
    assert v.kv_tokens == v.kv_blocks * VLLM_BLOCK_TOKENS
    assert v.kv_blocks * VLLM_BLOCK_TOKENS * v.kv_bytes_per_token <= v.kv_available_bytes
    assert (v.kv_blocks + 1) * VLLM_BLOCK_TOKENS * v.kv_bytes_per_token > v.kv_available_bytes
    assert v.max_concurrency == pytest.approx(v.kv_tokens / 8192)
    assert v.checkpoint_bytes == pytest.approx(2 * model.params, rel=0.001)  # BF16
    assert v.lines[1] == f"GPU KV cache size: {v.kv_tokens:,} tokens"


def test_defaults_follow_the_card():
    assert vllm_defaults(resolve_machine("h100-sxm")) == (1024, 8192)
    assert vllm_defaults(resolve_machine("rtx-4090")) == (256, 2048)


def test_activation_peak_grows_with_the_batched_tokens():
    model = load_model("llama-3.1-8b", "BF16").model
    a = activation_peak_bytes(model, 2048, 256, 2)
    b = activation_peak_bytes(model, 8192, 256, 2)
    assert b - a == 6144 * (3 * 14336 + 4 * 4096) * 2


def test_refusals():
    card = resolve_machine("rtx-4090")
    with pytest.raises(InputError, match="sliding-window or recurrent"):
        vllm_memory(load_model("gemma-3-4b", "BF16").model, card)
    with pytest.raises(InputError, match="no room"):
        vllm_memory(load_model("llama-3.1-70b", "BF16").model, card)
    with pytest.raises(InputError, match="utilization"):
        vllm_memory(load_model("llama-3.1-8b", "BF16").model, card, gpu_memory_utilization=1.5)
