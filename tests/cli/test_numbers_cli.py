"""Numbers people read: one size format in one output, durations in the largest sensible unit,
µs never "us", thousands separators, units in every heading or cell."""

from __future__ import annotations

import re

import pytest

from tokenwalk.cli import main

# a size as `tokenwalk.numbers.size` writes it: 2 decimals below 10, 1 from 10 to 999
_SIZE = re.compile(r"(?<![\w.'])(\d[\d,]*(?:\.\d+)?) (KB|MB|GB|TB)(?![\w/'])(?! (?:LP)?DDR)")


def run(capsys, monkeypatch, *argv: str, width: int = 120) -> str:
    monkeypatch.setenv("COLUMNS", str(width))
    assert main(list(argv)) in (0, 1)
    return capsys.readouterr().out


def sizes_in(text: str) -> list[str]:
    return [m[0] for m in _SIZE.finditer(" ".join(text.split()))]


def one_size_format(text: str) -> None:
    for m in _SIZE.finditer(" ".join(text.split())):
        number = float(m[1].replace(",", ""))
        decimals = len(m[1].partition(".")[2])
        assert number < 1000, m[0]  # never "2048 MB" where "2.05 GB" fits
        assert decimals == (2 if number < 10 else 1), m[0]


ANSWERS = [
    ["size", "qwen3.6-35b-a3b"],
    ["kv", "qwen3.6-35b-a3b", "--ctx", "32k"],
    ["decode", "qwen3.6-35b-a3b", "--machine", "radeon-860m"],
    ["budget", "qwen3.6-35b-a3b", "--machine", "radeon-860m"],
    ["budget", "qwen3.6-35b-a3b", "--machine", "rtx-5080", "--cpu-moe"],
    ["budget", "llama-3.1-70b", "--machine", "rtx-4090"],  # does not fit: its hint too
    ["trace", "qwen3.6-35b-a3b", "--machine", "radeon-860m", "--prompt", "6500"],
    ["models"],
]


@pytest.mark.parametrize("argv", ANSWERS, ids=lambda a: " ".join(a[:2]))
def test_every_size_in_an_answer_has_one_format(capsys, monkeypatch, argv):
    out = run(capsys, monkeypatch, *argv)
    assert sizes_in(out)
    one_size_format(out)


def test_trace_notes_use_the_same_sizes_as_its_summary(capsys, monkeypatch):
    out = run(
        capsys, monkeypatch, "trace", "qwen3.6-35b-a3b", "-m", "radeon-860m", "--prompt", "6500"
    )
    flat = " ".join(out.split())
    kv = re.search(r"KV cache after the prompt ([\d.]+ [KMG]B)", flat)[1]
    assert f"{kv} of KV for 6,500 tokens" in flat  # "133 MB" in the notes once, "133.1 MB" here


def test_kv_per_token_reads_like_the_table_above_it(capsys, monkeypatch):
    out = run(capsys, monkeypatch, "kv", "qwen3.6-35b-a3b", "--ctx", "32k")
    flat = " ".join(out.split())
    assert "KV per token 20.5 KB 20,480 bytes;" in flat  # not "20,480 B" beside "20.5 KB"
    assert "81.9 KB/token" in flat
    assert not re.search(r"\d B\b", flat.replace("0 B │", ""))


def test_microseconds_are_written_with_mu(capsys, monkeypatch):
    out = run(capsys, monkeypatch, "decode", "qwen3.6-35b-a3b", "--machine", "radeon-860m")
    flat = " ".join(out.split())
    assert " us " not in flat
    assert re.search(r"compute \d+ µs", flat)
    assert re.search(r"estimate \d+\.\d tok/s \d+ ms per step", flat)
    out = run(capsys, monkeypatch, "decode", "qwen3.6-35b-a3b", "--machine", "rtx-5090")
    flat = " ".join(out.split())
    assert re.search(r"\d+ µs per layer", flat) and " us " not in flat


def test_a_request_of_weeks_is_said_in_days(capsys, monkeypatch):
    out = run(
        capsys,
        monkeypatch,
        "trace",
        "llama-3.1-405b",
        "--machine",
        "raspberry-pi-5",
        "--prompt",
        "128k",
        "--memory",
        "1024",
    )
    flat = " ".join(out.split())
    assert not re.search(r"\d{3,}(\.\d)? min", flat)  # never "31519.5 min"
    assert re.search(r"time to first token \d+ d ", flat)
    assert re.search(r"writing \d\.\d h ", flat)
    assert "0.0 tok/s" not in flat  # a slow rate keeps two significant digits
    assert re.search(r"0\.0\d+ tok/s", flat)


def test_calibrate_units_are_in_headings_or_cells(capsys, monkeypatch, tmp_path):
    import json

    from tests.timing.test_calibrate import bench_row

    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps([bench_row(512, 0, 530.06), bench_row(0, 128, 61.19)]))
    out = run(
        capsys,
        monkeypatch,
        "calibrate",
        "--machine",
        "apple-m1-max",
        "--from",
        str(bench),
        "--dry-run",
    )
    assert "llama-bench runs, tok/s measured and predicted" in " ".join(out.split())
    assert "µs" in out and "us/layer" not in out


def test_warnings_use_the_same_sizes(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    argv = ["budget", "qwen3.6-35b-a3b", "--machine", "radeon-860m", "--ctx", "16384"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "holds 5.43 GB of KV instead of 401.4 MB" in err  # once "5.4 GB ... 0.40 GB"
    one_size_format(err)
