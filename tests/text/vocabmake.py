"""Test GGUF files that hold a real vocabulary: the tokenizer of one of llama.cpp's vocabulary
files (tests/fixtures/vocab, cut from llama.cpp's models/ggml-vocab-*.gguf) joined to the
architecture and tensor table of a real header fixture, written with gguf's GGUFWriter."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import numpy as np
from gguf import GGUFValueType, GGUFWriter
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

from tokenwalk.gguf.reader import Header, read_header

VOCAB_DIR = Path(__file__).parents[1] / "fixtures" / "vocab"

# A ChatML-like template for `model_with_vocab(..., template=CHATML)`, a long document (7 tokens
# a sentence with GPT-2's vocabulary) and a four-message chat that quotes it, for the CLI tests
# that count a prompt (tests/cli/test_tokens_cli.py, tests/render/widths.py).
CHATML = (
    "{% for m in messages %}<|endoftext|>{{ m.role }}\n{{ m.content }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|endoftext|>assistant\n{% endif %}"
)
DOC = ("The patient was seen on Monday. " * 200).rstrip()
CHAT = [
    {"role": "system", "content": "You help clinicians. " * 100},
    {"role": "user", "content": DOC},
    {"role": "assistant", "content": "Seen on Monday."},
    {"role": "user", "content": "When was the patient seen?"},
]


def read_vocab_file(path: Path) -> Header:
    """The header of a vocabulary file, gzipped (.gguf.gz) or not, with every token kept."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        return read_header(fh, keep_tokens=True)


def _vtype(key: str, v: Any) -> tuple[GGUFValueType, GGUFValueType | None]:
    if isinstance(v, bool):
        return GGUFValueType.BOOL, None
    if isinstance(v, int):
        return (GGUFValueType.INT32 if v < 0 else GGUFValueType.UINT32), None
    if isinstance(v, float):
        return GGUFValueType.FLOAT32, None
    if isinstance(v, str):
        return GGUFValueType.STRING, None
    if isinstance(v, list):
        first = v[0] if v else ""
        if isinstance(first, str):
            return GGUFValueType.ARRAY, GGUFValueType.STRING
        if isinstance(first, float) or key.endswith("scores"):
            return GGUFValueType.ARRAY, GGUFValueType.FLOAT32
        return GGUFValueType.ARRAY, GGUFValueType.INT32
    raise TypeError(f"{key}: {type(v).__name__}")


def model_with_vocab(
    model_header: Path, vocab: Path, out: Path, *, template: str | None = None
) -> Path:
    """Write `out`: the architecture and tensor table of `model_header` with the tokenizer of
    `vocab` (and `template` as its chat template when given)."""
    with open(model_header, "rb") as fh:
        model = read_header(fh)
    voc = read_vocab_file(vocab)
    arch = model.architecture or "llama"
    w = GGUFWriter(str(out), arch)
    for key, v in model.metadata.items():
        if key.startswith(("tokenizer.", "general.architecture", "general.alignment")):
            continue
        if not isinstance(v, (bool, int, float, str, list)) or (isinstance(v, list) and not v):
            continue
        vt, sub = _vtype(key, v)
        w.add_key_value(key, v, vt, sub)
    for key, v in voc.metadata.items():
        if not key.startswith("tokenizer.") or key == "tokenizer.chat_template":
            continue
        if not isinstance(v, (bool, int, float, str, list)):
            continue
        vt, sub = _vtype(key, v)
        w.add_key_value(key, v, vt, sub)
    chat = template if template is not None else voc.metadata.get("tokenizer.chat_template")
    if isinstance(chat, str):
        w.add_key_value("tokenizer.chat_template", chat, GGUFValueType.STRING)
    for t in model.tensors:
        qtype = GGMLQuantizationType(t.ggml_type)
        block, size = GGML_QUANT_SIZES[qtype]
        shape = tuple(reversed(t.shape))
        if qtype in (GGMLQuantizationType.F32,):
            w.add_tensor_info(t.name, shape, np.dtype(np.float32), t.n_bytes)
        elif qtype is GGMLQuantizationType.F16:
            w.add_tensor_info(t.name, shape, np.dtype(np.float16), t.n_bytes)
        else:
            byte_shape = (*shape[:-1], shape[-1] // block * size)
            w.add_tensor_info(t.name, byte_shape, np.dtype(np.uint8), t.n_bytes, raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    return out
