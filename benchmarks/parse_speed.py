#!/usr/bin/env python3
"""How fast tokenwalk reads a big GGUF header, against the `gguf` package's GGUFReader.

Builds (with gguf.GGUFWriter, in a temp dir) a header-only file shaped like Qwen3.6-35B-A3B
Q4_K_M (architecture qwen35moe): 753 tensor infos (40 blocks, every 4th full attention, the
others Gated DeltaNet, 256 experts, plus one MTP block), a tokenizer of 248,320 token strings,
248,320 token types and 247,587 merges of realistic lengths, and an ~8 KB chat template. The
file is then extended sparsely (no disk used) to the size its header announces, because GGUFReader
maps the tensor data. Then it times:

  (a) `tokenwalk size FILE --json` end to end as a subprocess (best of 3 wall times);
  (b) tokenwalk's `read_header` in-process (best of 3);
  (c) `gguf.GGUFReader` on the same file (best of 3);

and reports peak memory: the subprocess's max RSS and tracemalloc's in-process peak. It also
checks (d) that reading a local file's header loads none of the modules only URLs need (urllib3,
ssl, truststore, http.client), which would add to every command's start.

It also times (e) reading a model config whose layer index list is 2,000,000 entries long, and
(f) sizing a model at every limit of the model checks.

Targets (issue tracker): (a) <= 0.5 s, (b) >= 20x faster than (c), peak memory < 150 MiB,
(d) none loaded, (e) and (f) < 1 s.

Usage: python benchmarks/parse_speed.py [--keep PATH]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
from gguf import GGUFReader, GGUFWriter
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

from tokenwalk.gguf.reader import read_header

Q4_K = GGMLQuantizationType.Q4_K
Q6_K = GGMLQuantizationType.Q6_K
F32 = GGMLQuantizationType.F32

N_VOCAB = 248_320
N_MERGES = 247_587
N_LAYER = 40  # plus one MTP block
N_EMBD = 2048
N_EXPERT = 256
N_FF_EXP = 512
N_HEAD, N_HEAD_KV, HEAD_DIM = 16, 2, 256
SSM_K_HEADS, SSM_V_HEADS, SSM_HEAD_DIM, SSM_CONV = 16, 32, 128, 4


def _tensors() -> list[tuple[str, tuple[int, ...], GGMLQuantizationType]]:
    """(name, ggml shape (ne0 first), type) for every tensor, llama.cpp's qwen35moe layout."""
    key_dim = SSM_K_HEADS * SSM_HEAD_DIM
    value_dim = SSM_V_HEADS * SSM_HEAD_DIM
    out: list[tuple[str, tuple[int, ...], GGMLQuantizationType]] = [
        ("token_embd.weight", (N_EMBD, N_VOCAB), Q4_K),
        ("output_norm.weight", (N_EMBD,), F32),
        ("output.weight", (N_EMBD, N_VOCAB), Q6_K),
    ]

    def attention(b: str) -> None:
        out.extend(
            [
                (f"{b}.attn_q.weight", (N_EMBD, HEAD_DIM * N_HEAD * 2), Q4_K),
                (f"{b}.attn_k.weight", (N_EMBD, HEAD_DIM * N_HEAD_KV), Q4_K),
                (f"{b}.attn_v.weight", (N_EMBD, HEAD_DIM * N_HEAD_KV), Q6_K),
                (f"{b}.attn_output.weight", (HEAD_DIM * N_HEAD, N_EMBD), Q4_K),
                (f"{b}.attn_q_norm.weight", (HEAD_DIM,), F32),
                (f"{b}.attn_k_norm.weight", (HEAD_DIM,), F32),
            ]
        )

    def ffn(b: str, il: int) -> None:
        down = Q6_K if il % 2 else Q4_K
        out.extend(
            [
                (f"{b}.ffn_gate_inp.weight", (N_EMBD, N_EXPERT), F32),
                (f"{b}.ffn_gate_exps.weight", (N_EMBD, N_FF_EXP, N_EXPERT), Q4_K),
                (f"{b}.ffn_up_exps.weight", (N_EMBD, N_FF_EXP, N_EXPERT), Q4_K),
                (f"{b}.ffn_down_exps.weight", (N_FF_EXP, N_EMBD, N_EXPERT), down),
                (f"{b}.ffn_gate_inp_shexp.weight", (N_EMBD,), F32),
                (f"{b}.ffn_gate_shexp.weight", (N_EMBD, N_FF_EXP), Q4_K),
                (f"{b}.ffn_up_shexp.weight", (N_EMBD, N_FF_EXP), Q4_K),
                (f"{b}.ffn_down_shexp.weight", (N_FF_EXP, N_EMBD), Q6_K),
            ]
        )

    for il in range(N_LAYER + 1):
        b = f"blk.{il}"
        out.append((f"{b}.attn_norm.weight", (N_EMBD,), F32))
        out.append((f"{b}.post_attention_norm.weight", (N_EMBD,), F32))
        if il == N_LAYER or (il + 1) % 4 == 0:
            attention(b)
        else:
            out.extend(
                [
                    (f"{b}.attn_qkv.weight", (N_EMBD, key_dim * 2 + value_dim), Q4_K),
                    (f"{b}.attn_gate.weight", (N_EMBD, value_dim), Q4_K),
                    (f"{b}.ssm_conv1d.weight", (SSM_CONV, key_dim * 2 + value_dim), F32),
                    (f"{b}.ssm_dt.bias", (SSM_V_HEADS,), F32),
                    (f"{b}.ssm_a", (SSM_V_HEADS,), F32),
                    (f"{b}.ssm_beta.weight", (N_EMBD, SSM_V_HEADS), F32),
                    (f"{b}.ssm_alpha.weight", (N_EMBD, SSM_V_HEADS), F32),
                    (f"{b}.ssm_norm.weight", (SSM_HEAD_DIM,), F32),
                    (f"{b}.ssm_out.weight", (value_dim, N_EMBD), Q4_K),
                ]
            )
        ffn(b, il)
        if il == N_LAYER:
            out.extend(
                [
                    (f"{b}.nextn.eh_proj.weight", (2 * N_EMBD, N_EMBD), Q4_K),
                    (f"{b}.nextn.enorm.weight", (N_EMBD,), F32),
                    (f"{b}.nextn.hnorm.weight", (N_EMBD,), F32),
                    (f"{b}.nextn.shared_head_norm.weight", (N_EMBD,), F32),
                ]
            )
    return out


def _words(rng: random.Random, n: int, mean_len: float) -> list[str]:
    """n distinct strings with a BPE-like length spread around `mean_len` characters."""
    alphabet = "abcdefghijklmnopqrstuvwxyzĠĊ0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    out = []
    for i in range(n):
        k = max(1, min(40, int(rng.expovariate(1 / mean_len)) + 1))
        out.append("".join(rng.choices(alphabet, k=k)) + f"{i:x}"[-2:])
    return out


def build(path: Path) -> None:
    rng = random.Random(36)
    w = GGUFWriter(path, "qwen35moe")
    w.add_type("model")
    w.add_name("Qwen3.6 35B A3B")
    w.add_size_label("35B-A3B")
    w.add_block_count(N_LAYER + 1)
    w.add_context_length(262_144)
    w.add_embedding_length(N_EMBD)
    w.add_feed_forward_length(0)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD_KV)
    w.add_key_length(HEAD_DIM)
    w.add_value_length(HEAD_DIM)
    w.add_rope_freq_base(10_000_000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_expert_count(N_EXPERT)
    w.add_expert_used_count(8)
    w.add_expert_feed_forward_length(N_FF_EXP)
    w.add_expert_shared_feed_forward_length(N_FF_EXP)
    w.add_uint32("qwen35moe.full_attention_interval", 4)
    w.add_uint32("qwen35moe.nextn_predict_layers", 1)
    w.add_uint32("qwen35moe.ssm.conv_kernel", SSM_CONV)
    w.add_uint32("qwen35moe.ssm.state_size", SSM_HEAD_DIM)
    w.add_uint32("qwen35moe.ssm.group_count", SSM_K_HEADS)
    w.add_uint32("qwen35moe.ssm.time_step_rank", SSM_V_HEADS)
    w.add_uint32("qwen35moe.ssm.inner_size", SSM_V_HEADS * SSM_HEAD_DIM)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen35")
    w.add_token_list(_words(rng, N_VOCAB, 5.5))
    w.add_token_types([1] * (N_VOCAB - 300) + [3] * 300)
    halves = _words(rng, 2 * N_MERGES, 3.5)
    w.add_token_merges([f"{halves[2 * i]} {halves[2 * i + 1]}" for i in range(N_MERGES)])
    w.add_eos_token_id(248_046)
    w.add_pad_token_id(248_044)
    w.add_bos_token_id(248_044)
    w.add_add_bos_token(False)
    template = "{%- for message in messages %}{{- '<|im_start|>' + message.role }}\n" * 130
    w.add_chat_template(template[:8192])
    w.add_quantization_version(2)
    w.add_file_type(15)
    for name, shape, qtype in _tensors():
        block, type_bytes = GGML_QUANT_SIZES[qtype]
        n = int(np.prod(shape))
        w.add_tensor_info(
            name,
            tuple(reversed(shape)),
            np.dtype(np.float32),
            n // block * type_bytes,
            raw_dtype=qtype,
        )
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()


def _best(fn, repeat: int = 3) -> float:  # noqa: ANN001
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def _read(path: Path) -> object:
    with path.open("rb") as fh:
        return read_header(fh, file_size=path.stat().st_size)


_URL_ONLY_MODULES = ("urllib3", "ssl", "truststore", "http.client")


def _url_modules_loaded(path: Path) -> list[str]:
    """The URL-only modules a fresh interpreter has loaded after reading `path`'s header."""
    code = (
        "import sys; from tokenwalk.sources import load_headers; load_headers(sys.argv[1]); "
        f"print(' '.join(m for m in {_URL_ONLY_MODULES!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True
    )
    return out.stdout.split()


def _cli() -> list[str] | None:
    exe = Path(sys.executable).parent / "tokenwalk"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("tokenwalk")
    return [found] if found else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keep", type=Path, help="also copy the built file here")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "qwen3.6-35b-a3b-shaped.header.gguf"
        t = time.perf_counter()
        build(path)
        print(
            f"built {path.name}: {path.stat().st_size / 1e6:.2f} MB "
            f"in {time.perf_counter() - t:.1f} s"
        )
        if args.keep:
            shutil.copy(path, args.keep)

        h = _read(path)
        # GGUFReader maps the tensor data and fails without it: extend the file, sparsely (no
        # disk used), to the size the header announces. Both readers then read the same file.
        os.truncate(path, h.expected_file_size)  # type: ignore[attr-defined]
        print(
            f"  {len(h.tensors)} tensors, {len(h.metadata)} keys, "  # type: ignore[attr-defined]
            f"{sum(t.n_elements for t in h.tensors) / 1e9:.2f} B params, "  # type: ignore[attr-defined]
            f"extended sparsely to {path.stat().st_size / 1e9:.1f} GB"
        )

        cli = _cli()
        if cli is not None:
            cmd = [*cli, "size", str(path), "--json"]
            what = "tokenwalk size FILE --json (subprocess)"
        else:
            code = "import sys; from tokenwalk.gguf.reader import read_header as r; "
            code += "f=open(sys.argv[1],'rb'); r(f)"
            cmd = [sys.executable, "-c", code, str(path)]
            what = "python -c read_header (subprocess; no tokenwalk CLI found)"

        def run_cli() -> None:
            res = subprocess.run(cmd, capture_output=True, env={**os.environ, "NO_COLOR": "1"})
            if res.returncode != 0:
                raise SystemExit(f"{what} failed:\n{res.stderr.decode()[-2000:]}")

        cli_s = _best(run_cli)
        # the interpreter's own start, which site-packages .pth files can inflate; a clean
        # virtual environment starts in ~10 ms
        bare_s = _best(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True))
        cli_rss_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024

        url_modules = _url_modules_loaded(path)

        ours_s = _best(lambda: _read(path))
        tracemalloc.start()
        _read(path)
        ours_peak_mib = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()

        theirs_s = _best(lambda: GGUFReader(path))
        tracemalloc.start()
        GGUFReader(path)
        theirs_peak_mib = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()

    ok = "ok" if cli_s <= 0.5 else "MISSED"
    print(
        f"(a) {what}: {cli_s:.3f} s wall, best of 3 "
        f"(target <= 0.5 s: {ok}); peak RSS {cli_rss_mib:.0f} MiB "
        f"(target < 150: {'ok' if cli_rss_mib < 150 else 'MISSED'})"
    )
    print(f"    of which the bare interpreter start ({sys.executable} -c pass): {bare_s:.3f} s")
    print(f"(b) read_header in-process: {ours_s:.3f} s; tracemalloc peak {ours_peak_mib:.1f} MiB")
    print(
        f"(c) gguf.GGUFReader:        {theirs_s:.3f} s; tracemalloc peak {theirs_peak_mib:.1f} MiB"
    )
    print(
        "(d) URL-only modules loaded by a local header read: "
        f"{' '.join(url_modules) or 'none'} (target none: {'MISSED' if url_modules else 'ok'})"
    )
    ratio = theirs_s / ours_s
    print(
        f"read_header is {ratio:.1f}x faster than GGUFReader "
        f"(target >= 20x: {'ok' if ratio >= 20 else 'MISSED'})"
    )
    limits_s = _limits_s()
    print(
        f"(f) a model at every limit (layers, width, vocabulary, context) sized and its KV "
        f"reported: {limits_s:.3f} s (target < 1 s: {'ok' if limits_s < 1.0 else 'MISSED'})"
    )
    long_s = _long_index_list_s()
    print(
        f"(e) a config whose full_attn_idxs lists 2,000,000 layers: {long_s:.3f} s "
        f"(target < 1 s: {'ok' if long_s < 1.0 else 'MISSED'}; a list searched per layer "
        "would be quadratic)"
    )


def _limits_s() -> float:
    """Seconds to size a llama-shaped model at every limit of `tokenwalk.model.spec.LIMITS`."""
    from tokenwalk.costs.kv import kv_report
    from tokenwalk.costs.size import size_report
    from tokenwalk.gguf.reader import LIMITS
    from tokenwalk.model.resolve import model_from_config

    cfg = {
        "model_type": "llama",
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "num_hidden_layers": LIMITS.max_layers,
        "hidden_size": LIMITS.max_width,
        "intermediate_size": LIMITS.max_width,
        "vocab_size": LIMITS.max_vocab,
        "max_position_embeddings": LIMITS.max_context,
    }
    start = time.perf_counter()
    model = model_from_config(cfg, "big", "Q8_0")
    size_report(model)
    kv_report(model, None)
    return time.perf_counter() - start


def _long_index_list_s() -> float:
    """Seconds to read an LFM2 config whose layer index list is 2,000,000 long (best of 3)."""
    from tokenwalk.catalog import find_model
    from tokenwalk.model.hf import spec_from_config

    cfg = {**find_model("lfm2-1.2b").config, "full_attn_idxs": list(range(2_000_000))}
    cfg.pop("layer_types", None)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        spec_from_config(cfg)
        best = min(best, time.perf_counter() - start)
    return best


if __name__ == "__main__":
    main()
