"""`costs.serve`: a step of B sequences through the pass model, the curve against B, llama.cpp's
micro-batches, and the seeded server simulation."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenwalk.costs.serve import (
    PoolPricer,
    Seq,
    batch_work,
    batched_bench,
    decode_batch,
    extra_sequence_attention_flops,
    first_users,
    largest_users,
    prompt_batches,
    serve_report,
    simulate,
    user_depths,
    users_step,
)
from tokenwalk.errors import InputError
from tokenwalk.machine import resolve_machine
from tokenwalk.model.resolve import load_model
from tokenwalk.render.fmt import rate, seconds
from tokenwalk.timing.passes import (
    attention_flops,
    decode_report,
    pass_time,
    pass_work,
    prefill_report,
)

MODELS = ["qwen3.6-35b-a3b", "gemma-3-4b", "llama-3.1-8b", "lfm2-1.2b", "gpt-oss-20b"]
MACHINES = ["radeon-860m", "rtx-4090", "xeon-kvm-2c-2t", "m4-max", "h200"]


@pytest.fixture(scope="module")
def models():
    return {slug: load_model(slug).model for slug in MODELS}


@pytest.fixture(scope="module")
def machines():
    return {slug: resolve_machine(slug) for slug in MACHINES}


def _report(model, machine, users=4, prompt=2048, output=300, **kw):
    return serve_report(
        model,
        PoolPricer(model, machine),
        machine=machine.slug,
        machine_name=machine.name,
        backend=machine.backend,
        users=users,
        slots=kw.pop("slots", users),
        ctx_per_user=prompt + output,
        prompt=prompt,
        output=output,
        **kw,
    )


def test_one_sequence_is_the_pass_model(qwen2, machine):
    for n, ctx in ((1, 0), (1, 5000), (512, 1024), (7, 300)):
        a = batch_work(qwen2, [Seq(ctx, n)])
        b = pass_work(qwen2, n, ctx)
        for key in ("weight_bytes", "kv_read_bytes", "matmul_flops", "attention_flops"):
            assert getattr(a, key) == pytest.approx(getattr(b, key), rel=1e-12)
        assert a.row_flops == pytest.approx(b.row_flops, rel=1e-12)


def test_sequences_at_one_depth_are_streams(qwen2, machine):
    a = batch_work(qwen2, [Seq(3000, 1)] * 16)
    b = pass_work(qwen2, 1, 3000, streams=16)
    assert a.bytes == pytest.approx(b.bytes, rel=1e-12)
    assert a.flops == pytest.approx(b.flops, rel=1e-12)
    assert a.row_flops == pytest.approx(b.row_flops, rel=1e-12)


def test_each_sequence_reads_its_own_depth(qwen2):
    spread = batch_work(qwen2, decode_batch([1000, 3000]))
    one = pass_work(qwen2, 1, 1000)
    other = pass_work(qwen2, 1, 3000)
    assert spread.kv_read_bytes == pytest.approx(one.kv_read_bytes + other.kv_read_bytes)
    # the weights are read once for both
    assert spread.weight_bytes == pytest.approx(one.weight_bytes)


def test_unified_cache_attends_to_every_cell(qwen2):
    own = batch_work(qwen2, decode_batch([1000, 1000]))
    shared = batch_work(qwen2, decode_batch([1000, 1000]), cells_in_use=2002)
    assert shared.attention_flops == pytest.approx(2 * own.attention_flops, rel=0.01)


def test_extra_sequences_attention_is_one_query_each_beyond_the_first(qwen2):
    assert extra_sequence_attention_flops(qwen2, decode_batch([3000])) == 0.0
    four = extra_sequence_attention_flops(qwen2, decode_batch([3000] * 4))
    assert four == pytest.approx(3 * attention_flops(qwen2, 1, 3000), rel=1e-12)
    spread = extra_sequence_attention_flops(qwen2, decode_batch([1000, 3000]))
    mean = (attention_flops(qwen2, 1, 1000) + attention_flops(qwen2, 1, 3000)) / 2
    assert spread == pytest.approx(mean, rel=1e-12)
    # a prompt's chunk counts one query of each sequence beyond the first
    chunk = extra_sequence_attention_flops(qwen2, [Seq(0, 64)] * 2)
    assert chunk == pytest.approx(attention_flops(qwen2, 64, 0) / 64, rel=1e-12)


def test_a_cpu_pays_each_extra_sequences_attention(models, machines):
    """On a CPU each sequence beyond the first pays its one-query attention at 34.6 ps a FLOP
    on top of the pass model's step; a GPU's step has no such term (its per-head cost)."""
    model = models["llama-3.1-8b"]
    seqs = decode_batch([2000] * 8)
    flops = extra_sequence_attention_flops(model, seqs)
    cpu = machines["xeon-kvm-2c-2t"]
    shipped = PoolPricer(model, cpu).price(seqs)
    bare = PoolPricer(model, cpu, seq_attention_s_per_flop=0.0).price(seqs)
    assert shipped.time_s - bare.time_s == pytest.approx(34.6e-12 * flops, rel=1e-9)
    assert shipped.compute_s - bare.compute_s == pytest.approx(34.6e-12 * flops, rel=1e-9)
    gpu = machines["rtx-4090"]
    assert PoolPricer(model, gpu).price(seqs) == PoolPricer(
        model, gpu, seq_attention_s_per_flop=0.0
    ).price(seqs)


@pytest.mark.parametrize("machine_slug", MACHINES)
@pytest.mark.parametrize("slug", ["qwen3.6-35b-a3b", "llama-3.1-8b"])
def test_one_user_is_decode_and_prefill_to_the_digit(models, machines, slug, machine_slug):
    model, m = models[slug], machines[machine_slug]
    r = _report(model, m, users=1, prompt=2048, output=300)
    d = decode_report(model, m, ctx=2048 + 150)
    p = prefill_report(model, m, prompt=2048)
    assert r.user_tok_s == pytest.approx(d.tok_s, rel=1e-12)
    assert r.aggregate_tok_s == pytest.approx(d.aggregate_tok_s, rel=1e-12)
    assert r.ttft_alone_s == pytest.approx(p.ttft_s, rel=1e-12)
    assert r.ttft_busy_s == r.ttft_alone_s
    assert rate(r.user_tok_s) == rate(d.tok_s)
    assert seconds(r.ttft_alone_s) == seconds(p.ttft_s)
    assert r.by_users[0].users == 1 and r.by_users[0].step_s == pytest.approx(r.step_s)


def test_a_fp16_builds_one_row_attention_counts_per_sequence_and_keeps_one_user_exact(
    models, machines
):
    """gpt-oss-20b's heads of 64 on a CPU built for AVX512-FP16: each sequence's one-row
    attention adds its element-at-a-time rest (`passes.fa_scalar_flops`), so B sequences at one
    depth are B streams, a unified cache's 64-token micro-batch takes the tiled kernel, and one
    user is still `decode` to the digit."""
    model = models["gpt-oss-20b"]
    m = machines["xeon-kvm-2c-2t"].model_copy(update={"cpu_simd": "avx512_fp16"})
    a = batch_work(model, decode_batch([3000] * 8))
    assert a.one_row_attention == pass_work(model, 1, 3000, streams=8).one_row_attention
    assert {(dk, dv) for dk, dv, _ in a.one_row_attention} == {(64, 64)}
    assert batch_work(model, decode_batch([3000] * 64), cells_in_use=4000).one_row_attention == ()
    r = _report(model, m, users=1, prompt=2048, output=300)
    d = decode_report(model, m, ctx=2048 + 150)
    assert d.fa_scalar_flops > 0
    assert r.user_tok_s == pytest.approx(d.tok_s, rel=1e-12)
    assert d.tok_s < decode_report(model, machines["xeon-kvm-2c-2t"], ctx=2048 + 150).tok_s


def test_bench_row_of_one_sequence_is_decode_and_prefill(models, machines):
    model, m = models["llama-3.1-8b"], machines["rtx-4090"]
    row = batched_bench(PoolPricer(model, m), 512, 4, 1)
    assert row.s_pp_tok_s == pytest.approx(prefill_report(model, m, prompt=512).tok_s, rel=1e-12)
    steps = [pass_time(model, m, 1, 512 + i).time_s for i in range(4)]
    assert row.s_tg_tok_s == pytest.approx(4 / sum(steps), rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(MODELS),
    st.sampled_from(MACHINES),
    st.integers(1, 255),
    st.integers(1, 32_000),
    st.integers(1, 4000),
)
def test_more_users_never_write_faster_each(models, machines, slug, machine_slug, b, p, o):
    """Per-user speed never rises with B; aggregate speed never falls until the step at the
    larger B is compute-bound (hypothesis, over catalogue models and machines)."""
    pricer = PoolPricer(models[slug], machines[machine_slug])
    a = users_step(pricer, b, p, o)
    z = users_step(pricer, b + 1, p, o)
    assert z.time_s >= a.time_s * (1 - 1e-9)
    if (b + 1) / z.time_s < b / a.time_s * (1 - 1e-9):
        assert z.compute_bound


def test_depths_spread_over_the_writing():
    assert user_depths(1, 1000, 300) == [1150]
    assert user_depths(4, 0, 8) == [1, 3, 5, 7]
    d = user_depths(16, 512, 256)
    assert min(d) >= 512 and max(d) < 512 + 256
    assert sum(d) / len(d) == pytest.approx(512 + 128, abs=1)


def test_prompts_split_as_llama_cpp_splits_them():
    # batched-bench, a cache per sequence (split_equal): 16 prompts of 128 tokens in a call of
    # 2,048, 32 tokens of each per micro-batch of 512
    micro = prompt_batches(128, 0, 512, 32, 2048)
    assert len(micro) == 8 and all(len(m) == 16 and m[0].n == 32 for m in micro)
    assert [m[0].ctx for m in micro[:4]] == [0, 32, 64, 96]
    # four prompts of 512 per call: 128 tokens of each
    micro = prompt_batches(512, 0, 512, 32, 2048)
    assert len(micro) == 32 and all(len(m) == 4 and m[0].n == 128 for m in micro)
    # one prompt: chunks of the micro-batch, as prefill
    assert [(m[0].ctx, m[0].n) for m in prompt_batches(1300, 100)] == [
        (100, 512),
        (612, 512),
        (1124, 176),
    ]
    assert sum(len(m) * m[0].n for m in prompt_batches(5000, 0, 512, 3, 2048)) == 15000


def test_bisections():
    assert largest_users(lambda b: b <= 37) == 37
    assert largest_users(lambda b: False) == 0
    assert largest_users(lambda b: True, 256) == 256
    assert first_users(lambda b: b >= 9) == 9
    assert first_users(lambda b: True) == 1
    assert first_users(lambda b: False) is None
    assert first_users(lambda b: b >= 200, 256) == 200


def test_a_prompt_read_among_writers_slows_them(models, machines):
    r = _report(models["llama-3.1-8b"], machines["rtx-4090"], users=8)
    assert r.ttft_busy_s > r.ttft_alone_s
    assert r.user_tok_s_while_reading < r.user_tok_s


def test_seed_laptop_users_at_reading_speed(models, machines):
    """The seed's laptop answers "how many users at 5 tok/s each" for Qwen3.6 35B-A3B."""
    r = _report(models["qwen3.6-35b-a3b"], machines["radeon-860m"], users=1)
    assert 1 <= r.users_at_min_tok_s < 256
    speeds = {p.users: p.user_tok_s for p in r.by_users}
    assert speeds[1] > 5
    at = _report(models["qwen3.6-35b-a3b"], machines["radeon-860m"], users=r.users_at_min_tok_s)
    assert at.user_tok_s >= 5
    beyond = _report(
        models["qwen3.6-35b-a3b"], machines["radeon-860m"], users=r.users_at_min_tok_s + 1
    )
    assert beyond.user_tok_s < 5
    slower = _report(models["qwen3.6-35b-a3b"], machines["radeon-860m"], users=1, min_tok_s=8)
    assert slower.users_at_min_tok_s <= r.users_at_min_tok_s


def test_simulation_is_seeded_and_load_makes_it_slower(models, machines):
    pricer = PoolPricer(models["llama-3.1-8b"], machines["rtx-4090"])
    kw = dict(slots=4, prompt=1024, output=128, requests=60)
    a = simulate(pricer, rate_rps=0.5, seed=3, **kw)
    assert a == simulate(pricer, rate_rps=0.5, seed=3, **kw)
    assert a != simulate(pricer, rate_rps=0.5, seed=4, **kw)
    busy = simulate(pricer, rate_rps=20, seed=3, **kw)
    assert busy.ttft_p95_s > a.ttft_p95_s and busy.queue_max > a.queue_max
    assert busy.overloaded and not a.overloaded
    assert 0 < a.user_tok_s_p95 <= a.user_tok_s_median
    assert a.ttft_median_s <= a.ttft_p95_s
    assert a.served_rps == pytest.approx(0.5, rel=0.3)


def test_refusals(models, machines):
    model, m = models["llama-3.1-8b"], machines["rtx-4090"]
    with pytest.raises(InputError, match="slot"):
        _report(model, m, users=8, slots=4)
    with pytest.raises(InputError, match="--users"):
        _report(model, m, users=0)
    with pytest.raises(InputError, match="--min-tok-s"):
        _report(model, m, min_tok_s=0)
    with pytest.raises(InputError, match="--rate"):
        simulate(PoolPricer(model, m), rate_rps=0, slots=1, prompt=10, output=10)


def test_extra_sequences_attention_tips_a_cpu_step_to_compute(models, machines):
    """Llama 3.1 8B on a 2-core CPU at 14k tokens: two users' attention outweighs the weights'
    read, so the step is compute-bound (aggregate speed may fall from there)."""
    pricer = PoolPricer(models["llama-3.1-8b"], machines["xeon-kvm-2c-2t"])
    one, two = users_step(pricer, 1, 14052, 1), users_step(pricer, 2, 14052, 1)
    assert two.compute_s > two.memory_s and two.compute_bound
    assert 2 / two.time_s < 1 / one.time_s * 2
