"""Every command's view captured at a fixed terminal width, for tests/render/test_widths.py and
for measuring line counts by hand (`python tests/render/widths.py`)."""

from __future__ import annotations

import io
import json
import os
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import yaml

TESTS = Path(__file__).parents[1]
FIXTURES = TESTS / "fixtures"
GROUND = TESTS / "data" / "cpu-ground-truth"
WIDTHS = (60, 80, 120)
LAPTOP = ["--machine", "radeon-860m"]


def capture(argv: list[str], width: int) -> tuple[int, str, str]:
    """Run `tokenwalk argv` in this process with a terminal of `width` columns (Rich reads
    COLUMNS when a console is made); the exit code, stdout and stderr."""
    from tokenwalk.cli import main

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    out, err = io.StringIO(), io.StringIO()
    try:
        with redirect_stdout(out), redirect_stderr(err):
            code = main(list(argv))
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
    return code, out.getvalue(), err.getvalue()


def files(tmp: Path) -> dict[str, str]:
    """The files some commands read: a GGUF with a vocabulary, a chat, a measured CPU machine
    and its llama-bench runs."""
    from vocabmake import CHAT, CHATML

    out: dict[str, str] = {}
    try:
        import jinja2  # noqa: F401  (chat templates)
        import tokenizers  # noqa: F401
        from vocabmake import VOCAB_DIR, model_with_vocab

        gguf = tmp / "qwen-gpt2vocab.gguf"
        model_with_vocab(
            FIXTURES / "deepseek-r1-distill-qwen-7b-q4_k_m.header.gguf",
            VOCAB_DIR / "ggml-vocab-gpt-2.gguf",
            gguf,
            template=CHATML,
        )
        out["vocab"] = str(gguf)
    except ImportError:  # the text extra is not installed
        pass
    chat = tmp / "chat.json"
    chat.write_text(json.dumps(CHAT))
    out["chat"] = str(chat)
    from tokenwalk.probe import recorded_cpu_entry

    host = json.loads((GROUND / "host.json").read_text())
    machines = tmp / "machines.yaml"
    machines.write_text(yaml.safe_dump([recorded_cpu_entry(host, 2, source="host.json")]))
    out["machines"] = str(machines)
    out["bench"] = str(GROUND / "gemma-3-270m-q4_k_m.t2.json")
    out["header"] = str(GROUND / "headers" / "gemma-3-270m-q4_k_m.header.gguf")
    return out


def cases(f: dict[str, str]) -> dict[str, list[str]]:
    """Each command's view, named; `f` from `files`."""
    c = {
        "size": ["size", "qwen3.6-35b-a3b"],
        "kv": ["kv", "qwen3.6-35b-a3b", "--ctx", "32k"],
        "kv-gemma": ["kv", "gemma-3-12b", "--ctx", "128k"],
        "models": ["models"],
        "machines": ["machines"],
        "decode": ["decode", "qwen3.6-35b-a3b", *LAPTOP],
        "decode-cpu": ["decode", "qwen3.6-35b-a3b", "--machine", "ryzen-9-9950x"],
        "decode-split": ["decode", "qwen3.6-35b-a3b", "--machine", "rtx-5080", "--cpu-moe"],
        "prefill": ["prefill", "qwen3.6-35b-a3b", *LAPTOP, "--prompt", "6500"],
        "prefill-split": [
            *("prefill", "qwen3.6-35b-a3b", "--machine", "rtx-5080", "--cpu-moe"),
            *("--prompt", "6500"),
        ],
        "budget": ["budget", "qwen3.6-35b-a3b", *LAPTOP],
        "budget-split": ["budget", "qwen3.6-35b-a3b", "--machine", "rtx-5080", "--cpu-moe"],
        "trace": ["trace", "qwen3.6-35b-a3b", *LAPTOP, "--prompt", "6500"],
        "trace-long": ["trace", "qwen3.6-35b-a3b", *LAPTOP, "--prompt", "64k"],
        "trace-split": [
            *("trace", "qwen3.6-35b-a3b", "--machine", "rtx-5080", "--cpu-moe"),
            *("--prompt", "6500"),
        ],
        "spec": ["spec", "qwen3.6-27b", "--draft", "qwen3-0.6b", *LAPTOP],
        "serve": [
            *("serve", "qwen3.6-35b-a3b", *LAPTOP, "--prompt", "2k", "--users", "4"),
            *("--rate", "0.02", "--requests", "40"),
        ],
        "serve-vllm": [
            *("serve", "llama-3.1-8b", "-m", "rtx-4090", "--engine", "vllm", "--prompt", "1k"),
        ],
        "decode-sweep": [
            "decode",
            "qwen3.6-35b-a3b",
            "-m",
            "radeon-860m,rtx-5090",
            "--ctx",
            "0,32k",
        ],
        "prefill-sweep": [
            *("prefill", "qwen3.6-35b-a3b", "--machine", "radeon-860m,rtx-5090"),
            *("--prompt", "512,2k,8k,32k"),
        ],
        "compare": [
            *("compare", "qwen3.6-35b-a3b", "-m", "radeon-860m,rtx-5090,h100-sxm"),
            *("--prompt", "6500"),
        ],
        "compare-models": [
            *("compare", "qwen3.6-35b-a3b", "gpt-oss-120b", "-m", "radeon-860m,rtx-5090"),
            *("--prompt", "6500", "--gpu-layers", "auto"),
        ],
        "models-fits": ["models", "qwen", "--fits", "rtx-5090", "--gpu-layers", "auto"],
        "calibrate": [
            *("calibrate", "--machine", "this", "--from", f["bench"]),
            *("--model", f["header"], "--machines-file", f["machines"], "--dry-run"),
        ],
    }
    c["probe"] = ["probe", "--machines-file", f["machines"] + ".probe"]
    if "vocab" in f:
        c["tokens"] = ["tokens", f["vocab"], "--chat", f["chat"]]
        c["trace-chat"] = ["trace", f["vocab"], *LAPTOP, "--chat", f["chat"]]
    return c


GIB = 1 << 30


def canned_probe() -> tuple:
    """(detect_machine, measure_host) stand-ins: a recorded description (a Xeon with an
    H200, as tests/probe records them) and a measurement, so that `probe` times nothing."""
    from canned import canned_measurement

    from tokenwalk.probe.detect import CpuInfo, Detected, GpuInfo, MemoryInfo, Note

    detected = Detected(
        os="Linux 6.1",
        cpu=CpuInfo(
            name="Intel(R) Xeon(R) Platinum 8480+",
            arch="x86_64",
            n_cores=2,
            n_threads=2,
            n_usable_threads=2,
            l3_bytes=105 << 20,
            simd=["avx2", "avx512", "avx512_bf16", "amx"],
            source="/proc/cpuinfo",
        ),
        memory=MemoryInfo(total_bytes=24 * GIB, available_bytes=20 * GIB, source="/proc/meminfo"),
        gpus=[
            GpuInfo(vendor="nvidia", name="NVIDIA H200", memory_bytes=143771 << 20, source="nvml")
        ],
        backend="cuda",
        backend_reason="an NVIDIA GPU and its driver (libcuda.so.1) were found",
        notes=[
            Note(source="/proc/cpuinfo", status="found", detail="Intel(R) Xeon(R) Platinum 8480+"),
            Note(source="dmidecode", status="absent", detail="needs root: memory type not told"),
            Note(source="nvml", status="found", detail="1 GPU: NVIDIA H200, 140.4 GiB"),
        ],
    )
    measured = canned_measurement()
    return (lambda: detected), (lambda **kw: measured)


def main() -> None:
    import tempfile

    import tokenwalk.probe as probe_mod

    sys.path[:0] = [str(TESTS / "text"), str(TESTS / "probe")]
    probe_mod.detect_machine, probe_mod.measure_host = canned_probe()
    names = sys.argv[1:]
    with tempfile.TemporaryDirectory() as tmp:
        all_cases = cases(files(Path(tmp)))
        for name, argv in all_cases.items():
            if names and name not in names:
                continue
            row = [name]
            for w in WIDTHS:
                code, out, err = capture(argv, w)
                lines = out.splitlines()
                longest = max((len(x) for x in lines), default=0)
                row.append(f"{w}: {len(lines):3d} lines, widest {longest:3d}, rc {code}")
                if err.strip() and code:
                    row.append(err.strip()[:200])
            print("  ".join(row))


if __name__ == "__main__":
    main()
