"""Memory budget: buffers against llama-fit-params, verdicts and the largest context that fits."""

from __future__ import annotations

import pytest

from tokenwalk.costs.budget import budget_report, compute_buffer_bytes, max_context_that_fits
from tokenwalk.errors import InputError
from tokenwalk.model.resolve import load_model

MiB = 1 << 20
GB = 10**9


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
    used = roomy.weights_bytes + roomy.cache_bytes + roomy.buffers_bytes
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


def _report(models, capacity_gb: float, **kw):
    return budget_report(models, machine="m", capacity_bytes=int(capacity_gb * GB), **kw)


def test_settings_apply_the_largest_context_that_fits(qwen2):
    r = _report([qwen2], 8, system_bytes=0, ctx=131072)
    assert not r.fits and 0 < r.max_fit_ctx < 131072
    assert r.settings["OLLAMA_CONTEXT_LENGTH"] == str(r.max_fit_ctx)
    assert r.settings["llama.cpp"].startswith(f"-c {r.max_fit_ctx} ")
    ok = _report([qwen2], 64, system_bytes=0, ctx=8192)
    assert ok.settings["OLLAMA_CONTEXT_LENGTH"] == "8192"


@pytest.mark.parametrize("kv_type", ["f32", "bf16", "q4_1", "q5_0", "iq4_nl"])
def test_ollama_settings_only_for_the_cache_types_ollama_takes(qwen2, kv_type):
    r = _report([qwen2], 64, system_bytes=0, ctx=8192, kv_type=kv_type)
    assert not any(k.startswith("OLLAMA_") for k in r.settings)
    assert f"-ctk {kv_type}" in r.settings["llama.cpp"]
    assert any("OLLAMA_KV_CACHE_TYPE takes only f16, q8_0, q4_0" in w for w in r.warnings)
    for ok in ("f16", "q8_0", "q4_0"):
        assert (
            _report([qwen2], 64, system_bytes=0, kv_type=ok).settings["OLLAMA_KV_CACHE_TYPE"] == ok
        )


def test_parallel_streams_in_the_settings(qwen2):
    r = _report([qwen2], 64, system_bytes=0, ctx=32768, parallel=4)
    assert r.settings["OLLAMA_CONTEXT_LENGTH"] == "8192"  # Ollama's is per request
    assert r.settings["OLLAMA_NUM_PARALLEL"] == "4"
    assert r.settings["llama.cpp"].startswith("-c 32768 ") and "-np 4" in r.settings["llama.cpp"]


def test_largest_context_stays_within_every_models_trained_maximum(qwen2, gemma3):
    short, long_ = sorted([qwen2, gemma3], key=lambda m: m.spec.n_ctx_train)
    assert short.spec.n_ctx_train < long_.spec.n_ctx_train
    r = _report([qwen2, gemma3], 1000, system_bytes=0, ctx=4096)
    assert r.max_fit_ctx == short.spec.n_ctx_train
    two = _report([qwen2, gemma3], 1000, system_bytes=0, ctx=4096, parallel=2)
    assert two.max_fit_ctx == 2 * short.spec.n_ctx_train  # each stream within the trained maximum


def test_when_not_even_the_weights_fit_there_is_a_hint(qwen2):
    r = _report([qwen2], 4, system_bytes=0, ctx=4096)
    assert not r.fits and r.max_fit_ctx == 0 and r.settings == {}
    assert any("offload: about" in h and "-ngl" in h for h in r.hints)
    shared = _report([qwen2], 4, system_bytes=0, ctx=4096, shared_memory=True)
    assert any("does not help" in h for h in shared.hints)


def test_the_quant_hint_is_the_largest_that_fits(qwen2):
    from tokenwalk.cli.plan_cmd import _smaller_quants

    alternatives = _smaller_quants([qwen2])
    assert alternatives and all(
        sum(m.tensor_bytes for m in alt) < qwen2.tensor_bytes for _, alt in alternatives
    )
    sizes = {p: alt[0].tensor_bytes for p, alt in alternatives}
    room = sizes["Q3_K_M"] + 0.5 * GB  # Q3_K_M's weights, its buffers and 1,024 tokens of KV
    r = budget_report(
        [qwen2],
        machine="m",
        capacity_bytes=int(room),
        system_bytes=0,
        ctx=1024,
        smaller_quants=alternatives,
    )
    assert r.max_fit_ctx == 0
    hinted = r.hints[0].split()[1]
    assert r.hints[0] == f"--quant {hinted} fits at 1,024 tokens"

    def fits(preset: str) -> bool:
        alt = dict(alternatives)[preset]
        return budget_report(
            alt, machine="m", capacity_bytes=int(room), system_bytes=0, ctx=1024
        ).fits

    presets = [p for p, _ in alternatives]
    assert fits(hinted) and not any(fits(p) for p in presets[: presets.index(hinted)])
    assert sizes[hinted] >= sizes["Q3_K_M"]


def test_offload_layers_grow_with_room(qwen2):
    from tokenwalk.costs.budget import offload_layers

    counts = [offload_layers(qwen2, gb * GB, 4096) for gb in (1, 2, 3, 4, 5, 100)]
    assert counts == sorted(counts) and counts[0] < counts[-2]
    assert counts[-1] == qwen2.spec.n_layer_all


def test_gpu_limit_caps_the_room(qwen2):
    """free = min(capacity - system, GPU limit) - used; a limit at or above the memory is none."""
    kw = dict(machine="m", capacity_bytes=16 * GB, system_bytes=2 * GB, ctx=4096)
    whole = budget_report([qwen2], **kw)
    capped = budget_report([qwen2], **kw, gpu_limit_bytes=10 * GB, gpu_limit_note="why")
    assert capped.free_bytes == pytest.approx(whole.free_bytes - 4 * GB)
    assert capped.max_fit_ctx < whole.max_fit_ctx
    assert (capped.gpu_limit_bytes, capped.gpu_limit_note) == (10 * GB, "why")
    loose = budget_report([qwen2], **kw, gpu_limit_bytes=16 * GB, gpu_limit_note="why")
    assert loose.gpu_limit_bytes is None and loose.free_bytes == whole.free_bytes


def test_timing_fit_uses_the_gpu_limit_like_budget(qwen2):
    from tokenwalk.costs.budget import memory_fit

    kw = dict(capacity_bytes=16 * GB, system_bytes=0, ctx=4096)
    free = memory_fit([qwen2], **kw)
    capped = memory_fit([qwen2], **kw, gpu_limit_bytes=4 * GB)
    assert free.fits and not capped.fits
    assert "the GPU may hold" in capped.note
    report = budget_report([qwen2], machine="m", **kw, gpu_limit_bytes=4 * GB)
    assert report.fits == capped.fits


@pytest.mark.parametrize(
    ("slug", "quant", "ctx", "ubatch", "mib", "rel"),
    [  # tests/data/fit_params.md: llama-fit-params -v on header-only files of these shapes
        ("mixtral-8x7b", "Q4_K_M", 4096, 512, 204.01, 0.01),
        ("mixtral-8x7b", "Q4_K_M", 4096, 2048, 816.05, 0.01),
        ("mixtral-8x7b", "Q4_K_M", 32768, 2048, 928.05, 0.01),
        ("qwen3-30b-a3b", "Q4_K_M", 4096, 512, 304.75, 0.01),
        ("deepseek-v2-lite", "Q4_K_M", 4096, 512, 240.26, 0.01),
        ("qwen3.6-35b-a3b", "Q4_K_M", 4096, 512, 501.02, 0.01),
        ("qwen3.6-35b-a3b", "Q4_K_M", 4096, 2048, 2004.08, 0.01),
        ("deepseek-v2-lite", "Q4_K_M", 4096, 2048, 961.05, 0.01),
        ("deepseek-v3", "Q2_K", 4096, 512, 412.01, 0.10),
        ("deepseek-v3", "Q2_K", 32768, 512, 440.01, 0.10),
        # the rest of the catalogue's architectures (second table of tests/data/fit_params.md)
        ("qwen3.6-35b-a3b", "Q4_K_M", 65536, 512, 497.00, 0.001),
        ("gpt-oss-20b", "Q4_K_M", 4096, 512, 414.40, 0.03),
        ("gpt-oss-20b", "Q4_K_M", 4096, 2048, 1731.09, 0.07),
        ("gpt-oss-20b", "Q4_K_M", 32768, 512, 409.63, 0.02),
        ("gemma-4-26b-a4b", "Q4_K_M", 4096, 512, 538.15, 0.03),
        ("gemma-4-26b-a4b", "Q4_K_M", 131072, 512, 532.63, 0.02),
        ("glm-4.5-air", "Q4_K_M", 4096, 512, 332.01, 0.07),
        ("glm-4.5-air", "Q4_K_M", 32768, 512, 320.00, 0.03),
        ("lfm2-8b-a1b", "Q4_K_M", 4096, 2048, 544.01, 0.001),
        ("lfm2-8b-a1b", "Q4_K_M", 131072, 512, 182.20, 0.07),
        ("qwen3-next-80b-a3b", "Q4_K_M", 16384, 512, 308.75, 0.001),
        ("qwen3-next-80b-a3b", "Q4_K_M", 4096, 2048, 1251.05, 0.02),
        ("qwen3-next-80b-a3b", "Q4_K_M", 262144, 512, 342.01, 0.02),
        ("qwen3.6-27b", "Q4_K_M", 32768, 512, 515.00, 0.001),
        ("qwen3.6-27b", "Q4_K_M", 8192, 512, 523.02, 0.02),
        ("granite-4.0-h-small", "Q4_K_M", 16384, 512, 228.00, 0.001),
        ("granite-4.0-h-small", "Q4_K_M", 4096, 2048, 928.05, 0.02),
        ("qwen3-8b", "Q4_K_M", 32768, 512, 312.75, 0.001),
        ("llama-3.1-8b", "Q4_K_M", 4096, 512, 266.50, 0.001),
        ("phi-2", "Q4_K_M", 4096, 512, 110.00, 0.001),
        ("phi-4", "Q4_K_M", 32768, 512, 216.00, 0.001),
        ("gemma-4-31b", "Q4_K_M", 32768, 512, 543.50, 0.02),
        ("lfm2-1.2b", "Q4_K_M", 4096, 512, 144.01, 0.06),
        ("kimi-k2", "Q4_K_M", 4096, 512, 380.01, 0.02),
        ("kimi-k2", "Q4_K_M", 32768, 512, 376.00, 0.001),
    ],
)
def test_moe_and_mla_buffers_match_llama_fit_params(slug, quant, ctx, ubatch, mib, rel):
    model = load_model(slug, quant).model
    assert compute_buffer_bytes(model, ubatch, ctx) / MiB == pytest.approx(mib, rel=rel)
