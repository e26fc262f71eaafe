"""Metadata of the wrong type, out of range or missing: `from_gguf_metadata` refuses it with a
`MetadataError` naming the key (and never fails with anything else)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from tokenwalk.errors import MetadataError, TokenwalkError, UnknownArchitectureError
from tokenwalk.gguf.reader import ArrayInfo, read_header
from tokenwalk.model.spec import from_gguf_metadata

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _metadata(name: str) -> dict[str, Any]:
    data = (FIXTURES / name).read_bytes()
    return dict(read_header(io.BytesIO(data), file_size=len(data)).metadata)


@pytest.fixture
def qwen2() -> dict[str, Any]:
    return _metadata("deepseek-r1-distill-qwen-7b-q4_k_m.header.gguf")


@pytest.fixture
def gemma4() -> dict[str, Any]:
    return _metadata("gemma-4-vocab.header.gguf")


def _refused(md: dict[str, Any], cls: type[TokenwalkError], *fragments: str) -> None:
    with pytest.raises(TokenwalkError) as info:
        from_gguf_metadata(md)
    assert type(info.value) is cls, f"{type(info.value).__name__}: {info.value}"
    for f in fragments:
        assert f in str(info.value), str(info.value)


def test_real_metadata_reads(qwen2: dict[str, Any], gemma4: dict[str, Any]) -> None:
    spec = from_gguf_metadata(qwen2)
    assert spec.arch == "qwen2" and spec.n_layer_all == 28 and spec.n_head_kv[0] == 4
    spec4 = from_gguf_metadata(gemma4)
    assert spec4.arch == "gemma4" and spec4.n_head_kv[5] == 2


def test_block_count_as_a_string(qwen2: dict[str, Any]) -> None:
    qwen2["qwen2.block_count"] = "28"
    _refused(qwen2, MetadataError, "'qwen2.block_count'", "should be an integer", "'28'")


def test_block_count_as_a_bool(qwen2: dict[str, Any]) -> None:
    qwen2["qwen2.block_count"] = True
    _refused(qwen2, MetadataError, "'qwen2.block_count'", "should be an integer", "bool")


def test_block_count_as_a_float(qwen2: dict[str, Any]) -> None:
    qwen2["qwen2.block_count"] = 28.0
    _refused(qwen2, MetadataError, "'qwen2.block_count'", "should be an integer")


def test_block_count_zero(qwen2: dict[str, Any]) -> None:
    qwen2["qwen2.block_count"] = 0
    _refused(qwen2, MetadataError, "'qwen2.block_count' is 0", "below the minimum 1")


def test_block_count_absurd(qwen2: dict[str, Any]) -> None:
    qwen2["qwen2.block_count"] = 1 << 40
    _refused(qwen2, MetadataError, "'qwen2.block_count'", "beyond tokenwalk's limit of 512")


def test_negative_head_count(qwen2: dict[str, Any]) -> None:
    qwen2["qwen2.attention.head_count"] = -28  # an INT32 in the file
    _refused(qwen2, MetadataError, "'qwen2.attention.head_count' is -28", "below the minimum")


@pytest.mark.parametrize("key", ["head_count", "head_count_kv"])
def test_zero_heads_are_refused_as_a_config_refuses_them(qwen2: dict[str, Any], key) -> None:
    """A config's num_attention_heads and num_key_value_heads are at least 1: so are a GGUF's
    (kv divided by 0, or a prefill with no attention at all, followed)."""
    qwen2[f"qwen2.attention.{key}"] = 0
    _refused(qwen2, MetadataError, f"'qwen2.attention.{key}' is 0", "at least one head")


def test_negative_kv_head_count_in_a_per_layer_array(gemma4: dict[str, Any]) -> None:
    gemma4["gemma4.attention.head_count_kv"] = [8] * 29 + [-2]
    _refused(gemma4, MetadataError, "'gemma4.attention.head_count_kv'", "below 0")


def test_per_layer_array_too_short(gemma4: dict[str, Any]) -> None:
    gemma4["gemma4.attention.head_count_kv"] = [8] * 10
    _refused(gemma4, MetadataError, "'gemma4.attention.head_count_kv'", "10 entries for 30")


def test_per_layer_array_of_strings(gemma4: dict[str, Any]) -> None:
    gemma4["gemma4.attention.head_count_kv"] = ["8"] * 30
    _refused(gemma4, MetadataError, "'gemma4.attention.head_count_kv'", "integer array")


def test_per_layer_array_too_long_to_keep(gemma4: dict[str, Any]) -> None:
    gemma4["gemma4.attention.head_count_kv"] = ArrayInfo("INT32", 1 << 20)
    _refused(gemma4, MetadataError, "'gemma4.attention.head_count_kv'", "integer array")


def test_sliding_window_pattern_of_the_wrong_type(gemma4: dict[str, Any]) -> None:
    gemma4["gemma4.attention.sliding_window_pattern"] = "TTTTTF"
    _refused(gemma4, MetadataError, "'gemma4.attention.sliding_window_pattern'", "boolean array")


@pytest.mark.parametrize(
    "key", ["qwen2.block_count", "qwen2.embedding_length", "qwen2.attention.head_count"]
)
def test_required_key_missing(qwen2: dict[str, Any], key: str) -> None:
    del qwen2[key]
    _refused(qwen2, MetadataError, f"required metadata key '{key}' is missing")


def test_architecture_missing(qwen2: dict[str, Any]) -> None:
    del qwen2["general.architecture"]
    _refused(qwen2, MetadataError, "'general.architecture' is missing")


def test_architecture_not_a_string(qwen2: dict[str, Any]) -> None:
    qwen2["general.architecture"] = 7
    _refused(qwen2, MetadataError, "'general.architecture'")


def test_unknown_architecture(qwen2: dict[str, Any]) -> None:
    qwen2["general.architecture"] = "qwen9"
    _refused(qwen2, UnknownArchitectureError, "'qwen9'", "known architectures", "qwen2")


def test_more_experts_used_than_exist(gemma4: dict[str, Any]) -> None:
    gemma4["gemma4.expert_used_count"] = 129
    _refused(gemma4, MetadataError, "'gemma4.expert_used_count' (129) exceeds")


def test_all_layers_mtp(qwen2: dict[str, Any]) -> None:
    qwen2["qwen2.nextn_predict_layers"] = 28
    _refused(qwen2, MetadataError, "'qwen2.nextn_predict_layers' (28) is not below block_count")


@pytest.mark.parametrize("tokens", [-1, True, 1.5, "abc", None])
def test_token_list_of_the_wrong_type_is_ignored(qwen2: dict[str, Any], tokens: object) -> None:
    qwen2["tokenizer.ggml.tokens"] = tokens
    assert from_gguf_metadata(qwen2, n_vocab_from_tensors=152_064).n_vocab == 152_064


_WEIRD: list[object] = [
    "x",
    -1,
    1 << 64,
    True,
    1.5,
    float("nan"),
    [],
    [1, 2],
    [-1] * 64,
    ["a"],
    ArrayInfo("STRING", 9),
]


@pytest.mark.parametrize("name", ["qwen2", "gemma4"])
def test_any_value_of_any_key_gives_a_spec_or_a_tokenwalk_error(name: str, request) -> None:  # noqa: ANN001
    md = request.getfixturevalue(name)
    for key in list(md):
        for value in _WEIRD:
            bad = {**md, key: value}
            try:
                from_gguf_metadata(bad)
            except TokenwalkError:
                pass
