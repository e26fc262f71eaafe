"""`tokenwalk serve` against published runs of several sequences at once
(benchmarks/serve_published.py): vLLM's fitted constants, the median error on the runs of
current builds, and the H200's llama-batched-bench runs as a record of the remaining error."""

from __future__ import annotations

import importlib.util
import statistics
import sys
from pathlib import Path

import pytest

from tokenwalk.costs.vllm import VLLM_ENGINE_FACTOR, VLLM_SEQUENCE_HEAD_S

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "serve_published", ROOT / "benchmarks" / "serve_published.py"
)
published = importlib.util.module_from_spec(_spec)
sys.modules["serve_published"] = published  # its dataclasses look their module up
_spec.loader.exec_module(published)


def test_vllm_constants_are_the_fit():
    factor, per_head = published.fit_vllm()
    assert VLLM_ENGINE_FACTOR == pytest.approx(factor, abs=5e-4)
    assert VLLM_SEQUENCE_HEAD_S == pytest.approx(per_head, rel=0.005)


def test_current_builds_within_20_percent_median():
    rows = published.llama_cpp_rows() + published.vllm_rows()
    assert len(rows) == 11
    errors = [abs(r.ratio - 1) for r in rows]
    assert statistics.median(errors) <= 0.20
    # the runs no fit saw (Mistral-7B under vLLM) too
    held_out = [abs(r.ratio - 1) for r in rows if "Mistral" in r.what]
    assert statistics.median(held_out) <= 0.20


def test_aggregate_grows_with_users_as_measured():
    """The H200's Llama 3.1 8B runs: measured and predicted aggregate decode both grow with B;
    the one-sequence speed is the machine's fit (an H200 has no runs of its own in the fit)."""
    rows = published.h200_rows()
    for pp in ("pp128", "pp512"):
        mine = [r for r in rows if pp in r.what]
        assert [r.users for r in mine] == [1, 2, 4, 8, 16, 32]
        assert all(
            b.predicted_tok_s > a.predicted_tok_s for a, b in zip(mine, mine[1:], strict=False)
        )
        assert all(
            b.measured_tok_s > a.measured_tok_s for a, b in zip(mine, mine[1:], strict=False)
        )
        # from 1 to 32 sequences: measured 5.4x (pp128) and 8.2x (pp512)
        grow = mine[-1].predicted_tok_s / mine[0].predicted_tok_s
        assert 3 < grow < 9
