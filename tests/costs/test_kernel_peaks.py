"""The peak each weight product runs at: INT8 for quantized weights on integer kernels, FP4
for MXFP4 on Blackwell, FP16 otherwise; and the per-layer cost's bandwidth scale."""

from __future__ import annotations

import pytest

from tokenwalk.costs.timing import (
    OVERHEAD_BW_EXPONENT,
    OVERHEAD_REF_GBS,
    Peaks,
    matrix_flops,
    overhead_scale,
    pass_seconds,
    pass_work,
    prefill_report,
    weight_kernel_time,
    weight_types,
)
from tokenwalk.machine import Efficiency, resolve_machine
from tokenwalk.model.resolve import load_model


@pytest.fixture(scope="module")
def q4():
    return load_model("qwen3-8b", "Q4_K_M").model


def test_quantized_weights_count_at_the_int8_rate_on_integer_kernels(q4):
    quant, fp4, f16 = weight_types(q4)
    assert quant == pytest.approx(1.0) and fp4 == f16 == 0.0  # every product of a Q4_K_M file
    w = pass_work(q4, 512, 0)
    peaks = Peaks(tflops=100.0, int8_tops=400.0)
    assert weight_kernel_time(w, "cuda", peaks) == pytest.approx(0.25)
    assert weight_kernel_time(w, "rocm", peaks) == pytest.approx(0.25)
    assert weight_kernel_time(w, "vulkan", peaks) == pytest.approx(0.25)
    # Metal and SYCL dequantize to FP16; a rate not known counts as FP16's
    assert weight_kernel_time(w, "metal", peaks) == 1.0
    assert weight_kernel_time(w, "sycl", peaks) == 1.0
    assert weight_kernel_time(w, "cuda", Peaks(tflops=100.0)) == 1.0
    assert weight_kernel_time(w, "cuda", None) == 1.0
    # the compute term counts the weight products at that rate, attention at FP16's
    full = matrix_flops(w, "cuda")
    fast = matrix_flops(w, "cuda", peaks)
    assert fast == pytest.approx(w.attention_flops + 0.25 * w.matmul_flops)
    assert fast < full


def test_f16_weights_accumulate_in_fp16_on_cuda_and_mxfp4_runs_at_fp4():
    f16 = load_model("qwen3-8b", "F16").model
    assert weight_types(f16) == (pytest.approx(0.0), 0.0, pytest.approx(1.0))
    w = pass_work(f16, 512, 0)
    # cuBLAS's FP16-accumulate rate, INT8 / 2: a GeForce card's figure is half of it
    assert weight_kernel_time(w, "cuda", Peaks(100.0, 400.0, 800.0)) == pytest.approx(0.5)
    assert weight_kernel_time(w, "cuda", Peaks(200.0, 400.0)) == pytest.approx(1.0)  # pro
    assert weight_kernel_time(w, "rocm", Peaks(100.0, 400.0)) == pytest.approx(1.0)
    oss = load_model("gpt-oss-20b", "MXFP4").model
    quant, fp4, _ = weight_types(oss)
    assert fp4 > 0.5  # the experts, most of the weights a token multiplies
    w = pass_work(oss, 512, 0)
    k = weight_kernel_time(w, "cuda", Peaks(100.0, 400.0, 800.0))
    f = 1.0 - quant - fp4 - w.f16_share
    assert k == pytest.approx(f + quant / 4 + fp4 / 8 + w.f16_share / 2)
    # FP4 units only on CUDA; elsewhere MXFP4 runs on the integer kernels
    k = weight_kernel_time(w, "vulkan", Peaks(100.0, 400.0, 800.0))
    assert k == pytest.approx(f + w.f16_share + (quant + fp4) / 4)


def test_a_geforce_card_and_a_pro_card_are_priced_at_their_int8_rate(q4):
    """GeForce fp16_tflops is the FP32-accumulate rate, a quarter of dense INT8; a pro card's
    is the full FP16 rate, half of INT8: the same quantized prefill meets both at INT8."""
    w = pass_work(q4, 512, 0)
    geforce = resolve_machine("rtx-4090")
    pro = resolve_machine("rtx-a5000")
    assert geforce.int8_tops == pytest.approx(4 * geforce.tflops, rel=0.01)
    assert pro.int8_tops == pytest.approx(2 * pro.tflops, rel=0.01)
    for m in (geforce, pro):
        per_int8 = matrix_flops(w, m.backend, Peaks.of(m)) - w.attention_flops
        assert per_int8 / m.tflops == pytest.approx(w.matmul_flops / m.int8_tops)


def test_an_inline_int8_rate_speeds_up_quantized_prefill(q4):
    base = dict(bandwidth=1000.0, tflops=100.0, backend="cuda", vendor="nvidia")
    plain = resolve_machine(None, **base)
    int8 = resolve_machine(None, int8_tops=400.0, **base)
    assert plain.int8_tops is None and int8.int8_tops == 400.0
    slow = prefill_report(q4, plain, prompt=4096).tok_s
    fast = prefill_report(q4, int8, prompt=4096).tok_s
    assert fast > 1.5 * slow
    # a named machine's rate, unless given
    assert resolve_machine("rtx-4090", int8_tops=500.0).int8_tops == 500.0


def test_the_per_layer_cost_falls_with_the_bandwidth():
    assert overhead_scale(OVERHEAD_REF_GBS) == 1.0
    assert overhead_scale(OVERHEAD_REF_GBS / 4) == pytest.approx(4**OVERHEAD_BW_EXPONENT)
    fit = Efficiency(eff_bw=1.0, eff_compute=1.0, overhead_per_layer_s=1e-4)
    for bw in (100.0, 1000.0, 4000.0):
        *_, over = pass_seconds(0.0, 0.0, 0.0, 10.0, bw, None, fit)
        assert over == pytest.approx(10 * 1e-4 * overhead_scale(bw))
