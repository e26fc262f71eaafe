"""assign_types: llama-quantize's type choice per tensor, checked on real files and the seed."""

from __future__ import annotations

from pathlib import Path

import pytest
from gguf.constants import GGMLQuantizationType as Q

from tokenwalk.errors import UnknownNameError
from tokenwalk.gguf.reader import Header, TensorInfo
from tokenwalk.model.hf import spec_from_config
from tokenwalk.model.model import Model
from tokenwalk.model.quant import PRESETS, assign_types, preset
from tokenwalk.model.spec import ArchSpec
from tokenwalk.model.synth import synthesize_tensors
from tokenwalk.sources.base import read_local


def load(path: Path) -> Header:
    return read_local(path)[0]


def spec_of(header: Header) -> ArchSpec:
    """The ArchSpec of a real file, as a loaded model sees it (tied embeddings included)."""
    return Model.from_headers("fixture", [header]).spec


def data_bytes(table: list[TensorInfo]) -> int:
    return table[-1].offset + table[-1].n_bytes


def n_params(table: list[TensorInfo]) -> int:
    return sum(t.n_elements for t in table)


def build(cfg: dict, quant: str) -> list[TensorInfo]:
    spec = spec_from_config(cfg)
    return assign_types(spec, synthesize_tensors(spec), quant)


@pytest.mark.parametrize("fixture", ["gemma3_path", "qwen2_path"])
def test_q4_k_m_reproduces_real_file(fixture: str, request: pytest.FixtureRequest) -> None:
    """Same names, shapes, types, order and offsets as the file llama-quantize wrote."""
    header = load(request.getfixturevalue(fixture))
    spec = spec_of(header)
    table = assign_types(spec, synthesize_tensors(spec), "Q4_K_M")
    assert table == list(header.tensors)
    assert data_bytes(table) == header.tensor_data_bytes


def test_gemma3_falls_back_for_640_wide_rows(gemma3_path: Path) -> None:
    spec = spec_of(load(gemma3_path))
    types = {t.name: Q(t.ggml_type) for t in assign_types(spec, synthesize_tensors(spec), "Q4_K_M")}
    assert types["blk.0.attn_q.weight"] == Q.Q5_0  # Q4_K needs rows of 256; 640 is not
    assert types["blk.0.attn_v.weight"] == Q.Q8_0  # Q6_K -> Q8_0
    assert types["blk.0.attn_output.weight"] == Q.Q4_K  # 1024-wide rows quantize as asked
    assert types["token_embd.weight"] == Q.Q8_0  # tied: quantized like an output head
    assert types["blk.0.attn_norm.weight"] == Q.F32


QWEN36_TEXT = {
    "hidden_size": 2048, "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
    "vocab_size": 248320, "linear_num_key_heads": 16, "linear_key_head_dim": 128,
    "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4, "full_attention_interval": 4,
    "mtp_num_hidden_layers": 1,
}  # fmt: skip
QWEN36_35B = {
    "model_type": "qwen3_5_moe", "tie_word_embeddings": False,
    "text_config": {
        **QWEN36_TEXT, "num_hidden_layers": 40, "linear_num_value_heads": 32, "num_experts": 256,
        "num_experts_per_tok": 8, "moe_intermediate_size": 512,
        "shared_expert_intermediate_size": 512,
    },
}  # fmt: skip
QWEN36_27B = {
    "model_type": "qwen3_5", "tie_word_embeddings": False,
    "text_config": {
        **QWEN36_TEXT, "num_hidden_layers": 64, "hidden_size": 5120, "intermediate_size": 17408,
        "num_attention_heads": 24, "num_key_value_heads": 4, "linear_num_value_heads": 48,
    },
}  # fmt: skip


def test_seed_qwen36_35b_a3b_q4_k_m() -> None:
    table = build(QWEN36_35B, "Q4_K_M")
    assert len(table) == 753
    assert n_params(table) == 35_505_251_456
    real_file_bytes = 21_718_480_960  # data plus a ~16 MB header (tokenizer)
    assert data_bytes(table) == pytest.approx(real_file_bytes, rel=0.03)
    assert 8 * data_bytes(table) / n_params(table) == pytest.approx(4.89, abs=0.02)
    types = {t.name: Q(t.ggml_type).name for t in table}
    assert types["token_embd.weight"] == "Q4_K"
    assert types["blk.0.attn_qkv.weight"] == "Q6_K"
    assert types["blk.0.ffn_gate_inp.weight"] == "F32"
    assert types["blk.0.ffn_up_exps.weight"] == "Q4_K"
    assert types["blk.0.ffn_up_shexp.weight"] == "Q4_K"
    assert types["blk.3.attn_q.weight"] == "Q4_K"
    assert types["blk.3.attn_k.weight"] == "Q4_K"
    assert types["blk.3.attn_v.weight"] == "Q6_K"
    assert types["output.weight"] == "Q6_K"


def test_seed_qwen36_27b_q4_k_m() -> None:
    table = build(QWEN36_27B, "Q4_K_M")
    assert n_params(table) == pytest.approx(27.3e9, rel=0.02)
    assert data_bytes(table) == pytest.approx(16.8e9, rel=0.03)


GPT_OSS_20B = {
    "model_type": "gpt_oss", "num_hidden_layers": 24, "hidden_size": 2880,
    "intermediate_size": 2880, "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64,
    "vocab_size": 201088, "num_local_experts": 32, "num_experts_per_tok": 4,
    "tie_word_embeddings": False,
}  # fmt: skip


def test_mxfp4_moe_preset() -> None:
    table = build(GPT_OSS_20B, "MXFP4")
    assert n_params(table) == pytest.approx(21e9, rel=0.02)
    assert 12e9 <= data_bytes(table) <= 13e9
    types = {t.name: Q(t.ggml_type) for t in table}
    assert types["blk.0.ffn_down_exps.weight"] == Q.MXFP4
    assert types["blk.0.attn_q.weight"] == Q.Q8_0
    assert types["output.weight"] == Q.Q8_0
    assert types["token_embd.weight"] == Q.Q8_0
    assert types["blk.0.ffn_gate_exps.bias"] == Q.F32
    assert types["blk.0.attn_sinks.weight"] == Q.F32


def test_eight_experts_bump_attention() -> None:
    mixtral = {
        "model_type": "mixtral", "num_hidden_layers": 4, "hidden_size": 4096,
        "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8,
        "vocab_size": 32000, "num_local_experts": 8, "num_experts_per_tok": 2,
    }  # fmt: skip
    types = {t.name: Q(t.ggml_type) for t in build(mixtral, "Q4_K_M")}
    assert types["blk.1.attn_v.weight"] == Q.Q8_0
    assert types["blk.1.attn_k.weight"] == Q.Q8_0
    assert types["blk.1.attn_output.weight"] == Q.Q5_K
    assert types["blk.1.ffn_gate_inp.weight"] == Q.F32


def test_presets_order_by_size(qwen2_path: Path) -> None:
    spec = spec_of(load(qwen2_path))
    rows = synthesize_tensors(spec)
    order = ["F32", "F16", "Q8_0", "Q6_K", "Q5_K_M", "Q5_K_S", "Q4_K_M", "Q4_K_S", "IQ4_XS",
             "Q3_K_M", "Q2_K"]  # fmt: skip
    sizes = [data_bytes(assign_types(spec, rows, p)) for p in order]
    assert sizes == sorted(sizes, reverse=True)
    assert sizes[1] == pytest.approx(2 * 7_615_616_512, rel=0.01)


def test_float_presets_keep_norms_f32(gemma3_path: Path) -> None:
    spec = spec_of(load(gemma3_path))
    types = {t.name: Q(t.ggml_type) for t in assign_types(spec, synthesize_tensors(spec), "bf16")}
    assert types["blk.0.attn_q.weight"] == Q.BF16
    assert types["blk.0.attn_q_norm.weight"] == Q.F32


def test_offsets_are_aligned(qwen2_path: Path) -> None:
    spec = spec_of(load(qwen2_path))
    table = assign_types(spec, synthesize_tensors(spec), "Q4_0")
    assert all(t.offset % 32 == 0 for t in table)
    assert all(a.offset + a.n_bytes <= b.offset for a, b in zip(table[:-1], table[1:], strict=True))


def test_every_preset_runs(gemma3_path: Path) -> None:
    spec = spec_of(load(gemma3_path))
    rows = synthesize_tensors(spec)
    for name in PRESETS:
        assert len(assign_types(spec, rows, name)) == len(rows)


def test_preset_lookup() -> None:
    assert preset("q4_k_m") is PRESETS["Q4_K_M"]
    assert preset("MXFP4_MOE") is PRESETS["MXFP4"]
    with pytest.raises(UnknownNameError, match="'Q4_K_X'.*Q4_K_M"):
        preset("Q4_K_X")


# Published gpt-oss files keep the MXFP4 experts under every preset. Sizes of the real files, in
# decimal GB: llama-bench's 11.27 / 59.02 GiB for the MXFP4 files (ggml-org/gpt-oss-*-GGUF, in
# /work/shared/data/benchmarks-train.csv), and the Hugging Face listings of unsloth/gpt-oss-20b-GGUF
# and unsloth/gpt-oss-120b-GGUF for the others (rounded there to 0.1 GB).
GPT_OSS_FILES = {
    ("gpt-oss-20b", "MXFP4"): 11.27 * 2**30,
    ("gpt-oss-20b", "Q8_0"): 12.1e9,
    ("gpt-oss-20b", "Q4_K_M"): 11.6e9,
    ("gpt-oss-20b", "F16"): 13.8e9,
    ("gpt-oss-120b", "MXFP4"): 59.02 * 2**30,
    ("gpt-oss-120b", "Q8_0"): 63.4e9,
    ("gpt-oss-120b", "Q4_K_M"): 62.8e9,
    ("gpt-oss-120b", "F16"): 65.4e9,
}


@pytest.mark.parametrize(("slug", "quant"), list(GPT_OSS_FILES))
def test_gpt_oss_sizes_match_published_files(slug: str, quant: str) -> None:
    from tokenwalk.catalog import find_model
    from tokenwalk.model.resolve import model_from_config

    model = model_from_config(find_model(slug).config, slug, quant)
    real = GPT_OSS_FILES[(slug, quant)]
    size = model.tensor_bytes if quant == "MXFP4" else model.file_bytes  # llama-bench: tensors
    assert size == pytest.approx(real, rel=0.01)
    assert model.params == pytest.approx(20.91e9 if slug == "gpt-oss-20b" else 116.83e9, rel=1e-3)


def test_gpt_oss_experts_stay_mxfp4_under_every_preset() -> None:
    cfg = {**GPT_OSS_20B, "quantization_config": {"quant_method": "mxfp4"}}
    for name in PRESETS:
        types = {t.name: Q(t.ggml_type) for t in build(cfg, name)}
        assert types["blk.0.ffn_gate_exps.weight"] == Q.MXFP4, name
        assert types["blk.23.ffn_down_exps.weight"] == Q.MXFP4, name
        assert types["blk.0.ffn_gate_exps.bias"] == Q.F32, name
        assert types["blk.0.ffn_gate_inp.weight"] == Q.F32, name
    q4 = {t.name: Q(t.ggml_type) for t in build(cfg, "Q4_K_M")}
    assert q4["output.weight"] == Q.Q8_0  # 2880-wide rows: no K-quant output head
    assert q4["token_embd.weight"] == Q.Q5_0  # Q4_K falls back on 2880-wide rows
    assert q4["blk.0.attn_v.weight"] == Q.Q8_0  # Q6_K (more bits) falls back
    assert q4["blk.0.attn_output.weight"] == Q.Q4_K  # 4096-wide rows
    f16 = {t.name: Q(t.ggml_type) for t in build(cfg, "F16")}
    assert f16["blk.0.attn_q.weight"] == Q.F16
    assert f16["blk.0.ffn_up_exps.weight"] == Q.MXFP4


def test_gpt_oss_from_floats_quantizes_its_experts() -> None:
    """A BF16 re-upload has no quantization_config: its experts follow the preset."""
    types = {t.name: Q(t.ggml_type) for t in build(GPT_OSS_20B, "Q4_K_M")}
    assert types["blk.0.ffn_gate_exps.weight"] == Q.Q5_0
    assert types["blk.0.ffn_down_exps.weight"] == Q.Q8_0  # Q6_K in a more-bits layer


def test_gpt_oss_20b_fits_a_16_gb_card(capsys: pytest.CaptureFixture[str]) -> None:
    """OpenAI: gpt-oss-20b runs within 16 GB, even at its full 131,072-token context."""
    from tokenwalk.cli import main

    assert main(["budget", "gpt-oss-20b", "-m", "rtx-5060-ti-16gb", "--ctx", "131072"]) == 0
    assert "does not fit" not in capsys.readouterr().out
