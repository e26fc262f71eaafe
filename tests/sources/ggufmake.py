"""Build header-only GGUF files for source tests: real layout, large tokenizer, no tensor data.

The file is then extended with `os.truncate` to the size its tensor table announces, so it is
sparse: a multi-GB model on disk that takes no space and whose tensor bytes are all zero.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType, GGUFWriter
from gguf.constants import GGML_QUANT_SIZES


def write_header_only(
    path: Path,
    *,
    n_tokens: int = 1000,
    n_merges: int = 0,
    huge_rows: int = 0,
    split: tuple[int, int] | None = None,
    sparse_size: bool = True,
) -> tuple[int, int]:
    """Write a GGUF header (a qwen2-like model with `n_tokens` tokens) and no tensor data.

    `n_merges` adds a tokenizer.ggml.merges array of that many "a b" pairs of token strings.
    `huge_rows` adds an embedding of 4096 x huge_rows Q8_0 to make the announced data large.
    `split` = (index, count) writes llama.cpp's split.no / split.count keys.
    With `sparse_size` the file is extended (sparse) to its full announced size.
    Returns (header bytes = data offset, full file size).
    """
    w = GGUFWriter(str(path), "qwen2")
    w.add_name("Sparse Test")
    w.add_block_count(1)
    w.add_context_length(4096)
    w.add_embedding_length(4096)
    w.add_head_count(32)
    w.add_head_count_kv(8)
    if split is not None:
        w.add_uint16("split.no", split[0])
        w.add_uint16("split.count", split[1])
    w.add_tokenizer_model("gpt2")
    w.add_token_list([f"tok_{i:08d}_abcdefgh" for i in range(n_tokens)])
    w.add_token_types([1] * n_tokens)
    if n_merges:
        w.add_token_merges([f"t{i % 9973:x} t{i:x}" for i in range(n_merges)])
    q8 = GGMLQuantizationType.Q8_0
    block, size = GGML_QUANT_SIZES[q8]
    shapes = [("blk.0.attn_q.weight", (4096, 4096))]
    if huge_rows:
        shapes.append(("token_embd.weight", (huge_rows, 4096)))
    for name, shape in shapes:
        n_bytes = shape[0] * shape[1] // block * size
        byte_shape = (shape[0], shape[1] // block * size)  # gguf-py takes quantized rows in bytes
        w.add_tensor_info(name, byte_shape, np.dtype(np.uint8), n_bytes, raw_dtype=q8)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    header_bytes = -(-path.stat().st_size // 32) * 32  # tensor data starts aligned
    total = header_bytes
    for _, shape in shapes:
        n = shape[0] * shape[1] // block * size
        total += -(-n // 32) * 32
    if sparse_size:
        os.truncate(path, total)
    return header_bytes, total
