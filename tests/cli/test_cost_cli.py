"""--watts, --kwh-price, --price-per-hour and --currency on decode, prefill, trace and spec."""

from __future__ import annotations

import json
import re

import pytest

from tokenwalk.cli import main
from tokenwalk.costs.energy import HOST_FEED_SHARE


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv: str) -> dict:
    code, out, _ = run(capsys, *argv, "--json")
    assert code == 0
    return json.loads(out)


def test_decode_energy_and_price_per_million_tokens_out(capsys):
    r = run_json(capsys, "decode", "qwen3-8b", "-m", "rtx-5090", "--kwh-price", "0.3")
    e = r["energy"]
    watts = 575 + HOST_FEED_SHARE * 170  # the card and a share of the default host's CPU
    assert e["power_w"] == pytest.approx(watts) and e["upper_bound"]
    assert e["wh_per_million_tokens"] == pytest.approx(watts * 1e6 / r["tok_s"] / 3600)
    assert e["cost_per_million_tokens"] == pytest.approx(e["wh_per_million_tokens"] / 1000 * 0.3)
    assert e["currency"] is None


def test_prefill_energy_per_million_tokens_in_and_rent(capsys):
    r = run_json(
        capsys, "prefill", "qwen3-8b", "-m", "h100-sxm", "--prompt", "4096",
        "--price-per-hour", "2.5", "--currency", "USD",
    )  # fmt: skip
    e = r["energy"]
    assert e["tokens"] == 4096 and e["time_s"] == pytest.approx(r["ttft_s"])
    assert e["energy_j"] == pytest.approx(e["power_w"] * r["ttft_s"])
    assert e["cost"] == pytest.approx(r["ttft_s"] / 3600 * 2.5)
    assert e["cost_per_million_tokens"] == pytest.approx(e["cost"] * 1e6 / 4096)
    assert e["currency"] == "USD"


def test_trace_energy_is_the_request_without_the_load(capsys):
    r = run_json(
        capsys, "trace", "qwen3.6-35b-a3b", "-m", "radeon-860m", "--prompt", "6500", "--cold",
        "--kwh-price", "0.25",
    )  # fmt: skip
    e = r["energy"]
    # one package, no host beside it: the 860M's 15 W TDP (fpsbench, s)
    assert e["power_w"] == 15 and e["host_w"] == 0
    assert e["time_s"] == pytest.approx(r["total_s"] - r["load_s"])
    assert e["energy_wh"] == pytest.approx(15 * (r["total_s"] - r["load_s"]) / 3600)
    assert e["tokens"] == 6500 + 300


def test_spec_energy_per_token_out(capsys):
    code, out, _ = run(
        capsys, "spec", "qwen3-8b", "--draft", "qwen3-0.6b", "-m", "rtx-4090", "--json"
    )
    r = json.loads(out)
    e = r["energy"]
    assert e["tokens"] == 1 and e["time_s"] == pytest.approx(1 / r["tok_s"])


def test_a_machine_without_power_gets_a_note_and_watts_fills_it(capsys):
    code, out, err = run(capsys, "decode", "qwen3-8b", "-m", "apple-m2", "--kwh-price", "0.3")
    assert code == 0 and "Traceback" not in err
    assert "no power figure for 'apple-m2'; give --watts W" in out
    r = run_json(capsys, "decode", "qwen3-8b", "-m", "apple-m2")
    assert r["energy"]["energy_j"] is None and "--watts" in r["energy"]["note"]
    r = run_json(capsys, "decode", "qwen3-8b", "-m", "apple-m2", "--watts", "30")
    e = r["energy"]
    assert e["power_w"] == 30 and not e["upper_bound"]
    assert e["j_per_token"] == pytest.approx(30 / r["tok_s"])
    # an inline machine too
    r = run_json(capsys, "decode", "qwen3-8b", "--bandwidth", "100", "--watts", "50")
    assert r["energy"]["power_w"] == 50


@pytest.mark.parametrize(
    "flags, words",
    [
        (["--kwh-price", "-0.2"], "--kwh-price"),
        (["--kwh-price", "nan"], "--kwh-price"),
        (["--price-per-hour", "inf"], "--price-per-hour"),
        (["--price-per-hour", "-1"], "--price-per-hour"),
        (["--kwh-price", "0.3", "--price-per-hour", "2"], "not both"),
        (["--watts", "0"], "--watts"),
        (["--watts", "nan"], "--watts"),
        (["--currency", "x" * 40], "--currency"),
    ],
)
def test_bad_values_get_one_line(capsys, flags, words):
    code, out, err = run(capsys, "decode", "qwen3-8b", "-m", "rtx-4090", *flags)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tokenwalk: error:") and words in lines[0]


@pytest.mark.parametrize(
    "argv",
    [
        ["decode", "qwen3-8b", "-m", "rtx-5090"],
        ["prefill", "qwen3-8b", "-m", "h100-sxm", "--prompt", "8000"],
        ["trace", "qwen3.6-35b-a3b", "-m", "radeon-860m", "--prompt", "6500"],
        ["spec", "qwen3-8b", "--draft", "qwen3-0.6b", "-m", "ryzen-ai-max-395-cpu"],
    ],
)
@pytest.mark.parametrize("width", [60, 80, 120])
def test_energy_lines_in_the_views(capsys, monkeypatch, argv, width):
    monkeypatch.setenv("COLUMNS", str(width))
    code, out, _ = run(capsys, *argv, "--kwh-price", "0.3", "--currency", "EUR")
    assert code in (0, 1)
    lines = [line for line in out.splitlines() if re.match(r"^ *(energy|price):", line)]
    assert any(line.startswith("energy:") for line in lines)
    assert any("EUR" in line for line in out.splitlines()), out
    start = out.splitlines().index(lines[0])
    for line in out.splitlines()[start:]:
        assert len(line.rstrip()) <= width


def test_the_options_have_their_own_panel(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    for command in ("decode", "prefill", "trace", "spec"):
        out = run(capsys, command, "--help")[1]
        assert "Energy and price" in out
        for flag in ("--watts", "--kwh-price", "--price-per-hour", "--currency"):
            assert flag in out, (command, flag)


def test_a_conversation_counts_its_calls_not_its_gaps(capsys):
    r = run_json(
        capsys, "trace", "qwen3-0.6b", "-m", "rtx-4090", "--chat",
        "docs/examples/clinical-chat.json", "--gap", "30", "--watts", "300",
    )  # fmt: skip
    e = r["energy"]
    busy = r["busy_s"] - sum(c["load_s"] for c in r["calls"])
    assert e["time_s"] == pytest.approx(busy) and busy < r["wall_s"]
    assert e["energy_j"] == pytest.approx(300 * busy)
    assert e["tokens"] == r["prompt_tokens"] + r["output_tokens"]


def test_a_machine_file_gives_a_power(capsys, tmp_path):
    own = tmp_path / "machines.yaml"
    own.write_text("- slug: apple-m4-pro\n  power_w: 45\n  power_source: powermetrics\n")
    r = run_json(capsys, "decode", "qwen3-8b", "-m", "apple-m4-pro", "--machines-file", str(own))
    assert r["energy"]["power_w"] == 45
    own.write_text("- slug: apple-m4-pro\n  power_w: 45\n")
    code, out, err = run(
        capsys, "decode", "qwen3-8b", "-m", "apple-m4-pro", "--machines-file", str(own)
    )
    assert code == 2 and "power_source is required" in err and len(err.splitlines()) == 1
