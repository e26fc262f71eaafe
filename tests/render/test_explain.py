"""--explain: every command shows its formulas, then the numbers its answer used.

Each test runs a command twice, with --json and with --explain, and checks that the result
printed at the end of a step is the JSON number, formatted as the views format it."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from canned import canned_measurement
from hypothesis import example, given, settings
from hypothesis import strategies as st

import tokenwalk.probe as probe_mod
from tokenwalk.cli import main
from tokenwalk.probe.detect import CpuInfo, Detected, MemoryInfo
from tokenwalk.probe.measure import summary
from tokenwalk.render.fmt import human_bytes, rate, seconds

SEED = ["qwen3.6-35b-a3b", "--machine", "radeon-860m"]
SEED_PROMPT = [*SEED, "--prompt", "6500"]


def answer(capsys, *argv: str) -> dict:
    assert main([*argv, "--json"]) in (0, 1)
    return json.loads(capsys.readouterr().out)


def explained(capsys, monkeypatch, *argv: str, width: int = 80) -> str:
    """The arithmetic part of `argv --explain` at `width` columns (all of it, every line
    checked to fit)."""
    monkeypatch.setenv("COLUMNS", str(width))
    assert main([*argv, "--explain"]) in (0, 1)
    out = capsys.readouterr().out
    for line in out.splitlines():
        assert len(line) <= width, f"{len(line)} > {width}: {line!r}"
    start = out.find("\nHow ") if "\nHow " in out else out.find("\nWhere ")
    assert start >= 0, out
    return " ".join(out[start:].split())  # one line: results may follow a wrapped formula


def test_decode_seed(capsys, monkeypatch):
    r = answer(capsys, "decode", *SEED)
    text = explained(capsys, monkeypatch, "decode", *SEED)
    assert "ceiling = BW / bytes per step" in text
    step = human_bytes(r["step_read_bytes"])
    # the seed's table: bandwidth / bytes read a token = the ceiling (128 / 1.84 = 70 there;
    # tokenwalk's bytes count the weights it wakes and the recurrent state too)
    assert f"= 128 GB/s / {step} = {rate(r['ceiling_tok_s'])}" in text
    assert step == "2.11 GB" and rate(r["ceiling_tok_s"]) == "60.7 tok/s"
    assert f"{human_bytes(r['weight_read_bytes'])} + " in text
    assert f"= {rate(r['tok_s'])}" in text.split("estimate = 1 / time")[1]
    assert "max(B / (BW x eff_bw), (F + rows_half x R) / (FLOPS x eff_compute))" not in text
    assert "(F + rows_half x R) / (FLOPS x eff_compute)" in text
    fit = r["fit"]
    assert f"x {fit['eff_bw']:.0%})" in text and f"{fit['rows_half']:,.0f} rows" in text
    assert fit["source"] in text


def test_decode_parallel_and_split(capsys, monkeypatch):
    args = ["decode", "qwen3-8b", "-m", "rtx-4090", "--parallel", "4", "--ctx", "8k"]
    r = answer(capsys, *args)
    text = explained(capsys, monkeypatch, *args)
    assert f"= 4 / {seconds(r['ms_per_token'] / 1e3)} = {rate(r['aggregate_tok_s'])}" in text
    args = ["decode", "qwen3.6-35b-a3b", "-m", "rtx-5080", "--cpu-moe"]
    r = answer(capsys, *args)
    text = explained(capsys, monkeypatch, *args)
    parts = r["split"]["parts"]
    assert len(parts) > 1
    assert "time = sum over devices" in text
    assert f"= {rate(r['tok_s'])}" in text.split("estimate = 1 / time")[1]


def test_prefill_seed(capsys, monkeypatch):
    r = answer(capsys, "prefill", *SEED_PROMPT)
    text = explained(capsys, monkeypatch, "prefill", *SEED_PROMPT)
    assert "= ceil(6,500 / 512) = 13" in text
    assert "TTFT = sum of the chunk times" in text
    assert f"(13 terms) = {seconds(r['ttft_s'])}" in text
    assert f"= 6,500 / {seconds(r['ttft_s'])} = {rate(r['tok_s'])}" in text
    first = r["chunks"][0]
    assert f"= {seconds(first['time_s'])} routed experts-bound" in text
    assert "16 tokens per woken expert" in text


def test_prefill_cached(capsys, monkeypatch):
    args = ["prefill", "qwen3-0.6b", "-m", "rtx-4090", "--prompt", "1500", "--cached", "500"]
    r = answer(capsys, *args)
    text = explained(capsys, monkeypatch, *args)
    assert "= 1,500 - 500 = 1,000 tokens" in text
    assert f"= 1,000 / {seconds(r['ttft_s'])} = {rate(r['tok_s'])}" in text


def test_size(capsys, monkeypatch):
    r = answer(capsys, "size", "qwen3.6-35b-a3b")
    text = explained(capsys, monkeypatch, "size", "qwen3.6-35b-a3b")
    assert "bits per weight = file bytes x 8 / params" in text
    assert f"= {human_bytes(r['file_bytes'])} x 8 / 35.5 B = {r['bits_per_weight']:.2f}" in text
    assert "Q4_K = elements x bits / 8" in text and "x 4.5 / 8" in text
    assert f"= {human_bytes(r['weight_read_bytes_per_token'])}" in text


def test_kv_seed(capsys, monkeypatch):
    r = answer(capsys, "kv", "qwen3.6-35b-a3b")
    text = explained(capsys, monkeypatch, "kv", "qwen3.6-35b-a3b")
    # the seed: 2 x 10 KV layers x 2 KV heads x 256 x 2 bytes = 20 KB a token
    assert "= 10 x 1,024 x 2 B = 20.5 KB" in text
    assert f"= {human_bytes(r['cache_bytes'])}" in text.split("cache = KV + recurrent state")[1]


def test_budget(capsys, monkeypatch):
    r = answer(capsys, "budget", *SEED)
    text = explained(capsys, monkeypatch, "budget", *SEED)
    assert "free = room - used" in text
    assert f"- {human_bytes(r['used_bytes'])} = {human_bytes(r['free_bytes'])}" in text
    assert f"{r['max_fit_ctx']:,} tokens" in text


def test_trace_seed(capsys, monkeypatch):
    args = ["trace", *SEED_PROMPT, "--cold"]
    r = answer(capsys, *args)
    text = explained(capsys, monkeypatch, *args)
    assert "TTFT = load + tokenize + prefill" in text
    assert f"= {seconds(r['ttft_s'])}" in text and "load = file bytes / load rate" in text
    assert f"= {seconds(r['load_s'])}" in text  # the seed's 55 s
    assert f"{seconds(r['ttft_s'])} + {seconds(r['decode_s'])} = {seconds(r['total_s'])}" in text


def test_spec(capsys, monkeypatch):
    args = ["spec", "qwen3.6-35b-a3b", "--draft", "qwen3-0.6b", "-m", "radeon-860m"]
    r = answer(capsys, *args)
    text = explained(capsys, monkeypatch, *args)
    assert "E = (1 - alpha^(gamma+1)) / (1 - alpha)" in text
    assert f"(1 - 0.7^5) / (1 - 0.7) = {r['tokens_per_round']:.2f}" in text
    assert f"= {r['speedup']:.2f}x" in text
    assert f"= 256 x (1 - (1 - 8/256)^5) = {r['experts_woken_per_layer']:.1f} of 256" in text


def test_tokens_and_session(capsys, monkeypatch):
    vocab = "tests/fixtures/vocab/ggml-vocab-phi-3.gguf"
    args = ["tokens", vocab, "--chat", "docs/examples/clinical-chat.json"]
    r = answer(capsys, *args)
    text = explained(capsys, monkeypatch, *args)
    assert f"= {r['template_tokens']:,} + {r['text_tokens']:,} = {r['prompt_tokens']:,}" in text
    assert "counted with" in text
    args = ["trace", "qwen3-0.6b", "-m", "rtx-4090", "--chat", "docs/examples/clinical-chat.json"]
    r = answer(capsys, *args)
    text = explained(capsys, monkeypatch, *args)
    assert f"= {seconds(r['busy_s'])}" in text.split("busy = sum of the calls")[1]


def test_models_and_machines(capsys, monkeypatch):
    r = answer(capsys, "models", "qwen3.6-35b")["models"][0]
    text = explained(capsys, monkeypatch, "models", "qwen3.6-35b")
    assert "elements x bits of the preset's type / 8" in text
    assert f"= {human_bytes(r['q4_k_m_bytes'])}" in text.split("file = tensor data + header")[1]
    r = answer(capsys, "models", "qwen3-0.6b", "--quant", "Q8_0")["models"][0]
    text = explained(capsys, monkeypatch, "models", "qwen3-0.6b", "--quant", "Q8_0")
    assert "Q8_0 = elements x bits / 8" in text and "x 8.5 / 8" in text
    assert f"= {human_bytes(r['file_bytes'])}" in text.split("file = tensor data + header")[1]
    text = explained(capsys, monkeypatch, "machines", "radeon-860m")
    assert "BW = the spec sheet's memory bandwidth = 128 GB/s" in text
    assert "usable BW = BW x eff_bw" in text


def test_probe(capsys, monkeypatch):
    m = canned_measurement(
        memory_budget_bytes=1 << 31,
        buffer_bytes=2_000_000_000,
        read_gbs_1t=summary([9.0, 10.0, 11.0]),
        read_gbs_all=summary([18.0, 20.0, 22.0]),
        gemm_gflops_1t=summary([90.0, 100.0, 110.0]),
        gemm_gflops_all=summary([180.0, 200.0, 220.0]),
    )
    d = Detected(
        os="Linux",
        cpu=CpuInfo(
            name="Intel Xeon Processor",
            arch="x86_64",
            n_cores=2,
            n_threads=2,
            n_usable_threads=2,
            simd=["avx2"],
            source="/proc/cpuinfo",
        ),
        memory=MemoryInfo(total_bytes=1 << 34, available_bytes=1 << 33, source="/proc/meminfo"),
        gpus=[],
        backend="cpu",
        backend_reason="test",
        notes=[],
    )
    monkeypatch.setattr(probe_mod, "detect_machine", lambda: d)
    monkeypatch.setattr(probe_mod, "measure_host", lambda **kw: m)
    text = explained(capsys, monkeypatch, "probe")
    # 2 GB in 0.1 s at 20 GB/s; 2 x 2048^3 = 17.2 GFLOP in 86 ms at 200 GFLOP/s
    assert "bytes streamed / time" in text and "= 2.00 GB / 100 ms = 20.0 GB/s" in text
    assert "2 x M x N x K / time" in text
    assert "= 2 x 2,048^3 / 86 ms = 17.2 GFLOP / 86 ms = 200.0 GFLOP/s" in text


def test_calibrate_one_machine(capsys, monkeypatch, tmp_path):
    def row(n_prompt: int, n_gen: int, avg_ts: float) -> dict:  # llama-bench -o json
        return {
            "model_filename": "models/llama-2-7b.Q4_0.gguf",
            "model_type": "llama 7B Q4_0",
            "model_size": 3825065984,
            "model_n_params": 6738415616,
            "n_ubatch": 512,
            "n_prompt": n_prompt,
            "n_gen": n_gen,
            "n_depth": 0,
            "avg_ts": avg_ts,
            "backends": "Metal,BLAS",
        }

    path = tmp_path / "bench.json"
    path.write_text(json.dumps([row(512, 0, 530.06), row(0, 128, 61.19)]))
    args = ["calibrate", "--machine", "apple-m1-max", "--from", str(path), "--dry-run"]
    r = answer(capsys, *args)
    text = explained(capsys, monkeypatch, *args)
    assert "huber(ln(predicted / measured) / 0.15)" in text
    after = r["error_after"]
    assert f"{after['median_pct']:.1f}% / {after['p90_pct']:.1f}% over 2 runs" in text


@pytest.mark.parametrize("width", [60, 120])
def test_fits_the_width(capsys, monkeypatch, width):
    explained(capsys, monkeypatch, "prefill", *SEED_PROMPT, width=width)
    explained(capsys, monkeypatch, "decode", *SEED, width=width)
    explained(capsys, monkeypatch, "trace", *SEED_PROMPT, width=width)


def test_json_and_csv_ignore_explain(capsys):
    plain = answer(capsys, "decode", *SEED)
    assert main(["decode", *SEED, "--json", "--explain"]) == 0
    assert json.loads(capsys.readouterr().out) == plain
    assert main(["models", "qwen3-0.6b", "--json", "--explain"]) == 0
    assert "How" not in capsys.readouterr().out
    assert main(["decode", *SEED, "--csv", "--explain"]) == 0
    out = capsys.readouterr().out
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 1 and float(rows[0]["ceiling_tok_s"]) == plain["ceiling_tok_s"]


def test_sweep_explains_its_first_and_last_run():
    from rich.console import Console

    from tokenwalk.costs.sweep import SweepReport, SweepRow
    from tokenwalk.machine import resolve_machine
    from tokenwalk.model.resolve import load_model
    from tokenwalk.render.explain.compare import explain_sweep_report
    from tokenwalk.timing.passes import decode_report

    model = load_model("qwen3-0.6b", "Q4_K_M").model
    machine = resolve_machine("rtx-4090")
    runs = [decode_report(model, machine, ctx=c) for c in (0, 8192, 32768)]
    sweep = SweepReport(
        command="decode",
        axes=["ctx"],
        columns=[],
        rows=[SweepRow(inputs={"ctx": r.ctx}, values={}) for r in runs],
        runs=runs,
    )
    console = Console(width=80, record=True, color_system=None)
    explain_sweep_report(sweep, console)
    text = console.export_text()
    assert "first row: ctx 0" in text and "last row: ctx 32,768" in text
    assert "ctx 8,192" not in text
    assert f"= {rate(runs[-1].ceiling_tok_s)}" in text


@settings(max_examples=200, deadline=None)
@given(
    words=st.lists(
        st.one_of(
            st.sampled_from(["+", "x", "/", "=", "(a", "b)", "max(c,", "12.3\u00a0GB/s"]),
            st.text(alphabet="abcdefghij", min_size=1, max_size=12),
        ),
        min_size=1,
        max_size=40,
    ),
    width=st.integers(min_value=40, max_value=120),
)
# a break before "+" carried words over that, with the next word, no longer fit
@example(words=["max(c,", "+", "(a", "12.3\u00a0GB/s", "aaaaaaaa", "aaaaaaaa"], width=40)
def test_wrap_keeps_every_word_and_the_width(words, width):
    from tokenwalk.render.explain.steps import _wrap

    lines = _wrap("name = ", " ".join(words), 9, width)
    joined = " ".join(x.strip() for x in lines).removeprefix("name = ")
    assert joined == " ".join(words).replace("\u00a0", " ")
    assert all(len(x) <= width for x in lines)
    assert not any(x.rstrip().endswith("12.3") for x in lines)  # a quantity is never cut


def test_energy_and_price(capsys, monkeypatch):
    pytest.importorskip("tokenwalk.costs.energy")
    from tokenwalk.render.energy import joules, money, wh

    args = ["decode", *SEED, "--kwh-price", "0.3"]
    e = answer(capsys, *args)["energy"]
    text = explained(capsys, monkeypatch, *args)
    assert f"energy = P x t = {e['power_w']:,.0f} W x {e['time_s']:,.3g} s" in text
    assert f"= {joules(e['energy_j'])}" in text
    assert f"Wh x 1e6 / tokens = {wh(e['energy_wh'])} x 1e6 / 1 = " in text
    assert f"Wh / 1000 x price per kWh = {wh(e['energy_wh'])} / 1000 x 0.3 = " in text
    assert f"= {money(e['cost_per_million_tokens'], None)}" in text
    args = ["trace", "qwen3.6-35b-a3b", "-m", "rtx-5090", "--prompt", "6500"]
    args += ["--price-per-hour", "0.69", "--currency", "USD"]
    e = answer(capsys, *args)["energy"]
    text = explained(capsys, monkeypatch, *args)
    assert f"t / 3600 x price per hour = {e['time_s']:,.3g} s / 3600 x 0.69" in text
    assert f"= {money(e['cost'], 'USD')}" in text


def test_compare_and_models_fits(capsys, monkeypatch):
    pytest.importorskip("tokenwalk.costs.compare")
    args = ["compare", "qwen3.6-35b-a3b", "-m", "radeon-860m,rtx-5090", "--prompt", "6500"]
    rows = answer(capsys, *args)["rows"]
    text = explained(capsys, monkeypatch, *args)
    assert "= 6,500 + 300 = 6,800 tokens" in text
    for row in rows:
        assert f"{row['machine']} = TTFT + decode = {seconds(row['ttft_s'])} + " in text
        assert f"= {seconds(row['total_s'])}" in text and rate(row["tok_s"]) in text
    args = ["models", "qwen3.6", "--fits", "radeon-860m"]
    first = answer(capsys, *args)["models"][0]
    text = explained(capsys, monkeypatch, *args)
    assert f"{first['slug']} = decode at {first['ctx']:,} tokens = {rate(first['tok_s'])}" in text


def test_trace_sums_its_phases(capsys, monkeypatch):
    """TTFT is the sum of the phases before the first token, each as the timeline shows it
    (a cold load over RPC adds the upload of the remote cards' weights)."""
    args = ["trace", "qwen3.6-35b-a3b", "-m", "rtx-5080+rpc:rtx-5060-ti-16gb"]
    args += ["--rpc-link-gbs", "1.25", "--prompt", "4096", "--cold"]
    r = answer(capsys, *args)
    text = explained(capsys, monkeypatch, *args)
    before = [p for p in r["phases"] if p["start_s"] < r["ttft_s"] and p["duration_s"] > 0]
    shown = [seconds(p["duration_s"]) for p in before if not p["name"].startswith("prefill")]
    ttft = text.split("TTFT = ")[1]
    assert f"{' + '.join(shown)} + {seconds(r['prefill_s'])} = {seconds(r['ttft_s'])}" in ttft
    assert "upload = the remote cards' weights over the network" in text


@pytest.mark.parametrize("streams, kernels", [("1", "mat-vec"), ("2", "matrix")])
def test_decode_on_a_cpu_names_the_kernels_its_streams_run(capsys, monkeypatch, streams, kernels):
    # one token a step runs llama.cpp's mat-vec kernels, two or more its matrix kernels: the
    # explanation says which, and speaks of mat-vec products only where there are some
    argv = ["decode", "qwen2.5-0.5b", "--machine", "i9-13900k", "--parallel", streams]
    out = " ".join(explained(capsys, monkeypatch, *argv, width=120).split())
    assert f"its {kernels} kernels for these weight types" in out
    assert ("a mat-vec product as one of 1 row" in out) is (kernels == "mat-vec")
    # each stream's token waits on the read as one stream's does: memory and compute add
    assert re.search(r"time = memory \+ compute \+ overhead", out)
