"""Running the user's own `llama-bench` for `tokenwalk calibrate --run`.

The runs are the ones `--from` reads: prefill at two prompt lengths (pp512 and pp128) and
decode of 128 tokens (tg128), three repeats each, as JSON. No llama.cpp is needed anywhere
else in tokenwalk.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tokenwalk.errors import InputError, SourceError

__all__ = ["BENCH_ARGS", "bench_command", "run_llama_bench"]

BENCH_ARGS = ("-p", "512,128", "-n", "128", "-r", "3", "-o", "json")


def bench_command(exe: str, model_path: str, threads: int | None = None) -> list[str]:
    """The llama-bench command line: `EXE -m MODEL -p 512,128 -n 128 -r 3 -o json [-t N]`.
    The executable must exist and be executable, the model must be a file."""
    path = Path(exe).expanduser()
    found = str(path) if path.is_file() else shutil.which(exe)
    if not found:
        raise InputError(f"--run: no such llama-bench executable '{exe}'")
    if not os.access(found, os.X_OK):
        raise InputError(f"--run: '{exe}' is not executable")
    model = Path(model_path).expanduser()
    if not model.is_file():
        raise InputError(
            f"--model '{model_path}' is not a file (llama-bench needs the GGUF itself)"
        )
    cmd = [found, "-m", str(model), *BENCH_ARGS]
    if threads is not None:
        cmd += ["-t", str(threads)]
    return cmd


def run_llama_bench(cmd: list[str]) -> str:
    """Run llama-bench and return its JSON text; a failure is one `SourceError` line with the
    last line llama-bench wrote on stderr."""
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise SourceError(f"--run: cannot start '{cmd[0]}': {exc.strerror or exc}") from None
    if res.returncode != 0:
        tail = [line for line in res.stderr.strip().splitlines() if line.strip()]
        why = f": {tail[-1].strip()[:200]}" if tail else ""
        raise SourceError(f"llama-bench exited with code {res.returncode}{why}")
    if not res.stdout.strip():
        raise SourceError("llama-bench printed no results (expected JSON on stdout)")
    return res.stdout
