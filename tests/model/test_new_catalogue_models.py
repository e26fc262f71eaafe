"""The models of the second benchmark collection against the numbers their rows publish.

Each benchmark row carries llama-bench's parameter count (`params_b`) and, often, the file size
(`model_file_gb`) of the GGUF it ran. The catalogue config of the model must reproduce both:
the count to the decimals printed, the synthesised file within the spread of llama-quantize
choices tokenwalk does not copy exactly. Gemma 4 and LFM2 MoE are also checked tensor by tensor
against llama.cpp's loader, and the Gemma 4 26B-A4B config against the hyperparameters of the
real GGUF header in tests/fixtures.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import pytest

from tokenwalk.catalog import find_model, load_benchmarks
from tokenwalk.errors import SpecError
from tokenwalk.gguf.reader import read_header
from tokenwalk.model.hf import spec_from_config
from tokenwalk.model.quant import PRESETS
from tokenwalk.model.resolve import model_from_config
from tokenwalk.model.spec import from_gguf_metadata
from tokenwalk.model.synth import synthesize_tensors

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

# models whose rows carry the count llama-bench printed for the benchmarked file
PRINTED = (
    "qwen3-14b",
    "qwen3-4b",
    "mistral-small-3.2-24b",
    "mixtral-8x22b",
    "deepseek-v2-lite",
    "gemma-4-26b-a4b",
    "gemma-4-31b",
    "lfm2-8b-a1b",
)
# rows that give a nominal size ("27B", "9B") or Ollama's rounding (32.8)
NOMINAL = ("qwen3.5-27b", "qwen3.5-9b", "qwen2.5-coder-32b")
FILE_TOLERANCE = 0.025  # gemma-4-31b's Q4_K_M comes out 1.9% large


def _rows(slug: str) -> list:
    rows = [b for b in load_benchmarks() if b.model == slug]
    assert rows, f"no benchmark row names {slug}"
    return rows


def _decimals(x: float) -> int:
    """Decimals a published figure was given to (140.6 -> 1, 25.23 -> 2)."""
    return len(repr(x).partition(".")[2].rstrip("0"))


def _params(slug: str) -> int:
    entry = find_model(slug)
    return model_from_config(entry.config, slug, "Q4_K_M").params


@pytest.mark.parametrize("slug", PRINTED)
def test_parameter_count_is_the_printed_one(slug: str) -> None:
    counted = _params(slug) / 1e9
    for b in _rows(slug):
        assert b.params_b is not None
        assert round(counted, _decimals(b.params_b)) == b.params_b, (slug, counted, b.params_b)
    params_b = find_model(slug).params_b
    assert params_b is not None and round(counted, _decimals(params_b)) == params_b


@pytest.mark.parametrize("slug", NOMINAL)
def test_parameter_count_is_near_the_nominal_one(slug: str) -> None:
    counted = _params(slug) / 1e9
    for b in _rows(slug):
        assert b.params_b is not None
        assert abs(counted / b.params_b - 1) < 0.025, (slug, counted, b.params_b)


# Rows whose file is not what a plain llama-quantize of the preset writes. gemma-4-26b-a4b IQ2_M
# (9.3 GiB on its page): any i-quant must store the 704-wide expert ffn_down rows in a 32-wide
# block type (IQ4_NL, 4.5 bits/weight, 4.4 GB of them), so llama.cpp's IQ2_M rules come to
# 10.37 GB, 3.8% above the row; the published file probably sets tensor types of its own.
NOT_THE_PRESET = {("gemma-4-26b-a4b", "IQ2_M")}


def _sized_rows() -> list[tuple[str, str, float]]:
    """(model, preset, GB) of every row of these models run by llama.cpp (or llamafile) whose
    quant is a preset tokenwalk synthesises and whose file size is stated."""
    out = set()
    for b in load_benchmarks():
        if b.model not in PRINTED + NOMINAL or b.engine not in ("llama.cpp", "llamafile"):
            continue
        if (b.model, b.quant.upper()) in NOT_THE_PRESET:
            continue
        if b.model_file_gb and b.quant.upper() in PRESETS:
            out.add((b.model, b.quant.upper(), b.model_file_gb))
    return sorted(out)


def test_sized_rows_cover_the_checked_models() -> None:
    assert {m for m, _, _ in _sized_rows()} >= {
        "deepseek-v2-lite",
        "gemma-4-26b-a4b",
        "gemma-4-31b",
        "lfm2-8b-a1b",
        "mistral-small-3.2-24b",
        "mixtral-8x22b",
        "qwen3.5-27b",
    }


@pytest.mark.parametrize(("slug", "quant", "file_gb"), _sized_rows())
def test_file_size_is_the_published_one(slug: str, quant: str, file_gb: float) -> None:
    entry = find_model(slug)
    synthesised = model_from_config(entry.config, slug, quant).file_bytes / 1e9
    assert abs(synthesised / file_gb - 1) < FILE_TOLERANCE, (slug, quant, synthesised, file_gb)


# -- Gemma 4 -----------------------------------------------------------------------------------


def test_gemma4_26b_config_is_the_real_header() -> None:
    """llama.cpp's ggml-vocab-gemma-4.gguf was converted from the 26B-A4B: same hyperparameters."""
    data = (FIXTURES / "gemma-4-vocab.header.gguf").read_bytes()
    header = from_gguf_metadata(read_header(io.BytesIO(data), file_size=len(data)).metadata)
    config = spec_from_config(find_model("gemma-4-26b-a4b").config)
    for field in (
        "arch",
        "n_layer_all",
        "n_embd",
        "n_ctx_train",
        "n_head",
        "n_head_kv",
        "head_k",
        "head_v",
        "head_k_swa",
        "head_v_swa",
        "n_ff",
        "n_swa",
        "is_swa",
        "n_expert",
        "n_expert_used",
        "n_ff_exp",
        "shared_kv_layers",
    ):
        assert getattr(config, field) == getattr(header, field), field


def test_gemma4_tensor_table() -> None:
    spec = spec_from_config(find_model("gemma-4-26b-a4b").config)
    rows = dict(synthesize_tensors(spec))
    assert rows["rope_freqs.weight"] == (256,)  # one table for the full layers, 512 / 2
    assert rows["blk.0.attn_v.weight"] == (2816, 8 * 256)  # sliding: its own V
    assert rows["blk.5.attn_k.weight"] == (2816, 2 * 512)
    assert "blk.5.attn_v.weight" not in rows  # full: K is used as V
    assert rows["blk.5.attn_q.weight"] == (2816, 16 * 512)
    assert rows["blk.5.attn_output.weight"] == (16 * 512, 2816)
    assert rows["blk.3.ffn_gate.weight"] == (2816, 2112)  # the dense FFN beside the experts
    assert rows["blk.3.ffn_gate_up_exps.weight"] == (2816, 2 * 704, 128)
    assert rows["blk.3.ffn_down_exps.weight"] == (704, 2816, 128)
    assert rows["blk.3.ffn_down_exps.scale"] == (128,)
    assert "output.weight" not in rows  # tied
    dense = dict(synthesize_tensors(spec_from_config(find_model("gemma-4-31b").config)))
    assert not any("exps" in name or "gate_inp" in name for name in dense)
    assert sum(math.prod(s) for s in dense.values()) == 30_697_345_596


def test_gemma4_defaults_and_refusals() -> None:
    text = dict(find_model("gemma-4-31b").config["text_config"])
    spec = spec_from_config(text)
    assert [il for il in range(60) if not spec.swa(il)] == list(range(5, 60, 6))
    with pytest.raises(SpecError, match="per-layer embeddings"):
        spec_from_config({**text, "hidden_size_per_layer_input": 256})
    shared = spec_from_config({**text, "num_kv_shared_layers": 20})
    rows = dict(synthesize_tensors(shared))
    assert "blk.39.attn_k.weight" in rows and "blk.40.attn_k.weight" not in rows
    assert spec_from_config({**text, "attention_k_eq_v": False}).k_eq_v is False
    assert "blk.5.attn_v.weight" in dict(
        synthesize_tensors(spec_from_config({**text, "attention_k_eq_v": False}))
    )


# -- LFM2 MoE ----------------------------------------------------------------------------------


def test_lfm2moe_tensor_table() -> None:
    spec = spec_from_config(find_model("lfm2-8b-a1b").config)
    assert spec.arch == "lfm2moe" and spec.n_layer_dense_lead == 2
    assert [il for il in range(24) if not spec.recurrent(il)] == [2, 6, 10, 14, 18, 21]
    rows = dict(synthesize_tensors(spec))
    assert rows["blk.0.ffn_gate.weight"] == (2048, 7168)  # dense lead
    assert "blk.0.ffn_gate_exps.weight" not in rows
    assert rows["blk.2.ffn_gate_exps.weight"] == (2048, 1792, 32)
    assert rows["blk.2.exp_probs_b.bias"] == (32,)
    assert rows["blk.2.attn_k.weight"] == (2048, 8 * 64)
    assert rows["blk.3.shortconv.in_proj.weight"] == (2048, 3 * 2048)
    assert rows["token_embd_norm.weight"] == (2048,)
    assert rows["output.weight"] == (2048, 65536)


def test_lfm2moe_needs_layer_types() -> None:
    cfg = dict(find_model("lfm2-8b-a1b").config)
    del cfg["layer_types"]
    with pytest.raises(SpecError, match="layer_types"):
        spec_from_config(cfg)
