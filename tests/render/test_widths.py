"""Every command's view at 60, 80 and 120 columns: no line wider than the terminal, the names
a user types never cut, numbers never split across lines, and the design card's trace on one
80 x 24 screen. The commands run through `tokenwalk.cli.main` with COLUMNS set (see widths.py);
`python tests/render/widths.py` prints the line counts."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

import tokenwalk.probe as probe_mod

sys.path.insert(0, str(Path(__file__).parent))
from widths import WIDTHS, canned_probe, capture, cases, files  # noqa: E402

# the case names (the files they read are made once per module, in `views`)
CASES = list(cases({k: k for k in ("bench", "header", "machines", "vocab", "chat")}))


@pytest.fixture(scope="module")
def views(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int], str]:
    """(case, width) -> what the command printed."""
    mp = pytest.MonkeyPatch()
    mp.setattr(probe_mod, "detect_machine", canned_probe()[0])
    mp.setattr(probe_mod, "measure_host", canned_probe()[1])
    out = {}
    try:
        for name, argv in cases(files(tmp_path_factory.mktemp("widths"))).items():
            for w in WIDTHS:
                code, text, err = capture(argv, w)
                assert code == 0, (name, w, err)
                out[name, w] = text
    finally:
        mp.undo()
    return out


def view(views: dict, name: str, width: int) -> str:
    if (name, width) not in views:
        pytest.skip(f"{name} needs the text extra (tokenizers, jinja2)")
    return views[name, width]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", CASES)
def test_no_line_wider_than_the_terminal(views, name: str, width: int) -> None:
    text = view(views, name, width)
    # a llama.cpp or llama-server line is printed whole, for the terminal to fold (`Whole`)
    wide = [
        line
        for line in text.splitlines()
        if len(line.rstrip()) > width
        and not re.search(r"^\s*llama(\.cpp|-server) |(^| )-ngl ", line)
    ]
    assert not wide, f"{name} at {width}: {wide[:3]}"


def test_the_design_card_trace_fits_one_screen(views) -> None:
    """`tokenwalk trace qwen3.6-35b-a3b --machine radeon-860m --prompt 6500` was 73 lines at
    80 columns, every row wrapped; it fits 80 x 24 with the prompt line to spare."""
    text = views["trace", 80]
    assert len(text.splitlines()) <= 23, text
    assert "prefill chunks 1-12/13" in text and "prefill chunk 13/13" in text
    assert "tokenwalk prefill" in text  # where to see each chunk


def test_the_trace_json_keeps_every_chunk() -> None:
    argv = ["trace", "qwen3.6-35b-a3b", "--machine", "radeon-860m", "--prompt", "6500", "--json"]
    phases = json.loads(capture(argv, 60)[1])["phases"]
    assert [p["name"] for p in phases if p["name"].startswith("prefill")] == [
        f"prefill chunk {i}/13" for i in range(1, 14)
    ]


def test_trace_notes_are_never_a_squeezed_column(views) -> None:
    """Notes go under the table, numbered, where they would not fit beside the timeline."""
    for w in (60, 80):
        text = views["trace", w]
        assert "decode⁶" in text and "⁶ 299 steps, context 6,501 to 6,799" in text
    assert "299 steps, context 6,501 to 6,799; a step reads 2.24 GB in 81 ms" in views["trace", 120]


# names a user types (slugs, quants) appear whole at every width
TYPED = {
    "size": ["qwen3.6-35b-a3b", "Q4_K_M", "Q4_K", "Q6_K"],
    "kv": ["qwen3.6-35b-a3b"],
    "decode": ["qwen3.6-35b-a3b", "Q4_K_M"],
    "decode-split": ["rtx-5080"],
    "prefill": ["qwen3.6-35b-a3b", "Q4_K_M"],
    "budget": ["radeon-860m"],
    "budget-split": ["rtx-5080"],
    "trace": ["qwen3.6-35b-a3b", "radeon-860m"],
    "trace-split": ["rtx-5080"],
    "spec": ["qwen3.6-27b", "qwen3-0.6b", "radeon-860m"],
    "compare": ["qwen3.6-35b-a3b", "radeon-860m", "rtx-5090", "h100-sxm"],
    "compare-models": ["qwen3.6-35b-a3b", "gpt-oss-120b", "radeon-860m", "rtx-5090"],
    "models-fits": ["rtx-5090", "qwen3.6-35b-a3b", "qwen3-next-80b-a3b", "Q4_K_M"],
    "calibrate": ["this"],
    "probe": ["h200", "--write"],
}


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", sorted(TYPED))
def test_typed_names_are_never_cut(views, name: str, width: int) -> None:
    text = view(views, name, width)
    for typed in TYPED[name]:
        assert re.search(rf"(?<![\w.-]){re.escape(typed)}(?![\w-])", text), (name, width, typed)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", ["models", "machines"])
def test_every_catalogue_slug_is_whole(views, name: str, width: int) -> None:
    slugs = [row["slug"] for row in json.loads(capture([name, "--json"], width)[1])[name]]
    lines = views[name, width].splitlines()
    firsts = {line.split()[0] for line in lines if line.split()}
    assert set(slugs) <= firsts


@pytest.mark.parametrize("name", ["models", "machines"])
def test_a_dropped_column_is_named(views, name: str) -> None:
    assert "Left out at 60 columns" in views[name, 60]
    assert "Left out" not in views[name, 120] or name == "machines"


# a number (with its thousands separators and decimals) or a number and its unit
_NUMBER = re.compile(r"(?<![\w.,])\d[\d,]*(?:\.\d+)?(?![\w,])")
# trace --chat times the template on the spot: its milliseconds vary from run to run;
# models and machines leave whole columns out at narrow widths, and say so
UNSTABLE = {"trace-chat", "models", "machines"}


@pytest.mark.parametrize("width", [60, 80])
@pytest.mark.parametrize("name", [c for c in CASES if c not in UNSTABLE])
def test_numbers_are_never_split(views, name: str, width: int) -> None:
    """Every number the 120-column view shows is whole in the narrower one: no cell is broken
    in the middle of '6,500' or '5.1'."""
    text = view(views, name, width)
    if "Left out at" in text:  # whole columns left out, and said: their numbers are not shown
        pytest.skip("columns left out")
    wide = set(_NUMBER.findall(view(views, name, 120)))
    narrow = set(_NUMBER.findall(text))
    assert wide <= narrow, f"{name} at {width} lacks {sorted(wide - narrow)[:8]}"


def test_nothing_is_cut_with_an_ellipsis(views) -> None:
    """A cell cut short ('conte…', '1,8…') hides a heading or a number; only the models'
    architecture and the machines' names may be cut (names a user never types)."""
    for (name, width), text in views.items():
        if name in ("models", "machines"):
            continue
        assert "…" not in text, (name, width, [x for x in text.splitlines() if "…" in x][:3])


_WORD = re.compile(r"(?<![\w.-])[A-Za-z][\w/-]*[A-Za-z](?![\w-])")
# a narrow prefill table says "experts" for the bound "routed experts" (its note says which)
SHORTENED = {"routed"}


@pytest.mark.parametrize("width", [60, 80])
@pytest.mark.parametrize("name", [c for c in CASES if c not in UNSTABLE])
def test_words_are_never_split(views, name: str, width: int) -> None:
    """Every word of the 120-column view is whole in the narrower one: no cell is folded in
    the middle of 'memory-bound' or 'hidden-state', no note squeezed a few letters wide."""
    text = view(views, name, width)
    if "Left out at" in text:
        pytest.skip("columns left out")
    wide = set(_WORD.findall(view(views, name, 120))) - SHORTENED
    narrow = set(_WORD.findall(text))
    assert wide <= narrow, f"{name} at {width} lacks {sorted(wide - narrow)[:8]}"
