#!/usr/bin/env python3
"""Record the tensor types llama-quantize picks under each quant preset (tests/model/test_quant.py).

For each model and preset this runs

    llama-quantize --dry-run [--allow-requantize] [--imatrix M.imatrix.dat] MODEL PRESET 1

and reads each tensor's target type from its per-tensor log line (``... -> 0.27 MiB (iq2_s)``;
a tensor left as it is shows its own type). ``--dry-run`` picks every type exactly as a real run
does but writes no data, so it takes milliseconds.

The models are the real GGUF files given on the command line (a dense llama and a gemma3 in the
project's ground truth) and two small mixtures of experts this script writes with zeroed F16
weights, so that the MoE rules are checked too: a Mixtral-style llama with 8 experts (the
8-expert bumps) and a qwen2moe with 16 experts and a shared expert (two ``ffn_down`` tensors a
layer; grouped-query attention 4). llama-quantize requires an importance matrix for the IQ1, IQ2,
IQ3_XXS and IQ3_XS file types; the script writes one of ones (the legacy ``.dat`` layout) for
every 2-D and 3-D weight, which lets them run and, like any importance matrix, changes values but
not types. It is passed for those presets only, as a user must; the others run without one.

The output JSON holds, per model, the tensor names and shapes (ggml order) and, per preset, the
type of each tensor in the same order and llama-quantize's reported size in MiB.

Usage:
  python scripts/quant_types.py --llama-quantize /path/to/llama-quantize \\
      [--out tests/data/llama-quantize/types.json] MODEL.gguf [MORE.gguf ...]
"""

from __future__ import annotations

import argparse
import json
import re
import struct
import subprocess
import tempfile
from pathlib import Path

import numpy as np
from gguf import GGUFReader, GGUFWriter

PRESETS = (
    "IQ1_S IQ1_M IQ2_XXS IQ2_XS IQ2_S IQ2_M IQ3_XXS IQ3_XS IQ3_S IQ3_M TQ1_0 TQ2_0 IQ4_XS Q4_K_M"
).split()
NEEDS_IMATRIX = {"IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ3_XXS", "IQ3_XS"}
LINE = re.compile(
    r"^\[\s*\d+/\s*\d+\]\s+(\S+)\s+- \[([\d,\s]+)\], type =\s+(\S+), .*?(?:\((\w+)\))?$"
)

# the HF config each written MoE corresponds to, for tokenwalk to build its ArchSpec from
# (qwen2moe is not modelled by tokenwalk; qwen3_moe has the same hyperparameters that matter)
MOE_CONFIGS = {
    "moe8-llama": {
        "model_type": "mixtral", "num_hidden_layers": 16, "hidden_size": 256,
        "intermediate_size": 512, "num_attention_heads": 8, "num_key_value_heads": 8,
        "vocab_size": 512, "num_local_experts": 8, "num_experts_per_tok": 2,
    },
    "moe16-qwen2moe": {
        "model_type": "qwen3_moe", "num_hidden_layers": 16, "hidden_size": 256,
        "intermediate_size": 256, "moe_intermediate_size": 256, "num_attention_heads": 8,
        "num_key_value_heads": 2, "head_dim": 32, "vocab_size": 512, "num_experts": 16,
        "num_experts_per_tok": 2, "tie_word_embeddings": False,
    },
}  # fmt: skip


def write_moe(path: Path, arch: str, n_expert: int, n_head_kv: int, shexp: bool) -> None:
    """A 16-layer MoE with 256-wide rows and zeroed F16 weights (norms and router F32)."""
    n_layer, n_embd, n_ff, n_head, vocab = 16, 256, 512 if not shexp else 256, 8, 512
    w = GGUFWriter(str(path), arch)
    w.add_block_count(n_layer)
    w.add_context_length(2048)
    w.add_embedding_length(n_embd)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_expert_count(n_expert)
    w.add_expert_used_count(2)
    w.add_rope_dimension_count(n_embd // n_head)
    w.add_vocab_size(vocab)
    w.add_file_type(1)
    if shexp:
        w.add_expert_feed_forward_length(n_ff)
        w.add_expert_shared_feed_forward_length(n_ff)

    def f16(*shape: int) -> np.ndarray:
        return np.zeros(shape, dtype=np.float16)

    def f32(*shape: int) -> np.ndarray:
        return np.ones(shape, dtype=np.float32)

    hd = n_embd // n_head
    w.add_tensor("token_embd.weight", f16(vocab, n_embd))
    w.add_tensor("output.weight", f16(vocab, n_embd))
    w.add_tensor("output_norm.weight", f32(n_embd))
    for i in range(n_layer):
        b = f"blk.{i}."
        w.add_tensor(b + "attn_norm.weight", f32(n_embd))
        w.add_tensor(b + "attn_q.weight", f16(n_head * hd, n_embd))
        w.add_tensor(b + "attn_k.weight", f16(n_head_kv * hd, n_embd))
        w.add_tensor(b + "attn_v.weight", f16(n_head_kv * hd, n_embd))
        w.add_tensor(b + "attn_output.weight", f16(n_embd, n_head * hd))
        w.add_tensor(b + "ffn_norm.weight", f32(n_embd))
        w.add_tensor(b + "ffn_gate_inp.weight", f32(n_expert, n_embd))
        w.add_tensor(b + "ffn_gate_exps.weight", f16(n_expert, n_ff, n_embd))
        w.add_tensor(b + "ffn_up_exps.weight", f16(n_expert, n_ff, n_embd))
        w.add_tensor(b + "ffn_down_exps.weight", f16(n_expert, n_embd, n_ff))
        if shexp:
            w.add_tensor(b + "ffn_gate_inp_shexp.weight", f32(n_embd))
            w.add_tensor(b + "ffn_gate_shexp.weight", f16(n_ff, n_embd))
            w.add_tensor(b + "ffn_up_shexp.weight", f16(n_ff, n_embd))
            w.add_tensor(b + "ffn_down_shexp.weight", f16(n_embd, n_ff))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_imatrix(model: Path, out: Path) -> None:
    """An importance matrix of ones for every weight, in llama-imatrix's legacy layout."""
    entries = []
    for t in GGUFReader(str(model)).tensors:
        shape = [int(x) for x in t.shape]
        if len(shape) >= 2 and t.name.endswith(".weight"):
            entries.append((t.name, shape[0] * (shape[2] if len(shape) > 2 else 1)))
    with out.open("wb") as f:
        f.write(struct.pack("<i", len(entries)))
        for name, nval in entries:
            raw = name.encode()
            f.write(struct.pack("<i", len(raw)) + raw + struct.pack("<ii", 1, nval))
            f.write(struct.pack(f"<{nval}f", *([1.0] * nval)))
        f.write(struct.pack("<ii", 1, 4) + b"ones")


def dry_run(quantize: str, model: Path, preset: str, imatrix: Path) -> tuple[list, list, float]:
    cmd = [quantize, "--dry-run", "--allow-requantize"]
    if preset in NEEDS_IMATRIX:
        cmd += ["--imatrix", str(imatrix)]
    log = subprocess.run(
        [*cmd, str(model), preset, "1"], capture_output=True, text=True, check=True
    )
    text = log.stdout + log.stderr
    tensors, types = [], []
    for line in text.splitlines():
        m = LINE.match(line.rstrip())
        if m:
            shape = [int(x) for x in m.group(2).split(",")]
            while len(shape) > 1 and shape[-1] == 1:
                shape.pop()
            tensors.append([m.group(1), shape])
            types.append((m.group(4) or m.group(3)).upper())
    mib = float(re.search(r"quant size\s+=\s+([\d.]+) MiB", text).group(1))
    return tensors, types, mib


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llama-quantize", required=True)
    ap.add_argument("--out", type=Path, default=Path("tests/data/llama-quantize/types.json"))
    ap.add_argument("models", nargs="+", type=Path)
    args = ap.parse_args()
    result: dict = {
        "source": "scripts/quant_types.py: llama-quantize --dry-run of llama.cpp 0c1e570 "
        "(llama-cpp-python 0.3.36 vendor/llama.cpp), one thread",
        "models": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        models = list(args.models)
        write_moe(work / "moe8-llama.gguf", "llama", 8, 8, shexp=False)
        write_moe(work / "moe16-qwen2moe.gguf", "qwen2moe", 16, 2, shexp=True)
        models += [work / "moe8-llama.gguf", work / "moe16-qwen2moe.gguf"]
        for model in models:
            imatrix = work / f"{model.stem}.imatrix.dat"
            write_imatrix(model, imatrix)
            entry: dict = {"config": MOE_CONFIGS.get(model.stem), "presets": {}}
            for preset in PRESETS:
                tensors, types, mib = dry_run(args.llama_quantize, model, preset, imatrix)
                entry["tensors"] = tensors
                entry["presets"][preset] = {"quant_size_mib": mib, "types": " ".join(types)}
            result["models"][model.stem] = entry
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
