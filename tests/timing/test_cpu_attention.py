"""A CPU's one-row flash attention against the recorded runs of tests/data/cpu-attention-depth
(llama-bench tg64 at depth, a native AVX512-FP16 build and the same built -mno-avx512fp16):
what the records show, and FA_SCALAR_FLOPS as benchmarks/cpu_attention.py fits it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tokenwalk.timing.passes import FA_SCALAR_FLOPS

ROOT = Path(__file__).parents[2]
_spec = importlib.util.spec_from_file_location(
    "cpu_attention", ROOT / "benchmarks" / "cpu_attention.py"
)
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def test_the_fp16_build_pays_for_heads_of_64_with_depth_and_not_for_heads_of_256():
    """SmolLM2 (heads of 64): the native build's step grows with depth far more than the
    -mno-avx512fp16 build's; Gemma 3 270M (heads of 256) on the native build hardly grows."""
    native, plain = (
        bench.step_s("native", bench.SMOLLM2, 1),
        bench.step_s("no-avx512fp16", bench.SMOLLM2, 1),
    )
    assert sorted(native) == sorted(plain) == [0, 256, 512, 1024]
    for d in (256, 512, 1024):
        assert native[d] - plain[d] > 2 * (native[0] - plain[0])
    assert native[1024] / native[0] > 3.0
    gemma = bench.step_s("native", "gemma-3-270m-q4_k_m", 1)
    assert gemma[1024] / gemma[0] < 1.2


def test_fa_scalar_flops_is_the_fit():
    """The shipped cost of an element done one at a time is the median benchmarks/
    cpu_attention.py computes from the records (about 1.5 ns on the guest, 163 FLOPs of its
    fitted compute rate)."""
    per_element = bench.element_seconds()
    assert all(1e-9 < s < 2.5e-9 for s in per_element.values())
    assert FA_SCALAR_FLOPS == pytest.approx(bench.fit_fa_scalar_flops(), rel=0.01)


def test_a_prefill_chunk_takes_the_tiled_kernel_and_pays_no_rest():
    """pp512 after 1,024 cached tokens: the native build is no slower than the one without
    AVX512-FP16 (248 against 221 tok/s), as `one_row_attention` has no prefill chunk."""
    native = bench.step_s("prefill-native", bench.SMOLLM2, 1)
    plain = bench.step_s("prefill-no-avx512fp16", bench.SMOLLM2, 1)
    assert native[1024] <= plain[1024] and native[1024] > native[0]
