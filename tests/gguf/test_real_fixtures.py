"""The slim fixtures cut from real GGUF headers read back with the facts of the original files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tokenwalk.gguf.reader import ArrayInfo, Header, read_header

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FACTS = json.loads((FIXTURES / "facts.json").read_text())


def _read(name: str) -> Header:
    path = FIXTURES / name
    with path.open("rb") as fh:
        return read_header(fh, file_size=path.stat().st_size)


def _params(h: Header) -> int:
    return sum(t.n_elements for t in h.tensors)


def test_gemma3_270m_q4_k_m() -> None:
    facts = FACTS["gemma-3-270m-q4_k_m"]
    h = _read(facts["fixture"])
    assert h.architecture == "gemma3"
    assert len(h.tensors) == 236 == facts["tensor_count"]
    assert _params(h) == 268_098_176 == facts["n_params"]
    assert h.tensor_data_bytes == 246_587_904 == facts["tensor_data_bytes"]
    assert round(h.tensor_data_bytes * 8 / _params(h), 3) == 7.358 == facts["bits_per_weight"]
    assert facts["data_offset"] == 6_525_120
    assert facts["token_count"] == 262_144
    assert h.data_present is False
    assert h.metadata["gemma3.block_count"] == 18
    assert h.tensors[1].name == "token_embd.weight"
    assert h.tensors[1].shape == (640, 262_144)
    assert h.tensors[1].type_name == "Q8_0"


def test_deepseek_r1_distill_qwen_7b_q4_k_m() -> None:
    facts = FACTS["deepseek-r1-distill-qwen-7b-q4_k_m"]
    h = _read(facts["fixture"])
    assert h.architecture == "qwen2"
    assert len(h.tensors) == 339 == facts["tensor_count"]
    assert _params(h) == 7_615_616_512 == facts["n_params"]
    assert h.tensor_data_bytes == 4_677_120_000 == facts["tensor_data_bytes"]
    assert facts["data_offset"] == 5_953_248
    assert facts["token_count"] == 152_064
    assert facts["merge_count"] == 151_387
    assert h.data_present is False
    assert h.metadata["qwen2.attention.head_count_kv"] == 4
    assert isinstance(h.metadata["tokenizer.chat_template"], str)


def test_gemma4_vocab_per_layer_arrays() -> None:
    facts = FACTS["gemma-4-vocab"]
    h = _read(facts["fixture"])
    assert h.architecture == "gemma4"
    assert h.tensors == () and facts["tensor_count"] == 0
    assert facts["data_offset"] == 15_776_467
    kv = h.metadata["gemma4.attention.head_count_kv"]
    assert len(kv) == 30 and kv[5] == 2 and kv[0] == 8
    swa = h.metadata["gemma4.attention.sliding_window_pattern"]
    assert swa[:6] == [True] * 5 + [False]
    assert h.data_present is True  # no tensors: the header is the whole file


@pytest.mark.parametrize("name", sorted(FACTS))
def test_tokenizer_cut_consistently(name: str) -> None:
    facts = FACTS[name]
    h = _read(facts["fixture"])
    keep = facts["kept_tokenizer_items"]
    tokens = h.metadata["tokenizer.ggml.tokens"]
    assert len(tokens) == keep < facts["token_count"]
    for key in ("tokenizer.ggml.scores", "tokenizer.ggml.token_type"):
        if key in h.metadata:
            assert len(h.metadata[key]) == keep
    assert not any(isinstance(v, ArrayInfo) for v in h.metadata.values())
    assert facts["fixture_bytes"] == (FIXTURES / facts["fixture"]).stat().st_size < 100_000
    assert len(h.metadata) == facts["metadata_keys"]
