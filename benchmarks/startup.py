#!/usr/bin/env python3
"""How long tokenwalk takes to answer, as a ratio to starting Python with its CLI libraries.

A command's wall time is mostly start-up: the interpreter, the imports, the catalogues. The floor
any Typer and Rich program pays is `python -c "import typer, rich.table"`; each command is timed
as a ratio to that floor, measured in one run: every round runs the floor and each command once,
in turn, so a load that comes and goes on a shared machine weighs on all of them alike. The
median of the rounds is reported, and beside it the median CPU time (user + system) of each run
as a ratio to the floor's, which a busy machine disturbs less than the wall time.

Commands (catalogue names, and a GGUF header cut from a real file in tests/fixtures):

  kv        tokenwalk kv llama-3-8b --ctx 8k
  size      tokenwalk size llama-3-8b
  size-gguf tokenwalk size tests/fixtures/gemma-3-270m-q4_k_m.header.gguf
  decode    tokenwalk decode llama-3-8b -m rtx-4090
  prefill   tokenwalk prefill llama-3-8b -m rtx-4090 --prompt 4k

and a sweep of 1,000 decode runs (`--ctx` given 1,000 values), timed in the first three
rounds. A reference row, "typer app", times the least a Typer command with options that prints
a Rich table costs (typer 0.2x imports pydantic to convert options, which the floor does not).

Targets (issue 31): every command <= 2.5x the floor; the sweep under 10 s. The exit code is 1
when a target is missed.

Usage: python benchmarks/startup.py [--rounds N] [--no-sweep]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEADER = ROOT / "tests" / "fixtures" / "gemma-3-270m-q4_k_m.header.gguf"
TW = [sys.executable, "-m", "tokenwalk"]

FLOOR = [sys.executable, "-c", "import typer, rich.table"]
# Not a target, a reference: the least a Typer command with options that prints a Rich table
# costs. Typer 0.2x builds a pydantic TypeAdapter for each option, so it imports pydantic,
# which the floor does not.
TYPER_APP = """
from typing import Annotated
import typer
app = typer.Typer()
@app.callback()
def options() -> None: pass
@app.command()
def kv(model: str, ctx: Annotated[int, typer.Option()] = 0, json: bool = False) -> None:
    from rich.console import Console
    from rich.table import Table
    table = Table("model", "ctx")
    table.add_row(model, str(ctx))
    Console().print(table)
app(["kv", "llama-3-8b", "--ctx", "8192"], standalone_mode=False)
"""
APP = [sys.executable, "-c", TYPER_APP]
COMMANDS: dict[str, list[str]] = {
    "kv": [*TW, "kv", "llama-3-8b", "--ctx", "8k"],
    "size": [*TW, "size", "llama-3-8b"],
    "size-gguf": [*TW, "size", str(HEADER)],
    "decode": [*TW, "decode", "llama-3-8b", "-m", "rtx-4090"],
    "prefill": [*TW, "prefill", "llama-3-8b", "-m", "rtx-4090", "--prompt", "4k"],
}
# 1,000 contexts from 100 to 8,092 tokens, within llama-3-8b's trained 8,192
SWEEP_CTX = ", ".join(str(c) for c in range(100, 8100, 8))
SWEEP = [*TW, "decode", "llama-3-8b", "-m", "rtx-4090", "--ctx", SWEEP_CTX]
RATIO_TARGET = 2.5
SWEEP_TARGET_S = 10.0


# an installed package has its bytecode compiled (pip does it): runs here may write theirs
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(argv: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run from start to exit; its output is thrown away, a failure
    is fatal."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT, env=ENV
    )
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv[:8])}: exit {done.returncode}\n{done.stderr.decode()[-2000:]}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return elapsed, cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15, help="rounds of alternating runs")
    parser.add_argument("--no-sweep", action="store_true", help="leave the 1,000-run sweep out")
    args = parser.parse_args()
    rounds = max(1, args.rounds)

    # warm the disk cache, the bytecode and the compiled catalogues
    for argv in (FLOOR, APP, *COMMANDS.values()):
        timed(argv)
    times: dict[str, list[float]] = {"floor": [], "typer app": [], **{k: [] for k in COMMANDS}}
    cpus: dict[str, list[float]] = {k: [] for k in times}
    sweep_times: list[float] = []
    for i in range(rounds):
        names = list(times)
        # rotate the order so that no command always runs right after the same one
        shift = i % len(names)
        for name in names[shift:] + names[:shift]:
            elapsed, cpu = timed({"floor": FLOOR, "typer app": APP, **COMMANDS}[name])
            times[name].append(elapsed)
            cpus[name].append(cpu)
        if not args.no_sweep and i < 3:
            sweep_times.append(timed(SWEEP)[0])

    floor = statistics.median(times["floor"])
    floor_cpu = statistics.median(cpus["floor"])
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{rounds} rounds, alternating; load average {load:.2f}; Python {sys.version.split()[0]}")
    print(
        f"{'command':<10} {'median s':>9} {'ratio':>6} {'cpu ratio':>9}  target <= {RATIO_TARGET}x"
    )
    print(f"{'floor':<10} {floor:>9.3f} {1:>6.2f} {1:>9.2f}  python -c 'import typer, rich.table'")
    app = statistics.median(times["typer app"])
    app_cpu = statistics.median(cpus["typer app"]) / floor_cpu
    print(f"{'typer app':<10} {app:>9.3f} {app / floor:>6.2f} {app_cpu:>9.2f}  (a reference)")
    missed = False
    for name in COMMANDS:
        median = statistics.median(times[name])
        ratio = median / floor
        over = ratio > RATIO_TARGET
        missed |= over
        shown = " ".join(COMMANDS[name][3:])
        cpu = statistics.median(cpus[name]) / floor_cpu
        print(
            f"{name:<10} {median:>9.3f} {ratio:>6.2f} {cpu:>9.2f}  {'OVER ' if over else ''}{shown}"
        )
    if sweep_times:
        median = statistics.median(sweep_times)
        over = median > SWEEP_TARGET_S
        missed |= over
        print(
            f"sweep: 1,000 decode runs (--ctx 100..8,092) {median:.2f} s, median of "
            f"{len(sweep_times)}; target < {SWEEP_TARGET_S:.0f} s{' OVER' if over else ''}"
        )
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
