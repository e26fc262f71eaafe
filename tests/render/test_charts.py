"""--chart: each chart at 60, 80 and 120 columns, with and without colour, against its report;
--svg and --html end to end."""

from __future__ import annotations

import io
import json
import re

import pytest
from rich.console import Console
from rich.text import Text

from tokenwalk.cli import main
from tokenwalk.costs.budget import BudgetReport
from tokenwalk.costs.kv import KvReport
from tokenwalk.costs.serve import ServeReport
from tokenwalk.costs.size import SizeReport
from tokenwalk.costs.spec import SpecReport
from tokenwalk.costs.sweep import SweepColumn, SweepReport, SweepRow
from tokenwalk.costs.trace import TraceReport
from tokenwalk.render import charts
from tokenwalk.render.fmt import human_bytes, rate
from tokenwalk.timing.passes import DecodeReport, PrefillReport

WIDTHS = (60, 80, 120)
ESC = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

M = "qwen3.6-35b-a3b"
LAPTOP = ("--machine", "radeon-860m")
COMMANDS = {
    "decode": (DecodeReport, ["decode", M, *LAPTOP, "--ctx", "8k"]),
    "prefill": (PrefillReport, ["prefill", M, *LAPTOP, "--prompt", "6500"]),
    "kv": (KvReport, ["kv", M]),
    "budget": (BudgetReport, ["budget", M, *LAPTOP]),
    "trace": (TraceReport, ["trace", M, *LAPTOP, "--prompt", "6500"]),
    "spec": (SpecReport, ["spec", "qwen3.6-27b", "--draft", "qwen3-0.6b", *LAPTOP]),
    "size": (SizeReport, ["size", M]),
    "serve": (ServeReport, ["serve", M, *LAPTOP, "--prompt", "2k"]),
}
CHART = {
    "decode": charts.chart_decode_report,
    "prefill": charts.chart_prefill_report,
    "kv": charts.chart_kv_report,
    "budget": charts.chart_budget_report,
    "trace": charts.chart_trace_report,
    "spec": charts.chart_spec_report,
    "size": charts.chart_size_report,
    "serve": charts.chart_serve_report,
}
_REPORTS: dict[str, object] = {}


def report(name: str, capsys: pytest.CaptureFixture[str]) -> object:
    """The command's answer, read back from its --json (computed once per test run)."""
    if name not in _REPORTS:
        cls, argv = COMMANDS[name]
        assert main([*argv, "--json"]) == 0
        _REPORTS[name] = cls.model_validate(json.loads(capsys.readouterr().out))
    return _REPORTS[name]


def draw(fn, r, width: int, *, colour: bool) -> str:
    """What chart function `fn` prints for `r` on a terminal of `width` columns."""
    out = io.StringIO()
    console = Console(
        file=out,
        width=width,
        force_terminal=True,
        color_system="truecolor" if colour else None,
        no_color=not colour,
        highlight=False,
        emoji=False,
    )
    fn(r, console)
    return out.getvalue()


def cells(line: str) -> int:
    return Text.from_ansi(line).cell_len


def sweep_report() -> SweepReport:
    """TTFT against prompt length on two machines, as the sweep of `prefill` gives it."""
    rows = []
    for machine, per_token_s in (("radeon-860m", 0.01), ("rtx-5090", 0.0004)):
        for prompt in (512, 2048, 8192, 32768):
            rows.append(
                SweepRow(
                    inputs={"machine": machine, "prompt": prompt},
                    values={"ttft_s": per_token_s * prompt, "tok_s": 1 / per_token_s},
                )
            )
    return SweepReport(
        command="prefill",
        axes=["machine", "prompt"],
        columns=[
            SweepColumn(key="ttft_s", label="TTFT", unit="s"),
            SweepColumn(key="tok_s", label="prefill", unit="tok/s"),
        ],
        rows=rows,
        runs=[],
    )


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", list(COMMANDS))
def test_chart_fits_the_width_with_and_without_colour(name, width, capsys):
    r = report(name, capsys)
    coloured = draw(CHART[name], r, width, colour=True)
    plain = draw(CHART[name], r, width, colour=False)
    assert plain.strip(), f"{name}: no chart"
    assert "\x1b" not in plain, f"{name}: escape codes without colour"
    for text in (coloured, plain):
        longest = max(cells(line) for line in text.splitlines())
        assert longest <= width, f"{name} at {width}: a line of {longest} columns"
    # the same picture, line for line (without colour, series differ by marker instead)
    assert len(ESC.sub("", coloured).splitlines()) == len(plain.splitlines())


@pytest.mark.parametrize("width", WIDTHS)
def test_sweep_chart_has_one_series_per_machine(width):
    r = sweep_report()
    plain = draw(charts.chart_sweep_report, r, width, colour=False)
    assert "\x1b" not in plain
    assert max(cells(line) for line in plain.splitlines()) <= width
    assert "TTFT (s) against prompt" in plain
    legend = plain.splitlines()[-1]  # under the chart, one marker a series
    assert legend.split() == ["⠒⠒", "radeon-860m", "++", "rtx-5090"]
    assert "2k" in plain and "32k" in plain  # the prompt lengths label the axis
    # 0.2 s to 328 s (0.01 s x 32768 tokens) is drawn on a log scale, ticked at the decades
    labels = [line.split("┤")[0].strip() for line in plain.splitlines() if "┤" in line]
    assert labels == ["100", "10", "1"]


def test_sweep_over_a_fraction_labels_it_as_it_is():
    rows = [
        SweepRow(inputs={"alpha": a}, values={"speedup": 0.5 + 2 * a * a})
        for a in (0.5, 0.6, 0.7, 0.8, 0.9)
    ]
    r = SweepReport(
        command="spec",
        axes=["alpha"],
        columns=[SweepColumn(key="speedup", label="speedup", unit="x")],
        rows=rows,
        runs=[],
    )
    plain = draw(charts.chart_sweep_report, r, 80, colour=False)
    axis = next(line for line in plain.splitlines() if "0.5" in line and "0.9" in line)
    assert axis.split() == ["0.5", "0.6", "0.7", "0.8", "0.9"]


def test_sweep_without_a_numeric_axis_draws_bars():
    rows = [
        SweepRow(inputs={"quant": q}, values={"file_bytes": b})
        for q, b in (("Q8_0", 36e9), ("Q4_K_M", 21e9), ("IQ2_M", 11e9))
    ]
    r = SweepReport(
        command="size",
        axes=["quant"],
        columns=[SweepColumn(key="file_bytes", label="file size", unit="B")],
        rows=rows,
        runs=[],
    )
    plain = draw(charts.chart_sweep_report, r, 60, colour=False)
    bars = {line.split()[0]: line.count("█") for line in plain.splitlines() if "█" in line}
    assert bars["Q8_0"] > bars["Q4_K_M"] > bars["IQ2_M"] > 0
    assert "36.0 GB" in plain and "11.0 GB" in plain


def test_sweep_with_negative_values_keeps_them_in_view():
    """What is left of the memory goes below 0 when a context does not fit."""
    rows = [
        SweepRow(inputs={"ctx": c}, values={"free_bytes": f})
        for c, f in ((8192, 4e9), (32768, 1e9), (131072, -6e9))
    ]
    r = SweepReport(
        command="budget",
        axes=["ctx"],
        columns=[SweepColumn(key="free_bytes", label="free", unit="B")],
        rows=rows,
        runs=[],
    )
    plain = draw(charts.chart_sweep_report, r, 60, colour=False)
    labels = [float(line.split("┤")[0]) for line in plain.splitlines() if "┤" in line]
    assert labels[0] == pytest.approx(4.0, abs=0.01) and labels[-1] == pytest.approx(-6.0)
    bars = [("fits", 4e9, "4 GB"), ("short", -6e9, "-6 GB")]
    out = io.StringIO()
    charts._hbars(Console(file=out, width=40, color_system=None), bars)
    lines = out.getvalue().splitlines()
    assert all(len(line) == 40 for line in lines) and "█" not in lines[1]


def test_size_longest_bar_is_the_largest_role(capsys):
    r = report("size", capsys)
    plain = draw(charts.chart_size_report, r, 80, colour=False)
    bars = {line.split()[0]: line.count("█") for line in plain.splitlines() if "█" in line}
    largest = max(r.by_role, key=lambda x: x.tensor_bytes)
    assert max(bars, key=bars.get) == largest.role
    assert human_bytes(largest.tensor_bytes) in plain


def test_decode_chart_carries_the_reports_numbers(capsys):
    r = report("decode", capsys)
    plain = draw(charts.chart_decode_report, r, 80, colour=False)
    assert rate(r.aggregate_tok_s) in plain
    assert human_bytes(r.read_bytes_per_token) in plain
    assert f"{r.aggregate_ceiling_tok_s:,.1f} at the ceiling" in plain
    bar = next(line for line in plain.splitlines() if line.startswith("█"))
    assert len(bar) == 80
    read = bar.count("█") + bar.count("▒")
    # the share of the second the estimate reads, to a column
    share = r.aggregate_tok_s * r.read_bytes_per_token / (r.bandwidth_gbs * 1e9)
    assert abs(read - share * 80) <= 1
    # --ctx 8k: the curve runs from 0 to 32k tokens, tok/s from 0 to the fastest point
    assert r.by_context[0].ctx == 0 and r.by_context[-1].ctx == 32768
    axis = [line for line in plain.splitlines() if "32k" in line]
    assert axis and axis[-1].split()[0] == "0"
    labels = [float(line.split("┤")[0]) for line in plain.splitlines() if "┤" in line]
    assert labels[0] == pytest.approx(r.by_context[0].tok_s, abs=0.05)  # one decimal
    assert labels[-1] == 0


def test_budget_chart_carries_the_reports_numbers(capsys):
    r = report("budget", capsys)
    plain = draw(charts.chart_budget_report, r, 80, colour=False)
    assert f"weights {human_bytes(r.weights_bytes)}" in plain
    assert f"KV {human_bytes(r.cache_bytes)}" in plain
    assert human_bytes(r.cache_room_bytes) in plain
    bar = next(line for line in plain.splitlines() if line.startswith("▓"))
    assert len(bar) == 80
    assert abs(bar.count("█") - r.weights_bytes / r.capacity_bytes * 80) <= 1
    assert "memory left" in plain


def test_budget_bar_marks_what_does_not_fit():
    out = io.StringIO()
    console = Console(file=out, width=40, no_color=True, color_system=None)
    charts._budget_bar(console, "card", 10e9, 1e9, 12e9, 1e9, 0)
    bar = out.getvalue().splitlines()[1]
    assert len(bar) == 40 and bar.endswith("!")
    assert "4.00 GB over" in out.getvalue()


def test_trace_timeline_bars_follow_the_phases(capsys):
    r = report("trace", capsys)
    plain = draw(charts.chart_trace_report, r, 80, colour=False)
    lines = plain.splitlines()
    prefill = next(line for line in lines if line.startswith("prefill, 13 chunks"))
    decode = next(line for line in lines if line.startswith("decode"))
    ratio = prefill.count("█") / decode.count("█")
    assert ratio == pytest.approx(r.prefill_s / r.decode_s, rel=0.15)
    assert decode.index("█") >= prefill.rindex("█")  # decode starts where prefill ends
    assert len([line for line in lines if "chunk" in line]) == 1  # the chunks are one row


def test_plain_output_uses_glyphs_not_colour(capsys):
    """Without colour, each share of a bar keeps a glyph of its own."""
    r = report("budget", capsys)
    plain = draw(charts.chart_budget_report, r, 80, colour=False)
    for glyph in ("▓", "█", "▒", "·"):
        assert glyph in plain


def test_log_ticks():
    assert charts.log_ticks(0.05, 372) == [0.1, 1, 10, 100]
    assert charts.log_ticks(2, 30) == [2, 10, 30]  # one decade inside: the ends too


def test_tokens_label():
    assert charts.tokens_label(8192) == "8k"
    assert charts.tokens_label(1 << 20) == "1M"
    assert charts.tokens_label(512) == "512"
    assert charts.tokens_label(0) == "0"


# -- end to end ---------------------------------------------------------------------------------


def run(capsys, monkeypatch, width: int, *argv: str) -> tuple[int, str, str]:
    monkeypatch.setenv("COLUMNS", str(width))
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("width", WIDTHS)
def test_chart_flag_end_to_end(width, capsys, monkeypatch):
    code, out, _ = run(capsys, monkeypatch, width, *COMMANDS["decode"][1], "--chart")
    assert code == 0
    assert "Decode speed against the context" in out
    assert max(cells(line) for line in out.splitlines()) <= width


SWEEP = ["prefill", M, "--machine", "radeon-860m,rtx-5090", "--prompt", "512,2k,8k,32k"]


def test_no_chart_with_json_or_csv(capsys, monkeypatch):
    code, out, _ = run(capsys, monkeypatch, 80, *COMMANDS["decode"][1], "--chart", "--json")
    assert code == 0
    json.loads(out)  # the answer alone
    code, out, _ = run(capsys, monkeypatch, 80, *SWEEP, "--chart", "--csv")
    assert code == 0
    assert "┤" not in out and "against" not in out
    assert len(out.splitlines()) == 1 + 8  # the header, then one row a run


@pytest.mark.parametrize("width", WIDTHS)
def test_sweep_chart_end_to_end(width, capsys, monkeypatch):
    """TTFT against prompt length for two machines: the seed's laptop and a desktop card."""
    code, out, _ = run(capsys, monkeypatch, width, *SWEEP, "--chart")
    assert code == 0
    assert max(cells(line) for line in out.splitlines()) <= width
    chart = out[out.index("TTFT (s) against prompt") :]
    assert "radeon-860m" in chart and "rtx-5090" in chart  # the legend: two series
    axis = next(line for line in chart.splitlines() if "32k" in line)
    assert axis.split() == ["512", "2k", "8k", "32k"]
    # the chart's numbers are the sweep's: the top decade holds the slowest run
    code, answer, _ = run(capsys, monkeypatch, width, *SWEEP, "--json")
    slowest = max(r["values"]["ttft_s"] for r in json.loads(answer)["rows"])
    top = next(line for line in chart.splitlines() if "┤" in line).split("┤")[0]
    assert float(top) <= slowest < 10 * float(top)


def test_chart_respects_no_color_on_a_terminal(capsys, monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("NO_COLOR", "1")
    code, out, _ = run(capsys, monkeypatch, 80, *COMMANDS["kv"][1], "--chart")
    assert code == 0
    chart = out[out.index("KV cache against the context") :]
    assert "\x1b[3" not in chart and "\x1b[9" not in chart  # no colour codes in the chart


def test_svg_and_html_save_the_chart(tmp_path, capsys, monkeypatch):
    svg, html = tmp_path / "decode.svg", tmp_path / "decode.html"
    argv = [*COMMANDS["decode"][1], "--chart", "--svg", str(svg), "--html", str(html)]
    code, out, _ = run(capsys, monkeypatch, 80, *argv)
    assert code == 0
    assert "Decode speed against the context" in out
    page = html.read_text(encoding="utf-8")
    assert "Decode speed against the context" in page and "<html" in page
    drawing = svg.read_text(encoding="utf-8")
    assert drawing.startswith("<svg") and "context" in drawing and "█" in drawing


def test_nothing_is_written_on_an_error(tmp_path, capsys, monkeypatch):
    svg = tmp_path / "out.svg"
    code, out, err = run(
        capsys, monkeypatch, 80, "decode", "no-such-model", *LAPTOP, "--chart", "--svg", str(svg)
    )
    assert code == 2 and not svg.exists()
    assert err.startswith("tokenwalk: error:") and len(err.splitlines()) == 1


def test_a_folder_is_refused_in_one_line(tmp_path, capsys, monkeypatch):
    code, out, err = run(
        capsys, monkeypatch, 80, *COMMANDS["kv"][1], "--chart", "--html", str(tmp_path)
    )
    assert code == 2 and not out
    assert err.startswith("tokenwalk: error:") and len(err.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("width", WIDTHS)
def test_session_chart_puts_the_calls_on_one_clock(width):
    from tokenwalk.costs.trace import session_report
    from tokenwalk.machine import resolve_machine
    from tokenwalk.model.resolve import load_model

    model = load_model(M).model
    machine = resolve_machine("radeon-860m")
    r = session_report(model, machine, [(7600, 0, 300), (7950, 7900, 300)], gap_s=30, cold=True)
    plain = draw(charts.chart_session_report, r, width, colour=False)
    assert "\x1b" not in plain
    lines = plain.splitlines()
    assert max(cells(line) for line in lines) <= width
    first = next(line for line in lines if line.startswith("call 1 (cold)"))
    second = next(line for line in lines if line.startswith("call 2"))
    assert "▓" in first and "▓" not in second  # only the cold call loads from disk
    # the second call starts after the first ended and the idle gap
    bar_start = len("call 1 (cold) ")
    assert second.index("▒", bar_start) > first.rindex("█")


def test_sweep_of_models_and_machines_has_a_series_for_each_pair(capsys, monkeypatch):
    argv = ["decode", f"{M},qwen3.6-27b", *("--machine", "radeon-860m,rtx-5090")]
    code, out, _ = run(capsys, monkeypatch, 80, *argv, "--ctx", "0,32k", "--chart")
    assert code == 0
    legend = " ".join(out.splitlines()[-2:])
    for pair in (f"{M}, radeon-860m", f"{M}, rtx-5090", "qwen3.6-27b, radeon-860m"):
        assert pair in legend
    assert "qwen3.6-27b, rtx-5090" in legend


def test_compare_chart_bars_follow_the_rows(capsys) -> None:
    """compare --chart: one bar a machine per panel, the longest for the largest value."""
    import os

    from tokenwalk.cli import main

    os.environ["COLUMNS"] = "80"
    try:
        code = main(
            [
                "compare",
                "qwen3.6-35b-a3b",
                "-m",
                "radeon-860m,rtx-5090",
                "--prompt",
                "6500",
                "--chart",
            ]
        )
    finally:
        del os.environ["COLUMNS"]
    out = capsys.readouterr().out
    assert code == 0
    assert all(len(line) <= 80 for line in out.splitlines())
    lines = out.splitlines()
    speed = lines[lines.index("Decode speed (tok/s)") + 1 :][:2]
    ttft = lines[next(i for i, x in enumerate(lines) if x.startswith("Time to first")) + 1 :][:2]
    assert speed[0].count("█") < speed[1].count("█")  # the laptop writes slower
    assert ttft[0].count("█") > ttft[1].count("█")  # and waits longer for the first token


@pytest.mark.parametrize("command", [["machines"], ["models"], ["tokens", "qwen3-0.6b", "x"]])
def test_commands_without_a_chart_offer_no_chart_option(capsys, command) -> None:
    from tokenwalk.cli import main

    assert main([*command, "--chart"]) == 2
    err = capsys.readouterr().err
    assert "No such option: --chart" in err and len(err.strip().splitlines()) == 1


def test_sweep_chart_shows_bytes_as_the_sweep_table_does():
    """The chart takes the unit of the table (KB for a KV cache per token, not 0.000164 GB),
    and a bar's label reads as the table's numbers do ('640.0 MB', not '0.64 GB')."""
    rows = [
        SweepRow(inputs={"ctx": c}, values={"kv_bytes_per_token": b})
        for c, b in ((4096, 40960), (32768, 163840))
    ]
    r = SweepReport(
        command="kv",
        axes=["ctx"],
        columns=[SweepColumn(key="kv_bytes_per_token", label="per token", unit="B")],
        rows=rows,
        runs=[],
    )
    plain = draw(charts.chart_sweep_report, r, 80, colour=False)
    assert "per token (KB) against ctx" in plain
    rows = [
        SweepRow(inputs={"ctx": 8192, "machine": m}, values={"file_bytes": b})
        for m, b in (("big", 21.1e9), ("small", 640e6))
    ]
    r = SweepReport(
        command="size",
        axes=["ctx", "machine"],
        columns=[SweepColumn(key="file_bytes", label="file size", unit="B")],
        rows=rows,
        runs=[],
    )
    plain = draw(charts.chart_sweep_report, r, 80, colour=False)
    assert "21.1 GB" in plain and "640.0 MB" in plain
