"""vLLM on one GPU: the memory accounting it prints at start-up, and its speed through the same
pass model as llama.cpp with an engine factor.

vLLM takes a share of the card (`--gpu-memory-utilization`, 0.9), loads the checkpoint in its
own dtype, runs one dummy pass of `--max-num-batched-tokens` to measure the activation peak,
keeps room for CUDA graphs and what lives outside PyTorch, and gives the rest to the KV cache in
blocks of 16 tokens:

    available = util x GPU - weights - activation peak - non-torch - CUDA graphs      [bytes]
    blocks    = floor(available / (16 x KV bytes per token))
    tokens    = 16 x blocks                                  "GPU KV cache size: N tokens"
    X         = tokens / max_model_len   "Maximum concurrency for L tokens per request: X"

(X = N / L holds for models of plain attention; vLLM counts hybrid and sliding-window models
otherwise, and this module refuses them.) The activation peak is the largest live set of the
dummy pass: the FFN's gate and up outputs and their product (3 x intermediate) and a few copies
of the hidden state (4 x hidden) per token, in the checkpoint's dtype, and the sampler's fp32
logits for `max_num_seqs` sequences.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

from tokenwalk.costs.kv import kv_bytes_per_cell
from tokenwalk.errors import InputError
from tokenwalk.machine import Machine
from tokenwalk.model.layers import Attention
from tokenwalk.model.model import Model
from tokenwalk.units import Bytes

__all__ = [
    "VLLM_BLOCK_TOKENS",
    "VLLM_ENGINE_FACTOR",
    "VLLM_SEQUENCE_HEAD_S",
    "DEFAULT_GPU_MEMORY_UTILIZATION",
    "VllmMemory",
    "vllm_defaults",
    "vllm_memory",
]

GIB = 1 << 30
VLLM_BLOCK_TOKENS = 16  # --block-size on CUDA
DEFAULT_GPU_MEMORY_UTILIZATION = 0.9
# What lives outside PyTorch's allocator (the CUDA context, cuBLAS workspaces, NCCL): vLLM
# logs it as "non-torch memory", a few hundred MiB on one GPU.
NON_TORCH_BYTES = GIB // 2
# CUDA graphs captured for the decode batch sizes (up to 512 sequences): vLLM logs "Graph
# capturing finished ... took N GiB", about half a GiB for a model of 7 to 8 B on one GPU.
CUDA_GRAPH_BYTES = GIB // 2
# vLLM against the pass model's llama.cpp step on the same card, fitted to the published runs
# of vLLM 0.25.1 serving Qwen2.5-7B-Instruct (BF16) on an RTX 4090 at concurrency 1 to 32
# (tests/data/batched-published, `benchmarks/serve_published.py` `fit_vllm`): its step is the
# pass model's divided by VLLM_ENGINE_FACTOR (the one-user run: vLLM reads the weights faster
# than llama.cpp's fitted 84% of the bandwidth), plus VLLM_SEQUENCE_HEAD_S for every sequence
# beyond the first in every layer (the median the other runs imply: its attention and sampling
# per sequence).
VLLM_ENGINE_FACTOR = 1.133
VLLM_SEQUENCE_HEAD_S = 0.302e-6


class VllmMemory(BaseModel):
    """vLLM's memory accounting at start-up, on one GPU."""

    model_config = ConfigDict(frozen=True)
    gpu_bytes: Bytes  # the card's memory
    gpu_memory_utilization: float
    requested_bytes: Bytes  # utilization x gpu_bytes
    checkpoint_bytes: Bytes  # the weights in the checkpoint's dtype
    activation_bytes: Bytes  # the dummy pass's peak at max_num_batched_tokens
    non_torch_bytes: Bytes
    cuda_graph_bytes: Bytes
    kv_available_bytes: Bytes  # what is left for the KV cache
    kv_bytes_per_token: Bytes  # all layers, K and V
    block_tokens: int
    kv_blocks: int
    kv_tokens: int  # "GPU KV cache size: N tokens"
    max_model_len: int
    max_concurrency: float  # kv_tokens / max_model_len
    max_num_seqs: int
    max_num_batched_tokens: int
    lines: list[str]  # the start-up lines as vLLM prints them


def vllm_defaults(machine: Machine) -> tuple[int, int]:
    """(max_num_seqs, max_num_batched_tokens) vLLM's OpenAI server picks for a card: 1,024 and
    8,192 on a card of 70 GiB or more, else 256 and 2,048 (vllm/engine/arg_utils.py,
    `_set_default_args`)."""
    if (machine.memory_bytes or 0) >= 70 * GIB:
        return 1024, 8192
    return 256, 2048


def _kv_bytes_per_token(model: Model, kv_type: str) -> int:
    layers = [x for x in model.decoding_layers if x.has_kv]
    if any(x.attention not in (Attention.FULL, Attention.MLA) for x in model.decoding_layers):
        raise InputError(
            f"{model.name} has sliding-window or recurrent layers: vLLM sizes their cache "
            "otherwise, and tokenwalk models vLLM for models of plain attention only"
        )
    return round(sum(kv_bytes_per_cell(x, kv_type) for x in layers))


def activation_peak_bytes(model: Model, tokens: int, seqs: int, dtype_bytes: int) -> int:
    """The dummy pass's live set: tokens x (3 x intermediate + 4 x hidden) x dtype bytes, and
    the sampler's logits, seqs x vocabulary x 4 bytes."""
    spec = model.spec
    ffn = max(spec.n_ff) if spec.n_ff else 4 * spec.n_embd
    if spec.n_expert:
        ffn = max(ffn, spec.n_expert_used * (spec.n_ff_exp or ffn))
    per_token = (3 * ffn + 4 * spec.n_embd) * dtype_bytes
    return tokens * per_token + seqs * spec.n_vocab * 4


def vllm_memory(
    model: Model,
    machine: Machine,
    *,
    gpu_memory_utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION,
    max_model_len: int | None = None,
    max_num_seqs: int | None = None,
    max_num_batched_tokens: int | None = None,
    kv_type: str = "f16",
) -> VllmMemory:
    """vLLM's start-up accounting for `model` (its tensors in the checkpoint's dtype) on the
    card `machine` (see the module's description)."""
    if not machine.memory_bytes:
        raise InputError(f"machine '{machine.slug}' has no memory size; give --memory GiB")
    if not 0 < gpu_memory_utilization <= 1:
        raise InputError(
            f"--gpu-memory-utilization must be above 0 and at most 1, not {gpu_memory_utilization}"
        )
    seqs_default, tokens_default = vllm_defaults(machine)
    seqs = max_num_seqs or seqs_default
    tokens = max_num_batched_tokens or tokens_default
    length = max_model_len or model.spec.n_ctx_train
    if not length:
        raise InputError(f"{model.name} states no context length; give --max-model-len")
    per_token = _kv_bytes_per_token(model, kv_type)
    gpu = int(machine.memory_bytes)
    requested = int(gpu * gpu_memory_utilization)
    weights = model.tensor_bytes
    dtype = max(1, round(8 * weights / max(model.params, 1)) // 8)
    act = activation_peak_bytes(model, tokens, seqs, dtype)
    available = requested - weights - act - NON_TORCH_BYTES - CUDA_GRAPH_BYTES
    if available <= 0:
        raise InputError(
            f"{model.name} ({weights / 1e9:.1f} GB) leaves no room for a KV cache in "
            f"{gpu_memory_utilization:g} of {machine.slug}'s memory: vLLM would not start"
        )
    blocks = available // (VLLM_BLOCK_TOKENS * per_token)
    kv_tokens = blocks * VLLM_BLOCK_TOKENS
    x = kv_tokens / length
    lines = [
        f"Available KV cache memory: {available / GIB:.2f} GiB",
        f"GPU KV cache size: {kv_tokens:,} tokens",
        f"Maximum concurrency for {length:,} tokens per request: {x:.2f}x",
    ]
    return VllmMemory(
        gpu_bytes=gpu,
        gpu_memory_utilization=gpu_memory_utilization,
        requested_bytes=requested,
        checkpoint_bytes=weights,
        activation_bytes=act,
        non_torch_bytes=NON_TORCH_BYTES,
        cuda_graph_bytes=CUDA_GRAPH_BYTES,
        kv_available_bytes=available,
        kv_bytes_per_token=per_token,
        block_tokens=VLLM_BLOCK_TOKENS,
        kv_blocks=blocks,
        kv_tokens=kv_tokens,
        max_model_len=length,
        max_concurrency=x,
        max_num_seqs=seqs,
        max_num_batched_tokens=tokens,
        lines=lines,
    )


def max_concurrency(kv_tokens: int, tokens_per_request: int) -> float:
    """vLLM's "Maximum concurrency for L tokens per request: X": X = N / L (plain attention)."""
    return kv_tokens / tokens_per_request if tokens_per_request else math.inf
