"""The header scan that sizes remote ranges: its bounds hold on every prefix of real headers."""

from __future__ import annotations

from pathlib import Path

import pytest
from ggufmake import write_header_only
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokenwalk.gguf.reader import read_header
from tokenwalk.sources.plan import HeaderScan

FIXTURES = Path(__file__).parents[1] / "fixtures"


def _header(path: Path) -> tuple[bytes, int]:
    with path.open("rb") as fh:
        end = read_header(fh).data_offset
    return path.read_bytes()[:end], end


@pytest.fixture(scope="module")
def headers(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[bytes, int]]:
    """Real headers cut from published GGUFs, and a built one with merges and 2 tensors."""
    built = tmp_path_factory.mktemp("plan") / "m.gguf"
    write_header_only(built, n_tokens=3000, n_merges=2000, huge_rows=1000, sparse_size=False)
    paths = sorted(FIXTURES.glob("*.header.gguf")) + [built]
    return [_header(p) for p in paths]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_bounds_hold_on_every_prefix(headers, data):
    """min_end <= the real end <= max_end after any sequence of growing prefixes."""
    raw, end = data.draw(st.sampled_from(headers))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=12)))
    scan = HeaderScan()
    for cut in [*cuts, len(raw)]:
        scan.advance(raw[:cut])
        assert scan.min_end is not None and scan.min_end <= end
        if scan.max_end is not None:
            assert scan.max_end >= end
    assert scan.done and scan.end == end == scan.min_end == scan.max_end


def test_bound_tightens_inside_a_string_array(headers):
    raw, end = headers[-1]  # the built one: 3000 tokens, then their types, 2000 merges
    scan = HeaderScan()
    scan.advance(raw[:200])
    early = scan.min_end
    scan.advance(raw[: end // 2])
    assert early is not None and scan.min_end is not None
    assert early < scan.min_end <= end
    assert scan.max_end is None  # metadata is still being walked: no upper bound yet


def test_bytes_that_are_not_a_header_give_no_bound():
    scan = HeaderScan()
    scan.advance(b"<html>" + b"x" * 100)
    assert scan.min_end is None and scan.max_end is None and not scan.done


def test_a_short_prefix_only_knows_the_fixed_part():
    scan = HeaderScan()
    scan.advance(b"GGUF")
    assert scan.min_end == 24 and scan.max_end is None
