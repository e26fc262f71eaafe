"""Sweeps (`tokenwalk.cli.sweep`): options that take lists, one row per run, --json and --csv
giving the same rows, and --csv of every answer."""

from __future__ import annotations

import csv
import io
import json

import pytest
import typer
from hypothesis import given
from hypothesis import strategies as st

from tokenwalk.cli import main
from tokenwalk.cli.sweep import split_list

MODEL = "qwen3.6-35b-a3b"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_json(capsys, *argv: str, code: int = 0) -> dict:
    got, out, err = run(capsys, *argv, "--json")
    assert got == code, err
    return json.loads(out)


def run_csv(capsys, *argv: str, code: int = 0) -> list[dict[str, str]]:
    got, out, err = run(capsys, *argv, "--csv")
    assert got == code, err
    return list(csv.DictReader(io.StringIO(out)))


def as_csv(value: object) -> str:
    """How Python's csv module writes a JSON value."""
    return "" if value is None else str(value)


# -- the list parser ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "items"),
    [
        ("512", ["512"]),
        ("8,192", ["8,192"]),  # a thousands separator: one number
        ("1,048,576", ["1,048,576"]),
        ("512,2k,8k,32k", ["512", "2k", "8k", "32k"]),
        ("512, 256", ["512", "256"]),  # a space after the comma: always a list
        ("8,192, 16,384", ["8,192", "16,384"]),  # spaces split first, then each is read
        ("1,024,2,048", ["1", "024", "2", "048"]),  # not grouped by threes: a list
        ("1,2", ["1", "2"]),
        ("0,8k", ["0", "8k"]),
        ("0,128k", ["0", "128k"]),  # a suffix or a leading 0 is no thousands separator
        ("0,128", ["0", "128"]),
        ("8,192k", ["8", "192k"]),
    ],
)
def test_split_list(value, items):
    assert split_list(value) == items


@pytest.mark.parametrize("value", ["128,512", "512,256", "100,200", "64,128,256"])
def test_a_grouped_value_that_reads_as_a_sweep_too_is_refused(value):
    """'128,512' is 128,512 tokens or a sweep of 128 and 512: refused, with both spellings."""
    with pytest.raises(typer.BadParameter) as e:
        split_list(value)
    one = value.replace(",", "")
    assert f"write {one} for the number" in str(e.value)
    assert ", ".join(value.split(",")) in str(e.value)


@pytest.mark.parametrize("value", ["8,192", "32,768", "131,072", "1,048,576", "6,500", "16,000"])
def test_a_number_grouped_by_threes_is_still_one(value):
    assert split_list(value) == [value]


def test_the_sweep_spelling_the_refusal_gives_runs_two(capsys):
    from tokenwalk.cli import main

    assert main(["prefill", "qwen3-8b", "-m", "rtx-4090", "-p", "128,512"]) == 2
    assert "'128, 512' (a comma and a space) for a sweep" in capsys.readouterr().err
    assert main(["prefill", "qwen3-8b", "-m", "rtx-4090", "-p", "128, 512", "--json"]) == 0
    assert "128, 512" not in capsys.readouterr().err


def test_split_list_of_names_ignores_thousands():
    assert split_list("Q8_0,Q6_K", numbers=False) == ["Q8_0", "Q6_K"]
    assert split_list("100,200", numbers=False) == ["100", "200"]


@pytest.mark.parametrize("value", ["512,,2k", "512,", ",512", "a, ,b"])
def test_split_list_refuses_an_empty_item(value):
    with pytest.raises(typer.BadParameter, match="empty item"):
        split_list(value)


@given(st.integers(min_value=1000, max_value=10**12))
def test_a_grouped_number_is_one_item(n):
    assert split_list(f"{n:,}") == [f"{n:,}"]


# -- sweeps equal their single runs -----------------------------------------------------------


def test_decode_machines_side_by_side_equal_single_runs(capsys):
    machines = ["radeon-860m", "rtx-5090", "h100-sxm"]
    report = run_json(capsys, "decode", MODEL, "--machine", ",".join(machines))
    assert report["command"] == "decode" and report["axes"] == ["machine"]
    assert [r["inputs"] for r in report["rows"]] == [{"machine": m} for m in machines]
    for m, row, whole in zip(machines, report["rows"], report["runs"], strict=True):
        single = run_json(capsys, "decode", MODEL, "--machine", m)
        assert whole == single
        assert row["values"]["tok_s"] == single["tok_s"]
        assert row["values"]["ceiling_tok_s"] == single["ceiling_tok_s"]
        assert row["values"]["step_read_bytes"] == single["step_read_bytes"]
        assert row["values"]["bound"] == single["bound"]


def test_prefill_prompt_sweep_equals_single_runs(capsys):
    prompts = {"512": 512, "2k": 2048, "8k": 8192}
    report = run_json(capsys, "prefill", MODEL, "-m", "radeon-860m", "--prompt", "512,2k,8k")
    for (given_, n), row, whole in zip(
        prompts.items(), report["rows"], report["runs"], strict=True
    ):
        assert row["inputs"] == {"prompt": n}
        single = run_json(capsys, "prefill", MODEL, "-m", "radeon-860m", "--prompt", given_)
        assert whole == single and row["values"]["ttft_s"] == single["ttft_s"]


def test_product_in_the_order_given(capsys):
    argv = ("decode", MODEL, "-m", "radeon-860m")
    a = run_json(capsys, *argv, "--ctx", "0,8k", "--kv-type", "f16,q8_0")
    assert a["axes"] == ["ctx", "kv_type"]
    assert [tuple(r["inputs"].values()) for r in a["rows"]] == [
        (0, "f16"),
        (0, "q8_0"),
        (8192, "f16"),
        (8192, "q8_0"),
    ]
    b = run_json(capsys, *argv, "--kv-type", "f16,q8_0", "--ctx", "0,8k")
    assert b["axes"] == ["kv_type", "ctx"]
    assert [tuple(r["inputs"].values()) for r in b["rows"]] == [
        ("f16", 0),
        ("f16", 8192),
        ("q8_0", 0),
        ("q8_0", 8192),
    ]
    for row in b["rows"]:  # the same runs, in another order
        twin = next(r for r in a["rows"] if r["inputs"] == row["inputs"])
        assert twin["values"] == row["values"]


def test_quant_list(capsys):
    report = run_json(capsys, "size", MODEL, "--quant", "Q8_0,Q6_K,Q4_K_M")
    sizes = [r["values"]["file_bytes"] for r in report["rows"]]
    assert sizes == sorted(sizes, reverse=True)
    for quant, row in zip(["Q8_0", "Q6_K", "Q4_K_M"], report["rows"], strict=True):
        assert row["inputs"] == {"quant": quant}
        assert (
            run_json(capsys, "size", MODEL, "--quant", quant)["file_bytes"]
            == (row["values"]["file_bytes"])
        )


def test_grouped_number_is_still_one_value(capsys):
    one = run_json(capsys, "prefill", MODEL, "-m", "radeon-860m", "--prompt", "8,192")
    assert one["prompt_tokens"] == 8192 and "rows" not in one


def test_spaces_make_a_list(capsys):
    report = run_json(capsys, "kv", MODEL, "--ctx", "4k, 8k")
    assert [r["inputs"]["ctx"] for r in report["rows"]] == [4096, 8192]


def test_spec_gamma_alpha(capsys):
    report = run_json(
        capsys, "spec", "qwen3.6-27b", "-d", "qwen3-0.6b", "-m", "radeon-860m",
        "--alpha", "0.6,0.8", "--gamma", "2,4",
    )  # fmt: skip
    assert len(report["rows"]) == 4 and report["axes"] == ["alpha", "gamma"]
    single = run_json(
        capsys, "spec", "qwen3.6-27b", "-d", "qwen3-0.6b", "-m", "radeon-860m",
        "--alpha", "0.8", "--gamma", "2",
    )  # fmt: skip
    assert report["runs"][2] == single


def test_trace_and_budget_sweeps(capsys):
    t = run_json(capsys, "trace", MODEL, "-m", "radeon-860m", "--prompt", "1k", "--output", "8,32")
    assert [r["values"]["total_s"] for r in t["rows"]] == [r["total_s"] for r in t["runs"]]
    # 16 GiB for the iGPU's share and the card: the iGPU cannot hold the model, the card
    # places it as llama.cpp's --fit does (experts in RAM)
    b = run_json(
        capsys, "budget", MODEL, "-m", "radeon-860m,rtx-5080", "--gpu-limit", "16", "--ctx", "8k",
        code=1,
    )  # fmt: skip
    assert [r["values"]["fits"] for r in b["rows"]] == [False, True]  # exit 1: one does not fit


# -- --csv ------------------------------------------------------------------------------------


def test_csv_of_a_sweep_equals_its_json_rows(capsys):
    argv = ("decode", MODEL, "--machine", "radeon-860m,rtx-5090", "--ctx", "0,32k")
    report = run_json(capsys, *argv)
    rows = run_csv(capsys, *argv)
    assert list(rows[0]) == ["machine", "ctx", "tok_s", "ceiling_tok_s", "step_read_bytes", "bound"]
    flat = [{**r["inputs"], **r["values"]} for r in report["rows"]]
    assert rows == [{k: as_csv(v) for k, v in r.items()} for r in flat]
    assert int(rows[0]["step_read_bytes"]) > 1e9  # bytes are integers


@pytest.mark.parametrize(
    "argv",
    [
        ("size", MODEL),
        ("kv", MODEL, "--ctx", "32k"),
        ("decode", MODEL, "-m", "radeon-860m"),
        ("prefill", MODEL, "-m", "radeon-860m", "--prompt", "6500"),
        ("trace", MODEL, "-m", "radeon-860m", "--prompt", "6500"),
        ("spec", "qwen3.6-27b", "-d", "qwen3-0.6b", "-m", "radeon-860m"),
        ("budget", MODEL, "-m", "radeon-860m"),
        ("models", "qwen"),
        ("machines", "rtx"),
    ],
)
def test_csv_of_every_answer_parses(capsys, argv):
    code, out, err = run(capsys, *argv, "--csv")
    assert code in (0, 1), err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rows and all(rows[0].keys() == r.keys() for r in rows)
    assert "[" not in out.splitlines()[0]  # no markup in the header


def test_csv_of_a_single_run_has_the_sweep_columns(capsys):
    single = run_csv(capsys, "decode", MODEL, "-m", "radeon-860m")
    swept = run_csv(capsys, "decode", MODEL, "-m", "radeon-860m,rtx-5090")
    assert len(single) == 1
    # what the run is of, then the columns the sweep shows, with the same values
    assert list(single[0])[-4:] == list(swept[0])[1:]
    assert single[0]["machine"] == swept[0]["machine"] == "radeon-860m"
    assert {k: single[0][k] for k in swept[0]} == swept[0]


def test_kv_csv_is_its_context_sweep(capsys):
    report = run_json(capsys, "kv", MODEL)
    rows = run_csv(capsys, "kv", MODEL)
    assert [int(r["ctx"]) for r in rows] == [r["ctx"] for r in report["sweep"]]
    assert [int(r["cache_bytes"]) for r in rows] == [r["cache_bytes"] for r in report["sweep"]]


# -- refusals ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (("prefill", MODEL, "-m", "radeon-860m", "--prompt", "512,,2k"), "empty item"),
        (("prefill", MODEL, "-m", "radeon-860m", "--prompt", "512,lots"), "'lots'"),
        (("decode", MODEL, "-m", "radeon-860m,nowhere-9000"), "nowhere-9000"),
        (("spec", "qwen3.6-27b", "-d", "qwen3-0.6b", "-m", "radeon-860m", "-g", "2,x"), "'x'"),
        (("decode", MODEL, "-m", "rtx-5080", "--gpu-layers", "10,20"), "--gpu-layers takes one"),
        (("spec", "qwen3.6-27b", "-d", "qwen3-0.6b,qwen3-1.7b", "-m", "m3-max"), "--draft takes"),
        (
            ("kv", MODEL, "--ctx", ",".join(["1k"] * 40), "--parallel", ",".join(["1"] * 30)),
            "1,200",
        ),
    ],
)
def test_refusals_are_one_line(capsys, argv, words):
    code, out, err = run(capsys, *argv)
    assert code == 2 and not out
    assert err.startswith("tokenwalk: error:") and words in err
    assert err.count("\n") == 1


def test_a_warning_of_every_run_is_said_once(capsys):
    code, _, err = run(capsys, "kv", MODEL, "--ctx", "1M,2M", "--kv-type", "f16,q8_0")
    assert code == 0
    lines = err.splitlines()
    assert lines and len(lines) == len(set(lines))


def test_view_fits_80_columns(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run(
        capsys, "decode", MODEL, "-m", "radeon-860m,rtx-5090,h100-sxm", "--ctx", "0,8k,32k,128k"
    )
    assert code == 0
    lines = out.splitlines()
    assert len(lines) > 12 and max(len(line) for line in lines) <= 80
    assert "…" not in out and "h100-sxm" in out and "131,072" in out
    assert "┃" in out  # framed: it fits


@pytest.mark.parametrize("width", [60, 80, 120])
def test_view_never_cuts_a_name_or_a_number(capsys, monkeypatch, width):
    monkeypatch.setenv("COLUMNS", str(width))
    argv = ("decode", MODEL, "-m", "radeon-860m,2xrtx-3090+rtx-3060", "--ctx", "0,128k")
    code, out, _ = run(capsys, *argv, "--parallel", "1,4")
    assert code == 0 and max(len(line) for line in out.splitlines()) <= width
    assert "…" not in out
    report = run_json(capsys, *argv, "--parallel", "1,4")
    for row in report["rows"]:
        assert f"{row['inputs']['ctx']:,}" in out
        assert f"{row['values']['step_read_bytes'] / 1e9:.2f}" in out
    assert out.count("2xrtx-3090+rtx-3060") == 4


def test_csv_text_from_data_reaches_no_terminal(capsys, monkeypatch):
    import tokenwalk.render.rows as rows_mod
    from tokenwalk.cli.app import emit_csv

    monkeypatch.setattr(rows_mod, "csv_rows", lambda _: [{"model": "evil\x1b[2J\u202e", "n": 3}])
    emit_csv(object())
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out
    assert list(csv.DictReader(io.StringIO(out))) == [{"model": "evil\\x1b[2J\\u202e", "n": "3"}]


def test_csv_rows_of_the_defaults_refit():
    from tokenwalk.render.rows import csv_rows
    from tokenwalk.timing.calibrate import DefaultsFit, ErrorStats

    stats = ErrorStats(n_rows=3, median_pct=10.0, p90_pct=20.0, signed_median_pct=-1.0)
    fit = DefaultsFit.model_construct(errors={"in_sample": {"decode": stats, "prefill": stats}})
    rows = csv_rows(fit)
    assert [(r["fit"], r["phase"]) for r in rows] == [
        ("in_sample", "decode"),
        ("in_sample", "prefill"),
    ]
    assert rows[0]["median_pct"] == 10.0


# -- several models in one command -------------------------------------------------------------


def test_models_listed_run_once_each_and_equal_the_single_runs(capsys) -> None:
    """`decode a,b -m x,y`: the models vary slowest, each row equals its single run."""
    d = run_json(capsys, "decode", f"{MODEL},qwen3.6-27b", "-m", "radeon-860m,rtx-5090")
    assert d["axes"] == ["model", "machine"]
    got = [(r["inputs"]["model"], r["inputs"]["machine"]) for r in d["rows"]]
    assert got == [
        (MODEL, "radeon-860m"),
        (MODEL, "rtx-5090"),
        ("qwen3.6-27b", "radeon-860m"),
        ("qwen3.6-27b", "rtx-5090"),
    ]
    for (model, machine), row in zip(got, d["rows"], strict=True):
        single = run_json(capsys, "decode", model, "-m", machine)
        assert row["values"]["tok_s"] == single["tok_s"]


def test_model_lists_in_size_and_spec(capsys) -> None:
    rows = run_csv(capsys, "size", f"{MODEL},qwen3.6-27b")
    assert [r["model"] for r in rows] == [MODEL, "qwen3.6-27b"]
    d = run_json(
        capsys,
        "spec",
        f"qwen3.6-27b,{MODEL}",
        "--draft",
        "qwen3-0.6b",
        "-m",
        "radeon-860m",
        code=1,
    )  # the seed: a draft pays for the dense model, loses for the MoE (exit 1: one loses)
    assert [r["inputs"]["target"] for r in d["rows"]] == ["qwen3.6-27b", MODEL]


def test_a_file_with_a_comma_in_its_name_is_one_model(capsys, tmp_path) -> None:
    from tokenwalk.cli.sweep import model_items

    f = tmp_path / "a,b.gguf"
    f.write_bytes(b"")
    assert model_items(str(f)) == [str(f)]
    assert model_items("https://example.org/a,b.gguf") == ["https://example.org/a,b.gguf"]
    assert model_items("a,b") == ["a", "b"]
    code, _, err = run(capsys, "size", f"{MODEL},")
    assert code == 2 and "empty item" in err


@pytest.mark.parametrize(
    ("argv", "head"),
    [
        (["decode", "qwen3-8b", "-m", "rtx-4090"], "model,quant,machine,ctx,"),
        (
            ["prefill", "qwen3-8b", "-m", "rtx-4090", "-p", "512"],
            "model,quant,machine,prompt_tokens,",
        ),
        (["trace", "qwen3-8b", "-m", "rtx-4090", "-p", "512"], "model,machine,prompt_tokens,"),
        (
            ["spec", "qwen3-32b", "--draft", "qwen3-0.6b", "-m", "rtx-4090"],
            "target,draft,machine,ctx,",
        ),
        (["budget", "qwen3-8b", "-m", "rtx-4090"], "model,machine,ctx,"),
    ],
)
def test_a_single_run_s_csv_says_what_it_is_of(capsys, argv, head):
    from tokenwalk.cli import main

    assert main([*argv, "--csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[0].startswith(head)
    assert "qwen3" in lines[1] and "rtx-4090" in lines[1]


def test_trace_chat_csv_is_a_row_per_call(capsys):
    from pathlib import Path

    from tokenwalk.cli import main

    chat = Path(__file__).parent.parent / "data" / "chat-fixed.json"
    assert main(["trace", "qwen3-8b", "-m", "rtx-4090", "--chat", str(chat), "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["index"] for r in rows] == ["0", "1"]
    assert all(r["model"] == "qwen3-8b" and r["machine"] == "rtx-4090" for r in rows)
    assert int(rows[1]["cached_tokens"]) > 0
