"""assign_types: llama-quantize's type choice per tensor, checked on real files and the seed."""

from __future__ import annotations

import json
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


# -- i-quants ---------------------------------------------------------------------------------
# tests/data/llama-quantize/types.json: the type llama-quantize --dry-run picks for every tensor
# under each preset (scripts/quant_types.py), for two real files of the ground truth (SmolLM2,
# 576-wide rows that the i-quants' 256 block does not divide; gemma3, grouped-query attention 4)
# and two small MoEs the script writes (8 experts; 16 experts with a shared expert).
ORACLE = json.loads(
    (Path(__file__).parents[1] / "data" / "llama-quantize" / "types.json").read_text()
)
HEADERS = Path(__file__).parents[1] / "data" / "cpu-ground-truth" / "headers"
ORACLE_CASES = [
    (model, name) for model, entry in ORACLE["models"].items() for name in entry["presets"]
]


def _oracle_table(model: str, name: str) -> list[TensorInfo]:
    entry = ORACLE["models"][model]
    if entry["config"] is None:  # a real file: its header and the converter's tensor list
        spec = spec_of(load(HEADERS / f"{model}.header.gguf"))
        return assign_types(spec, synthesize_tensors(spec), name)
    spec = spec_from_config(entry["config"])
    return assign_types(spec, [(n, tuple(s)) for n, s in entry["tensors"]], name)


@pytest.mark.parametrize(("model", "name"), ORACLE_CASES)
def test_types_match_llama_quantize(model: str, name: str) -> None:
    entry = ORACLE["models"][model]
    recorded = entry["presets"][name]
    want = dict(zip([n for n, _ in entry["tensors"]], recorded["types"].split(), strict=True))
    table = _oracle_table(model, name)
    got = {t.name: Q(t.ggml_type).name for t in table}
    assert got == want
    quant_mib = sum(t.n_bytes for t in table) / 2**20
    assert quant_mib == pytest.approx(recorded["quant_size_mib"], abs=0.006)


def test_iq_presets_reproduce_real_files() -> None:
    """SmolLM2-135M requantized by llama-quantize (importance matrix of ones) to IQ2_M and
    IQ3_XXS held 83,803,392 and 85,171,968 bytes of tensor data; the tables match tensor for
    tensor, offsets included."""
    spec = spec_of(load(HEADERS / "SmolLM2-135M-Instruct.Q4_1.header.gguf"))
    rows = synthesize_tensors(spec)
    assert data_bytes(assign_types(spec, rows, "IQ2_M")) == 83_803_392
    assert data_bytes(assign_types(spec, rows, "IQ3_XXS")) == 85_171_968


LLAMA3_8B = {
    "model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096,
    "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8,
    "vocab_size": 128256, "tie_word_embeddings": False,
}  # fmt: skip


def test_iq2_m_dense_llama() -> None:
    types = {t.name: Q(t.ggml_type) for t in build(LLAMA3_8B, "IQ2_M")}
    assert types["output.weight"] == Q.Q5_K
    assert types["token_embd.weight"] == Q.IQ3_S
    assert types["blk.0.attn_q.weight"] == Q.IQ2_S
    assert types["blk.0.attn_v.weight"] == Q.Q4_K  # grouped-query attention 4
    assert types["blk.0.attn_output.weight"] == Q.IQ3_S
    assert types["blk.3.ffn_down.weight"] == Q.IQ3_S  # the first eighth of the layers
    assert types["blk.4.ffn_down.weight"] == Q.IQ2_S
    assert types["blk.4.ffn_up.weight"] == Q.IQ2_S


def test_iq1_iq3_dense_llama() -> None:
    iq1 = {t.name: Q(t.ggml_type) for t in build(LLAMA3_8B, "IQ1_S")}
    assert iq1["token_embd.weight"] == Q.Q2_K
    assert iq1["blk.0.attn_output.weight"] == Q.IQ2_XXS
    assert iq1["blk.0.ffn_down.weight"] == Q.Q2_K
    assert iq1["blk.9.ffn_gate.weight"] == Q.IQ1_S
    iq3 = {t.name: Q(t.ggml_type) for t in build(LLAMA3_8B, "IQ3_XXS")}
    assert iq3["output.weight"] == Q.Q5_K
    assert iq3["blk.0.attn_q.weight"] == Q.IQ2_S
    assert iq3["blk.0.attn_k.weight"] == Q.IQ2_S
    assert iq3["blk.0.attn_output.weight"] == Q.IQ3_S
    assert iq3["blk.0.ffn_down.weight"] == Q.IQ3_XXS  # with an importance matrix: no bump
    xs = {t.name: Q(t.ggml_type) for t in build(LLAMA3_8B, "IQ3_XS")}
    assert xs["blk.3.ffn_up.weight"] == Q.IQ3_S
    assert xs["blk.4.ffn_up.weight"] == Q.IQ3_XXS  # the middle three quarters
    assert xs["blk.28.ffn_gate.weight"] == Q.IQ3_S
    m = {t.name: Q(t.ggml_type) for t in build(LLAMA3_8B, "IQ3_M")}
    assert m["output.weight"] == Q.Q6_K
    assert m["blk.0.attn_v.weight"] == m["blk.0.attn_output.weight"] == Q.Q4_K
    assert m["blk.3.ffn_down.weight"] == Q.Q4_K
    assert m["blk.4.ffn_down.weight"] == Q.IQ3_S


def test_iq2_m_moe_bumps() -> None:
    """qwen3.6-35b-a3b: 256 experts (attn_v Q4_K), a shared expert (ffn_down counted twice a
    layer, so the bump covers the first 40/16 = 2.5 layers)."""
    types = {t.name: Q(t.ggml_type).name for t in build(QWEN36_35B, "IQ2_M")}
    assert types["blk.3.attn_v.weight"] == "Q4_K"
    assert types["blk.0.attn_qkv.weight"] == "Q4_K"  # attn_qkv counts as attn_v
    assert types["blk.3.attn_k.weight"] == "IQ2_S"
    assert types["blk.0.ffn_down_exps.weight"] == "IQ3_S"
    assert types["blk.2.ffn_down_exps.weight"] == "IQ3_S"
    assert types["blk.2.ffn_down_shexp.weight"] == "IQ2_S"
    assert types["blk.3.ffn_down_exps.weight"] == "IQ2_S"
    assert types["blk.0.ffn_gate_inp.weight"] == "F32"
    mixtral = {
        **LLAMA3_8B,
        "model_type": "mixtral",
        "num_local_experts": 8,
        "num_experts_per_tok": 2,
    }
    eight = {t.name: Q(t.ggml_type) for t in build(mixtral, "IQ2_XXS")}
    assert eight["blk.0.attn_v.weight"] == Q.Q4_K
    assert eight["blk.0.attn_k.weight"] == Q.Q4_K
    assert eight["blk.0.attn_output.weight"] == Q.Q5_K
    assert eight["blk.0.ffn_down_exps.weight"] == Q.Q2_K
    assert eight["blk.4.ffn_down_exps.weight"] == Q.IQ2_XXS


def test_iq_falls_back_to_iq4_nl() -> None:
    """gpt-oss's 2880-wide rows: the i-quants take IQ4_NL, the output head Q8_0."""
    types = {t.name: Q(t.ggml_type) for t in build(GPT_OSS_20B, "IQ2_M")}
    assert types["blk.0.attn_q.weight"] == Q.IQ4_NL
    assert types["output.weight"] == Q.Q8_0
    assert types["blk.0.attn_output.weight"] == Q.IQ3_S  # 4096-wide rows


def test_gpt_oss_experts_stay_mxfp4_under_iq_presets() -> None:
    cfg = {**GPT_OSS_20B, "quantization_config": {"quant_method": "mxfp4"}}
    for name in ("IQ1_S", "IQ2_M", "IQ3_XXS", "IQ3_M"):
        types = {t.name: Q(t.ggml_type) for t in build(cfg, name)}
        assert types["blk.0.ffn_down_exps.weight"] == Q.MXFP4, name
        assert types["blk.0.ffn_up_exps.weight"] == Q.MXFP4, name
        # 32 experts, GQA 8: Q4_K, which falls back to Q5_0 on 2880-wide rows
        assert types["blk.0.attn_v.weight"] == Q.Q5_0, name


def test_iq_presets_order_by_size(qwen2_path: Path) -> None:
    spec = spec_of(load(qwen2_path))
    rows = synthesize_tensors(spec)
    order = ["IQ4_XS", "IQ3_M", "IQ3_S", "IQ3_XS", "IQ3_XXS", "IQ2_M", "IQ2_S", "IQ2_XS",
             "IQ2_XXS", "IQ1_M", "IQ1_S"]  # fmt: skip
    sizes = [data_bytes(assign_types(spec, rows, p)) for p in order]
    assert sizes == sorted(sizes, reverse=True)
    bpw = {
        p: 8 * s / n_params(assign_types(spec, rows, p)) for p, s in zip(order, sizes, strict=True)
    }
    assert bpw["IQ1_S"] < bpw["IQ2_XXS"] < bpw["IQ2_M"] < bpw["IQ3_XXS"] < bpw["IQ3_M"]
    assert bpw["IQ3_M"] < bpw["IQ4_XS"]


def test_iq_descriptions_state_bits_per_weight() -> None:
    assert PRESETS["IQ2_XXS"].description.startswith("2.06 bits/weight")
    assert PRESETS["IQ1_S"].description.startswith("1.56 bits/weight")
    assert "IQ2_S 2.56 bits/weight" in PRESETS["IQ2_M"].description
    for name in ("IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ3_XXS", "IQ3_XS"):
        assert PRESETS[name].imatrix
        assert "importance matrix" in PRESETS[name].description
    assert not PRESETS["IQ3_M"].imatrix
    assert preset("iq2_m") is PRESETS["IQ2_M"]


def test_size_iq2_m_cli(capsys: pytest.CaptureFixture[str]) -> None:
    from tokenwalk.cli import main

    assert main(["size", "qwen3.6-35b-a3b", "--quant", "IQ2_M", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["quant"] == "IQ2_M"
    assert 2.6 < out["bits_per_weight_data"] < 2.8


def test_size_quant_ladder_sweep(capsys: pytest.CaptureFixture[str]) -> None:
    from tokenwalk.cli import main

    args = ["size", "qwen3.6-35b-a3b", "--quant", "Q8_0,Q6_K,Q4_K_M,IQ2_M", "--json"]
    assert main(args) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert [r["quant"] for r in runs] == ["Q8_0", "Q6_K", "Q4_K_M", "IQ2_M"]
    sizes = [r["file_bytes"] for r in runs]
    assert sizes == sorted(sizes, reverse=True)


@pytest.mark.parametrize(
    ("name", "base"),
    [
        ("UD-Q4_K_XL", "Q4_K_M"),
        ("ud-q8_k_xl", "Q8_0"),
        ("UD-IQ3_XXS", "IQ3_XXS"),
        ("UD-Q2_K_XL", "Q2_K"),
    ],
)
def test_unsloth_dynamic_quants_are_sized_as_their_base_preset(name, base):
    from tokenwalk.model.quant import preset, ud_base, ud_note
    from tokenwalk.model.resolve import load_model

    assert ud_base(name) == base and preset(name).name == base
    assert base in ud_note(name) and "Unsloth" in ud_note(name)
    m = load_model("qwen3-8b", name).model
    assert m.quant == base
    assert m.file_bytes == load_model("qwen3-8b", base).model.file_bytes


def test_a_ud_name_without_a_base_is_still_unknown():
    from tokenwalk.errors import UnknownNameError
    from tokenwalk.model.quant import preset, ud_base

    assert ud_base("Q4_K_M") is None and ud_base("UD-Q9_K_XL") is None
    with pytest.raises(UnknownNameError):
        preset("UD-Q9_K_XL")


def test_the_cli_says_what_a_ud_quant_is_sized_as(capsys):
    from tokenwalk.cli import main

    assert main(["size", "qwen3-8b", "-q", "UD-Q4_K_XL"]) == 0
    cap = capsys.readouterr()
    assert (
        "Q4_K_M" in cap.out and "UD-Q4_K_XL is Unsloth's dynamic quant: sized as Q4_K_M" in cap.err
    )
