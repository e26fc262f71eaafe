"""`tokenwalk calibrate --run PATH/llama-bench`: runs the user's llama-bench (here a stand-in
script that prints a recorded run of tests/data/cpu-ground-truth) and fits like --from."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import yaml

from tokenwalk.cli import main

DATA = Path(__file__).parents[1] / "data" / "cpu-ground-truth"
RECORDED = DATA / "gemma-3-270m-q4_k_m.t2.json"
HEADER = DATA / "headers" / "gemma-3-270m-q4_k_m.header.gguf"


def fake_llama_bench(tmp_path: Path, output: Path | None, code: int = 0) -> Path:
    """An executable that records its arguments and prints `output` (llama-bench -o json)."""
    exe = tmp_path / "llama-bench"
    args = tmp_path / "args.json"
    body = (
        f"#!{sys.executable}\n"
        "import json, sys\n"
        f"open({str(args)!r}, 'w').write(json.dumps(sys.argv[1:]))\n"
        + (
            f"sys.stdout.write(open({str(output)!r}).read())\n"
            if output
            else "sys.stderr.write('error: failed to load model\\n')\n"
        )
        + f"sys.exit({code})\n"
    )
    exe.write_text(body)
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe


def machine_file(tmp_path: Path) -> Path:
    """A measured CPU machine as `probe --write` stores it (the recording machine's figures)."""
    f = tmp_path / "machines.yaml"
    f.write_text(
        yaml.safe_dump(
            [
                {
                    "slug": "this",
                    "name": "this machine: Intel Xeon Processor, 2 threads (measured)",
                    "kind": "cpu",
                    "backend": "cpu",
                    "memory_gb": 22.9,
                    "bandwidth_gbs": 20.0,
                    "cpu_tflops": 0.2,
                }
            ]
        )
    )
    return f


def test_calibrate_run_fits_and_stores(tmp_path, capsys):
    exe = fake_llama_bench(tmp_path, RECORDED)
    target = machine_file(tmp_path)
    saved = tmp_path / "bench.json"
    argv = ["calibrate", "--machine", "this", "--run", str(exe), "--model", str(HEADER)]
    rc = main([*argv, "--machines-file", str(target), "--threads", "2", "--save", str(saved)])
    assert rc == 0
    out = capsys.readouterr()
    assert "running" in out.err
    for word in ("pp512", "pp128", "tg128", "measured", "before", "after"):
        assert word in out.out
    args = json.loads((tmp_path / "args.json").read_text())
    assert args[:2] == ["-m", str(HEADER)]
    assert ["-p", "512,128", "-n", "128", "-r", "3", "-o", "json", "-t", "2"] == args[2:]
    (entry,) = yaml.safe_load(target.read_text())
    assert entry["fit"]["source"].startswith("tokenwalk calibrate --run llama-bench")
    assert json.loads(saved.read_text()) == json.loads(RECORDED.read_text())


def test_calibrate_run_json_before_and_after(tmp_path, capsys):
    exe = fake_llama_bench(tmp_path, RECORDED)
    target = machine_file(tmp_path)
    argv = ["calibrate", "--machine", "this", "--run", str(exe), "--model", str(HEADER)]
    assert main([*argv, "--machines-file", str(target), "--json", "--dry-run"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["n_runs"] == 3 and {"before_tok_s", "after_tok_s"} <= set(r["predictions"][0])
    assert r["error_after"]["median_pct"] < r["error_before"]["median_pct"]
    assert "fit" not in yaml.safe_load(target.read_text())[0]  # --dry-run


def test_calibrate_run_failures_write_nothing(tmp_path, capsys):
    target = machine_file(tmp_path)
    before = target.read_text()
    saved = tmp_path / "bench.json"
    base = ["calibrate", "--machine", "this", "--machines-file", str(target)]
    failing = fake_llama_bench(tmp_path, None, code=1)
    cases = [
        [*base, "--run", str(failing), "--model", str(HEADER), "--save", str(saved)],
        [*base, "--run", str(tmp_path / "nope"), "--model", str(HEADER)],
        [*base, "--run", str(failing)],  # no --model
        [*base, "--run", str(failing), "--model", str(tmp_path / "missing.gguf")],
        [*base, "--run", str(failing), "--model", str(HEADER), "--from", str(RECORDED)],
        [*base, "--from", str(RECORDED), "--threads", "2"],
    ]
    for argv in cases:
        assert main(argv) == 2, argv
    err = capsys.readouterr().err
    assert "llama-bench exited with code 1: error: failed to load model" in err
    assert err.count("tokenwalk: error:") == len(cases) and "Traceback" not in err
    assert target.read_text() == before and not saved.exists()


def test_not_executable(tmp_path, capsys):
    exe = fake_llama_bench(tmp_path, RECORDED)
    os.chmod(exe, 0o644)
    target = machine_file(tmp_path)
    argv = ["calibrate", "--machine", "this", "--run", str(exe), "--model", str(HEADER)]
    assert main([*argv, "--machines-file", str(target)]) == 2
    assert "not executable" in capsys.readouterr().err
