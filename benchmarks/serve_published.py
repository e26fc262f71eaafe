#!/usr/bin/env python3
"""`tokenwalk serve`'s pass model against published runs of several sequences at once.

Reads tests/data/batched-published/batched-train.csv (a copy of ../shared/data/batched-train.csv)
and tests/data/h200-cuda (llama-batched-bench on an H200), and prints predicted against
measured aggregate decode speed for the runs of current builds:

- llama.cpp: the RTX 2060 row of PR #14363 (July 2025; Qwen2.5-Coder-0.5B Q8_0, 32 sequences
  of 32 tokens from an empty cache, one unified cache) and the H200 runs of Llama 3.1 8B Q4_K_M
  (B = 1 to 32, a cache per sequence; not in the CSV: tests/data/h200-cuda);
- vLLM: Qwen2.5-7B-Instruct BF16 on an RTX 4090 (vLLM 0.25.1, ShareGPT: 218 tokens in and
  about 219 out a request, output tok/s at concurrency 1 to 32), on which the engine factor and
  vLLM's per-sequence cost are fitted (`fit_vllm`), and Mistral-7B-Instruct-v0.3 on an RTX 4090
  (256 in, 128 out, concurrency 4 to 48; the source does not say whether its throughput counts
  output or all tokens: output is taken, the closer), held out.

Left out, and why: the H200's Qwen3 30B-A3B runs (weights of zeros route every token to the
same experts, so B tokens wake k experts, not E (1 - (1 - k/E)^B) as a real model's do); the
Xeon E5-2683 v4 rows (llama.cpp build 4404 of January 2025, whose batched CPU decoding current
builds outpace; its source gives no compute rate of the machine), the Apple M3 Max rows and the
README sample (2023 builds), the gemma-3-4b row (-tgs: sequences decoded one after another, not
at once) and the H100 rows (the workload's lengths unstated).

A request's cycle under vLLM is its prompt read among the others (`ttft_busy_s`) and O steps
of B users: output tok/s = B x O / (ttft_busy_s + O / user_tok_s).

Usage: python benchmarks/serve_published.py
"""

from __future__ import annotations

import csv
import statistics
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tokenwalk.costs.serve import PoolPricer, attention_heads, decode_batch, serve_report
from tokenwalk.machine import Machine, resolve_machine
from tokenwalk.model.model import Model
from tokenwalk.model.resolve import load_model

ROOT = Path(__file__).resolve().parents[1]
CSV = ROOT / "tests" / "data" / "batched-published" / "batched-train.csv"
H200 = ROOT / "tests" / "data" / "h200-cuda"
QWEN25_7B = ROOT / "tests" / "fixtures" / "qwen2.5-7b-instruct.config.json"


@dataclass(frozen=True)
class Row:
    what: str
    users: int
    measured_tok_s: float
    predicted_tok_s: float

    @property
    def ratio(self) -> float:
        return self.predicted_tok_s / self.measured_tok_s


def rtx_2060() -> Machine:
    """The RTX 2060 (6 GB) by its specification: 336 GB/s (14 Gbps x 192 bit), 51.6 TFLOPS
    of FP16 tensor math (NVIDIA's Turing whitepaper figures for the card)."""
    return resolve_machine(
        None,
        bandwidth=336,
        tflops=51.6,
        memory=6,
        backend="cuda",
        kind="gpu",
        vendor="nvidia",
        tflops_kind="matrix",
    )


def vllm_output_tok_s(
    model: Model, machine: Machine, users: int, prompt: int, output: int, **pricer: float
) -> float:
    """Output tok/s of `users` requests at once under vLLM (see the module's description)."""
    r = serve_report(
        model,
        PoolPricer(model, machine, **pricer),
        machine=machine.slug,
        machine_name=machine.name,
        backend=machine.backend,
        users=users,
        slots=users,
        ctx_per_user=prompt + output,
        prompt=prompt,
        output=output,
        batch=2048,
        ubatch=2048,
    )
    return users * output / (r.ttft_busy_s + output / r.user_tok_s)


def _published() -> list[dict[str, str]]:
    with CSV.open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def qwen_vllm_rows() -> list[tuple[int, float]]:
    """(concurrency, output tok/s) of vLLM 0.25.1 serving Qwen2.5-7B-Instruct on an RTX 4090
    (the CSV's s_total_tok_s column holds the output throughput, the notes the total)."""
    return [
        (int(r["batch"]), float(r["s_total_tok_s"]))
        for r in _published()
        if r["engine"].startswith("vLLM 0.25.1") and "Qwen2.5-7B" in r["model"]
    ]


def mistral_vllm_rows() -> list[tuple[int, float]]:
    return [
        (int(r["batch"]), float(r["s_total_tok_s"]))
        for r in _published()
        if r["engine"].startswith("vLLM") and "Mistral-7B" in r["model"]
    ]


def fit_vllm() -> tuple[float, float]:
    """(engine factor, per-sequence seconds per attention head) of vLLM: the factor from the
    one-user row (its speed over the pass model's), the per-sequence cost the median of what
    each other row's step implies beyond the factor's."""
    m = resolve_machine("rtx-4090")
    q = load_model(str(QWEN25_7B), "BF16").model
    rows = qwen_vllm_rows()
    one = next(t for b, t in rows if b == 1)
    factor = one / vllm_output_tok_s(q, m, 1, 218, 219, seq_head_s=0.0)
    heads = attention_heads(q)
    implied = []
    for b, measured in rows:
        if b == 1:
            continue
        model = vllm_output_tok_s(q, m, b, 218, 219, factor=factor, seq_head_s=0.0)
        # the step time measured and modelled, per output token of one user
        extra = b / measured - b / model
        implied.append(max(extra, 0.0) / ((b - 1) * heads))
    return factor, statistics.median(implied)


def _h200_rows() -> Iterator[tuple[str, int, int, float]]:
    for name, slug in (("batched.txt", "llama-3.1-8b"),):
        for line in (H200 / name).read_text().splitlines():
            cells = [c.strip() for c in line.split("|")[1:-1]]
            if len(cells) == 10 and cells[0].isdigit():
                yield slug, int(cells[0]), int(cells[2]), float(cells[7])


def llama_cpp_rows() -> list[Row]:
    """The RTX 2060 row of the CSV."""
    q = load_model("qwen2.5-0.5b", "Q8_0").model
    p = PoolPricer(q, rtx_2060())
    t = sum(p.price(decode_batch([i] * 32), cells_in_use=32 * (i + 1)).time_s for i in range(32))
    return [Row("RTX 2060 qwen2.5-0.5b Q8_0 tg32", 32, 3207.68, 32 * 32 / t)]


def h200_rows() -> list[Row]:
    """The H200's llama-batched-bench runs of Llama 3.1 8B."""
    from tokenwalk.costs.serve import batched_bench

    out = []
    h200 = resolve_machine("h200")
    models = {}
    for slug, pp, b, s_tg in _h200_rows():
        if slug not in models:
            models[slug] = PoolPricer(load_model(slug, "Q4_K_M").model, h200)
        row = batched_bench(models[slug], pp, 128, b)
        out.append(Row(f"H200 {slug} Q4_K_M pp{pp} tg128", b, s_tg, row.s_tg_tok_s))
    return out


def vllm_rows() -> list[Row]:
    from tokenwalk.costs.vllm import VLLM_ENGINE_FACTOR, VLLM_SEQUENCE_HEAD_S

    kw = dict(factor=VLLM_ENGINE_FACTOR, seq_head_s=VLLM_SEQUENCE_HEAD_S)
    m = resolve_machine("rtx-4090")
    q = load_model(str(QWEN25_7B), "BF16").model
    out = [
        Row(
            "vLLM RTX 4090 Qwen2.5-7B BF16 (fitted)",
            b,
            t,
            vllm_output_tok_s(q, m, b, 218, 219, **kw),
        )
        for b, t in qwen_vllm_rows()
    ]
    mi = load_model("mistral-7b-v0.3", "BF16").model
    out += [
        Row("vLLM RTX 4090 Mistral-7B BF16", b, t, vllm_output_tok_s(mi, m, b, 256, 128, **kw))
        for b, t in mistral_vllm_rows()
    ]
    return out


def main() -> int:
    factor, tau = fit_vllm()
    print(f"vLLM fit: engine factor {factor:.3f}, per sequence and head {tau * 1e9:.0f} ns")
    for title, rows in (
        ("published (batched-train.csv), current builds", llama_cpp_rows() + vllm_rows()),
        ("H200 llama-batched-bench (tests/data/h200-cuda)", h200_rows()),
    ):
        print(f"\n{title}")
        print(f"{'run':<44} {'B':>3} {'measured':>9} {'predicted':>9} {'ratio':>6}")
        for r in rows:
            print(
                f"{r.what:<44} {r.users:>3} {r.measured_tok_s:>9.1f} {r.predicted_tok_s:>9.1f} "
                f"{r.ratio:>6.2f}"
            )
        errors = [abs(r.ratio - 1) for r in rows]
        print(f"median |predicted / measured - 1|: {statistics.median(errors):.1%} ({len(rows)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
