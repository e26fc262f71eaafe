"""`tokenwalk compare` and `models --quant` / `models --fits`: side by side, each number what the
single commands answer."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from tokenwalk.cli import main

SEED = ["radeon-860m", "rtx-5090", "h100-sxm"]  # the seed's laptop, desktop card, cloud GPU


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv: str, codes: tuple[int, ...] = (0,)) -> dict:
    code, out, err = run(capsys, *argv, "--json")
    assert code in codes, err
    return json.loads(out)


@pytest.mark.parametrize(
    ("model", "machines", "extra"),
    [
        ("qwen3.6-35b-a3b", SEED, []),
        # a model larger than the card: --fit keeps experts in the host's RAM
        ("gpt-oss-120b", ["rtx-5090", "apple-m4-max"], ["--gpu-layers", "auto"]),
    ],
)
def test_rows_equal_the_single_commands(capsys, model, machines, extra):
    prompt, output = 6500, 300
    ctx = prompt + output
    d = run_json(
        capsys,
        "compare",
        model,
        "--machine",
        ",".join(machines),
        "--prompt",
        str(prompt),
        "--output",
        str(output),
        *extra,
        *("--kwh-price", "0.3", "--price-per-hour", "2.5"),
    )
    assert d["ctx"] == ctx and [r["machine"] for r in d["rows"]] == machines
    for row, m in zip(d["rows"], machines, strict=True):
        flags = extra if m == "rtx-5090" else []  # a machine of one pool takes no placement
        # both prices: a data-center GPU is rented by the hour, the others pay for energy
        price = ["--price-per-hour", "2.5"] if m == "h100-sxm" else ["--kwh-price", "0.3"]
        budget = run_json(capsys, "budget", model, "-m", m, "--ctx", str(ctx), *flags, codes=(0, 1))
        decode = run_json(capsys, "decode", model, "-m", m, "--ctx", str(ctx), *flags)
        trace = run_json(
            capsys, "trace", model, "-m", m, "-p", str(prompt), "-n", str(output), *flags, *price
        )
        assert row["fits"] == budget["fits"]
        assert row["verdict"] == budget["verdict"]
        assert row["free_bytes"] == budget["free_bytes"]
        assert row["max_fit_ctx"] == budget["max_fit_ctx"]
        assert row["weights_bytes"] == budget["models"][0]["weights_bytes"]
        assert row["placement"] == budget["placement"]
        assert row["tok_s"] == decode["tok_s"]
        assert row["ceiling_tok_s"] == decode["ceiling_tok_s"]
        assert row["ttft_s"] == trace["ttft_s"]
        assert row["total_s"] == trace["total_s"]
        assert row["energy"] == trace["energy"]
        if row["energy"]["power_w"] is not None or m == "h100-sxm":  # rent needs no power
            assert row["energy"]["cost"] > 0


def test_the_seed_laptop_desktop_cloud_ordering(capsys):
    d = run_json(capsys, "compare", "qwen3.6-35b-a3b", "-m", ",".join(SEED), "-p", "6500")
    laptop, desktop, cloud = d["rows"]
    assert all(r["fits"] for r in d["rows"])
    # bandwidth 128 / 1,792 / 3,350 GB/s: each machine faster than the one before
    assert laptop["tok_s"] < desktop["tok_s"] < cloud["tok_s"]
    assert laptop["ttft_s"] > 30 > desktop["ttft_s"] > cloud["ttft_s"]
    assert 10 < laptop["tok_s"] < 15  # the seed measured 11.7


def test_several_models_one_row_per_pair_models_first(capsys):
    d = run_json(capsys, "compare", "qwen3-0.6b", "qwen3-8b", "-m", "radeon-860m,rtx-4090")
    pairs = [(r["model"], r["machine"]) for r in d["rows"]]
    assert pairs == [
        ("qwen3-0.6b", "radeon-860m"),
        ("qwen3-0.6b", "rtx-4090"),
        ("qwen3-8b", "radeon-860m"),
        ("qwen3-8b", "rtx-4090"),
    ]
    assert d["prompt_tokens"] == 4096 and d["output_tokens"] == 300 and d["ctx"] == 4396
    # a,b as in every other list of models
    listed = run_json(capsys, "compare", "qwen3-0.6b,qwen3-8b", "-m", "radeon-860m,rtx-4090")
    assert [(r["model"], r["machine"]) for r in listed["rows"]] == pairs


def test_a_machine_without_memory_size_has_no_verdict(capsys):
    code, out, err = run(capsys, "compare", "qwen3-0.6b", "-m", "radeon-880m", "--json")
    assert code == 0
    row = json.loads(out)["rows"][0]
    assert row["fits"] is None and row["free_bytes"] is None and row["tok_s"] > 0
    assert "no memory size" in err


def test_placement_options_apply_to_the_cards_only(capsys):
    code, out, err = run(
        capsys, "compare", "qwen3-0.6b", "-m", "radeon-860m,rtx-4090", "-ngl", "10", "--json"
    )
    assert code == 0, err
    d = json.loads(out)
    assert d["rows"][1]["placement"] == "-ngl 10" and d["rows"][0]["placement"] == ""
    assert any("radeon-860m" in n and "discrete cards" in n for n in d["notes"])


def test_csv_has_one_line_per_row_with_the_json_numbers(capsys):
    argv = ["compare", "qwen3-0.6b", "-m", "radeon-860m,rtx-4090", "-p", "2k"]
    d = run_json(capsys, *argv)
    code, out, _ = run(capsys, *argv, "--csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["machine"] for r in rows] == ["radeon-860m", "rtx-4090"]
    for r, j in zip(rows, d["rows"], strict=True):
        assert float(r["tok_s"]) == j["tok_s"] and int(r["free_bytes"]) == j["free_bytes"]
        assert int(r["prompt_tokens"]) == 2048
        # the quoted errors as numbers, not as the JSON's objects written out
        for phase in ("prefill", "decode"):
            e = j[f"{phase}_error"]
            assert r[f"{phase}_error_group"] == e["group"]
            assert float(r[f"{phase}_error_pct"]) == e["cross_validated"]["median_pct"]
            assert r[f"{phase}_error_left_out"] == e["left_out"] == "device"
            own = r[f"{phase}_error_in_sample_pct"]
            assert (float(own) if own else None) == (e["in_sample"] or {}).get("median_pct")
        assert not any("{" in v for v in r.values())


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["-m", "radeon-860m,rtx-5900"], "unknown machine 'rtx-5900'"),
        (["-m", "radeon-860m,,rtx-5090"], "empty item"),
        ([], "no machine given"),
        (["-m", "radeon-860m", "--prompt", "0"], "--prompt"),
        (["-m", "radeon-860m", "--quant", "Q9_K"], "Q9_K"),
        (["-m", "radeon-860m", "-p", "4k", "--ctx", "2k"], "shorter than the request"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv, says):
    code, out, err = run(capsys, "compare", "qwen3.6-35b-a3b", *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("tokenwalk: error:") and says in err


def _lines_fit(out: str, width: int) -> None:
    assert max(len(line) for line in out.splitlines()) <= width, out


@pytest.mark.parametrize("width", [60, 80, 120])
@pytest.mark.parametrize(
    "models", [["qwen3.6-35b-a3b"], ["qwen3.6-35b-a3b", "mistral-small-3.2-24b"]]
)
def test_compare_fits_the_terminal(capsys, monkeypatch, width, models):
    monkeypatch.setenv("COLUMNS", str(width))
    machines = [*SEED, "ryzen-ai-max-395-cpu"]
    code, out, _ = run(capsys, "compare", *models, "-m", ",".join(machines), "-p", "6500")
    assert code == 0
    _lines_fit(out, width)
    for m in machines:  # names a user types are never cut
        assert re.search(rf" {re.escape(m)} ", out), m
    for m in models if len(models) > 1 else []:
        assert re.search(rf"^ {re.escape(m)} ", out, flags=re.M), m
    header = next(line for line in out.splitlines() if "TTFT" in line)
    for col in ("free", "weights", "ceiling"):
        if col not in header.split():
            assert col in " ".join(out.split("Left out", 1)[1].split()[:12]), col
    if width >= 120:
        assert "Left out" not in out


@pytest.mark.parametrize("width", [60, 80, 120])
def test_models_fits_fits_the_terminal(capsys, monkeypatch, width):
    monkeypatch.setenv("COLUMNS", str(width))
    code, out, _ = run(capsys, "models", "mistral", "--fits", "rtx-5090")
    assert code == 0
    _lines_fit(out, width)
    assert re.search(r"^ mistral-small-3\.2-24b ", out, flags=re.M)
    words = " ".join(out.split())
    assert "Q4_K_M" in words and "system holds 0.5 GB" in words


def test_models_fits_holds_an_integrated_gpu_to_half_the_ram(capsys):
    # the seed's 64 GB laptop: its GPU may hold 32 GiB, not the 42.5 GB of a 70B at Q4_K_M
    code, out, _ = run(capsys, "models", "--fits", "radeon-860m")
    fitting = re.findall(r"^ (\S+) ", out.split("Do not fit")[0], flags=re.M)
    assert "qwen3.6-35b-a3b" in fitting and "llama-3.1-70b" not in fitting
    assert "the GPU 34.4 GB: half the RAM" in " ".join(out.split())
    code, out, _ = run(capsys, "models", "--fits", "radeon-860m", "--gpu-limit", "60")
    assert "llama-3.1-70b" in re.findall(r"^ (\S+) ", out.split("Do not fit")[0], flags=re.M)


@pytest.mark.parametrize("width", [60, 80, 120])
def test_models_quant_fits_the_terminal_and_heads_the_column(capsys, monkeypatch, width):
    monkeypatch.setenv("COLUMNS", str(width))
    code, out, _ = run(capsys, "models", "qwen", "--quant", "q8_0")
    assert code == 0
    _lines_fit(out, width)
    assert "sizes at Q8_0" in out and "Q8_0" in out.splitlines()[2]


def test_models_quant_sizes_equal_size_at_that_preset(capsys):
    d = run_json(capsys, "models", "qwen3-8b", "--quant", "Q8_0")
    row = next(r for r in d["models"] if r["slug"] == "qwen3-8b")
    size = run_json(capsys, "size", "qwen3-8b", "--quant", "Q8_0")
    assert d["quant"] == "Q8_0" and row["file_bytes"] == size["file_bytes"]
    assert row["file_bytes"] > 1.7 * row["q4_k_m_bytes"]
    default = run_json(capsys, "models", "qwen3-8b")
    assert default["quant"] == "Q4_K_M"
    assert default["models"][0]["file_bytes"] == default["models"][0]["q4_k_m_bytes"]


@pytest.mark.parametrize(
    ("machine", "flags"),
    [
        ("rtx-5090", ["--gpu-layers", "all"]),
        ("radeon-860m", []),
        ("rtx-5090", ["--gpu-layers", "auto"]),
        ("rtx-5090", []),
    ],
)
def test_models_fits_agrees_with_budget_and_decode(capsys, machine, flags):
    d = run_json(capsys, "models", "qwen3", "--fits", machine, *flags)
    assert d["machine"] == machine and d["quant"] == "Q4_K_M"
    slugs = [r["slug"] for r in d["models"]]
    for slug in ("qwen3.6-35b-a3b", "qwen3-next-80b-a3b", "qwen3-0.6b"):
        row = d["models"][slugs.index(slug)]
        ctx = ["--ctx", str(row["ctx"])]
        budget = run_json(capsys, "budget", slug, "-m", machine, *flags, codes=(0, 1))
        if "auto" in flags:  # --fit would choose the context: the rows reserve budget's default
            assert row["ctx"] == 16384
            budget = run_json(capsys, "budget", slug, "-m", machine, *flags, *ctx, codes=(0, 1))
        decode = run_json(capsys, "decode", slug, "-m", machine, *ctx, *flags)
        assert row["ctx"] == budget["ctx"] and row["placement"] == budget["placement"]
        assert row["fits"] == budget["fits"] and row["verdict"] == budget["verdict"]
        assert row["max_fit_ctx"] == budget["max_fit_ctx"]
        assert row["free_bytes"] == budget["free_bytes"]
        assert row["tok_s"] == decode["tok_s"]
    # those that fit first, largest first; then those that do not, smallest first
    fit = [r for r in d["models"] if r["fits"]]
    rest = d["models"][len(fit) :]
    assert not any(r["fits"] for r in rest)
    assert [r["weights_bytes"] for r in fit] == sorted(
        (r["weights_bytes"] for r in fit), reverse=True
    )
    assert [r["weights_bytes"] for r in rest] == sorted(r["weights_bytes"] for r in rest)
    if "all" in flags:  # 48.5 GB of weights on a 32 GB card
        assert "qwen3-next-80b-a3b" in [r["slug"] for r in rest]
    elif machine == "rtx-5090":  # ... which fits with experts in the host's RAM, as --fit
        assert "qwen3-next-80b-a3b" in [r["slug"] for r in fit]  # places by default


def test_models_fits_sorts_by_speed_and_follows_the_options(capsys):
    d = run_json(capsys, "models", "qwen3", "--fits", "radeon-860m", "--sort", "speed")
    speeds = [r["tok_s"] for r in d["models"] if r["fits"]]
    assert speeds == sorted(speeds, reverse=True)
    tight = run_json(capsys, "models", "qwen3", "--fits", "radeon-860m", "--system-gb", "50")
    assert tight["system_bytes"] == 50 * 2**30
    assert sum(r["fits"] for r in tight["models"]) < sum(r["fits"] for r in d["models"])
    ctx = run_json(capsys, "models", "qwen3-8b", "--fits", "radeon-860m", "--ctx", "4k")
    assert {r["ctx"] for r in ctx["models"]} == {4096}


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--fits", "rtx-5900"], "unknown machine 'rtx-5900'"),
        (["--fits", "radeon-880m"], "no memory size"),
        (["--fits", "rtx-5090", "--machine", "rtx-4090"], "give the machine once"),
        (["--machine", "rtx-4090"], "--fits"),
        (["--ctx", "8k"], "--fits"),
        (["--fits", "rtx-5090", "--sort", "name"], "--sort"),
        (["--quant", "Q9_K"], "Q9_K"),
        (["nothing-like-this", "--fits", "rtx-5090"], "no catalogue model"),
    ],
)
def test_models_bad_input_is_one_line_and_exit_2(capsys, argv, says):
    code, out, err = run(capsys, "models", *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("tokenwalk: error:") and says in err


def test_one_price_prices_every_machine_and_watts_replace_the_catalogue(capsys):
    d = run_json(capsys, "compare", "qwen3-0.6b", "-m", "radeon-860m,h100-sxm", "--kwh-price", "1")
    assert all(r["energy"]["price_per_kwh"] == 1 for r in d["rows"])
    for r in d["rows"]:  # energy_wh / 1000 x price per kWh
        assert r["energy"]["cost"] == pytest.approx(r["energy"]["energy_wh"] / 1000)
    w = run_json(capsys, "compare", "qwen3-0.6b", "-m", "radeon-860m,h100-sxm", "--watts", "100")
    assert {r["energy"]["power_w"] for r in w["rows"]} == {100}
    assert all(r["energy"]["cost"] is None for r in w["rows"])  # no price given


def test_the_view_names_who_pays_what(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    argv = ["compare", "qwen3-0.6b", "-m", ",".join(SEED), "--kwh-price", "0.3"]
    code, out, _ = run(capsys, *argv, "--price-per-hour", "2.5", "--currency", "USD")
    words = " ".join(out.split())
    assert code == 0 and "energy" in out and "price" in out
    assert "radeon-860m, rtx-5090 at 0.3 USD per kWh; h100-sxm at 2.5 USD per hour" in words
    assert "radeon-860m 15 W" in words


@pytest.mark.parametrize("machine", ["radeon-860m", "rtx-5090"])
def test_decode_answers_what_system_decode_does_with_streams(capsys, machine):
    """`decode` and compare's rows share `system_decode`: on one pool and on a card with its
    host, several streams each read their share, and the answer states the total context."""
    from tokenwalk.costs.compare import system_decode
    from tokenwalk.model.resolve import load_model
    from tokenwalk.system import SystemSpec, resolve_system

    model = "gpt-oss-120b"
    argv = ["decode", model, "-m", machine, "--ctx", "16384", "--parallel", "2"]
    if machine == "rtx-5090":
        argv += ["--gpu-layers", "auto"]
    got = run_json(capsys, *argv, codes=(0, 1))
    spec = SystemSpec(machine=machine, gpu_layers="auto" if "auto" in argv else None)
    system, offload = resolve_system(spec), spec.offload()
    report, setup = system_decode(load_model(model).model, system, offload, ctx=16384, parallel=2)
    assert (setup is None) == (machine == "radeon-860m")
    assert got["ctx"] == report.ctx == 16384
    assert got["tok_s"] == report.tok_s


@pytest.mark.parametrize("machine", ["radeon-860m", "rtx-5090"])
def test_budget_answers_what_system_budget_does_with_streams(capsys, machine):
    """`budget` and compare's rows share `system_budget`, streams and all."""
    from tokenwalk.costs.compare import system_budget
    from tokenwalk.model.resolve import load_model
    from tokenwalk.system import SystemSpec, resolve_system

    got = run_json(
        capsys, "budget", "qwen3-0.6b", "-m", machine, "--ctx", "32768", "--parallel", "4"
    )
    spec = SystemSpec(machine=machine)
    report = system_budget(
        [load_model("qwen3-0.6b").model],
        resolve_system(spec),
        spec.offload(),
        ctx=32768,
        parallel=4,
    )
    assert report is not None
    assert got["free_bytes"] == report.free_bytes and got["max_fit_ctx"] == report.max_fit_ctx


def test_memory_missing_reads_short_by_not_a_negative_size(capsys):
    from tokenwalk.cli import main

    # -ngl all: the whole model on the 4090, which cannot hold it (the default places it)
    assert main(["compare", "llama-3.1-70b", "-m", "rtx-4090,apple-m4-max", "-ngl", "all"]) == 0
    out = capsys.readouterr().out
    assert "short by 18.5 GB" in out and "-18.5" not in out
    assert main(["budget", "gpt-oss-120b", "-m", "rtx-4090", "-ngl", "all"]) == 1
    out = capsys.readouterr().out
    assert "short by " in out and not re.search(r" -\d+\.\d+ GB", out)
