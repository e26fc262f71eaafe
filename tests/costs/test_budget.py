"""Memory budget: buffers against llama-fit-params, verdicts and the largest context that fits."""

from __future__ import annotations

import pytest

from tokenwalk.costs.budget import budget_report, compute_buffer_bytes, max_context_that_fits
from tokenwalk.errors import InputError
from tokenwalk.model.resolve import load_model

MiB = 1 << 20
GB = 10**9


@pytest.fixture(scope="module")
def qwen2(qwen2_path):
    return load_model(str(qwen2_path)).model


@pytest.fixture(scope="module")
def gemma3(gemma3_path):
    return load_model(str(gemma3_path)).model


def test_compute_buffers_match_llama_fit_params(qwen2, gemma3):
    # llama-fit-params -v: "CPU compute buffer size = 311.00 MiB" / "514.50 MiB"
    assert compute_buffer_bytes(qwen2) / MiB == pytest.approx(311.0, abs=0.05)
    assert compute_buffer_bytes(gemma3) / MiB == pytest.approx(514.5, abs=0.05)


def test_verdicts_and_exit_semantics(qwen2):
    roomy = budget_report([qwen2], machine="m", capacity_bytes=64 * GB, system_bytes=8 * GB)
    assert roomy.fits and roomy.verdict == "fits with room"
    used = roomy.weights_bytes + roomy.kv_bytes + roomy.buffers_bytes
    assert roomy.free_bytes == pytest.approx(64 * GB - 8 * GB - used)
    tight = budget_report([qwen2], machine="m", capacity_bytes=9 * GB, system_bytes=3 * GB)
    assert tight.fits and tight.verdict == "tight"
    small = budget_report([qwen2], machine="m", capacity_bytes=8 * GB, system_bytes=4 * GB)
    assert not small.fits and small.verdict == "does not fit"


def test_max_context_is_the_edge(qwen2):
    room = 8 * GB
    best = max_context_that_fits([qwen2], room)
    assert best % 256 == 0 and 0 < best < qwen2.spec.n_ctx_train
    over = budget_report([qwen2], machine="m", capacity_bytes=room, system_bytes=0, ctx=best + 256)
    at = budget_report([qwen2], machine="m", capacity_bytes=room, system_bytes=0, ctx=best)
    assert at.fits and not over.fits


def test_two_models_add_up(qwen2, gemma3):
    one = budget_report([qwen2], machine="m", capacity_bytes=64 * GB, system_bytes=0, ctx=4096)
    two = budget_report(
        [qwen2, gemma3], machine="m", capacity_bytes=64 * GB, system_bytes=0, ctx=4096
    )
    assert two.weights_bytes == one.weights_bytes + gemma3.tensor_bytes
    assert len(two.models) == 2


def test_bad_input(qwen2):
    with pytest.raises(InputError):
        budget_report([qwen2], machine="m", capacity_bytes=8 * GB, system_bytes=9 * GB)
    with pytest.raises(InputError):
        budget_report([], machine="m", capacity_bytes=8 * GB, system_bytes=0)


def test_default_system_memory_by_kind():
    from tokenwalk.costs.budget import default_system_bytes

    assert default_system_bytes("igpu", 64 * GB) == 8 * GB
    assert default_system_bytes("sbc", 8 * GB) == 2 * GB  # a quarter of a small machine
    assert default_system_bytes("gpu", 24 * GB) == GB // 2


def test_gpu_limit_caps_the_room(qwen2):
    """free = min(capacity - system, GPU limit) - used; a limit at or above the memory is none."""
    kw = dict(machine="m", capacity_bytes=16 * GB, system_bytes=2 * GB, ctx=4096)
    whole = budget_report([qwen2], **kw)
    capped = budget_report([qwen2], **kw, gpu_limit_bytes=10 * GB, gpu_limit_note="why")
    assert capped.free_bytes == pytest.approx(whole.free_bytes - 4 * GB)
    assert capped.max_ctx < whole.max_ctx
    assert (capped.gpu_limit_bytes, capped.gpu_limit_note) == (10 * GB, "why")
    loose = budget_report([qwen2], **kw, gpu_limit_bytes=16 * GB, gpu_limit_note="why")
    assert loose.gpu_limit_bytes is None and loose.free_bytes == whole.free_bytes
