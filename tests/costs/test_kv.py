"""KV cache sizes against llama.cpp's own allocation (llama-fit-params -v on the real files)."""

from __future__ import annotations

import pytest

from tokenwalk.costs.kv import (
    context_cells,
    kv_bytes,
    kv_element_bytes,
    kv_report,
    sliding_cells,
)
from tokenwalk.errors import InputError, UnknownNameError
from tokenwalk.model.resolve import load_model

MiB = 1 << 20


@pytest.fixture(scope="module")
def gemma3(gemma3_path):
    return load_model(str(gemma3_path)).model


def test_element_bytes_come_from_ggml_block_sizes():
    assert kv_element_bytes("f16") == 2
    assert kv_element_bytes("q8_0") == 34 / 32
    assert kv_element_bytes("q4_0") == 18 / 32
    with pytest.raises(UnknownNameError, match="q8_0"):
        kv_element_bytes("q7")


def test_cells_follow_llama_cpp_padding():
    assert context_cells(16384) == 16384
    assert context_cells(10000, 3) == 3584  # pad256(pad256(10000) / 3)
    assert sliding_cells(16384, 1024) == 1536  # window + ubatch
    assert sliding_cells(16384, 512) == 1024
    assert sliding_cells(300, 1024) == 512  # never more than the context holds
    assert sliding_cells(16384, 128) == 768  # gpt-oss


def test_gemma3_matches_llama_fit_params(gemma3):
    # llama-fit-params -v -c 16384: non-SWA 48.00 MiB (3 layers), SWA 15.00 MiB (15 layers)
    r = kv_report(gemma3, 16384)
    kinds = {k.attention: k for k in r.kinds}
    assert kinds["full"].n_layers == 3 and kinds["full"].cache_bytes == 48 * MiB
    assert kinds["sliding"].n_layers == 15 and kinds["sliding"].cells == 1024
    assert kinds["sliding"].cache_bytes == 15 * MiB
    assert kinds["sliding"].window_cells_naive == 512
    # -c 3000 -np 2: 9.00 MiB full (1536 cells/stream), 30.00 MiB SWA (1024 cells/stream)
    assert kv_bytes(gemma3, 3000, parallel=2) == (9 + 30) * MiB


def test_qwen2_matches_llama_fit_params(qwen2):
    assert kv_bytes(qwen2, 32768) == 1792 * MiB
    assert kv_bytes(qwen2, 8192, "q8_0") == 238 * MiB
    assert kv_bytes(qwen2, 10000, parallel=3) == 588 * MiB
    r = kv_report(qwen2, 4096)
    assert r.kv_bytes_per_token == 28 * 2 * 4 * 128 * 2  # 57,344 B
    assert r.state_bytes == 0


def test_a_window_in_a_full_cache_architecture_is_ignored(qwen2_path):
    # llama.cpp's llama, qwen2 and mistral3 never read attention.sliding_window and phi3 turns
    # it off: a file that carries one still gets the whole context cached
    from tokenwalk.gguf.reader import read_header
    from tokenwalk.model.spec import from_gguf_metadata

    with open(qwen2_path, "rb") as fh:
        md = dict(read_header(fh, file_size=qwen2_path.stat().st_size).metadata)
    md["qwen2.attention.sliding_window"] = 4096
    spec = from_gguf_metadata(md)
    assert spec.n_swa == 0 and not any(spec.is_swa)


def test_mistral_v01_caches_the_whole_context_as_v03():
    # Mistral 7B v0.1 runs as llama.cpp's llama architecture: 32 layers x 8 kv heads x 128 x 2
    # x f16 = 128 KiB a token, 4 GiB at 32k, the same as v0.3
    v1 = load_model("mistral-7b").model
    v3 = load_model("mistral-7b-v0.3").model
    assert kv_bytes(v1, 32768) == kv_bytes(v3, 32768) == 4 << 30


def test_more_context_never_less_kv(gemma3):
    sizes = [kv_bytes(gemma3, c) for c in (1, 100, 1000, 5000, 20000, 32768)]
    assert sizes == sorted(sizes)


def test_bad_numbers_are_input_errors(qwen2):
    with pytest.raises(InputError):
        kv_report(qwen2, 0)
    with pytest.raises(InputError):
        kv_report(qwen2, 4096, parallel=0)


def test_beyond_max_context_warns(qwen2):
    r = kv_report(qwen2, 200_000)
    assert any("beyond its trained maximum" in w for w in r.warnings)


def test_swa_full_gives_sliding_layers_the_cache_of_a_full_layer():
    """llama.cpp --swa-full (llama-kv-cache-iswa.cpp: size_swa = size_base): gemma-3-12b at
    32k holds what the same model without sliding windows holds, every layer full."""
    from dataclasses import replace

    from tokenwalk.model.model import Model

    gemma = load_model("gemma-3-12b").model
    windowless = replace(gemma.spec, n_swa=0, is_swa=())
    every_full = Model.from_parts(
        gemma.name,
        windowless,
        [t.info for t in gemma.tensors],
        file_bytes=gemma.file_bytes,
        file_bytes_exact=False,
        quant=gemma.quant,
        source=gemma.source,
    )
    full = gemma.with_swa_full()
    ctx = 32768
    assert kv_bytes(full, ctx) == kv_bytes(every_full, ctx)
    assert kv_bytes(full, ctx) > 4 * kv_bytes(gemma, ctx)
    report = kv_report(full, ctx)
    assert report.swa_full_layers == 40 and [k.attention for k in report.kinds] == ["full"]
    assert report.cache_bytes == kv_report(every_full, ctx).cache_bytes
    assert kv_report(gemma, ctx).swa_full_layers == 0


def test_swa_full_leaves_a_model_without_windows_as_it_is():
    qwen = load_model("qwen3-8b").model
    assert qwen.with_swa_full() is qwen and not qwen.swa_full
