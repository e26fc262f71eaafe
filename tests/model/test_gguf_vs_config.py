"""A GGUF header and the matching config give the same answers.

For architectures with no real file at hand (qwen35moe, deepseek2, gpt-oss, ...), the test writes
a header-only GGUF with `gguf.GGUFWriter`: the metadata keys llama.cpp's converter writes for the
config, and the tensor table tokenwalk synthesises for it. Reading that file back must give the
same layers, sizes and KV as the config path.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gguf import GGUFWriter
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

from tokenwalk.catalog import find_model
from tokenwalk.costs.kv import kv_report
from tokenwalk.costs.size import size_report
from tokenwalk.model.model import Model
from tokenwalk.model.resolve import load_model, model_from_config


def _uniform(values: tuple[int, ...]) -> int | list[int]:
    return values[0] if len(set(values)) == 1 else list(values)


def write_header(model: Model, path: Path) -> None:
    """Write the metadata llama.cpp's converter would write for `model.spec`, and its tensors."""
    s = model.spec
    a = s.arch
    w = GGUFWriter(str(path), a)
    w.add_uint32(f"{a}.block_count", s.n_layer_all)
    w.add_uint32(f"{a}.context_length", s.n_ctx_train)
    w.add_uint32(f"{a}.embedding_length", s.n_embd)
    w.add_uint32(f"{a}.vocab_size", s.n_vocab)

    def per_layer(key: str, values: tuple[int, ...]) -> None:
        v = _uniform(values)
        if isinstance(v, list):
            w.add_array(key, v)
        else:
            w.add_uint32(key, v)

    ff = s.n_ff if any(s.n_ff) else (s.n_ff_exp,) * s.n_layer_all
    per_layer(f"{a}.feed_forward_length", ff)
    per_layer(f"{a}.attention.head_count", s.n_head)
    if s.is_mla:
        w.add_uint32(f"{a}.attention.head_count_kv", 1)
        w.add_uint32(f"{a}.attention.key_length", s.kv_lora_rank + s.n_rot)
        w.add_uint32(f"{a}.attention.value_length", s.kv_lora_rank)
        w.add_uint32(f"{a}.attention.key_length_mla", s.head_k_mla)
        w.add_uint32(f"{a}.attention.value_length_mla", s.head_v_mla)
        w.add_uint32(f"{a}.attention.kv_lora_rank", s.kv_lora_rank)
        if s.q_lora_rank:
            w.add_uint32(f"{a}.attention.q_lora_rank", s.q_lora_rank)
        w.add_uint32(f"{a}.rope.dimension_count", s.n_rot)
    else:
        kv = tuple(
            h
            for h, r in zip(s.n_head_kv, s.is_recurrent or (False,) * s.n_layer_all, strict=True)
            if not r
        )
        if a in ("granitehybrid", "lfm2"):
            per_layer(f"{a}.attention.head_count_kv", s.n_head_kv)
        else:
            per_layer(f"{a}.attention.head_count_kv", (max(kv),) * s.n_layer_all)
        w.add_uint32(f"{a}.attention.key_length", s.head_k)
        w.add_uint32(f"{a}.attention.value_length", s.head_v)
    if s.n_expert:
        w.add_uint32(f"{a}.expert_count", s.n_expert)
        w.add_uint32(f"{a}.expert_used_count", s.n_expert_used)
        if s.n_ff_exp:
            w.add_uint32(f"{a}.expert_feed_forward_length", s.n_ff_exp)
        if s.n_expert_shared:
            w.add_uint32(f"{a}.expert_shared_count", s.n_expert_shared)
        if s.n_ff_shexp:
            w.add_uint32(f"{a}.expert_shared_feed_forward_length", s.n_ff_shexp)
        if s.n_layer_dense_lead:
            w.add_uint32(f"{a}.leading_dense_block_count", s.n_layer_dense_lead)
            w.add_uint32(f"{a}.feed_forward_length", max(s.n_ff))
    if s.n_nextn:
        w.add_uint32(f"{a}.nextn_predict_layers", s.n_nextn)
    if s.n_swa:
        w.add_uint32(f"{a}.attention.sliding_window", s.n_swa)
        if a not in ("gemma3", "gpt-oss"):
            w.add_array(f"{a}.attention.sliding_window_pattern", list(s.is_swa))
    if s.is_recurrent and a.startswith("qwen3"):
        w.add_array(f"{a}.attention.recurrent_layers", list(s.is_recurrent))
    if s.ssm_d_inner:
        w.add_uint32(f"{a}.ssm.conv_kernel", s.ssm_d_conv)
        w.add_uint32(f"{a}.ssm.inner_size", s.ssm_d_inner)
        w.add_uint32(f"{a}.ssm.state_size", s.ssm_d_state)
        w.add_uint32(f"{a}.ssm.group_count", s.ssm_n_group)
        w.add_uint32(f"{a}.ssm.time_step_rank", s.ssm_dt_rank)
    if s.shortconv_l_cache:
        w.add_uint32(f"{a}.shortconv.l_cache", s.shortconv_l_cache)
    for t in model.tensors:
        qtype = GGMLQuantizationType(t.info.ggml_type)
        block, type_bytes = GGML_QUANT_SIZES[qtype]
        # GGUFWriter takes quantised shapes in bytes, outermost dimension first
        byte_shape = (*reversed(t.info.shape[1:]), t.info.shape[0] // block * type_bytes)
        w.add_tensor_info(t.name, byte_shape, np.dtype(np.uint8), t.n_bytes, qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()


CASES = [
    "qwen3.6-35b-a3b",
    "qwen3.6-27b",
    "qwen3-next-80b-a3b",
    "deepseek-v3",
    "gpt-oss-20b",
    "gemma-3-4b",
    "mixtral-8x7b",
    "granite-4.0-h-small",
    "lfm2-1.2b",
    "qwen3-30b-a3b",
    "phi-4",
]


@pytest.mark.parametrize("slug", CASES)
def test_header_and_config_agree(tmp_path, slug):
    entry = find_model(slug)
    quant = "MXFP4" if slug.startswith("gpt-oss") else "Q4_K_M"
    from_config = model_from_config(entry.config, slug, quant)
    path = tmp_path / f"{slug}.gguf"
    write_header(from_config, path)
    from_gguf = load_model(str(path)).model

    assert [x.attention for x in from_gguf.layers] == [x.attention for x in from_config.layers]
    assert [x.ffn for x in from_gguf.layers] == [x.ffn for x in from_config.layers]
    a, b = size_report(from_config), size_report(from_gguf)
    assert a.params == b.params
    assert a.tensor_bytes == b.tensor_bytes
    assert a.weight_read_bytes_per_token == pytest.approx(b.weight_read_bytes_per_token, abs=1)
    assert a.active_params == pytest.approx(b.active_params)
    for ctx in (4096, 40960):
        ka, kb = kv_report(from_config, ctx), kv_report(from_gguf, ctx)
        assert ka.kv_bytes == kb.kv_bytes
        assert ka.state_bytes == kb.state_bytes
