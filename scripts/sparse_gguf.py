"""A GGUF of the right size without its tensor data: the header written by gguf's writer, the
file then extended (sparse, zeros) to where its data would end. llama.cpp's tools read such a
file as a model of zeros: `llama-fit-params` sizes it, `llama-quantize` and `llama-bench` run it.
Used by scripts/fit_params_header.py and scripts/cpu_kernels.py."""

from __future__ import annotations

import os

import numpy as np
from gguf import GGMLQuantizationType, GGUFWriter
from gguf.constants import GGML_QUANT_SIZES

ALIGN = 32  # GGUF's default general.alignment


def _up(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def add_tensor(
    w: GGUFWriter, name: str, np_shape: tuple[int, ...], qtype: GGMLQuantizationType
) -> int:
    """Add the info of a tensor of `qtype` (`np_shape`: numpy order, the row last) with no data;
    return the bytes its data takes in the file, padded to ALIGN."""
    block, size = GGML_QUANT_SIZES[qtype]
    raw = (*np_shape[:-1], np_shape[-1] // block * size)
    n_bytes = int(np.prod(raw))
    w.add_tensor_info(name, raw, np.dtype(np.uint8), n_bytes, raw_dtype=qtype)
    return _up(n_bytes)


def finish(w: GGUFWriter, out: str | os.PathLike[str], data_bytes: int) -> int:
    """Write the header, metadata and tensor infos, then extend the file to its full size
    (header padded to ALIGN + `data_bytes`). Returns that size in bytes."""
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    total = _up(os.path.getsize(out)) + data_bytes
    os.truncate(out, total)
    return total
