"""`render.layout`: which columns a table keeps at a width, and the note about the rest."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenwalk.render.layout import drop_columns, left_out_note, table_width


def test_drops_least_needed_first_and_only_what_it_must():
    widths = {"slug": 20, "arch": 10, "params": 7, "layers": 6}
    assert drop_columns(widths, 200, ["arch", "layers"]) == (widths, [])
    kept, dropped = drop_columns(widths, 40, ["arch", "layers"])
    assert dropped == ["arch"] and list(kept) == ["slug", "params", "layers"]
    assert table_width(list(kept.values())) <= 40


def test_never_drops_a_column_it_was_not_told_to():
    kept, dropped = drop_columns({"slug": 50, "x": 5}, 20, ["x"])
    assert kept == {"slug": 50} and dropped == ["x"]


@given(
    st.lists(st.integers(1, 30), min_size=1, max_size=8),
    st.integers(20, 200),
)
def test_kept_columns_fit_when_enough_can_go(ws, width):
    widths = {f"c{i}": w for i, w in enumerate(ws)}
    kept, dropped = drop_columns(widths, width, list(widths)[1:])
    assert set(kept) | set(dropped) == set(widths)
    assert table_width(list(kept.values())) <= width or list(kept) == ["c0"]


def test_the_note_says_what_and_how():
    assert left_out_note([], 80) == ""
    note = left_out_note(["arch", "layers"], 60)
    assert "60 columns: arch, layers" in note and "--json" in note


def _print(renderable, width: int) -> list[str]:
    from rich.console import Console

    console = Console(width=width, record=True, color_system=None)
    with console.capture() as cap:
        console.print(renderable)
    return cap.get().splitlines()


def test_facts_keep_notes_beside_where_they_fit_and_under_where_not():
    from tokenwalk.render.layout import Facts

    f = Facts()
    f.add_row("ceiling", "60.7 tok/s", "128 GB/s / 2.11 GB per step")
    f.add_row("efficiencies", "", "36% of bandwidth, 18% of compute (half that for products)")
    wide = _print(f, 120)
    assert len(wide) == 2 and "per step" in wide[0]
    narrow = _print(f, 40)
    assert max(len(x.rstrip()) for x in narrow) <= 40
    assert narrow[0].split() == ["ceiling", "60.7", "tok/s"]
    assert narrow[1].strip() == "128 GB/s / 2.11 GB per step"  # under its fact, whole


def test_note_lines_pack_whole_notes_in_order():
    from tokenwalk.render.layout import marker, note_lines

    assert marker(1) == "¹" and marker(12) == "¹²"
    notes = [(1, "6,500 tokens"), (2, "x" * 50), (3, "end-of-turn token")]
    assert note_lines(notes, 70) == ["¹ 6,500 tokens  ² " + "x" * 50, "³ end-of-turn token"]
    assert note_lines([], 70, ["(see --json)"]) == ["(see --json)"]


def test_a_fit_table_fills_what_fits_and_says_what_it_left_out():
    from rich.console import Console
    from rich.text import Text

    from tokenwalk.render.layout import FitTable

    rows = [
        {"name": "a-long-slug", "size": "1.2 GB", "rows": "305", "note": Text("x" * 30)},
        {"name": "b", "size": "12.0 GB", "rows": "4", "note": Text("y")},
    ]
    for width, want in ((80, []), (30, ["note"]), (20, ["note", "rows"])):
        t = FitTable()
        assert t.fill(rows, width, ("note", "rows"), left=("name",)) == want
        console = Console(width=width, record=True)
        console.print(t)
        lines = console.export_text().splitlines()
        assert all(len(x) <= width for x in lines)
        assert any("a-long-slug" in x for x in lines)  # a typed name is never cut


def test_a_wrapping_heading_is_never_cut_when_the_table_is_tight():
    """A heading that may wrap ("overhead per layer") keeps the width counted for it: at every
    width around the tightest fit, nothing is cut with an ellipsis."""
    from rich.console import Console

    from tokenwalk.render.layout import FitTable

    rows = [
        {"fit": "before", "eff_bw": "95%", "overhead per layer": "81 µs", "rows_half": "23",
         "eff_experts": "42%", "median error": "1775.7%"},
        {"fit": "after", "eff_bw": "83%", "overhead per layer": "716 µs", "rows_half": "4,100",
         "eff_experts": "42%", "median error": "5.9%"},
    ]  # fmt: skip
    for width in range(36, 64):
        t = FitTable()
        t.fill(rows, width, ("rows_half", "eff_experts"), left=("fit",),
               wrap={"overhead per layer": 8, "median error": 6})  # fmt: skip
        console = Console(width=width, record=True)
        console.print(t)
        text = console.export_text()
        assert "…" not in text, (width, text)
        assert all(len(x) <= width for x in text.splitlines())


def test_a_budget_s_flags_are_one_line_never_folded_nor_cut(capsys, monkeypatch):
    """The -ot patterns budget prints are copied into llama.cpp's command line: at 60 columns
    the line is printed whole, for the terminal to fold (a copy then pastes one line)."""
    from tokenwalk.cli import main

    monkeypatch.setenv("COLUMNS", "60")
    main(["budget", "qwen3.6-35b-a3b", "-m", "rtx-5080", "--gpu-layers", "auto"])
    out = capsys.readouterr().out
    assert "…" not in out
    (line,) = [x for x in out.splitlines() if x.lstrip().startswith("llama.cpp")]
    assert r"-ngl all -ot 'blk\.(2[89]|3[0-9])\.ffn_.*_exps=CPU," in line
    assert len(line) > 60


def test_a_number_of_rows_is_singular_at_one():
    from tokenwalk.render.fmt import rows

    assert (rows(1), rows(1.2), rows(23.4), rows(1024), rows(0.5)) == (
        "1 row",
        "1 row",
        "23 rows",
        "1,024 rows",
        "0.5 rows",  # a fitted rows_half at its lower bound, never "0 rows"
    )


def test_a_title_breaks_only_at_its_separators():
    from tokenwalk.render.layout import title_of

    parts = ["qwen3.6-35b-a3b Q4_K_M", "Radeon 860M (Ryzen AI 7 PRO 450 laptop, 64 GB)", "decode"]
    assert title_of(parts, 200) == "  ·  ".join(parts)
    assert title_of(parts, 60).splitlines() == [parts[0], f"{parts[1]}  ·  decode"]
    assert title_of(["a", "b", "c"], 9).splitlines() == ["a  ·  b", "c"]


@pytest.mark.parametrize(
    "argv",
    [
        ["decode", "qwen3.6-35b-a3b", "-m", "radeon-860m"],
        ["prefill", "qwen3.6-35b-a3b", "-m", "radeon-860m", "-p", "4096"],
        ["size", "qwen3.6-35b-a3b"],
        ["kv", "qwen3.6-35b-a3b"],
        ["serve", "qwen3.6-35b-a3b", "-m", "radeon-860m", "--prompt", "2k", "-u", "4"],
    ],
)
def test_titles_do_not_wrap_inside_a_part_at_60_columns(argv, capsys, monkeypatch):
    """'Radeon 860M (Ryzen AI 7 PRO 450 ...)' stays on one line; the break takes a separator."""
    from tokenwalk.cli import main

    monkeypatch.setenv("COLUMNS", "60")
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    head = []
    for line in lines:
        if line.startswith(("┏", " ", "─")) and head:
            break
        head.append(line.rstrip())
    text = "\n".join(head)
    assert "Radeon 860M (Ryzen AI 7 PRO 450 laptop, 64 GB LPDDR5X-8000)" in text or argv[0] in (
        "size",
        "kv",
    )
    assert not any(h.endswith("·") or h.startswith("·") for h in head), text
