"""Sums over a model's tensors, remembered per model."""

from __future__ import annotations

import gc
import weakref
from dataclasses import replace

from tokenwalk.costs.weights import active_params, per_model, tensor_read_fraction
from tokenwalk.model.resolve import load_model
from tokenwalk.timing.passes import expert_params, head_params


def test_remembered_sums_are_each_models_own():
    moe, dense = load_model("qwen3.6-35b-a3b").model, load_model("qwen3-8b").model
    for model in (moe, dense, moe):
        direct = sum(t.n_elements * tensor_read_fraction(model, t, 1) for t in model.tensors)
        assert active_params(model) == direct
    assert active_params(moe) < 0.2 * moe.params
    assert expert_params(dense) == 0 < expert_params(moe)
    assert head_params(moe) != head_params(dense)


def test_per_model_keeps_no_model_alive_and_no_stale_value():
    calls: list[str] = []

    @per_model
    def name_of(model) -> str:
        calls.append(model.name)
        return model.name

    base = load_model("qwen3-8b").model
    model = replace(base, name="first")
    assert name_of(model) == name_of(model) == "first"
    assert calls == ["first"]  # once while it lives
    gone = weakref.ref(model)
    del model
    gc.collect()
    assert gone() is None  # the memo holds no reference to it
    for i in range(50):  # new models, some of them perhaps at the gone one's address
        assert name_of(replace(base, name=f"m{i}")) == f"m{i}"
