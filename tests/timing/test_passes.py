"""The timing model against the seed article's numbers, and its formulas one by one."""

from __future__ import annotations

from pathlib import Path

import pytest

from tokenwalk.errors import InputError
from tokenwalk.machine import Machine, resolve_machine
from tokenwalk.model.layers import Attention, Ffn, Layer
from tokenwalk.model.resolve import load_model
from tokenwalk.timing.efficiency import Efficiency
from tokenwalk.timing.passes import (
    F16_VECTOR_STEPS,
    FA_SCALAR_FLOPS,
    FA_TILE_Q,
    MAX_PREFILL_CHUNKS,
    attended_cells,
    attention_flops,
    cpu_kernel_time,
    cpu_matvec_kernels,
    cpu_matvec_time,
    decode_report,
    fa_scalar_flops,
    one_row_attention,
    pass_time,
    pass_work,
    prefill_chunks,
    prefill_report,
)


@pytest.fixture(scope="module")
def laptop() -> Machine:
    return resolve_machine("radeon-860m")


@pytest.fixture(scope="module")
def moe():
    return load_model("qwen3.6-35b-a3b", "Q4_K_M").model


@pytest.fixture(scope="module")
def dense():
    return load_model("qwen3.6-27b", "Q4_K_M").model


def roofline(bandwidth_gbs: float = 100.0, tflops: float = 10.0) -> Machine:
    """A machine at 100% of its spec sheet with no per-layer cost: the naive roofline."""
    return Machine(
        slug="ideal",
        name="ideal",
        kind="gpu",
        backend="cuda",
        memory_bytes=None,
        bandwidth_gbs=bandwidth_gbs,
        tflops=tflops,
        fit=Efficiency(eff_bw=1.0, eff_compute=1.0, overhead_per_layer_s=0.0),
    )


# -- the seed -------------------------------------------------------------------------------


def test_seed_moe_decode(moe, laptop):
    r = decode_report(moe, laptop)
    assert 55 <= r.ceiling_tok_s <= 75  # seed: "about 70" from 1.84 GB a token
    assert r.tok_s == pytest.approx(11.7, rel=0.25)  # measured 11.7
    assert 1.8e9 <= r.weight_read_bytes <= 2.1e9


def test_seed_dense_decode(dense, laptop):
    r = decode_report(dense, laptop)
    assert 7 <= r.ceiling_tok_s <= 9  # seed: "its ceiling is 8 tokens a second"
    assert r.tok_s == pytest.approx(2.6, rel=0.30)  # measured 2.6


def test_seed_prefill(moe, laptop):
    r = prefill_report(moe, laptop, prompt=6500)
    assert 50 <= r.ttft_s <= 95  # seed: about 70 s
    assert len(r.chunks) == 13  # 13 chunks of 512
    # each woken expert multiplies 512 x 8 / 256 = 16 rows: the small products set the pace
    assert all(c.bound == "experts" for c in r.chunks)
    assert r.expert_rows == pytest.approx(16, rel=0.01)
    assert 0 < r.attention_share < 0.3


def test_seed_balance_point(moe, laptop):
    r = decode_report(moe, laptop)
    # seed: "about 3.3 operations per byte", "about 18" on the balance side (vector rate)
    assert 2 <= r.arithmetic_intensity <= 4
    assert r.machine_balance == pytest.approx(12.3e12 / 128e9)


# -- formulas -------------------------------------------------------------------------------


def test_roofline_decode_is_bandwidth_over_bytes(dense):
    m = roofline()
    cost = pass_time(dense, m, 1, 0)
    assert cost.bound == "memory"
    assert cost.time_s == pytest.approx(cost.work.bytes / 100e9)


def test_prefill_chunk_wakes_experts_and_turns_compute_bound(moe):
    one = pass_work(moe, 1, 0)
    chunk = pass_work(moe, 512, 0, n_logits=1)
    assert chunk.weight_bytes > 8 * one.weight_bytes  # 512 tokens wake nearly every expert
    assert chunk.intensity_flop_per_byte > 20 * one.intensity_flop_per_byte


def test_parallel_streams_share_the_weights(dense, laptop):
    one = decode_report(dense, laptop, ctx=1000)
    four = decode_report(dense, laptop, ctx=1000, parallel=4)
    assert four.weight_read_bytes == pytest.approx(one.weight_read_bytes)
    assert four.kv_read_bytes == pytest.approx(4 * one.kv_read_bytes)
    assert four.aggregate_tok_s > 3 * one.tok_s
    assert four.tok_s < one.tok_s


def test_context_adds_kv_reads(moe, laptop):
    short = decode_report(moe, laptop, ctx=0)
    long = decode_report(moe, laptop, ctx=100_000)
    # 10 attention layers x 2 KV heads x 256 x 2 (K, V) x 2 bytes = 20,480 bytes a token
    assert long.kv_read_bytes - short.kv_read_bytes == pytest.approx(20480 * 100_000, rel=1e-3)
    assert long.tok_s < short.tok_s


def test_sliding_layers_attend_at_most_the_window():
    layer = Layer(index=0, attention=Attention.SLIDING, ffn=Ffn.DENSE, window=1024)
    assert attended_cells(layer, 1, 100_000) == 1024
    full = Layer(index=0, attention=Attention.FULL, ffn=Ffn.DENSE)
    assert attended_cells(full, 512, 1000) == 1000 + 513 / 2


def test_prefill_chunks_and_prefix_cache(moe, laptop):
    assert prefill_chunks(1300, 0, 512) == [(0, 512), (512, 512), (1024, 276)]
    assert prefill_chunks(1300, 1000, 512) == [(1000, 300)]
    full = prefill_report(moe, laptop, prompt=6500)
    cached = prefill_report(moe, laptop, prompt=6500, cached=6000)
    assert cached.computed_tokens == 500 and cached.cached_tokens == 6000
    assert cached.ttft_s < full.ttft_s / 10


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(prompt=0),
        dict(prompt=100, cached=100),
        dict(prompt=100, cached=-1),
        dict(prompt=100, ubatch=0),
        dict(prompt=MAX_PREFILL_CHUNKS + 1, ubatch=1),
        dict(prompt=10**9),
    ],
)
def test_prefill_refuses_bad_input(moe, laptop, kwargs):
    with pytest.raises(InputError):
        prefill_report(moe, laptop, **kwargs)


def test_prefill_times_up_to_its_chunk_limit():
    """The limit counts the chunks that run: the cached tokens and a partial last chunk too."""
    assert len(prefill_chunks(MAX_PREFILL_CHUNKS, 0, 1)) == MAX_PREFILL_CHUNKS
    assert len(prefill_chunks(512 * MAX_PREFILL_CHUNKS + 1000, 1000)) == MAX_PREFILL_CHUNKS
    with pytest.raises(InputError, match="131,073 chunks"):
        prefill_chunks(512 * MAX_PREFILL_CHUNKS + 1, 0)


@pytest.mark.parametrize("kwargs", [dict(ctx=-1), dict(parallel=0), dict(kv_type="q3")])
def test_decode_refuses_bad_input(moe, laptop, kwargs):
    with pytest.raises(Exception) as info:
        decode_report(moe, laptop, **kwargs)
    from tokenwalk.errors import TokenwalkError

    assert isinstance(info.value, TokenwalkError)


# -- rows per product -------------------------------------------------------------------------


def _machine(backend: str, rows_half: float) -> Machine:
    return Machine(
        slug=backend,
        name=backend,
        kind="cpu" if backend == "cpu" else "gpu",
        backend=backend,
        memory_bytes=None,
        bandwidth_gbs=100.0,
        tflops=10.0,
        fit=Efficiency(eff_bw=1.0, eff_compute=1.0, overhead_per_layer_s=0.0, rows_half=rows_half),
    )


def test_a_product_of_n_rows_runs_at_n_over_n_plus_rows_half(dense):
    """Prefill on a dense model: every weight product sees the 512 rows of the chunk, so with
    rows_half = 512 the weights run at half speed: compute = (F + 512 x 2 P_body) / FLOPS."""
    w = pass_work(dense, 512, 0, n_logits=0)
    fast = pass_time(dense, _machine("cuda", 0.5), 512, 0, n_logits=0)
    half = pass_time(dense, _machine("cuda", 512.0), 512, 0, n_logits=0)
    assert half.compute_s == pytest.approx((w.flops + 512.0 * w.row_flops) / 10e12)
    weights = w.matmul_flops
    assert half.compute_s - fast.compute_s == pytest.approx(weights / 10e12, rel=0.02)


def test_routed_experts_see_ubatch_k_over_e_rows(moe):
    """Qwen3.6 35B-A3B: 512 x 8 / 256 = 16 rows per woken expert; its expert row FLOPs are
    2 x the expert weights woken (all of them at 512 tokens)."""
    from tokenwalk.timing.passes import expert_params, expert_rows

    assert expert_rows(moe, 512) == pytest.approx(16.0, rel=0.01)
    w = pass_work(moe, 512, 0, n_logits=0)
    assert w.expert_row_flops == pytest.approx(2.0 * expert_params(moe), rel=0.01)
    assert w.expert_flops == pytest.approx(w.expert_row_flops * 16.0, rel=0.01)


def test_routed_experts_run_at_eff_experts_of_the_dense_rate(moe):
    """compute = (F - F_x + h (R - R_x) + (F_x + h R_x) / eff_experts) / FLOPS on a GPU, with
    F_x, R_x the routed experts' part; at eff_experts 1/2 the experts take exactly twice as
    long. A cpu backend runs them at the dense rate (eff_experts ignored); decode (mat-vec
    kernels) has no expert part."""
    w = pass_work(moe, 512, 0, n_logits=0)
    h = 16.0

    def machine(backend: str, share: float) -> Machine:
        m = _machine(backend, h)
        return m.model_copy(update={"fit": m.fit.model_copy(update={"eff_experts": share})})

    half = pass_time(moe, machine("cuda", 0.5), 512, 0, n_logits=0)
    dense_part = (w.flops - w.expert_flops + h * (w.row_flops - w.expert_row_flops)) / 10e12
    experts = (w.expert_flops + h * w.expert_row_flops) / 10e12
    assert half.expert_s == pytest.approx(2 * experts)
    assert half.compute_s == pytest.approx(dense_part + 2 * experts)
    whole = pass_time(moe, machine("cuda", 1.0), 512, 0, n_logits=0)
    assert whole.compute_s == pytest.approx((w.flops + h * w.row_flops) / 10e12)
    cpu = pass_time(moe, machine("cpu", 0.5), 512, 0, n_logits=0)
    dense_rate = pass_time(moe, machine("cpu", 1.0), 512, 0, n_logits=0)
    assert cpu.compute_s == pytest.approx(dense_rate.compute_s)
    step = pass_time(moe, machine("cuda", 0.5), 1, 0)
    assert step.expert_s == 0.0
    assert step.compute_s == pytest.approx(pass_time(moe, machine("cuda", 1.0), 1, 0).compute_s)


def test_a_cpu_pays_for_its_mat_vec_products(dense):
    """Decoding: a GPU's mat-vec kernels hide the weights' FLOPs under the read (attention
    only); a CPU pays them at its mat-vec kernels' time per weight type, each product of one
    row at 1 / (1 + rows_half) of its rate, and the read and the arithmetic add."""
    from tokenwalk.timing.passes import cpu_matvec_time

    w = pass_work(dense, 1, 0)
    k = cpu_matvec_time(dense)
    assert w.cpu_kernel_time == pytest.approx(k) and 1.0 < k < 1.6  # Q4_K, some Q6_K
    gpu = pass_time(dense, _machine("cuda", 8.0), 1, 0)
    cpu = pass_time(dense, _machine("cpu", 8.0), 1, 0)
    assert gpu.compute_s == pytest.approx(w.attention_flops / 10e12)
    weights = k * w.matmul_flops
    assert cpu.compute_s == pytest.approx(
        (w.attention_flops + weights + 8.0 * w.cpu_row_flops) / 10e12
    )
    assert cpu.compute_s == pytest.approx(9.0 * weights / 10e12, rel=0.01)
    assert gpu.unhidden == 0 and gpu.time_s == pytest.approx(max(gpu.memory_s, gpu.compute_s))
    assert cpu.unhidden == 1 and cpu.time_s == pytest.approx(cpu.memory_s + cpu.compute_s)
    # a CPU's prefill chunk reuses each weight it reads for 512 tokens: only the first
    # token's arithmetic waits on the read, a negligible share
    chunk = pass_time(dense, _machine("cpu", 8.0), 512, 0, n_logits=1)
    m, c = chunk.memory_s, chunk.compute_s
    assert chunk.unhidden == 1 / 512
    assert chunk.time_s == pytest.approx(max(m, c) + min(m, c / 512))
    assert chunk.time_s < 1.01 * max(m, c)
    four = pass_time(dense, _machine("cpu", 8.0), 4, 0)
    m, c = four.memory_s, four.compute_s
    assert four.unhidden == 0.25
    assert four.time_s == pytest.approx(max(m, c) + min(m, c / 4))


def test_a_cpu_multiplies_more_than_one_token_with_its_matrix_kernels(dense):
    """llama.cpp's CPU backend runs its mat-vec kernels for one token only (llamafile_sgemm:
    "only enable sgemm for prompt processing", n < 2 falls back to the dot products): from two
    tokens a pass counts the matrix kernels' times, and a CPU's time per pass moves smoothly
    with the tokens from there (no step where a GPU switches kernels at MATVEC_MAX_BATCH)."""
    from tokenwalk.timing.passes import MATVEC_MAX_BATCH, cpu_kernel_time, cpu_matvec_time

    assert pass_work(dense, 1, 0).cpu_kernel_time == pytest.approx(cpu_matvec_time(dense))
    for n in (2, 4, MATVEC_MAX_BATCH, 16):
        assert pass_work(dense, n, 0).cpu_kernel_time == pytest.approx(cpu_kernel_time(dense))
    cpu = _machine("cpu", 0.5)
    times = [pass_time(dense, cpu, n, 4096).time_s for n in range(2, 4 * MATVEC_MAX_BATCH)]
    pairs = zip(times[:-1], times[1:], strict=True)
    assert all(0.99 * a < b < 1.2 * a for a, b in pairs)


@pytest.mark.parametrize(
    ("name", "quant", "expected"),
    [
        ("tinyllama-1.1b", "Q8_0", ("Q8_0",)),  # every product and the head Q8_0
        ("gemma-3-270m", "Q8_0", ("Q8_0",)),
        ("smollm2-135m", "Q4_1", ("Q4_1", "Q8_0")),  # Q4_1 products, its tied Q8_0 head counts
        ("tinyllama-1.1b", "Q4_K_M", ("Q4_K", "Q6_K")),  # Q4_K, the head and some more Q6_K
    ],
)
def test_a_cpus_mat_vec_time_counts_the_head(name, quant, expected):
    """cpu_matvec_time: CPU_MATVEC_TIME of each weight's type, averaged over the weights a
    decoding token multiplies, the output head (or the tied embedding table) included: one
    type's time, or strictly between the two types' times of a mixed file."""
    from tokenwalk.timing.passes import CPU_MATVEC_TIME, cpu_kernel_time, cpu_matvec_time

    model = load_model(name, quant).model
    k = cpu_matvec_time(model)
    times = sorted(CPU_MATVEC_TIME[t] for t in expected)
    if len(times) == 2:
        assert times[0] < k < times[1]
    else:
        assert k == pytest.approx(times[0])
    assert CPU_MATVEC_TIME["Q4_K"] == 1.0
    if name == "smollm2-135m":  # the head moves the step's mean, not the prefill's
        assert cpu_kernel_time(model) == pytest.approx(3.06)


def test_mxfp4_weights_take_iq4_nl_kernel_times():
    """ggml-cpu multiplies MXFP4 with IQ4_NL's loop (the same 32-weight blocks of 4-bit
    indices into a table; only the block scale differs): a type not measured, timed as its
    twin. gpt-oss-20b's active weights are mostly MXFP4 experts (the rest Q8_0), so its mean
    lies between IQ4_NL's and Q8_0's time, not near Q4_K's 1 as an unknown type would."""
    from tokenwalk.timing.passes import (
        CPU_KERNEL_TIME,
        CPU_KERNEL_TWIN,
        CPU_MATVEC_TIME,
        cpu_kernel_time,
        cpu_matvec_time,
    )

    assert CPU_KERNEL_TWIN["MXFP4"] == "IQ4_NL" and "MXFP4" not in CPU_MATVEC_TIME
    model = load_model("gpt-oss-20b", "MXFP4").model
    assert CPU_MATVEC_TIME["IQ4_NL"] < cpu_matvec_time(model) < CPU_MATVEC_TIME["Q8_0"]
    assert CPU_KERNEL_TIME["IQ4_NL"] < cpu_kernel_time(model) < CPU_KERNEL_TIME["Q8_0"]


@pytest.mark.parametrize(
    ("name", "quant", "expected"),
    [
        ("tinyllama-1.1b", "Q8_0", 1.52),  # every product Q8_0
        ("smollm2-135m", "Q4_1", 3.06),  # every product Q4_1 (its embedding is Q8_0)
        ("llama-2-7b", "Q4_0", 1.16),
        ("tinyllama-1.1b", "Q4_K_M", (0.96, 0.97)),  # Q4_K, some Q6_K (0.72)
    ],
)
def test_a_cpus_kernel_time_is_the_mean_of_its_weight_types(name, quant, expected):
    """cpu_kernel_time: CPU_KERNEL_TIME of each weight product's type, averaged over the
    weights a token multiplies; the embedding and the output head do not count."""
    from tokenwalk.timing.passes import cpu_kernel_time

    k = cpu_kernel_time(load_model(name, quant).model)
    if isinstance(expected, tuple):
        assert expected[0] <= k <= expected[1]
    else:
        assert k == pytest.approx(expected)


def test_a_cpu_prefill_counts_its_weight_products_at_their_kernel_time():
    """A prefill pass on a CPU: attention + kernel time x the weight products' FLOPs, R scaled
    alike; a GPU counts the FLOPs as they are, and a CPU's decoding step counts its mat-vec
    kernels' time instead."""
    from tokenwalk.timing.passes import CPU_MATVEC_TIME, matrix_flops, matrix_row_flops

    model = load_model("tinyllama-1.1b", "Q8_0").model
    w = pass_work(model, 512, 0, n_logits=1)
    assert w.cpu_kernel_time == pytest.approx(1.52)
    assert matrix_flops(w, "cpu") == pytest.approx(w.attention_flops + 1.52 * w.matmul_flops)
    assert matrix_flops(w, "cuda") == w.flops
    assert matrix_row_flops(w, "cpu") > 1.5 * (w.cpu_row_flops / 1.52)
    step = pass_work(model, 1, 0)
    assert step.cpu_kernel_time == pytest.approx(CPU_MATVEC_TIME["Q8_0"])  # the mat-vec kernels
    assert matrix_flops(step, "cuda") == step.attention_flops
    cpu = prefill_report(model, _machine("cpu", 1.0), prompt=512)
    gpu = prefill_report(model, _machine("cuda", 1.0), prompt=512)
    assert cpu.chunks[0].kernel_time == pytest.approx(1.52) and gpu.chunks[0].kernel_time == 1.0
    assert cpu.ttft_s > 1.45 * gpu.ttft_s


# -- routed experts in tiles (the "tiles" candidate term) ------------------------------------


@pytest.mark.parametrize(
    ("rows", "tile", "share"),
    [
        (16, 128, 0.125),
        (32, 128, 0.25),
        (64, 128, 0.5),
        (128, 128, 1.0),
        (160, 128, 160 / 256),
        (16, 32, 0.5),
        (16, 0, 1.0),
    ],
)
def test_tile_utilisation_is_rows_over_padded_columns(rows, tile, share):
    """t / (J ceil(t / J)): an expert with 16 rows in a 128-column MMQ tile uses 12.5% of it."""
    from tokenwalk.timing.passes import tile_utilisation

    assert tile_utilisation(rows, tile) == pytest.approx(share)


@pytest.mark.parametrize(
    ("backend", "n", "rows", "tile"),
    [
        ("cuda", 512, 16, 128),  # J from all tokens of the micro-batch, not the expert's 16
        ("cuda", 2048, 64, 128),
        ("cuda", 200, 6, 104),  # two tiles cover 200 tokens: J = 8 ceil(200 / 16)
        ("cuda", 64, 2, 64),
        ("rocm", 512, 32, 128),
        ("metal", 512, 16, 32),
        ("vulkan", 512, 16, 32),  # s / m / l picked from the tokens per expert
        ("vulkan", 512, 64, 64),
        ("vulkan", 512, 128, 128),
        ("cpu", 512, 16, 0),
        ("sycl", 512, 16, 0),
    ],
)
def test_expert_tile_width_per_backend(backend, n, rows, tile):
    from tokenwalk.timing.passes import expert_tile_width

    assert expert_tile_width(backend, n, rows) == tile


def test_expected_tiles_matches_the_binomial_sum():
    """E[ceil(n_e / J)] with n_e ~ Binomial(n, k/E), summed directly over the distribution."""
    from math import ceil, comb

    from tokenwalk.timing.passes import expected_tiles

    for n, p, tile in ((40, 0.3, 8), (100, 0.05, 4), (64, 0.5, 16)):
        exact = sum(comb(n, m) * p**m * (1 - p) ** (n - m) * ceil(m / tile) for m in range(n + 1))
        assert expected_tiles(n, p, tile) == pytest.approx(exact, rel=1e-9)
    # 512 tokens, 8 of 256 experts: every expert is woken and fits one 128-column tile
    assert expected_tiles(512, 8 / 256, 128) == pytest.approx(1.0, abs=1e-6)
    # Mixtral (2 of 8): 128 rows on average, over 128 about half the time, so ~1.5 tiles
    assert 1.4 < expected_tiles(512, 2 / 8, 128) < 1.6


def test_expert_tile_flops_of_the_seed_moe(moe, dense):
    """Qwen3.6 35B-A3B, 512 tokens on CUDA: 16 rows in 128-column tiles, so the tiles compute
    8 times the experts' useful FLOPs (F_pad = 7 x F_x); a CPU pads nothing, nor a dense model."""
    from tokenwalk.timing.passes import expert_padded_rows, expert_tile_flops

    w = pass_work(moe, 512, 0, n_logits=0)
    assert expert_padded_rows(512, 256, 8, "cuda") == pytest.approx(128.0, rel=1e-6)
    assert expert_tile_flops(moe, 512, "cuda") == pytest.approx(7.0 * w.expert_flops, rel=1e-4)
    assert expert_tile_flops(moe, 512, "metal") == pytest.approx(1.0 * w.expert_flops, rel=1e-3)
    assert expert_tile_flops(moe, 512, "cpu") == 0.0
    assert expert_tile_flops(moe, 8, "cuda") == 0.0  # mat-vec kernels: no tiles
    assert expert_tile_flops(dense, 512, "cuda") == 0.0


def test_the_shipped_seed_prefill_has_no_tile_term(moe, laptop):
    """The tile term is a cross-validated candidate, not part of a pass's time: the seed's
    prefill is what the shipped fit gives (about 70 s for 6,500 tokens)."""
    r = prefill_report(moe, laptop, prompt=6500)
    c = r.chunks[0]
    assert c.time_s == pytest.approx(max(c.memory_s, c.compute_s) + c.overhead_s)
    assert 50 <= r.ttft_s <= 95


def test_a_recurrent_layer_pays_the_fixed_cost_twice_where_the_graph_was_never_measured(laptop):
    """Without a graph-node count: Qwen3.6-35B-A3B's 40 layers, 30 of them Gated DeltaNet,
    count 70; a short-conv layer (LFM2) counts once."""
    from dataclasses import replace

    from tokenwalk.timing.passes import RECURRENT_LAYER_OVERHEAD, pass_time, pass_work

    hybrid = replace(load_model("qwen3.6-35b-a3b", "Q4_K_M").model, layer_nodes=None)
    w = pass_work(hybrid, 1, 1024)
    assert (w.n_layers, w.recurrent_layers) == (40, 30)
    assert w.overhead_layers == 40 + (RECURRENT_LAYER_OVERHEAD - 1) * 30 == 70
    step = pass_time(hybrid, laptop, 1, 1024)
    assert step.overhead_s == pytest.approx(70 * laptop.fit.overhead_per_layer_s)
    dense = replace(load_model("llama-3.1-8b", "Q4_K_M").model, layer_nodes=None)
    assert pass_work(dense, 1, 1024).overhead_layers == 32
    conv = replace(load_model("lfm2-8b-a1b", "Q4_K_M").model, layer_nodes=None)
    w = pass_work(conv, 1, 1024)
    assert w.recurrent_layers == 0 and w.overhead_layers == w.n_layers


def test_the_fixed_cost_counts_llama_cpps_graph_nodes(laptop):
    """A layer counts its model's llama.cpp graph nodes per layer over a llama layer's
    (data/graph_nodes.yaml, measured with llama-fit-params): Qwen3.6-35B-A3B's 3,787 nodes for
    40 layers, Llama 3.1 8B's 998 for 32, Gemma 4 26B-A4B's 2,644 for 30."""
    from tokenwalk.timing.passes import LLAMA_LAYER_NODES, pass_time, pass_work

    assert LLAMA_LAYER_NODES == pytest.approx(31.1875)
    for name, nodes in (
        ("qwen3.6-35b-a3b", 3787),
        ("llama-3.1-8b", 998),
        ("gemma-4-26b-a4b", 2644),
    ):
        model = load_model(name, "Q4_K_M").model
        w = pass_work(model, 1, 1024)
        assert w.overhead_layers == pytest.approx(nodes / LLAMA_LAYER_NODES), name
    hybrid = load_model("qwen3.6-35b-a3b", "Q4_K_M").model
    step = pass_time(hybrid, laptop, 1, 1024)
    assert step.overhead_s == pytest.approx(
        3787 / LLAMA_LAYER_NODES * laptop.fit.overhead_per_layer_s
    )


def test_a_model_outside_the_catalogue_borrows_its_architectures_nodes():
    """A user's GGUF (its name not a catalogue slug) takes the nodes per layer of the
    catalogue's models of its architecture and FFN kind; an architecture never measured,
    none."""
    from tokenwalk.catalog import graph_nodes_per_layer, load_graph_nodes

    table = load_graph_nodes()
    assert table["llama-2-7b"].nodes == 998 and table["gemma-4-26b-a4b"].moe
    qwen3 = [g.nodes / g.layers for g in table.values() if g.arch == "qwen3" and not g.moe]
    assert graph_nodes_per_layer("my-finetune", "qwen3", False) == pytest.approx(
        sum(qwen3) / len(qwen3)
    )
    moe = graph_nodes_per_layer("my-gemma", "gemma4", True)
    dense = graph_nodes_per_layer("my-gemma", "gemma4", False)
    assert moe == pytest.approx(2644 / 30) and dense == pytest.approx(2459 / 60)
    assert graph_nodes_per_layer("x", "an-architecture-never-seen", False) is None
    # a catalogue name on a model of another architecture is not that model
    assert graph_nodes_per_layer("llama-2-7b", "qwen3", False) == pytest.approx(
        sum(qwen3) / len(qwen3)
    )
    assert graph_nodes_per_layer("llama-2-7b", "llama", False) == pytest.approx(998 / 32)
    # a GGUF header (DeepSeek R1 Distill Qwen 7B, architecture qwen2) carries them too
    from pathlib import Path

    fixture = (
        Path(__file__).parents[1] / "fixtures" / "deepseek-r1-distill-qwen-7b-q4_k_m.header.gguf"
    )
    gguf = load_model(str(fixture)).model
    assert gguf.layer_nodes == pytest.approx(graph_nodes_per_layer("?", "qwen2", False))
    assert pass_work(gguf, 1, 0).layer_weight == pytest.approx(gguf.layer_nodes / (998 / 32))


def test_the_graph_nodes_are_the_recorded_measurement():
    """data/graph_nodes.yaml holds the node counts tests/data/graph-nodes.md records from
    llama-fit-params, and each entry's layers are the catalogue model's."""
    import re
    from pathlib import Path

    from tokenwalk.catalog import load_graph_nodes

    page = (Path(__file__).parents[1] / "data" / "graph-nodes.md").read_text(encoding="utf-8")
    recorded = {
        m: (int(layers), int(nodes.replace(",", "")))
        for m, layers, nodes in re.findall(
            r"^\| ([a-z0-9.-]+) \| [a-z0-9-]+ \| (\d+) \| \d+ \| \w+ \| ([\d,]+) \|", page, re.M
        )
    }
    table = load_graph_nodes()
    assert len(recorded) >= 30 and recorded.keys() <= table.keys()
    for slug, (layers, nodes) in recorded.items():
        assert (table[slug].layers, table[slug].nodes) == (layers, nodes), slug
    for slug in ("qwen3.6-35b-a3b", "gemma-4-26b-a4b", "deepseek-v3", "granite-4.0-h-small"):
        assert table[slug].layers == len(load_model(slug, "Q4_K_M").model.decoding_layers), slug


def test_the_head_is_its_own_tensor_or_the_tied_embedding():
    """head_tensors: Llama 3.1 8B's output.weight; Gemma 3's tied embedding table (no head
    of its own); head_params counts them."""
    from tokenwalk.timing.passes import head_params, head_tensors

    llama = load_model("llama-3.1-8b", "Q4_K_M").model
    (head,) = head_tensors(llama)
    assert head.info.name == "output.weight" and head_params(llama) == 128256 * 4096
    gemma = load_model("gemma-3-270m", "Q8_0").model
    (tied,) = head_tensors(gemma)
    assert tied.info.name == "token_embd.weight" and head_params(gemma) == 262144 * 640


def test_a_cpu_runs_one_token_on_mat_vec_kernels_and_more_on_matrix_kernels(dense):
    # llamafile_sgemm declines n < 2: one token (all streams) is a mat-vec pass
    assert cpu_matvec_kernels(1) and not cpu_matvec_kernels(2)
    assert pass_work(dense, 1, 512).cpu_kernel_time == pytest.approx(cpu_matvec_time(dense))
    assert pass_work(dense, 2, 512).cpu_kernel_time == pytest.approx(cpu_kernel_time(dense))


# -- a CPU's one-row flash attention ---------------------------------------------------------

HEADERS = Path(__file__).parents[1] / "data" / "cpu-ground-truth" / "headers"


@pytest.fixture(scope="module")
def smollm2():
    """SmolLM2-135M: heads of 64 (9 query heads, 30 layers)."""
    return load_model(str(HEADERS / "SmolLM2-135M-Instruct.Q4_1.header.gguf")).model


def _cpu(simd: str | None) -> Machine:
    return _machine("cpu", 0.5).model_copy(update={"cpu_simd": simd})


def test_one_row_attention_is_a_decoding_steps_attention_by_head_size(smollm2):
    """ggml-cpu takes a query row at a time below GGML_FA_TILE_Q = 64 queries a sequence, with
    an f16 cache: a decoding step's attention is all of it; a 64-token pass or a q8_0 cache has
    none."""
    ((dk, dv, flops),) = one_row_attention(smollm2, 1, 512)
    assert (dk, dv) == (64, 64)
    assert flops == pytest.approx(attention_flops(smollm2, 1, 512))
    assert flops == pytest.approx(2 * (512 + 1) * 9 * 30 * 128)
    assert sum(f for *_, f in one_row_attention(smollm2, 63, 0)) > 0
    assert one_row_attention(smollm2, FA_TILE_Q, 512) == ()
    assert one_row_attention(smollm2, 1, 512, "q8_0") == ()
    w = pass_work(smollm2, 1, 512, streams=4)
    assert w.one_row_attention == ((64, 64, pytest.approx(4 * flops)),)


def test_the_element_at_a_time_rest_follows_the_builds_vector_steps(smollm2):
    """AVX512-FP16 multiplies-and-adds f16 in steps of 128: a head of 64 sums its values one
    element at a time (64 of the 128 elements a cell and head touches); AVX-512 and AVX2
    steps divide 64, and heads of 256 (Gemma 3 270M) divide every step."""
    rows = one_row_attention(smollm2, 1, 512)
    flops = rows[0][2]
    assert fa_scalar_flops(rows, "avx512_fp16") == pytest.approx(FA_SCALAR_FLOPS * flops / 4)
    for simd in ("avx512", "avx2", "neon", None):
        assert fa_scalar_flops(rows, simd) == 0.0
    assert fa_scalar_flops(((256, 256, 1e9),), "avx512_fp16") == 0.0
    assert fa_scalar_flops(((80, 80, 1e9),), "avx2") == pytest.approx(
        FA_SCALAR_FLOPS * 1e9 * 32 / 320
    )


def test_a_cpu_built_for_avx512_fp16_pays_for_heads_of_64_at_depth(smollm2):
    """The rest adds to a CPU's decoding step as compute, more with depth; a GPU and an
    unknown build pay nothing, and a prefill chunk (the tiled kernel) nothing."""
    for ctx in (0, 512, 2048):
        plain = pass_time(smollm2, _cpu(None), 1, ctx)
        fp16 = pass_time(smollm2, _cpu("avx512_fp16"), 1, ctx)
        w = plain.work
        extra = fa_scalar_flops(w.one_row_attention, "avx512_fp16") / 10e12
        assert fp16.time_s - plain.time_s == pytest.approx(extra)
    assert pass_time(smollm2, _cpu("avx512"), 1, 512).time_s == pytest.approx(
        pass_time(smollm2, _cpu(None), 1, 512).time_s
    )
    gpu = _machine("cuda", 0.5)
    assert pass_time(smollm2, gpu.model_copy(update={"cpu_simd": "avx512_fp16"}), 1, 512) == (
        pass_time(smollm2, gpu, 1, 512)
    )
    assert pass_time(smollm2, _cpu("avx512_fp16"), 512, 512, n_logits=1).time_s == (
        pytest.approx(pass_time(smollm2, _cpu(None), 512, 512, n_logits=1).time_s)
    )


def test_every_build_the_catalogue_names_has_vector_steps():
    from typing import get_args

    from tokenwalk.catalog import CpuSimd

    assert set(F16_VECTOR_STEPS) == set(get_args(CpuSimd))
