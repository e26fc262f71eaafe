"""`render.layout`: which columns a table keeps at a width, and the note about the rest."""

from __future__ import annotations

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
