"""docs/json.md: every command's `--json` keys, their types, units and meanings.

`python scripts/json_doc.py` runs each command of COMMANDS with --json, lists the keys of its
answer (recursively: `a.b` for a nested key, `a[].b` for a key of the objects of list `a`) and
writes docs/json.md, taking each key's meaning from GLOSSARY. A key means one thing wherever it
appears, so the glossary is by key name; OVERRIDES adds what a key means in one place where the
place says more (the `flops` of one chunk).

The page is the contract: tests/test_json_doc.py runs the same commands and fails when their
keys (or the JSON type of a value) differ from what the page lists, so a key added or renamed
without the page fails the suite. Regenerate the page, read the diff, commit both.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "json.md"

M = "rtx-4090"
# command -> argv (after `tokenwalk`, before --json); every run must exit 0 or 1
COMMANDS: dict[str, list[str]] = {
    "size": ["size", "qwen3-0.6b"],
    "kv": ["kv", "qwen3-0.6b", "--ctx", "8192"],
    "models": ["models", "qwen3-0.6b"],
    "machines": ["machines", M],
    "decode": ["decode", "qwen3-0.6b", "-m", M, "--ctx", "4096"],
    "decode rpc": [
        "decode",
        "qwen3-0.6b",
        "-m",
        "rtx-4090+rpc:rtx-3090",
        "--rpc-link-gbs",
        "1.25",
        "--ctx",
        "4096",
    ],
    "prefill": ["prefill", "qwen3-0.6b", "-m", M, "--prompt", "1500", "--cached", "500"],
    "budget": ["budget", "qwen3-0.6b", "-m", M, "--ctx", "8192"],
    "trace": ["trace", "qwen3-0.6b", "-m", M, "--prompt", "1000", "--output", "20"],
    "spec": ["spec", "qwen3-8b", "--draft", "qwen3-0.6b", "-m", M],
    # a machine without a memory size shows which keys may be null
    "compare": ["compare", "qwen3-0.6b", "-m", f"radeon-860m,{M},radeon-880m", "-p", "1000"],
    "models --fits": ["models", "qwen3-0", "--fits", M],
    "tokens": [
        "tokens",
        "tests/fixtures/vocab/ggml-vocab-phi-3.gguf",
        "--chat",
        "docs/examples/clinical-chat.json",
    ],
    "trace --chat": ["trace", "qwen3-0.6b", "-m", M, "--chat", "docs/examples/clinical-chat.json"],
    "serve": [
        "serve",
        "qwen3-0.6b",
        "-m",
        M,
        "--prompt",
        "1000",
        "--output",
        "100",
        "--users",
        "4",
        "--rate",
        "1",
        "--requests",
        "20",
    ],
    "serve --engine vllm": ["serve", "qwen3-0.6b", "-m", M, "--engine", "vllm", "--prompt", "1000"],
    "sweep": ["prefill", "qwen3-0.6b", "-m", M, "--prompt", "512,2k"],
    "calibrate": ["calibrate"],
    "calibrate --from": [
        "calibrate",
        "--machine",
        "apple-m1-max",
        "--from",
        "{bench}",
        "--dry-run",
    ],
    # what probe detects depends on the machine it runs on: the page shows it on recorded
    # sources (an AMD workstation, tests/probe/fixtures), with a real, small measurement
    "probe": ["probe", "--memory-budget", "0.15", "--repeats", "2"],
}

# Objects whose keys are names from data (a group, a machine, a setting): one placeholder each.
PLACEHOLDERS: dict[str, dict[str, str]] = {
    "budget": {"settings": "<name>"},
    "sweep": {"rows[].inputs": "<option>", "rows[].values": "<column>"},
    "spec": {"budget.settings": "<name>"},
    "calibrate": {
        "factors": "<level>",
        "factors.<level>": "<group>",
        "group_fits": "<kind/backend>",
        "machine_fits": "<machine>",
    },
}

# One llama-bench run, as `llama-bench -o json` writes it (Llama 2 7B Q4_0 on an M1 Max).
BENCH = [
    {
        "model_filename": "models/llama-2-7b.Q4_0.gguf",
        "model_type": "llama 7B Q4_0",
        "model_size": 3825065984,
        "model_n_params": 6738415616,
        "n_ubatch": 512,
        "n_prompt": 512,
        "n_gen": 0,
        "n_depth": 0,
        "avg_ts": 530.06,
        "backends": "Metal,BLAS",
    },
    {
        "model_filename": "models/llama-2-7b.Q4_0.gguf",
        "model_type": "llama 7B Q4_0",
        "model_size": 3825065984,
        "model_n_params": 6738415616,
        "n_ubatch": 512,
        "n_prompt": 0,
        "n_gen": 128,
        "n_depth": 0,
        "avg_ts": 61.19,
        "backends": "Metal,BLAS",
    },
]

INTRO = """\
# JSON for scripts

Every command takes `--json` and prints the same result object its table shows, as one JSON
object on stdout (warnings go to stderr). This page lists every key of every command, checked
against the real output by the test suite (`tests/test_json_doc.py`): a key that is added or
renamed without this page fails the tests. Regenerate it with `python scripts/json_doc.py`.

Conventions, the same in every command:

- **A key means one thing everywhere.** `kv_bytes` is always the KV cache allocated, `cache_bytes`
  always KV plus recurrent state, `overhead_s` always a pass's overhead time and
  `overhead_per_layer_s` the fitted parameter behind it.
- **Units are in the names**: `_bytes` bytes, `_s` seconds, `_tok_s` tokens per second, `_gbs`
  decimal GB/s (1e9 bytes a second), `_tflops` 1e12 FLOP/s, `_pct` percent, `ctx` and `_tokens`
  tokens. Bytes are decimal where printed in GB (1e9); memory capacities are read in the
  vendor's unit (GiB) and given here in bytes.
- **Bytes and parameter counts are integers** (rounded where they are expected values, as a
  mixture of experts' share of weights read). Times, rates and ratios are floats.
- **Counts start with `n_`** (`n_layers`, `n_chunks`, `n_rows`); a key without it that holds a
  list holds the objects themselves (`chunks`, `phases`).
- A path `a.b` is key `b` of the object under `a`; `a[].b` is key `b` of each object of the list
  `a`; `<name>` stands for keys that are names from data (a setting, a machine, a fit group).
- Types are JSON's: `int`, `float`, `str`, `bool`, `object`, `list[...]`; `| null` where the key
  may be null. Keys are always present, null or not.

Exit codes and errors are in the README: an error prints one line on stderr and no JSON.
"""

SECTION_NOTES: dict[str, str] = {
    "size": "`tokenwalk size MODEL --json`: how big a model is ([size.md](size.md)).",
    "kv": "`tokenwalk kv MODEL --json`: the memory a context takes ([kv.md](kv.md)).",
    "models": "`tokenwalk models --json`: the model catalogue ([models.md](models.md)).",
    "machines": "`tokenwalk machines --json`: the machine catalogue ([machines.md](machines.md)).",
    "decode": "`tokenwalk decode MODEL -m MACHINE --json`: one decoding step "
    "([decode.md](decode.md)). `fit` and `memory` are the objects described under "
    "[Shared objects](#shared-objects).",
    "decode rpc": "`tokenwalk decode MODEL -m rtx-4090+rpc:rtx-3090 --rpc-link-gbs GB/s --json`: "
    "the same answer on a system with a card in another box, reached over llama.cpp's RPC "
    "([offload.md](offload.md#cards-in-another-box-rpc)); `split.rpc` holds the network's terms "
    "([rpc](#rpc)).",
    "prefill": "`tokenwalk prefill MODEL -m MACHINE --prompt N --json`: the prompt in chunks "
    "([prefill.md](prefill.md)).",
    "budget": "`tokenwalk budget MODEL... -m MACHINE --json`: does it fit "
    "([budget.md](budget.md)).",
    "trace": "`tokenwalk trace MODEL -m MACHINE --prompt N --json`: one request as a timeline "
    "([trace.md](trace.md)).",
    "spec": "`tokenwalk spec TARGET --draft DRAFT -m MACHINE --json`: speculative decoding "
    "([spec.md](spec.md)). `budget` is the answer of `budget` for target and draft together.",
    "compare": "`tokenwalk compare MODEL... -m A,B --json`: one row per model and machine, "
    "each number as `budget`, `decode` and `trace` answer it ([compare.md](compare.md)).",
    "models --fits": "`tokenwalk models --fits MACHINE --json`: the catalogue models on one "
    "machine, those that fit first ([models.md](models.md)).",
    "tokens": "`tokenwalk tokens MODEL FILE --json` (or `--chat FILE`): a text or a "
    "conversation counted with the model's tokenizer ([prompts.md](prompts.md)).",
    "trace --chat": "`tokenwalk trace MODEL -m MACHINE --chat FILE --json`, for a conversation "
    "of several calls: each call and the session ([prompts.md](prompts.md)).",
    "serve": "`tokenwalk serve MODEL -m MACHINE --prompt N --users B --json`: several users on "
    "one box, llama-server's slots; with `--rate`, `simulation` holds the simulated server "
    "([serve.md](serve.md)).",
    "serve --engine vllm": "`tokenwalk serve MODEL -m GPU --engine vllm --prompt N --json`: the "
    "same answer for vLLM on one GPU; `vllm` holds its start-up memory accounting "
    "([serve.md](serve.md#vllm)).",
    "sweep": "`tokenwalk prefill MODEL -m MACHINE --prompt 512,2k --json`, or any command with "
    "an option given a list: one row per run ([sweeps.md](sweeps.md)). `runs` holds each run's "
    "whole answer, the same as that run's own `--json` (here `prefill`'s).",
    "calibrate": "`tokenwalk calibrate --json`: the refit of the shipped defaults "
    "([calibrate.md](calibrate.md)).",
    "calibrate --from": "`tokenwalk calibrate --machine M --from RUNS.json --json`: one "
    "machine fitted to its llama-bench runs.",
    "probe": "`tokenwalk probe --json`: this machine, described, measured and written as a "
    "machine entry ([probe.md](probe.md)). Shown here on the recorded sources of an AMD "
    "workstation (`tests/probe/fixtures`): an RX 7900 XTX that fits a catalogue entry, so "
    "`entry` is that GPU's; a CPU machine's entry has the keys of a `cpu` machine instead.",
}

# Objects that several commands share, documented once; a row whose type is `[name](#name)`
# stands for every key of that object under its own key.
SHARED = {
    "fit": ("decode", "fit"),
    "memory": ("decode", "memory"),
    "split": ("decode", "split"),
    "rpc": ("decode rpc", "split.rpc"),
    "energy": ("decode", "energy"),
}
SHARED_NOTES = {
    "energy": "`energy` in `decode`, `prefill`, `trace` and `spec`: power x time and its price "
    "([cost.md](cost.md)); a step of every stream in `decode`, the computed prompt in `prefill`, "
    "the request (load excluded) in `trace` and in each row of `compare`, the calls (loads and "
    "gaps excluded) in `trace --chat`, one token in `spec`. The energy keys are null where "
    "the machine has no power figure and --watts is not given; the price keys where no price is.",
    "split": "`split` in `decode` and `prefill` on a discrete card and its host (null on one pool "
    "of memory).",
    "rpc": "`split.rpc` in `decode` and `prefill` where a card is in another box (`rpc:NAME`; "
    "null otherwise): what llama.cpp's RPC backend sends over the network, for a decode step or "
    "the whole prefill, and once at load ([offload.md](offload.md#cards-in-another-box-rpc)).",
}
# objects that are null on some machines (split: one pool of memory; rpc: no card over RPC)
NULLABLE_LINKS = {"split", "rpc"}
LINKS = {
    "decode": {"fit": "fit", "memory": "memory", "split": "split", "energy": "energy"},
    "decode rpc": {"fit": "fit", "memory": "memory", "split": "split", "energy": "energy"},
    "split": {"rpc": "rpc", "host_fit": "fit"},
    "prefill": {"fit": "fit", "memory": "memory", "split": "split", "energy": "energy"},
    "trace": {"memory": "memory", "energy": "energy"},
    "serve": {"memory": "memory"},
    "serve --engine vllm": {"memory": "memory"},
    "trace --chat": {"memory": "memory", "energy": "energy"},
    "spec": {"memory": "memory", "budget": "budget", "energy": "energy"},
    "compare": {"rows[].energy": "energy"},
    "sweep": {"runs": "prefill"},
}

B, S, T, TS = "bytes", "s", "tokens", "tok/s"
# key -> (type where the output alone cannot tell it (a key that may be null), unit, meaning)
GLOSSARY: dict[str, tuple[str | None, str, str]] = {
    # serve (costs/serve.py, costs/vllm.py)
    "engine": (None, "", "the server: llama.cpp (llama-server) or vllm"),
    "users": (None, "users", "sequences writing at once: a step decodes a token of each"),
    "slots": (None, "slots", "llama-server -np (vLLM: max_num_seqs): requests held at once"),
    "ctx_per_user": (None, T, "cells of the cache one user may hold"),
    "kv_unified": (None, "", "one cache for all slots (-kvu), every query attending to all cells"),
    "batch": (None, T, "tokens one server step takes at most (llama.cpp -b)"),
    "engine_factor": (None, "x", "step times are the pass model's divided by it (1: llama.cpp)"),
    "step_s": (None, S, "one step: a token for each of the users, each at its own depth"),
    "user_tok_s": (None, TS, "each user's speed: 1 / step_s"),
    "ttft_alone_s": (None, S, "time to first token of a prompt read with no one else writing"),
    "ttft_busy_s": (None, S, "the same prompt read while users - 1 others write"),
    "user_tok_s_while_reading": (None, TS, "the others' speed while that prompt is read"),
    "min_tok_s": (None, TS, "the speed each user should get (--min-tok-s)"),
    "users_at_min_tok_s": (None, "users", "the most users who each get min_tok_s"),
    "compute_bound_users": ("int | null", "users", "the fewest users whose step is compute-bound"),
    "max_users_fit": ("int | null", "users", "the most users whose cache fits (null: no size)"),
    "by_users": (None, "", "the step at other numbers of users: what --chart draws"),
    "simulation": ("object | null", "", "the simulated server under --rate (null: no --rate)"),
    "rate_rps": (None, "1/s", "requests arriving a second (Poisson)"),
    "n_requests": (None, "requests", "requests simulated"),
    "seed": (None, "", "seed of the arrivals"),
    "ttft_median_s": (None, S, "time to first token, median, the wait for a slot included"),
    "ttft_p95_s": (None, S, "time to first token, 95th percentile"),
    "user_tok_s_median": (None, TS, "a request's output tokens after the first / time, median"),
    "user_tok_s_p95": (None, TS, "the speed 95% of requests reach (5th percentile)"),
    "wait_median_s": (None, S, "arrival to a free slot, median"),
    "wait_p95_s": (None, S, "arrival to a free slot, 95th percentile"),
    "queue_mean": (None, "requests", "requests waiting for a slot, mean over time"),
    "queue_max": (None, "requests", "requests waiting for a slot, most"),
    "busy_slots_mean": (None, "slots", "slots holding a request, mean over time"),
    "served_rps": (None, "1/s", "requests finished a second"),
    "overloaded": (None, "", "requests arrive faster than the server ends them"),
    "vllm": ("object | null", "", "vLLM's start-up memory accounting (null: llama.cpp)"),
    "gpu_bytes": (None, B, "the card's memory"),
    "gpu_memory_utilization": (None, "share", "the share of the card vLLM takes"),
    "requested_bytes": (None, B, "gpu_memory_utilization x gpu_bytes"),
    "checkpoint_bytes": (None, B, "the weights in the checkpoint's dtype"),
    "activation_bytes": (None, B, "the activation peak of a pass of max_num_batched_tokens"),
    "non_torch_bytes": (None, B, "memory outside PyTorch (CUDA context, workspaces)"),
    "cuda_graph_bytes": (None, B, "CUDA graphs captured for the decode batch sizes"),
    "kv_available_bytes": (None, B, "what is left for the KV cache"),
    "block_tokens": (None, T, "tokens of one KV block"),
    "kv_blocks": (None, "blocks", "KV blocks allocated"),
    "kv_tokens": (None, T, 'block_tokens x kv_blocks: "GPU KV cache size"'),
    "max_model_len": (None, T, "tokens per request the concurrency counts"),
    "max_concurrency": (None, "x", "kv_tokens / max_model_len"),
    "max_num_seqs": (None, "sequences", "sequences vLLM runs at once"),
    "max_num_batched_tokens": (None, T, "tokens of one scheduler step, the profiled pass"),
    "lines": (None, "", "the start-up lines as vLLM prints them"),
    # energy and price (costs/energy.py)
    "energy": (None, "", "power x time of the answer, and its price"),
    "power_w": ("float | null", "W", "power while working: device_w + host_w (or --watts)"),
    "device_w": ("float | null", "W", "board or package power of the cards or the machine"),
    "host_w": (None, "W", "share of the host CPU's power counted beside a card (0: one pool)"),
    "power_from": (None, "", "where the watts come from, or what to give"),
    "upper_bound": (None, "", "true: full board power, which decode does not reach"),
    "energy_j": ("float | null", "J", "power_w x time_s"),
    "energy_wh": ("float | null", "Wh", "energy_j / 3600"),
    "power_source": ("str | null", "", "where power_w comes from"),
    "j_per_token": ("float | null", "J", "energy_j / tokens"),
    "wh_per_million_tokens": ("float | null", "Wh", "energy_wh x 1e6 / tokens"),
    "price_per_kwh": ("float | null", "price/kWh", "--kwh-price"),
    "price_per_hour": ("float | null", "price/h", "--price-per-hour"),
    "currency": ("str | null", "", "--currency: the label of the prices"),
    "cost": (
        "float | null",
        "price",
        "energy_wh / 1000 x price_per_kwh, or time_s / 3600 x price_per_hour",
    ),
    "cost_per_million_tokens": ("float | null", "price", "cost x 1e6 / tokens"),
    # a discrete card and its host (costs/offload.py, costs/split.py)
    "split": (
        None,
        "",
        "a discrete card and its host: where the model sits and each device's part of the time",
    ),
    "system": (None, "", "the cards, by name"),
    "host": (None, "", "which host, and whether it was assumed"),
    "link": (None, "", "the card-to-host link: PCIe generation and lanes, GB/s"),
    "placement": (
        None,
        "",
        "llama.cpp flags that place the model so (-ngl, --cpu-moe, --n-cpu-moe, -ot, -ts), "
        'shell-quoted; each model\'s, separated by "; "',
    ),
    "placement_note": (
        None,
        "",
        'what the -ot overrides keep where, in words ("" without any)',
    ),
    "gpu_share": (
        None,
        "share",
        "share of the bytes a step reads that sit on a card (not the same as `split`: a step "
        "reads only the experts it routes to)",
    ),
    "parts": (
        None,
        "",
        "each device's part of a step (decode) or of the whole prefill; empty when the model "
        "sits whole on one card",
    ),
    "device": (None, "", "machine slug of a card or the host, or `link`"),
    "weight_bytes": (None, "bytes", "weights it reads (op offload: copied over the link)"),
    "how": (
        None,
        "",
        "how the part runs (on the CPU, copied over the link, hidden-state transfers)",
    ),
    "rpc": (None, "", "the network to cards in another box (null: none)"),
    "host_fit": (
        "object | null",
        "",
        "the efficiencies of the host's CPU where it does a part of the work (null otherwise)",
    ),
    "cards": (None, "", "the cards reached over RPC (rpc:NAME)"),
    "link_gbs": (None, "GB/s", "the network, one way (--rpc-link-gbs)"),
    "latency_s": (
        None,
        S,
        "a round trip to an rpc-server (--rpc-latency-ms, else 0.5 ms assumed)",
    ),
    "latency_assumed": (None, "", "the round trip is the unsourced 0.5 ms assumption"),
    "splits": (None, "", "evaluations of a split on a remote card: one round trip each"),
    "input_bytes": (
        None,
        B,
        "SET_TENSOR of the remote splits' inputs: hidden state, positions, KQ mask",
    ),
    "graph_bytes": (
        None,
        B,
        "GRAPH_COMPUTE (12 + 8 nodes + 296 tensors) or GRAPH_RECOMPUTE (4) of each remote split",
    ),
    "output_bytes": (
        None,
        B,
        "GET_TENSOR of the remote splits' outputs: hidden state, or logits after the head",
    ),
    "transfer_s": (None, S, "(input + graph + output bytes) / link_gbs"),
    "latency_total_s": (None, S, "splits x latency_s"),
    "upload_bytes": (None, B, "weights on the remote cards, sent once at load"),
    "upload_s": (None, S, "upload_bytes / link_gbs"),
    "remote": (None, "", "a card in another box, reached over RPC"),
    "swa_full": (
        None,
        "",
        "sliding-window layers hold a cache of the full context (llama.cpp --swa-full)",
    ),
    "swa_full_layers": (
        None,
        "layers",
        "sliding-window layers given a cache of the full context by --swa-full (0 without it); "
        "the kinds count them as full",
    ),
    "shared": (
        None,
        "",
        "the host of a machine of one memory (its own CPU cores): its capacity is the GPU's, its "
        "room what the GPU leaves (capacity - system - the GPU's used)",
    ),
    "devices": (
        None,
        "",
        "a discrete card and its host: every card, then the host (empty on one pool of "
        "memory); the totals above are the cards'",
    ),
    "room_bytes": (None, "bytes", "capacity - system (capped by the GPU's limit)"),
    "layers": (None, "layers", "blocks placed on it"),
    "expert_layers": (
        None,
        "layers",
        "blocks whose routed experts it holds while the block sits elsewhere",
    ),
    "output": (None, "", "the output head is on it"),
    "model": (None, "", "model name: the file, repository or catalogue name it was loaded as"),
    "architecture": ("str | null", "", "llama.cpp architecture (`general.architecture`)"),
    "quant": (None, "", "quant preset, or the file's own label"),
    "source": (
        None,
        "",
        "where it comes from: for a model how it was read (gguf, config, "
        "catalogue), for a catalogue entry its citation, for a fit what it was fitted on",
    ),
    "params": ("int | null", "parameters", "weights in all tensors"),
    "active_params": (
        "int | null",
        "parameters",
        "weights one decoded token multiplies (routed experts: those it wakes)",
    ),
    "n_tensors": (None, "tensors", "number of tensors"),
    "n_layers": (
        "int | null",
        "layers",
        "number of layers (without multi-token-prediction blocks)",
    ),
    "layer_counts": (None, "", "layers by kind"),
    "full": (None, "layers", "full-attention layers"),
    "sliding": (None, "layers", "sliding-window layers"),
    "mla": (None, "layers", "multi-head latent attention layers"),
    "recurrent": (None, "layers", "recurrent layers (Gated DeltaNet, Mamba2, short convolution)"),
    "none": (None, "layers", "layers without attention"),
    "moe": (None, "layers", "layers with a mixture-of-experts FFN"),
    "dense": (None, "layers", "layers with a dense FFN"),
    "mtp": (None, "", "multi-token-prediction blocks (size: layers; spec: drafting with them)"),
    "file_bytes": (None, B, "size of the GGUF file (estimated when built from a config)"),
    "file_bytes_exact": (None, "", "file_bytes comes from a real file"),
    "tensor_bytes": (None, B, "tensor data"),
    "header_bytes": (None, B, "GGUF header: metadata and tensor table"),
    "data_present": (
        "bool | null",
        "",
        "the file holds tensor data (false: header only; null: not a file)",
    ),
    "bits_per_weight": (None, "bits", "file bytes x 8 / parameters"),
    "bits_per_weight_data": (None, "bits", "tensor bytes x 8 / parameters"),
    "weight_read_bytes_per_token": (None, B, "weights one decoded token reads (no KV)"),
    "flops_per_token": (None, "FLOP", "floating-point operations per token"),
    "arithmetic_intensity": (None, "FLOP/byte", "FLOPs per byte read"),
    "by_type": (None, "", "tensors by quant type, largest first"),
    "type": (None, "", "ggml type (Q4_K, F32, ...)"),
    "by_role": (None, "", "tensors by role, largest first"),
    "role": (
        None,
        "",
        "embedding, output, attention, linear, ffn, expert, shared_expert, router, norm, mtp",
    ),
    "fetched_bytes": (None, B, "header bytes read to answer (remote: downloaded)"),
    "requests": (None, "", "HTTP requests made"),
    "kv_type": (None, "", "KV cache type (f16, q8_0, ...)"),
    "ctx": (None, T, "context: the total of all streams (llama.cpp -c)"),
    "parallel": (None, "streams", "parallel sequences (llama.cpp -np)"),
    "ubatch": (None, T, "micro-batch: tokens per prefill pass (llama.cpp -ub)"),
    "max_ctx": ("int | null", T, "the model's trained context (n_ctx_train; 0 or null: unknown)"),
    "kv_bytes_per_token": (
        None,
        B,
        "KV one cached token takes in the layers whose cache grows "
        "with the context (full attention, MLA)",
    ),
    "sliding_kv_bytes_per_token": (
        None,
        B,
        "KV one cached token takes in the sliding-window layers, until their window is full",
    ),
    "state_bytes": (None, B, "recurrent state (fixed, independent of the context)"),
    "kv_bytes": (None, B, "KV cache allocated at the context, all streams (no recurrent state)"),
    "cache_bytes": (None, B, "KV cache + recurrent state"),
    "kinds": (None, "", "the cache by layer kind"),
    "attention": (None, "", "layer kind: full, sliding, mla, recurrent"),
    "cells": (None, "cells", "cells held per stream (0 for recurrent)"),
    "window": (None, T, "sliding window (0: none)"),
    "window_cells_naive": (None, "cells", "min(ctx, window): what a window-only estimate says"),
    "every_layer_kv_bytes_per_token": (
        None,
        B,
        "KV per token if every decoding layer kept a cache like its widest attention layer",
    ),
    "sweep": (None, "", "the same model at other contexts"),
    "warnings": ("list[str]", "", "warnings (also printed on stderr)"),
    "models": (None, "", "the models, one object each"),
    "slug": (None, "", "catalogue name (what --machine and model arguments take)"),
    "name": (None, "", "display name"),
    "model_type": (None, "", "Hugging Face `model_type` of the config"),
    "q4_k_m_bytes": ("int | null", B, "file size at Q4_K_M"),
    "error": ("str | null", "", "why tokenwalk cannot model this entry (null: it can)"),
    "machines": (None, "", "the machines, one object each"),
    "kind": (None, "", "machine kind: igpu, apple, gpu, datacenter, cpu, sbc"),
    "backend": (None, "", "engine backend: metal, cuda, rocm, vulkan, cpu, ..."),
    "memory_bytes": ("int | null", B, "memory capacity (converted from memory_unit)"),
    "memory_gb": ("float | null", "GB", "the same capacity in decimal GB"),
    "memory_unit": (None, "", "what the entry's figure means: GiB or GB"),
    "bandwidth_gbs": ("float | null", "GB/s", "memory bandwidth, spec sheet"),
    "fp16_tflops": ("float | null", "TFLOPS", "dense FP16 rate of the GPU"),
    "fp16_kind": ("str | null", "", "matrix (tensor cores, WMMA, XMX) or vector"),
    "cpu_tflops": ("float | null", "TFLOPS", "FP32 SIMD rate of the CPU cores"),
    "tflops": ("float | null", "TFLOPS", "the rate the backend computes at (null: unknown)"),
    "load_gbs": ("float | null", "GB/s", "rate of a cold load: file bytes / seconds"),
    "lacks": ("list[str]", "", "what the entry does not give: memory, bandwidth, compute"),
    "eff_bw": (None, "share", "fitted share of the spec-sheet bandwidth a pass reaches"),
    "eff_compute": (None, "share", "fitted share of the compute rate a large product reaches"),
    "overhead_per_layer_s": (None, S, "fitted fixed cost per layer and pass"),
    "rows_half": (None, "rows", "rows at which a matrix product reaches half of eff_compute"),
    "fitted_to": (
        None,
        "",
        "what the efficiencies are fitted to: `groups` (composed from the machine's groups), "
        "`benchmarks` (its published runs, data/timing.yaml), `machine file` (your runs, "
        "`tokenwalk calibrate`)",
    ),
    "eff_experts": (
        None,
        "share",
        "fitted share of a dense product's rate a routed-expert product of as many rows "
        "reaches on a GPU (1 on a cpu backend)",
    ),
    "expert_flops": (None, "FLOP", "routed experts' part of flops (runs at eff_experts)"),
    "expert_row_flops": (None, "FLOP", "routed experts' part of row_flops"),
    "fit_source": (None, "", "where the fit comes from: the machine's own, its group, global"),
    "machine": (None, "", "machine slug"),
    "machine_name": (None, "", "machine display name"),
    "fit": (None, "", "the timing model's fitted efficiencies on this machine"),
    "ceiling_tok_s": (None, TS, "bandwidth ceiling per stream: bandwidth / step_read_bytes"),
    "tok_s": (None, TS, "estimated speed"),
    "aggregate_tok_s": (None, TS, "all streams together"),
    "aggregate_ceiling_tok_s": (None, TS, "bandwidth ceiling of all streams together"),
    "ms_per_token": (None, "ms", "one step, per stream"),
    "step_read_bytes": (None, B, "bytes a decode step reads: weights + KV + state, all streams"),
    "read_bytes_per_token": (None, B, "step_read_bytes / parallel"),
    "weight_read_bytes": (None, B, "weights a pass reads (routed experts: those woken)"),
    "kv_read_bytes": (None, B, "KV cells a pass reads, all streams"),
    "state_traffic_bytes": (None, B, "recurrent state read and written by a pass, all streams"),
    "memory_s": (None, S, "memory term of a pass: bytes / (bandwidth x eff_bw)"),
    "compute_s": (
        None,
        S,
        "compute term of a pass: (FLOPs + rows_half x row FLOPs) / (rate x eff_compute), "
        "the routed experts' part divided by eff_experts",
    ),
    "compute_flops": (
        None,
        "FLOP",
        "F of compute_s: the FLOPs the compute term counts (a GPU's mat-vec decode step: "
        "attention only); null when split over devices",
    ),
    "row_flops": (
        None,
        "FLOP",
        "R of compute_s: sum over matrix products of FLOPs / rows; null when split over devices",
    ),
    "read_bytes": (None, B, "all a pass reads: weights, KV cells, recurrent state"),
    "expert_s": (None, S, "routed-expert products' share of compute_s"),
    "overhead_s": (None, S, "overhead term of a pass: layers x overhead_per_layer_s"),
    "bound": (
        None,
        "",
        "which term sets the time: memory, compute, or experts (compute, "
        "mostly routed-expert products)",
    ),
    "bandwidth_used_gbs": (None, "GB/s", "bytes per step / step time: what the estimate implies"),
    "machine_balance": ("float | null", "FLOP/byte", "compute rate / bandwidth (null: no rate)"),
    "reading_tok_s": ("list[float]", TS, "silent reading speed, low and high"),
    "vs_reading": (None, "", "faster than reading, about reading speed, slower than reading"),
    "fits": (
        "bool | null",
        "",
        "the model(s) and their KV fit in memory (timing commands: "
        "null when the machine has no memory size)",
    ),
    "memory": ("object | null", "", "the memory accounting behind `fits` (null: no memory size)"),
    "needed_bytes": (None, B, "weights + KV + recurrent state + compute buffers"),
    "free_bytes": (
        None,
        B,
        "room left: capacity - system - what is needed, capped by the "
        "GPU's limit; negative when it does not fit",
    ),
    "capacity_bytes": (None, B, "the machine's memory"),
    "system_bytes": (None, B, "memory held by the system and other apps"),
    "note": (None, "", "one line saying whether it fits"),
    "prompt_tokens": (None, T, "prompt length"),
    "cached_tokens": (None, T, "prompt tokens reused from a prefix cache"),
    "computed_tokens": (None, T, "prompt tokens computed: prompt_tokens - cached_tokens"),
    "output_tokens": (None, T, "tokens written"),
    "ttft_s": (None, S, "time to first token"),
    "flops": (None, "FLOP", "floating-point operations"),
    "attention_flops": (None, "FLOP", "attention's share of the FLOPs"),
    "attention_share": (None, "share", "attention FLOPs / all FLOPs"),
    "compute_bound_chunks": (None, "chunks", "chunks bound by compute"),
    "memory_bound_chunks": (None, "chunks", "chunks bound by memory"),
    "experts_bound_chunks": (None, "chunks", "chunks bound by routed-expert products"),
    "expert_rows": (None, T, "mean tokens a woken routed expert multiplies (0: dense model)"),
    "kernel_time": (
        None,
        "x",
        "times the weight products' FLOPs count: a CPU's kernel time for the weights' types "
        "against Q4_K (its mat-vec kernels' in a decoding step; 1 elsewhere)",
    ),
    "unhidden": (
        None,
        "share",
        "share of compute_s that does not hide under the read: time = max(memory_s, "
        "compute_s) + min(memory_s, unhidden x compute_s) + overhead_s (1 in a CPU's decoding "
        "step, where they add; 0 on a GPU)",
    ),
    "n_chunks": (None, "chunks", "number of prefill chunks"),
    "chunks": (None, "", "the prefill chunks, in order"),
    "index": (None, "", "position, from 0"),
    "tokens": (None, T, "tokens the chunk computes"),
    "time_s": (
        None,
        S,
        "time of the pass: max(memory_s, compute_s) + min(memory_s, unhidden x compute_s) "
        "+ overhead_s",
    ),
    "gpu_limit_bytes": (
        "int | null",
        B,
        "what the GPU may hold, where less than the memory "
        "(a Mac's Metal working set, --gpu-limit); null: all of it",
    ),
    "gpu_limit_note": (None, "", "where that limit comes from"),
    "weights_bytes": (None, B, "weights held in memory (tensor data)"),
    "buffers_bytes": (
        None,
        B,
        "compute buffers: ubatch x max(n_vocab + 2 x n_embd, the largest layer's activations) x "
        "4, plus the KQ mask where a layer peaks",
    ),
    "used_bytes": (None, B, "weights + KV + recurrent state + buffers"),
    "verdict": (None, "", "fits with room, tight, does not fit"),
    "max_fit_ctx": (None, T, "largest context that fits (0: not even the weights fit)"),
    "default_ctx": (None, T, "what a runtime reserves by default (the trained context)"),
    "default_cache_bytes": (None, B, "KV + recurrent state at default_ctx"),
    "settings": (None, "", "runtime settings that apply the context that fits"),
    "<name>": (None, "", "an Ollama environment variable, or `llama.cpp`: its flags"),
    "hints": ("list[str]", "", "what to try when not even the weights fit"),
    "cold": (None, "", "the weights are loaded from disk first (--cold)"),
    "restore_kv": (None, "", "the cached prefix is restored from disk (--restore-kv)"),
    "phases": (None, "", "the request's phases, in order"),
    "start_s": (None, S, "when the phase starts"),
    "duration_s": (None, S, "how long it takes (0: an instant)"),
    "detail": (None, "", "what happens, in words"),
    "data_bytes": (None, B, "what the phase loads, restores, stores or reads (0: none counted)"),
    "load_s": (None, S, "cold load (0 without --cold)"),
    "prefill_s": (None, S, "prefill, all chunks"),
    "decode_s": (None, S, "all decode steps after the first token"),
    "total_s": (None, S, "the whole request"),
    "kv_stored_bytes": (None, B, "KV the prompt filled (contents, not the allocation)"),
    "decode_step_read_bytes": (None, B, "bytes the first decode step reads"),
    "decode_step_s": (None, S, "the first decode step"),
    "decode_tok_s": (None, TS, "decode steps / decode_s"),
    "disk_read_gbs": (None, "GB/s", "the disk's read speed (assumed when unknown)"),
    "disk_read_assumed": (None, "", "no disk speed for this machine: an NVMe SSD assumed"),
    "load_from": (None, "", "where load_gbs comes from"),
    "load_assumed": (None, "", "no load rate for this machine: an NVMe SSD assumed"),
    "target": (None, "", "target model name"),
    "draft": (None, "", "draft model name"),
    "alpha": (None, "share", "acceptance rate of a draft token"),
    "gamma": (None, T, "draft tokens per round"),
    "tokens_per_round": (None, T, "expected tokens per round: (1 - a^(g+1)) / (1 - a)"),
    "draft_step_s": (None, S, "one draft step"),
    "verify_s": (None, S, "the target's verify pass of gamma + 1 tokens"),
    "target_step_s": (None, S, "one decode step of the target"),
    "round_s": (None, S, "gamma x draft_step_s + verify_s"),
    "baseline_tok_s": (None, TS, "the target decoding alone"),
    "speedup": (None, "x", "speculative tok/s / baseline tok/s"),
    "pays": (None, "", "speedup > 1"),
    "break_even_alpha": (
        "float | null",
        "share",
        "acceptance rate at which speculation matches plain decoding (null: never)",
    ),
    "experts_per_token": (None, "experts", "experts one token wakes per layer (0: dense)"),
    "experts_total": (None, "experts", "routed experts per layer"),
    "experts_woken_per_layer": (
        None,
        "experts",
        "expected distinct experts the verify pass wakes per layer",
    ),
    "verify_over_step": (None, "x", "verify pass time / decode step time"),
    "best_gamma": (None, T, "draft length with the best speedup at alpha"),
    "table": (None, "", "speedups over alpha x gamma"),
    "best": (None, "", "the best gamma of its alpha"),
    "observed_speedup": ("float | null", "x", "--observed-speedup"),
    "observed_alpha": ("float | null", "share", "acceptance rate that reproduces it"),
    "budget": ("object | null", "", "target and draft loaded together (null: no memory size)"),
    "input": (None, "", "the file read (`-`: stdin)"),
    "input_kind": (None, "", "text (sent as is) or chat (rendered with the chat template)"),
    "counted_with": (None, "", "gguf (the header's vocabulary), tokenizer.json, or estimate"),
    "tokenizer": (None, "", "what counted, in words (an estimate says why)"),
    "exact": (None, "", "false: an estimate, or a pre-tokenizer tokenwalk does not know"),
    "template_tokens": (None, T, "of prompt_tokens, those of the chat template (BOS included)"),
    "text_tokens": (None, T, "of prompt_tokens, those of the text: prompt - template"),
    "n_chars": (None, "characters", "characters of the text sent"),
    "n_words": (None, "words", "words (runs of non-space) of the text sent"),
    "tokens_per_word": (None, "tokens", "prompt_tokens / n_words"),
    "tokens_per_char": (None, "tokens", "prompt_tokens / n_chars"),
    "n_messages": (None, "messages", "messages sent"),
    "calls": (None, "", "the calls of the conversation, in order"),
    "tokenize_s": (None, S, "measured: rendering the template and tokenizing"),
    "gap_s": (None, S, "idle time between calls (--gap)"),
    "keep_alive_s": ("float | null", S, "--keep-alive (null: the model stays loaded)"),
    "n_cold_loads": (None, "loads", "calls that load the weights from disk"),
    "busy_s": (None, S, "the calls themselves"),
    "wall_s": (None, S, "first start to last end, gaps included"),
    "fitted": (None, "", "date of the fit (ISO 8601)"),
    "rows_used": (None, "rows", "benchmark rows fitted"),
    "rows_excluded": (None, "rows", "benchmark rows left out"),
    "global_fit": (None, "", "the global parameters"),
    "factors": (None, "", "multiplicative factors on the global parameters, by level and group"),
    "<level>": (None, "", "a level of the fit: vendor, peak, backend, kind, kind/backend"),
    "<group>": (None, "", "a group of that level (nvidia, cuda, gpu, gpu/cuda, ...)"),
    "group_fits": (None, "", "composed parameters of every kind/backend benchmarked"),
    "<kind/backend>": (None, "", "a kind/backend group"),
    "machine_fits": (None, "", "parameters of every benchmarked machine"),
    "<machine>": (None, "", "a machine slug"),
    "n_rows": (None, "rows", "rows behind it"),
    "n_machines": (None, "machines", "machines behind it"),
    "errors": (None, "", "prediction error"),
    "in_sample": (None, "", "of the fit on the rows it was fitted on"),
    "naive": (None, "", "of the naive roofline (100% of bandwidth and compute, no overhead)"),
    "decode": (None, "", "decode rows"),
    "prefill": (None, "", "prefill rows"),
    "expected_error": (
        "object | null",
        "",
        "the error to expect of this estimate, from published runs like it (docs/accuracy.md); "
        "`in_sample` is null where the machine is not fitted to its own runs of the phase; null "
        "for a model split over devices",
    ),
    "prefill_error": (
        "object | null",
        "",
        "the error to expect of the prefill time, as `expected_error` in `prefill`",
    ),
    "decode_error": (
        "object | null",
        "",
        "the error to expect of the decode time, as `expected_error` in `decode`",
    ),
    "cross_validated": (
        None,
        "",
        "the error on devices of the group never measured, each left out of the fit",
    ),
    "group": (
        None,
        "",
        "the runs `cross_validated` is of: the machine's class (gpu, igpu, ...), or `all` where "
        "its class has fewer than 5",
    ),
    "at_bound": (
        None,
        "",
        "the efficiencies the fit left at their bound of 100%: it would go past the machine "
        "entry's bandwidth or compute rate, which may understate what llama.cpp reaches there",
    ),
    "left_out": (
        None,
        "",
        "what the cross-validation of `cross_validated` left out of the fit: `device` (each "
        "device in turn), or `class` (each maker x segment in turn: nvidia geforce, nvidia pro, "
        "amd apu, apple, intel cpu, ...) for a machine whose class has no published runs",
    ),
    "median_pct": ("float | null", "%", "median of |predicted / measured - 1|"),
    "p90_pct": ("float | null", "%", "90th percentile of |predicted / measured - 1|"),
    "signed_median_pct": ("float | null", "%", "median of predicted / measured - 1"),
    "used": ("list[str]", "", "labels of the rows fitted"),
    "excluded": ("list[str]", "", "rows left out, with the reason"),
    "n_runs": (None, "runs", "llama-bench runs fitted"),
    # a sweep (costs/sweep.py)
    "command": (None, "", "the command that was run once per combination"),
    "axes": ("list[str]", "", "the options given as lists, in the order given"),
    "columns": (None, "", "the headline numbers each row carries; the first is what a chart plots"),
    "key": (None, "", "the column's key in each row's `values`"),
    "label": (None, "", "the column's heading"),
    "unit": (None, "", "its unit: s, tok/s, B (bytes), tokens, x; empty for counts and names"),
    "rows": (None, "", "one per run, in the order run (the first option's values vary slowest)"),
    "inputs": (None, "", "the swept options' values of this run, by option name"),
    "<option>": (
        "int | float | str",
        "",
        "an option given as a list (prompt, machine, quant, ...)",
    ),
    "values": (None, "", "the run's headline numbers, by column key"),
    "<column>": ("int | float | str | bool | null", "", "a headline number (see `columns`)"),
    "runs": (None, "", "each run's whole answer, as that single run's --json"),
    "before": (None, "", "the machine's parameters before"),
    "after": (None, "", "the fitted parameters (what is stored)"),
    "error_before": (None, "", "error with the parameters before"),
    "error_after": (None, "", "error with the fitted parameters"),
    "predictions": (None, "", "per run: measured and predicted speeds"),
    "test": (None, "", "the run: model, quant, pp/tg test"),
    "measured_tok_s": (None, TS, "what llama-bench measured"),
    "before_tok_s": (None, TS, "predicted with the parameters before"),
    "after_tok_s": (None, TS, "predicted with the fitted parameters"),
    # probe
    "detected": (None, "", "what was found on the machine"),
    "os": (None, "", "operating system and kernel release"),
    "cpu": (None, "", "the CPU"),
    "vendor": ("str | null", "", "who made it, as the source names it"),
    "arch": (None, "", "instruction set architecture (x86_64, arm64, ...)"),
    "n_cores": ("int | null", "cores", "physical cores"),
    "n_threads": ("int | null", "threads", "logical CPUs (hardware threads)"),
    "n_usable_threads": (None, "threads", "CPUs this process may run on (affinity mask)"),
    "simd": (
        None,
        "",
        "SIMD and matrix features llama.cpp's CPU kernels use: avx2, avx512, avx512_vnni, "
        "avx512_bf16, avx_vnni, amx, amx_int8, amx_bf16, f16c, fma, neon, dotprod, i8mm, sve, "
        "sve2, sme, bf16",
    ),
    "l3_bytes": ("int | null", B, "the last-level cache"),
    "total_bytes": ("int | null", B, "RAM the OS reports (MemTotal, hw.memsize)"),
    "available_bytes": ("int | null", B, "RAM available now (MemAvailable; null: not told)"),
    "dram_type": ("str | null", "", "DRAM type (DDR5, LPDDR5, ...) where the OS tells"),
    "speed_mts": ("int | null", "MT/s", "configured DRAM speed where the OS tells"),
    "n_modules": ("int | null", "modules", "populated memory modules where the OS tells"),
    "gpus": (None, "", "GPUs of GPU makers, from the best source for each"),
    "n_gpu_cores": ("int | null", "cores", "GPU cores (Apple)"),
    "driver": ("str | null", "", "driver name or version"),
    "bus_id": ("str | null", "", "PCI address"),
    "backend_reason": (None, "", "why that backend, and the SIMD its CPU kernels use"),
    "notes": (None, "", "what each detection source said"),
    "status": (None, "", "found, absent (not installed, not on this OS) or failed"),
    "cpu_match": ("object | null", "", "the catalogue CPU machine the CPU's name fits"),
    "gpu_match": ("object | null", "", "the catalogue machine the first GPU fits"),
    "reason": (None, "", "how it was matched: the catalogue key and the checks it passed"),
    "measured": ("object | null", "", "the measurement (null with --no-measure)"),
    "memory_budget_bytes": (None, B, "the most the measurement holds at once"),
    "buffer_bytes": (None, B, "the buffer streamed to measure read bandwidth"),
    "buffer_note": (None, "", "why the bandwidth may read high (empty: no reason)"),
    "gemm_size": (None, "", "n of the n x n float32 matrices multiplied"),
    "n_repeats": (None, "repeats", "timed repeats of each figure"),
    "read_gbs_1t": (None, "GB/s", "read bandwidth, 1 thread"),
    "read_gbs_all": (None, "GB/s", "read bandwidth, every usable thread"),
    "gemm_gflops_1t": (None, "GFLOP/s", "f32 GEMM rate, 1 thread"),
    "gemm_gflops_all": (None, "GFLOP/s", "f32 GEMM rate, every usable thread"),
    "min": (None, "", "smallest of the repeats, in the figure's unit"),
    "median": (None, "", "median of the repeats"),
    "max": (None, "", "largest of the repeats"),
    "samples": (None, "", "every repeat"),
    "gemm_note": (None, "", "how the GEMM rate relates to llama.cpp's kernels"),
    "blas": (None, "", "the BLAS numpy uses"),
    "loadavg_before": ("list[float] | null", "", "1, 5, 15 minute load averages before"),
    "loadavg_after": ("list[float] | null", "", "the same after"),
    "elapsed_s": (None, S, "how long the measurement took"),
    "entry": (
        "object | null",
        "",
        "the machine entry --write stores, keys as in a machine file (null with --no-measure)",
    ),
    "fp16_vector_tflops": ("float | null", "TFLOPS", "FP16 rate of the shader ALUs"),
    "int8_tops": ("float | null", "TOPS", "dense INT8 rate of the matrix units (not used yet)"),
    "fp4_tflops": ("float | null", "TFLOPS", "dense FP4 rate (Blackwell; not used yet)"),
    "int8_source": ("str | null", "", "where int8_tops and fp4_tflops come from"),
    "benchmark_only": (None, "", "named by published runs only: never listed or answered for"),
    "cpu_bandwidth_gbs": ("float | null", "GB/s", "the CPU's read bandwidth, measured"),
    "written_to": ("str | null", "", "the machine file written (null: not written)"),
}

FIT_PARAMS = ("eff_bw", "eff_compute", "overhead_per_layer_s", "rows_half", "eff_experts")

# (section, path) -> (unit, meaning) where the place adds to the key's meaning
OVERRIDES: dict[tuple[str, str], tuple[str, str]] = {
    ("machines", "machines[].power_w"): (
        "W",
        "board, package or CPU power at full load, from the entry's power_source (null: none)",
    ),
    ("probe", "entry.power_w"): ("W", "power at full load (probe measures none: null)"),
    ("energy", "time_s"): ("s", "the time the energy covers"),
    ("rpc", "link"): ("", "the network as given, and the round trip (given or assumed)"),
    ("rpc", "time_s"): ("s", "transfer_s + latency_total_s: added to the pass"),
    ("energy", "tokens"): (T, "the tokens that time wrote or read"),
    ("energy", "note"): ("", "why a figure is missing (empty when none is)"),
    ("split", "split"): (
        "",
        "share of the weights a step reads in RAM and on the cards, as `ollama ps` prints it",
    ),
    ("budget", "split"): (
        "",
        'share of weights and KV in RAM and on the cards, as `ollama ps` prints it ("41%/59% '
        'CPU/GPU")',
    ),
    ("budget", "host"): ("", "which host, and whether it was assumed; the link"),
    ("budget", "models[].buffers_bytes"): (
        "bytes",
        "compute buffers: ubatch x max(n_vocab + 2 x n_embd, the largest layer's activations) x "
        "4, plus the KQ mask where a layer peaks (0 on a card and its host: see `devices`)",
    ),
    ("budget", "hints"): (
        "",
        "what to try when not even the weights fit (on a card and its host: the devices short, "
        "and placements that fit)",
    ),
    ("budget", "devices[].device"): ("", "machine slug of the card, or of the host"),
    ("budget", "devices[].name"): ("", "its display name"),
    ("budget", "devices[].role"): ("", "gpu or host"),
    ("budget", "devices[].capacity_bytes"): ("bytes", "its memory"),
    ("budget", "devices[].system_bytes"): ("bytes", "held by the system and other apps"),
    ("budget", "devices[].weights_bytes"): (
        "bytes",
        "weights placed on it (a tied head counted on the card that holds the head, and the "
        "embedding in RAM)",
    ),
    ("budget", "devices[].kv_bytes"): ("bytes", "KV cache and recurrent state of its layers"),
    ("budget", "devices[].buffers_bytes"): (
        "bytes",
        "its compute buffer (the host's holds the KQ mask)",
    ),
    ("budget", "devices[].used_bytes"): ("bytes", "weights + KV + buffers"),
    ("budget", "devices[].free_bytes"): ("bytes", "room - used; negative when it overflows"),
    ("budget", "devices[].fits"): ("", "free_bytes >= 0"),
    ("split", "placement"): ("", "llama.cpp flags that place the model so"),
    ("split", "parts[].device"): ("", "machine slug, or `link`"),
    ("split", "parts[].role"): ("", "gpu, host or link"),
    ("split", "parts[].kv_read_bytes"): ("bytes", "KV it reads"),
    ("split", "parts[].flops"): ("FLOP", "floating-point operations it does"),
    ("split", "parts[].time_s"): ("s", "its time"),
    ("split", "parts[].bound"): ("", "memory, compute, experts or link"),
    ("probe", "detected.memory"): ("", "the RAM"),
    ("probe", "detected.cpu.name"): ("", "the CPU's model name"),
    ("probe", "detected.gpus[].memory_bytes"): (
        B,
        "the GPU's own memory as its driver reports it (null: shared with the CPU, or not told)",
    ),
    ("probe", "detected.notes[].detail"): ("", "what the source said, or why it is absent"),
    ("probe", "detected.notes[].source"): ("", "the library, tool or file asked"),
    ("probe", "detected.backend"): ("", "the llama.cpp backend a build for this machine runs"),
    ("probe", "entry.memory_gb"): ("GiB", "capacity as the machine file holds it (memory_unit)"),
    ("probe", "entry.bandwidth_gbs"): (
        "GB/s",
        "a cpu entry: the measured read bandwidth at every thread; a GPU's: its spec sheet",
    ),
    ("probe", "entry.cpu_tflops"): ("TFLOPS", "the measured f32 GEMM rate at every thread"),
    ("prefill", "tok_s"): (TS, "computed_tokens / ttft_s"),
    ("prefill", "flops"): ("FLOP", "all chunks"),
    ("prefill", "expert_rows"): (
        T,
        "mean tokens a woken routed expert multiplies in a full chunk (0: dense model)",
    ),
    ("prefill", "chunks[].flops"): ("FLOP", "the chunk's"),
    ("prefill", "chunks[].ctx"): (T, "tokens already in the cache when the chunk starts"),
    ("spec", "tok_s"): (TS, "with speculation: tokens_per_round / round_s"),
    ("spec", "ctx"): (T, "context the rounds run at (one stream)"),
    ("spec", "table[].tok_s"): (TS, "with speculation at this alpha and gamma"),
    ("decode", "tok_s"): (TS, "per stream: 1 / step time"),
    ("memory", "ctx"): (T, "context reserved, all streams"),
    ("memory", "fits"): ("", "needed_bytes fit in the room"),
    ("budget", "fits"): ("", "free_bytes >= 0"),
    ("budget", "models[].kv_bytes"): (B, "KV cache allocated at ctx (no recurrent state)"),
    ("budget", "models[].weights_bytes"): (B, "this model's weights"),
    ("trace", "phases[].name"): ("", "the phase, in words"),
    ("size", "by_type[].n_tensors"): ("tensors", "tensors of this type"),
    ("size", "by_type[].params"): ("parameters", "weights of this type"),
    ("size", "by_type[].tensor_bytes"): (B, "tensor data of this type"),
    ("size", "by_role[].n_tensors"): ("tensors", "tensors of this role"),
    ("size", "by_role[].params"): ("parameters", "weights of this role"),
    ("size", "by_role[].tensor_bytes"): (B, "tensor data of this role"),
    ("kv", "kinds[].n_layers"): ("layers", "layers of this kind"),
    ("kv", "kinds[].kv_bytes_per_token"): (
        B,
        "KV one cached token takes in these layers (0 for recurrent)",
    ),
    ("kv", "kinds[].cache_bytes"): (
        B,
        "KV (recurrent: the state) these layers hold at ctx, all streams",
    ),
    ("kv", "sweep[].ctx"): (T, "context of this row"),
    ("size", "by_role[].weight_read_bytes_per_token"): (
        B,
        "what a decoded token reads of this role",
    ),
    ("calibrate --from", "machine"): ("", "machine slug the fit is for"),
    ("tokens", "prompt_tokens"): (T, "what the model is sent (a conversation: the last call)"),
    ("tokens", "calls[].prompt_tokens"): (T, "the conversation so far, rendered"),
    ("tokens", "calls[].cached_tokens"): (T, "the prefix the previous call left in the cache"),
    ("tokens", "calls[].output_tokens"): (T, "the reply that follows in the file (0: none)"),
    ("trace --chat", "calls[].start_s"): (S, "when the call starts on the session's clock"),
    ("trace --chat", "calls[].gap_s"): (S, "idle time before it (0 for the first)"),
    ("trace --chat", "calls[].cold"): (
        "",
        "loads the weights first (--cold, or a gap beyond --keep-alive)",
    ),
    ("trace --chat", "calls[].load_s"): (S, "cold load (0 when loaded)"),
    ("trace --chat", "calls[].total_s"): (S, "the whole call"),
    ("trace --chat", "prompt_tokens"): (T, "sent, all calls"),
    ("trace --chat", "cached_tokens"): (T, "reused from the cache, all calls"),
    ("trace --chat", "computed_tokens"): (T, "prefilled, all calls"),
    ("trace --chat", "output_tokens"): (T, "written, all calls"),
    ("machines", "machines[].source"): ("", "first word of the entry's source (a URL)"),
    ("models", "quant"): ("", "the preset of file_bytes (--quant, default Q4_K_M)"),
    ("models", "models[].file_bytes"): (B, "file size at `quant`"),
    ("compare", "ctx"): (T, "context reserved in memory and read by the decode step"),
    ("compare", "rows"): ("", "one object per model and machine, the models in the order given"),
    ("compare", "rows[].weights_bytes"): (B, "weights llama.cpp loads (MTP blocks left out)"),
    ("compare", "rows[].fits"): ("", "as `budget --ctx ctx` (null: no memory size)"),
    ("compare", "rows[].free_bytes"): (
        B,
        "as `budget --ctx ctx`: room left (the cards' on a discrete card); negative when it "
        "does not fit",
    ),
    ("compare", "rows[].placement"): ("", "llama.cpp flags that place the model on the cards"),
    ("compare", "rows[].split"): (
        "",
        'share of weights and KV in RAM and on the cards ("41%/59% CPU/GPU"); "" on one pool',
    ),
    ("compare", "rows[].tok_s"): (TS, "decode at ctx, as `decode --ctx ctx`"),
    ("compare", "rows[].ceiling_tok_s"): (TS, "bandwidth ceiling of decode at ctx"),
    ("compare", "rows[].ttft_s"): (S, "time to first token, as `trace`"),
    ("compare", "rows[].total_s"): (S, "the whole request, as `trace`"),
    ("compare", "notes"): ("", "what was assumed (a host), what an option did not apply to"),
    ("models --fits", "models[].weights_bytes"): (B, "weights llama.cpp loads at `quant`"),
    ("models --fits", "models[].ctx"): (T, "context reserved, as `budget` (default 16,384)"),
    ("models --fits", "models[].fits"): ("", "as `budget`: free_bytes >= 0"),
    ("models --fits", "models[].tok_s"): (TS, "decode at ctx, as `decode --ctx ctx`"),
    ("models --fits", "models[].placement"): (
        "",
        'llama.cpp flags that place the model on the cards; "" on one pool',
    ),
    ("models --fits", "models[].split"): (
        "",
        'share of weights and KV in RAM and on the cards ("41%/59% CPU/GPU"); "" on one pool',
    ),
    ("models --fits", "sort"): ("", "order of the models that fit: size, speed or ctx"),
    ("models --fits", "notes"): ("", "what was assumed: quant, context, system memory, host"),
}

# Types where the key's type elsewhere (GLOSSARY) or this output alone would mislead.
TYPES: dict[tuple[str, str], str] = {
    ("models", "models[].file_bytes"): "int | null",  # null for an entry it cannot model
    ("models --fits", "models[].fits"): "bool",  # a machine without a memory size is refused
}

# the curves --chart draws (costs: `by_context`), as the page has them
OVERRIDES.update(
    {
        ("decode", "by_context"): (
            "",
            "the same step at other contexts, 0 to the model's trained maximum (or 4 x the "
            "context asked), evenly; what `--chart` draws",
        ),
        ("decode", "by_context[].ctx"): (T, "tokens already in a stream's context"),
        ("decode", "by_context[].tok_s"): (TS, "the estimate at that context, per stream"),
        ("decode", "by_context[].ceiling_tok_s"): (
            TS,
            "the bandwidth ceiling at that context, per stream",
        ),
        ("budget", "cache_room_bytes"): (
            B,
            "memory left for the cache once the weights and buffers are in (negative: not even "
            "they fit)",
        ),
        ("budget", "by_context"): (
            "",
            "the cache at other contexts, 0 to the trained maximum, with the context asked and "
            "the largest that fits; what `--chart` draws",
        ),
        ("budget", "by_context[].ctx"): (T, "context of this row, all streams"),
        ("budget", "by_context[].kv_bytes"): (
            B,
            "KV cache allocated at the context, all models and streams (no recurrent state)",
        ),
        ("budget", "by_context[].state_bytes"): (
            B,
            "recurrent state (fixed, independent of the context)",
        ),
        ("budget", "by_context[].cache_bytes"): (B, "KV cache + recurrent state"),
    }
)
# the answer of decode on a system with a card over RPC means what decode's does
OVERRIDES.update(
    {("decode rpc", p): v for (sec, p), v in list(OVERRIDES.items()) if sec == "decode"}
)

# -- running and flattening --------------------------------------------------------------------


@contextlib.contextmanager
def recorded_machine() -> Iterator[None]:
    """`tokenwalk probe` sees the AMD workstation of tests/probe/fixtures instead of this
    machine: its /proc and /sys files, its lspci and dmidecode output, no vendor library."""
    import shutil

    import tokenwalk.probe as probe
    from tokenwalk.probe.detect import detect_machine

    fixtures = ROOT / "tests" / "probe" / "fixtures"
    tools = {"lspci": "lspci-amd-workstation.txt", "dmidecode": "dmidecode-memory.txt"}

    def run(argv: list[str]) -> tuple[str | None, str]:
        if argv[0] in tools:
            return (fixtures / tools[argv[0]]).read_text(encoding="utf-8"), ""
        return None, "not found on the PATH"

    def no_library(name: str) -> Any:
        raise ImportError(name)

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        shutil.copytree(fixtures / "sysfs-amd-workstation", root)
        (root / "proc").mkdir()
        shutil.copy(fixtures / "cpuinfo-xeon-2vcpu.txt", root / "proc" / "cpuinfo")
        shutil.copy(fixtures / "meminfo-24g.txt", root / "proc" / "meminfo")
        real = probe.detect_machine
        probe.detect_machine = lambda: detect_machine(  # type: ignore[assignment]
            root, run=run, importer=no_library, system="Linux"
        )
        try:
            yield
        finally:
            probe.detect_machine = real


def run_json(argv: list[str]) -> Any:
    """Run `tokenwalk ARGV --json` in-process; its stdout parsed (exit code 0 or 1)."""
    from tokenwalk.cli import main

    os.environ["HF_HUB_OFFLINE"] = "1"  # keys must not depend on the network
    recorded = recorded_machine() if argv[0] == "probe" else contextlib.nullcontext()
    with tempfile.TemporaryDirectory() as tmp, recorded:
        bench = Path(tmp) / "bench.json"
        bench.write_text(json.dumps(BENCH), encoding="utf-8")
        args = [a.replace("{bench}", str(bench)) for a in argv] + ["--json"]
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(args)
    if code not in (0, 1):
        raise RuntimeError(f"tokenwalk {' '.join(args)} exited {code}: {err.getvalue()}")
    return json.loads(out.getvalue())


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, dict):
        return "object"
    items = {json_type(v) for v in value}
    return f"list[{items.pop()}]" if len(items) == 1 else "list"


def flatten(obj: Any, placeholders: dict[str, str] | None = None) -> Iterator[tuple[str, Any]]:
    """(path, value) of every key, nested ones included; keys of objects named in
    `placeholders` (by their path) become the placeholder."""
    placeholders = placeholders or {}

    def walk(value: Any, prefix: str) -> Iterator[tuple[str, Any]]:
        if isinstance(value, dict):
            for k, v in value.items():
                key = placeholders.get(prefix, k)
                path = f"{prefix}.{key}" if prefix else key
                yield path, v
                yield from walk(v, path)
        elif isinstance(value, list):
            for v in value:
                yield from walk(v, prefix + "[]")

    yield from walk(obj, "")


# -- the page ----------------------------------------------------------------------------------

CELL = re.compile(r"(?<!\\)\|")  # a column border: a pipe not escaped as \|
HEAD = re.compile(r"^## (?P<name>.+)$")
SUB = re.compile(r"^### (?P<name>.+)$")
LINK = re.compile(r"^(?P<list>list of )?\[(?P<name>[^\]]+)\]\(#[^)]+\)( \| null)?$")


def parse_page(text: str) -> dict[str, list[tuple[str, str]]]:
    """Section (a command, or a shared object) -> [(path, type)] as the page lists them."""
    sections: dict[str, list[tuple[str, str]]] = {}
    current = None
    for line in text.splitlines():
        head = HEAD.match(line) or SUB.match(line)
        if head:
            current = head["name"].strip("`")
            continue
        if line.startswith("| `") and current is not None:
            cells = [c.strip().replace("\\|", "|") for c in CELL.split(line)[1:-1]]
            sections.setdefault(current, []).append((cells[0].strip("`"), cells[1]))
    return sections


def documented(sections: dict[str, list[tuple[str, str]]], name: str) -> dict[str, str]:
    """path -> type for section `name`, rows that link to another section expanded in place."""
    out: dict[str, str] = {}
    for path, typ in sections.get(name, []):
        link = LINK.match(typ)
        if link and link["list"]:  # a list of those objects
            out[path] = "list[object]"
            for sub, subtype in documented(sections, link["name"]).items():
                out[f"{path}[].{sub}"] = subtype
        elif link:
            out[path] = "object | null" if typ.endswith("| null") else "object"
            for sub, subtype in documented(sections, link["name"]).items():
                out[f"{path}.{sub}"] = subtype
        else:
            out[path] = typ
    return out


def type_ok(documented_type: str, value: Any) -> bool:
    """Is `value` of the JSON type the page gives (`int`, `float | null`, `list[str]`, ...)?"""
    actual = json_type(value)
    allowed = {t.strip() for t in documented_type.split("|")}
    if actual in allowed:
        return True
    if actual.startswith("list") and any(t.startswith("list") for t in allowed):
        return not value  # an empty list is a list of anything
    return False


def compare(doc: dict[str, str], actual: list[tuple[str, Any]]) -> list[str]:
    """What differs between the keys a page documents and a real answer (empty: none)."""
    problems = []
    patterns = {p: re.compile(re.sub(r"<[^>]+>", "[^.]+", re.escape(p))) for p in doc}
    matched: set[str] = set()
    for path, value in actual:
        hits = [p for p, rx in patterns.items() if rx.fullmatch(path)]
        if not hits:
            problems.append(f"`{path}` is in the output but not documented")
            continue
        matched.update(hits)
        if not any(type_ok(doc[h], value) for h in hits):
            problems.append(f"`{path}` is {json_type(value)}, documented {doc[hits[0]]}")
    # the keys of an object that is null in this answer (a nullable link) are not expected
    nulls = tuple(p + "." for p, value in actual if value is None)
    problems += [
        f"`{p}` is documented but not in the output"
        for p in doc
        if p not in matched and not (nulls and p.startswith(nulls))
    ]
    return problems


# -- writing the page --------------------------------------------------------------------------


def _entry(section: str, path: str) -> tuple[str, str]:
    leaf = path.rsplit(".", 1)[-1].removesuffix("[]")
    if (section, path) in OVERRIDES:
        return OVERRIDES[(section, path)]
    if path.startswith("factors.<level>.<group>.") and leaf in FIT_PARAMS:
        return "x", f"factor on the global {leaf}"
    if leaf not in GLOSSARY:
        raise SystemExit(f"{section}: no meaning for key `{path}`: add `{leaf}` to GLOSSARY")
    _, unit, meaning = GLOSSARY[leaf]
    return unit, meaning


def _type(path: str, values: list[Any]) -> str:
    leaf = path.rsplit(".", 1)[-1]
    given = GLOSSARY.get(leaf, (None, "", ""))[0]
    if given:
        return given
    kinds = {json_type(v) for v in values}
    if len(kinds) > 1 and "list" in kinds:
        kinds.discard("list")  # an empty list next to lists of something
    if len(kinds) == 2 and "null" in kinds:  # the output shows it may be null
        kinds.discard("null")
        return f"{kinds.pop()} | null"
    if len(kinds) != 1:
        raise SystemExit(f"`{path}` has values of types {sorted(kinds)}: give its type in GLOSSARY")
    return kinds.pop()


def _table(section: str, rows: dict[str, list[Any]], links: dict[str, str]) -> list[str]:
    lines = ["| key | type | unit | meaning |", "|---|---|---|---|"]
    skip: list[str] = []
    for path, values in rows.items():
        if any(path.startswith((s + ".", s + "[].")) for s in skip):
            continue
        unit, meaning = _entry(section, path)
        meaning = meaning.replace("|", "\\|")
        if path in links:
            target = links[path]
            given = GLOSSARY.get(path, (None, "", ""))[0] or ""
            nullable = " \\| null" if "null" in given or path in NULLABLE_LINKS else ""
            many = "list of " if isinstance(values[0], list) else ""
            lines.append(f"| `{path}` | {many}[{target}](#{target}){nullable} | | {meaning} |")
            skip.append(path)
            continue
        typ = (TYPES.get((section, path)) or _type(path, values)).replace("|", "\\|")
        lines.append(f"| `{path}` | {typ} | {unit} | {meaning} |")
    return lines


def _rows(obj: Any, section: str) -> dict[str, list[Any]]:
    rows: dict[str, list[Any]] = {}
    for path, value in flatten(obj, PLACEHOLDERS.get(section)):
        rows.setdefault(path, []).append(value)
    return rows


def build_page() -> str:
    answers = {name: run_json(argv) for name, argv in COMMANDS.items()}
    parts = [INTRO]
    for name in COMMANDS:
        parts += [f"## `{name}`", "", SECTION_NOTES[name], ""]
        parts += _table(name, _rows(answers[name], name), LINKS.get(name, {}))
        parts.append("")
    parts += ["## Shared objects", ""]
    for obj, (command, key) in SHARED.items():
        sub = answers[command]
        for k in key.split("."):
            sub = sub[k]
        parts += [f"### {obj}", "", SHARED_NOTES.get(obj, f"`{key}` in the timing commands."), ""]
        parts += _table(obj, _rows(sub, obj), LINKS.get(obj, {}))
        parts.append("")
    return "\n".join(parts).rstrip() + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--check", action="store_true", help="exit 1 if docs/json.md is out of date")
    args = ap.parse_args()
    page = build_page()
    if args.check:
        same = PAGE.exists() and PAGE.read_text(encoding="utf-8") == page
        print("docs/json.md: " + ("current" if same else "out of date"))
        return 0 if same else 1
    PAGE.write_text(page, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
