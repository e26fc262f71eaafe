#!/usr/bin/env python3
"""A CPU's one-row flash attention at depth: the build option that decides it, and its cost.

tests/data/cpu-attention-depth holds llama-bench tg64 at depths 0, 256, 512 and 1,024, with
flash attention off and on, 2 threads, on one 2-core Emerald Rapids guest. It has two builds of
the same llama.cpp:
- native/: GGML_NATIVE, so AVX512-FP16 is used; SmolLM2-135M (heads of 64) and Gemma 3 270M
  (heads of 256);
- no-avx512fp16/: the same with -mno-avx512fp16; SmolLM2-135M;
- prefill-native/ and prefill-no-avx512fp16/: SmolLM2-135M's pp512 at depths 0 and 1,024 with
  flash attention on, from each build (the tiled kernel: no element-at-a-time rest).

With AVX512-FP16, ggml-cpu multiplies-and-adds f16 in steps of 128 elements, so a head of 64
sums its values one element at a time (timing.passes.F16_VECTOR_STEPS).

The cost of one such element is measured as follows:
- take the difference between the builds' decoding time at depth d, with flash attention on;
- subtract their difference at depth 0;
- divide by the elements a step does one at a time at that depth (`passes.fa_scalar_flops` /
  FA_SCALAR_FLOPS, at the run's mean depth d + 32).

That gives seconds per element. Times the guest's fitted compute rate
(tests/data/batched-ground-truth-emr/machine.yaml: cpu_tflops x eff_compute), it is in FLOPs of
that rate. The median over the depths is FA_SCALAR_FLOPS. The script prints it beside the
shipped value, then the native build's steps at depth over its own at depth 0, measured and as
the pass model prices them with and without the term.

Usage: python benchmarks/cpu_attention.py
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from tokenwalk.machine import resolve_machine
from tokenwalk.model.resolve import load_model
from tokenwalk.timing.passes import FA_SCALAR_FLOPS, fa_scalar_flops, one_row_attention, pass_time

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "cpu-attention-depth"
GUEST = ROOT / "tests" / "data" / "batched-ground-truth-emr" / "machine.yaml"
HEADERS = ROOT / "tests" / "data" / "cpu-ground-truth" / "headers"
SLUG = "xeon-emr-kvm-2c-2t"
SMOLLM2 = "SmolLM2-135M-Instruct.Q4_1"


def step_s(build: str, stem: str, flash_attn: int) -> dict[int, float]:
    """Seconds a decoding step takes, by depth: 1 / llama-bench's mean tok/s of tg64."""
    rows = json.loads((DATA / build / f"{stem}.t2.json").read_text())
    return {r["n_depth"]: 1.0 / r["avg_ts"] for r in rows if r["flash_attn"] == flash_attn}


def scalar_elements(model, depth: int, n_gen: int = 64) -> float:
    """Elements an avx512_fp16 build does one at a time in a step of tg`n_gen` at `depth`."""
    rows = one_row_attention(model, 1, depth + n_gen // 2)
    return fa_scalar_flops(rows, "avx512_fp16") / FA_SCALAR_FLOPS


def element_seconds() -> dict[int, float]:
    """Per depth > 0: the builds' difference beyond depth 0's, per element done one at a time."""
    model = load_model(str(HEADERS / f"{SMOLLM2}.header.gguf")).model
    native, plain = step_s("native", SMOLLM2, 1), step_s("no-avx512fp16", SMOLLM2, 1)
    base = native[0] - plain[0]
    return {d: (native[d] - plain[d] - base) / scalar_elements(model, d) for d in native if d > 0}


def fit_fa_scalar_flops() -> float:
    """FA_SCALAR_FLOPS: the median over depths of `element_seconds`, in FLOPs of the guest's
    fitted compute rate."""
    guest = resolve_machine(SLUG, machines_file=GUEST)
    rate = guest.tflops * 1e12 * guest.fit.eff_compute
    return statistics.median(element_seconds().values()) * rate


def main() -> int:
    per_depth = element_seconds()
    print("one element done one at a time (SmolLM2-135M, heads of 64, tg64, 2 threads):")
    for d, s in sorted(per_depth.items()):
        print(f"  depth {d:5,}: {s * 1e9:5.2f} ns")
    print(
        f"FA_SCALAR_FLOPS: fitted {fit_fa_scalar_flops():.0f} FLOPs of the guest's compute rate, "
        f"shipped {FA_SCALAR_FLOPS:.0f}\n"
    )
    guest = resolve_machine(SLUG, machines_file=GUEST)
    plain = guest.model_copy(update={"cpu_simd": None})
    print("native build, a step at depth over the step at depth 0 (flash attention on)")
    print(f"{'model':28} {'depth':>6} {'measured':>9} {'without':>8} {'with':>6}")
    for stem in (SMOLLM2, "gemma-3-270m-q4_k_m"):
        model = load_model(str(HEADERS / f"{stem}.header.gguf")).model
        measured = step_s("native", stem, 1)
        for d in sorted(measured):
            if d == 0:
                continue
            ratios = [
                pass_time(model, m, 1, d + 32).time_s / pass_time(model, m, 1, 32).time_s
                for m in (plain, guest)
            ]
            print(
                f"{stem:28} {d:6,} {measured[d] / measured[0]:9.2f} {ratios[0]:8.2f} "
                f"{ratios[1]:6.2f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
