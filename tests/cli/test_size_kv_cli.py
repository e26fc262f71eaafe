"""`tokenwalk size` and `tokenwalk kv` as a user runs them: output, --json, and bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tokenwalk.cli import main


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_size_json_has_the_documented_keys(capsys, qwen2_path):
    code, out, err = run(capsys, "size", str(qwen2_path), "--json")
    assert code == 0, err
    data = json.loads(out)
    for key in (
        "params",
        "active_params",
        "file_bytes",
        "bits_per_weight",
        "weight_read_bytes_per_token",
        "flops_per_token",
        "by_type",
        "by_role",
    ):
        assert key in data
    assert data["params"] == 7_615_616_512
    assert data["fetched_bytes"] > 0


def test_size_table_mentions_the_numbers(capsys, gemma3_path):
    code, out, _ = run(capsys, "size", str(gemma3_path))
    assert code == 0
    assert "268 M" in out and "Q4_K_M" in out and "By role" in out


def test_kv_json(capsys, gemma3_path):
    code, out, err = run(capsys, "kv", str(gemma3_path), "--ctx", "16384", "--json")
    assert code == 0, err
    data = json.loads(out)
    for key in ("kv_bytes_per_token", "state_bytes", "ctx", "kv_bytes", "kv_type"):
        assert key in data
    assert data["kv_bytes"] == (48 + 15) * (1 << 20)


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["kv", "{qwen2}", "--ctx", "0"], "--ctx must be at least 1"),
        (["kv", "{qwen2}", "--kv-type", "q7"], "unknown KV cache type"),
        (["size", "/no/such/file.gguf"], "no such file"),
        (["size", "{dir}"], "directory"),
        (["size", "{notgguf}"], "not a GGUF file"),
        (["size", "{safetensors}"], "safetensors"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path, qwen2_path, argv, needle):
    (tmp_path / "x.gguf").write_bytes(b"hello world, not a model")
    (tmp_path / "m.safetensors").write_bytes((20).to_bytes(8, "little") + b'{"a": 1}' + b" " * 12)
    subst = {
        "{qwen2}": str(qwen2_path),
        "{dir}": str(tmp_path),
        "{notgguf}": str(tmp_path / "x.gguf"),
        "{safetensors}": str(tmp_path / "m.safetensors"),
    }
    code, out, err = run(capsys, *[subst.get(a, a) for a in argv])
    assert code == 2
    assert needle in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_module_entry_point_runs(qwen2_path):
    proc = subprocess.run(
        [sys.executable, "-m", "tokenwalk", "size", str(qwen2_path), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["n_tensors"] == 339
