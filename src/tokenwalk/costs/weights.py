"""What a pass over the weights reads and computes.

A pass of n tokens (n = 1 when decoding, a ubatch when prefilling, gamma + 1 when verifying a
draft) reads each tensor's share that those tokens touch:

- embedding table: one row per token (all of it when tied to the output head, which reads it whole);
- routed experts: the expected share of distinct experts the n tokens wake, under uniform routing
  E_n / E = 1 - (1 - k/E)^n (k experts used per token out of E);
- multi-token-prediction blocks: nothing (normal decoding does not run them);
- everything else: all of it.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import TypeVar

from tokenwalk.model.model import Model, Role, Tensor

T = TypeVar("T")

__all__ = [
    "per_model",
    "experts_woken",
    "expert_read_fraction",
    "tensor_read_fraction",
    "weight_bytes_read",
    "active_params",
    "flops_per_token",
]


def per_model(fn: Callable[[Model], T]) -> Callable[[Model], T]:
    """Remember `fn(model)` for as long as the model lives. A model is frozen, so a sum over its
    tensors never changes; a prefill of many chunks asks for the same sums once a chunk."""
    memo: dict[int, T] = {}

    @functools.wraps(fn)
    def wrapper(model: Model) -> T:
        key = id(model)
        if key not in memo:
            memo[key] = fn(model)
            weakref.finalize(model, memo.pop, key, None)
        return memo[key]

    return wrapper


def expert_read_fraction(n_expert: int, n_used: int, n_tokens: float) -> float:
    """Share of a layer's E experts that n tokens wake: 1 - (1 - k/E)^n (uniform routing)."""
    if n_expert <= 0:
        return 1.0
    if n_tokens <= 0:
        return 0.0
    return 1.0 - (1.0 - n_used / n_expert) ** n_tokens


def experts_woken(n_expert: int, n_used: int, n_tokens: float) -> float:
    """Expected distinct experts per layer woken by n tokens: E x (1 - (1 - k/E)^n)."""
    return n_expert * expert_read_fraction(n_expert, n_used, n_tokens)


def tensor_read_fraction(model: Model, tensor: Tensor, n_tokens: float = 1) -> float:
    """Share of `tensor` a pass over `n_tokens` tokens reads (0..1)."""
    role = tensor.role
    if role is Role.MTP:
        return 0.0
    if role is Role.EMBEDDING:
        if model.spec.tied_embeddings:
            return 1.0
        rows = tensor.info.shape[1] if len(tensor.info.shape) > 1 else 1
        return min(1.0, n_tokens / max(rows, 1))
    if role is Role.EXPERT:
        return expert_read_fraction(model.spec.n_expert, model.spec.n_expert_used, n_tokens)
    return 1.0


def weight_bytes_read(model: Model, n_tokens: float = 1) -> float:
    """Bytes of weights a pass over n tokens reads: sum of tensor bytes x read fraction. Bytes."""
    return sum(t.n_bytes * tensor_read_fraction(model, t, n_tokens) for t in model.tensors)


@per_model
def active_params(model: Model) -> float:
    """Weights one decoded token multiplies: every tensor's elements x its read fraction at n = 1.

    The embedding table counts one row (a lookup), unless it is tied to the output head.
    """
    return sum(t.n_elements * tensor_read_fraction(model, t, 1) for t in model.tensors)


def flops_per_token(model: Model) -> float:
    """FLOPs per token = 2 x P_active (one multiply and one add per weight touched)."""
    return 2.0 * active_params(model)
