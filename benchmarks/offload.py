#!/usr/bin/env python3
"""tokenwalk against every published offload run: the error per row of tests/data/offload-runs.yaml.

Each row is a published llama.cpp run with part of the model in host RAM (-ngl N, --n-cpu-moe N,
-cmoe) and tokenwalk's command for the hardware as the source describes it. This runs each
command (with --json), prints published and predicted speeds and the error, and says why a row
counts as not described (or, described, has no command yet). Goal (issue 29): every described
row within 20%; the exit status is 1 when one is not, or has no command.

Usage: python benchmarks/offload.py [--data FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shlex
import sys
from pathlib import Path

import yaml

from tokenwalk.cli import main as tokenwalk

ROOT = Path(__file__).resolve().parents[1]
GOAL = 0.20


def predicted_tok_s(command: str) -> float:
    """tokenwalk's tok/s for one row's command."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = tokenwalk([*shlex.split(command), "--json"])
    if code != 0:
        raise SystemExit(f"`tokenwalk {command}` failed: {err.getvalue().strip()}")
    return float(json.loads(out.getvalue())["tok_s"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT / "tests/data/offload-runs.yaml")
    args = ap.parse_args()
    rows = yaml.safe_load(args.data.read_text(encoding="utf-8"))
    print(f"{'row':>3}  {'hardware':<44} {'test':<28} {'published':>9} {'tokenwalk':>9} {'off':>6}")
    misses, not_run, described = [], [], 0
    for r in rows:
        got = predicted_tok_s(r["command"]) if r["command"] else None
        off = f"{got / r['tok_s'] - 1:+.0%}" if got else "-"
        shown = f"{got:,.1f}" if got else "-"
        print(
            f"{r['row']:>3}  {r['hardware'][:44]:<44} {r['test'][:28]:<28} "
            f"{r['tok_s']:>9,.1f} {shown:>9} {off:>6}"
        )
        why = " ".join((r.get("why") or r.get("miss") or "").split())
        if r["described"]:
            described += 1
            if got is None:
                not_run.append(r["row"])
            elif abs(got / r["tok_s"] - 1) > GOAL:
                misses.append(r["row"])
            if why:
                print(f"{'':5}{why}")
        else:
            print(f"{'':5}not described: {why}")
    within = described - len(misses) - len(not_run)
    print(
        f"\n{within} of {described} described runs within {GOAL:.0%}"
        + (f"; outside: rows {', '.join(map(str, misses))}" if misses else "")
        + (f"; not run: rows {', '.join(map(str, not_run))}" if not_run else "")
    )
    return 1 if misses or not_run else 0


if __name__ == "__main__":
    sys.exit(main())
