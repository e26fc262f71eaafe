"""The workload checks every command shares: what is refused, what is only warned about."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenwalk.costs.kv import kv_bytes, kv_report
from tokenwalk.costs.workload import (
    MAX_PARALLEL,
    check_workload,
    context_warnings,
    tokens_per_stream,
)
from tokenwalk.errors import InputError
from tokenwalk.model.resolve import load_model


@pytest.fixture(scope="module")
def llama3():
    return load_model("llama-3-8b").model  # trained on 8,192 tokens


@pytest.mark.parametrize(
    "kw, needle",
    [
        ({"parallel": 9000}, "256 parallel sequences"),
        ({"parallel": 0}, "--parallel must be at least 1"),
        ({"ctx": 0}, "--ctx must be at least 1"),
        ({"ctx": 100, "parallel": 200}, "less than one token"),
        ({"ctx": 1 << 31}, "beyond what any runtime runs"),
        ({"ubatch": 0}, "--ubatch"),
        ({"prompt": 10, "cached": 10}, "must be below --prompt"),
        ({"output": -1}, "--output"),
    ],
)
def test_impossible_workloads_are_refused(kw, needle):
    with pytest.raises(InputError, match=needle):
        check_workload(**kw)


def test_an_empty_context_is_a_decode_step_at_the_start():
    check_workload(ctx=0, parallel=4, min_ctx=0)


@given(st.integers(1, 1 << 30), st.integers(1, MAX_PARALLEL))
def test_what_passes_the_checks_has_kv_in_every_stream(ctx, parallel):
    try:
        check_workload(ctx=ctx, parallel=parallel)
    except InputError:
        assert ctx < parallel
    else:
        assert tokens_per_stream(ctx, parallel) >= 1


def test_kv_never_reports_zero_bytes_for_a_context_it_accepts(llama3):
    # `kv llama-3-8b --parallel 9000` reported 0 B
    with pytest.raises(InputError):
        kv_report(llama3, None, parallel=9000)
    assert kv_bytes(llama3, 8192, parallel=MAX_PARALLEL) > 0


def test_trained_maximum_is_per_stream(llama3):
    assert context_warnings([llama3], 8192) == []
    (w,) = context_warnings([llama3], 8193)
    assert "beyond its trained maximum of 8,192" in w
    # 16,384 tokens over two streams is 8,192 each: what llama.cpp checks (n_ctx_seq)
    assert kv_report(llama3, 16384, parallel=2).warnings == []
    assert kv_report(llama3, 16384, parallel=1).warnings


@pytest.mark.parametrize("slug", ["phi-2", "qwen3-0.6b"])
def test_every_command_assumes_the_same_context_when_none_is_given(slug, capsys):
    """kv, budget on one pool and on a split system, and `models --fits` take one default:
    16,384 tokens, or the shortest trained context once per stream when that is less."""
    import json

    from tokenwalk.cli import main
    from tokenwalk.costs.workload import DEFAULT_CTX, default_context, shortest_trained

    short = load_model("phi-2", "Q4_K_M").model  # trained on 2,048 tokens
    long = load_model("qwen3-0.6b", "Q4_K_M").model
    assert short.spec.n_ctx_train < DEFAULT_CTX < long.spec.n_ctx_train
    assert shortest_trained([short, long]) == 2048 and shortest_trained([]) == 0
    assert default_context([]) == default_context([long]) == DEFAULT_CTX
    assert default_context([short, long]) == short.spec.n_ctx_train
    assert default_context([short], parallel=4) == 4 * short.spec.n_ctx_train
    want = default_context([load_model(slug, "Q4_K_M").model])

    def ctx_of(*argv: str) -> dict:
        code = main([*argv, "--json"])
        out = capsys.readouterr().out
        assert code == 0, argv
        return json.loads(out)

    assert ctx_of("kv", slug)["ctx"] == want
    assert ctx_of("budget", slug, "-m", "rtx-4090")["ctx"] == want
    assert ctx_of("budget", slug, "-m", "rtx-4090", "--gpu-layers", "4")["ctx"] == want
    fits = ctx_of("models", "--fits", "rtx-4090")
    assert next(r for r in fits["models"] if r["slug"] == slug)["ctx"] == want


@pytest.mark.parametrize(
    ("room", "limit", "want"),
    [(100, 131072, 0), (256, 131072, 256), (5000, 131072, 4864), (10**9, 40960, 40960)],
)
def test_largest_context_is_the_last_multiple_of_256_that_fits(room, limit, want):
    from tokenwalk.costs.workload import largest_context

    calls: list[int] = []

    def fits(c: int) -> bool:
        calls.append(c)
        return c <= room

    assert largest_context(fits, limit) == want
    assert len(calls) <= 2 + limit.bit_length()  # a bisection, not a scan
