#!/usr/bin/env python3
"""The timing model on this project's own CPU ground truth, from the probe's numbers alone.

tests/data/cpu-ground-truth holds llama-bench runs (pp512, pp128, tg128) of small real GGUF files
at 1 and 2 threads, and host.json: the read bandwidth and f32 GEMM rate measured on the same
machine by the code that is now tokenwalk.probe.measure (scripts/measure_host.py, which wraps
it). Those files (98 to 291 MB) fit in the machine's 480 MB L3 cache;
tests/data/cpu-ground-truth-sized holds the same runs, recorded on another day with its own
host.json, of catalogue models of 0.67 to 2.0 GB (TinyLlama 1.1B Q4_K_M and Q8_0, Llama 3.2 3B
Q4_K_M) written with weights of zeros by scripts/zero_weights_model.py.

For each llama-bench file this builds the machine `tokenwalk probe --write` would store from
those measurements at the file's thread count (bandwidth_gbs = median read GB/s, cpu_tflops =
median f32 GEMM at the largest n / 1000, cpu_simd from the CPU flags in runs.json), with no
calibration (the shipped efficiencies of a cpu/cpu machine), predicts every run and prints
predicted / measured. It then fits the machine to the file (`calibrate --from`) and prints the
error after the fit.

Goal (issue 13): decode within 10%, prefill within 20%, uncalibrated.

Usage: python benchmarks/cpu_truth.py [--data DIR ...]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import yaml

from tokenwalk.machine import resolve_machine
from tokenwalk.model.resolve import load_model
from tokenwalk.probe import recorded_cpu_entry
from tokenwalk.timing.calibrate import calibrate_machine, read_llama_bench

ROOT = Path(__file__).resolve().parents[1]
GOAL = {"decode": 0.10, "prefill": 0.20}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--data",
        type=Path,
        nargs="+",
        default=[ROOT / "tests/data/cpu-ground-truth", ROOT / "tests/data/cpu-ground-truth-sized"],
    )
    args = ap.parse_args()
    files = [(d, p) for d in args.data for p in sorted(d.glob("*.t[0-9]*.json"))]
    print(
        f"{'file':<36} {'test':<6} {'GB/s':>6} {'TFLOPS':>7} {'measured':>9} "
        f"{'predicted':>9} {'ratio':>6}  goal   {'after fit':>9}"
    )
    misses = {"decode": 0, "prefill": 0}
    totals = {"decode": 0, "prefill": 0}
    after: dict[str, float | None] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for data, path in files:
            host = json.loads((data / "host.json").read_text())
            threads = int(path.name.rsplit(".t", 1)[1].removesuffix(".json"))
            flags = json.loads((data / "runs.json").read_text()).get("cpu_flags", [])
            entry = recorded_cpu_entry(host, threads, source="host.json", cpu_flags=flags)
            machines = Path(tmp) / f"{path.stem}.yaml"
            machines.write_text(yaml.safe_dump([entry]))
            machine = resolve_machine("this", machines_file=machines)
            runs = read_llama_bench(path)
            header = (
                data
                / "headers"
                / (Path(runs[0].model_filename).name.removesuffix(".gguf") + ".header.gguf")
            )
            model = load_model(str(header)).model
            fit = calibrate_machine(machine, runs, model)
            for run, row in zip(runs, fit.predictions, strict=True):
                phase = "prefill" if run.n_prompt else "decode"
                test = f"pp{run.n_prompt}" if run.n_prompt else f"tg{run.n_gen}"
                ratio = row["before_tok_s"] / row["measured_tok_s"]
                ok = abs(ratio - 1) <= GOAL[phase]
                totals[phase] += 1
                misses[phase] += not ok
                print(
                    f"{path.name:<36} {test:<6} {machine.bandwidth_gbs:>6.1f} "
                    f"{machine.tflops:>7.3f} {row['measured_tok_s']:>9.1f} "
                    f"{row['before_tok_s']:>9.1f} {ratio:>6.2f}  {'ok  ' if ok else 'MISS'}   "
                    f"{row['after_tok_s']:>9.1f}"
                )
            after[path.name] = fit.error_after.median_pct
    print(
        f"\nefficiencies used (uncalibrated): {machine.fit.source}: "
        f"eff_bw {machine.fit.eff_bw:.2f}, eff_compute {machine.fit.eff_compute:.2f}, "
        f"overhead {machine.fit.overhead_per_layer_s * 1e6:.0f} us/layer"
    )
    for phase in ("decode", "prefill"):
        print(
            f"{phase}: {totals[phase] - misses[phase]} of {totals[phase]} runs within "
            f"{GOAL[phase]:.0%} uncalibrated"
        )
    print(
        "after the fit (calibrate --from), median error per file: "
        + ", ".join(f"{k} {v:.1f}%" for k, v in after.items() if v is not None)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
