"""Size bounds on hyperparameters: the same `Limits` for GGUF metadata, config.json and YAML.

A key beyond its limit is one line naming the key (exit code 2 from the CLI); a value at the
limit still works, and no integer in any key takes more than a second or ends in a traceback.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenwalk.catalog import find_model, load_models
from tokenwalk.cli import main
from tokenwalk.costs.kv import kv_report
from tokenwalk.costs.size import size_report
from tokenwalk.errors import MetadataError, SpecError, TokenwalkError
from tokenwalk.gguf.reader import LIMITS, Limits
from tokenwalk.model.hf import spec_from_config
from tokenwalk.model.resolve import model_from_config
from tokenwalk.model.spec import from_gguf_metadata
from tokenwalk.model.synth import synthesize_tensors

LLAMA: dict[str, Any] = {
    "model_type": "llama",
    "num_hidden_layers": 4,
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 1024,
    "max_position_embeddings": 4096,
}
MOE: dict[str, Any] = {**LLAMA, "model_type": "mixtral", "num_local_experts": 8}
MOE["num_experts_per_tok"] = 2

# (config, key, kind): a key of each kind of limit, and the widths around it
BOUNDED = [
    (LLAMA, "num_hidden_layers", "layers"),
    (LLAMA, "vocab_size", "vocab"),
    (LLAMA, "max_position_embeddings", "context"),
    (LLAMA, "hidden_size", "width"),
    (LLAMA, "intermediate_size", "width"),
    (LLAMA, "num_attention_heads", "width"),
    (LLAMA, "head_dim", "width"),
    (MOE, "num_local_experts", "experts"),
    (MOE, "num_experts_per_tok", "experts"),
]


def _over(kind: str) -> int:
    return LIMITS.hparam_limit(kind) + 1


@pytest.mark.parametrize(("cfg", "key", "kind"), BOUNDED, ids=[k for _, k, _ in BOUNDED])
def test_config_key_beyond_its_limit_is_named(cfg: dict, key: str, kind: str) -> None:
    with pytest.raises(SpecError) as info:
        spec_from_config({**cfg, key: _over(kind)}, source="config.json")
    message = str(info.value)
    assert f"key '{key}'" in message and f"limit of {LIMITS.hparam_limit(kind):,}" in message


def test_limits_are_the_readers() -> None:
    """One declaration: the reader's defaults bound the model layer too."""
    assert LIMITS == Limits()
    assert LIMITS.max_layers == 512 and LIMITS.max_experts == 1024  # llama.cpp's own maxima
    assert LIMITS.max_context == 1 << 30 and LIMITS.hparam_limit("anything else") == 1 << 20


def test_the_largest_table_allowed_is_far_below_the_tensor_limit() -> None:
    """With layers bounded, no config can synthesise more tensors than a GGUF may hold."""
    entry = find_model("qwen3.6-35b-a3b")  # the most tensors per layer in the catalogue
    cfg = {**entry.config, "num_hidden_layers": LIMITS.max_layers - 1}
    cfg.pop("layer_types", None)
    rows = synthesize_tensors(spec_from_config(cfg))
    assert len(rows) < LIMITS.max_tensors // 50


def test_values_at_the_limits_work() -> None:
    """A model at every limit is sized (its speed: benchmarks/parse_speed.py (f))."""
    cfg = {
        **LLAMA,
        "num_hidden_layers": LIMITS.max_layers,
        "hidden_size": LIMITS.max_width,
        "intermediate_size": LIMITS.max_width,
        "vocab_size": LIMITS.max_vocab,
        "max_position_embeddings": LIMITS.max_context,
    }
    model = model_from_config(cfg, "big", "Q8_0")
    size_report(model)
    kv_report(model, None)
    assert model.spec.n_layer_all == LIMITS.max_layers


def test_derived_quantities_are_bounded_too() -> None:
    with pytest.raises(SpecError, match="n_layer_all comes to 513"):  # 512 layers + 1 MTP block
        spec_from_config({**find_model("glm-4.5-air").config, "num_hidden_layers": 512})
    lfm2 = {**find_model("lfm2-1.2b").config, "block_ffn_dim_multiplier": 1e6}
    with pytest.raises(SpecError, match="n_ff comes to"):
        spec_from_config(lfm2)


@pytest.mark.parametrize("value", [float("inf"), float("nan"), 1e300, -1e300, 10**400])
def test_floats_must_be_finite_and_bounded(value: float) -> None:
    cfg = {**find_model("lfm2-1.2b").config, "block_ffn_dim_multiplier": value}
    with pytest.raises(SpecError, match="'block_ffn_dim_multiplier'"):
        spec_from_config(cfg)


def test_a_long_index_list_reads_every_layer_it_names() -> None:
    """An index list far longer than the model (its speed: benchmarks/parse_speed.py (e))."""
    cfg = {**find_model("lfm2-1.2b").config, "full_attn_idxs": list(range(2_000_000))}
    cfg.pop("layer_types", None)
    spec = spec_from_config(cfg)
    assert spec.n_layer_all == cfg["num_hidden_layers"]
    assert not any(spec.is_recurrent)  # every layer is named as full attention


@pytest.mark.parametrize(
    ("key", "value", "kind"),
    [
        ("qwen2.block_count", LIMITS.max_layers + 1, "layers"),
        ("qwen2.embedding_length", 1 << 40, "width"),
        ("qwen2.context_length", (1 << 32) - 1, "context"),
        ("qwen2.feed_forward_length", [18944] * 27 + [1 << 21], "width"),
        ("qwen2.expert_count", LIMITS.max_experts + 1, "experts"),
    ],
)
def test_gguf_metadata_beyond_limits(key: str, value: Any, kind: str, qwen2_path: Path) -> None:
    from tokenwalk.sources.base import read_local

    md = dict(read_local(qwen2_path)[0].metadata)
    md[key] = value
    with pytest.raises(MetadataError) as info:
        from_gguf_metadata(md)
    assert f"'{key}'" in str(info.value)
    assert f"limit of {LIMITS.hparam_limit(kind):,}" in str(info.value)


def test_gguf_vocabulary_beyond_the_limit(qwen2_path: Path) -> None:
    from tokenwalk.sources.base import read_local

    md = dict(read_local(qwen2_path)[0].metadata)
    with pytest.raises(MetadataError, match="n_vocab"):
        from_gguf_metadata(md, n_vocab_from_tensors=LIMITS.max_vocab + 1)


# --- through the CLI: one line, exit 2 -------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "needle"),
    [
        ("config.json", json.dumps({**LLAMA, "num_hidden_layers": 1_000_000}), "num_hidden_layers"),
        ("config.json", json.dumps({**LLAMA, "num_hidden_layers": 10**9}), "num_hidden_layers"),
        ("config.json", json.dumps({**LLAMA, "vocab_size": 10**15}), "'vocab_size'"),
        ("spec.yaml", "model_type: llama\nnum_hidden_layers: 1000000\n", "num_hidden_layers"),
        ("spec.yaml", yaml.safe_dump({"config": {**LLAMA, "hidden_size": 10**11}}), "hidden_size"),
        ("config.json", '{"a": ' + "9" * 5000 + "}", "more than 4,300 digits"),
        ("config.json", "[" * 5000 + "]" * 5000, "nested too deeply"),
        ("spec.yaml", "a: " + "[" * 5000 + "]" * 5000, "nested too deeply"),
    ],
)
def test_cli_refuses_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, needle: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    code = main(["size", str(path)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert needle in err and err.count("\n") == 1 and "Traceback" not in err


def test_cli_refuses_a_gguf_beyond_limits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from gguf import GGUFWriter

    path = tmp_path / "deep.gguf"
    w = GGUFWriter(str(path), "llama")
    w.add_uint32("llama.block_count", 100_000)
    w.add_uint32("llama.embedding_length", 64)
    w.add_uint32("llama.attention.head_count", 4)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    assert main(["size", str(path)]) == 2
    err = capsys.readouterr().err
    assert "'llama.block_count'" in err and err.count("\n") == 1


# --- property: any huge integer in any key -----------------------------------------------------

_CONFIGS = {m.slug: m.config for m in load_models()}
_KEYS = sorted(
    {k for cfg in _CONFIGS.values() for k in cfg}
    | {k for cfg in _CONFIGS.values() for k in cfg.get("text_config", {})}
    | {"head_dim", "mtp_num_hidden_layers", "num_mtp_layers", "kv_lora_rank", "v_head_dim"}
)
_HUGE = st.one_of(
    st.integers(min_value=1 << 20, max_value=1 << 4000),
    st.integers(min_value=-(1 << 4000), max_value=-1),
    st.sampled_from([0, 511, 512, 513, 1023, 1024, 1025, 1 << 20, (1 << 20) + 1, 1 << 24]),
    st.sampled_from([1 << 30, (1 << 30) + 1, 1 << 32, 1 << 63, 1 << 64]),
)


@settings(
    max_examples=150,
    deadline=1000,  # milliseconds: no key may make a model take a second
    suppress_health_check=[HealthCheck.too_slow],
)
@given(slug=st.sampled_from(sorted(_CONFIGS)), key=st.sampled_from(_KEYS), value=_HUGE)
def test_any_huge_int_in_any_key_is_quick_and_clean(slug: str, key: str, value: int) -> None:
    cfg = dict(_CONFIGS[slug])
    if isinstance(cfg.get("text_config"), dict):
        cfg["text_config"] = {**cfg["text_config"], key: value}
    else:
        cfg[key] = value
    try:
        model = model_from_config(cfg, slug)
        size_report(model)
        kv_report(model, None)
    except TokenwalkError:
        pass
