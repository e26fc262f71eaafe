"""The one size format and the one duration format every view and note uses."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenwalk.numbers import DURATION_UNITS, SIZE_UNITS, capacity, count, duration, size

_SHOWN = re.compile(r"^(-?)([0-9,]+(?:\.[0-9]+)?) (\S+)$")


def parse(text: str, units: tuple[tuple[str, float, float], ...]) -> tuple[float, str, float]:
    """'2.05 GB' -> (2.05e9, 'GB', 2.05): the value it stands for, its unit, the shown number."""
    m = _SHOWN.match(text)
    assert m, text
    number = float(m[2].replace(",", ""))
    scale = {u: s for u, s, _ in units}[m[3]]
    return (-1 if m[1] else 1) * number * scale, m[3], number


durations = st.floats(min_value=1e-9, max_value=1e9, allow_nan=False)
sizes = st.floats(min_value=1, max_value=1e17, allow_nan=False)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0 s"),
        (3e-9, "3.0 ns"),
        (2.8e-5, "28 µs"),
        (0.0062, "6.2 ms"),
        (0.08, "80 ms"),
        (0.9996, "1.0 s"),  # never "1000 ms"
        (5.1, "5.1 s"),
        (67, "67 s"),
        (119.6, "2.0 min"),  # never "120 s"
        (3000, "50 min"),
        (21_240, "5.9 h"),
        (354_240, "4.1 d"),
        (356_386 * 60, "247 d"),  # the request once shown as "356386.0 min"
        (math.inf, "-"),
    ],
)
def test_duration_examples(seconds, text):
    assert duration(seconds) == text


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0 B"),
        (512, "512 B"),
        (999.6, "1.00 KB"),
        (20_480, "20.5 KB"),
        (999_960_000, "1.00 GB"),  # never "1,000.0 MB"
        (2.048e9, "2.05 GB"),  # never "2048 MB"
        (21.7e9, "21.7 GB"),
        (1.2e13, "12.0 TB"),
    ],
)
def test_size_examples(n, text):
    assert size(n) == text


def test_capacity_says_round_binary_sizes():
    assert capacity(16 * 2**30) == "17.2 GB (16 GiB)"
    assert capacity(32 * 2**20) == "33.6 MB (32 MiB)"
    assert capacity(21.7e9) == "21.7 GB"


def test_count_has_thousands_separators():
    assert count(262144) == "262,144"


@given(durations)
def test_duration_is_close_and_in_its_unit(s):
    value, unit, shown = parse(duration(s), DURATION_UNITS)
    assert math.isclose(value, s, rel_tol=0.06), (s, duration(s))
    limit = {u: lim for u, _, lim in DURATION_UNITS}[unit]
    assert shown < limit  # never "1000 ms" where "1.0 s" fits, never "120 s"
    assert unit != "us"
    if unit != "ns":
        assert shown >= 1  # the largest unit that shows it as 1 or more


@given(durations, durations)
def test_duration_is_monotone(a, b):
    lo, hi = sorted((a, b))
    assert parse(duration(lo), DURATION_UNITS)[0] <= parse(duration(hi), DURATION_UNITS)[0]


@given(sizes)
def test_size_is_close_and_in_its_unit(n):
    value, unit, shown = parse(size(n), SIZE_UNITS)
    assert math.isclose(value, n, rel_tol=0.006) or abs(value - n) <= 0.5, (n, size(n))
    limit = {u: lim for u, _, lim in SIZE_UNITS}[unit]
    assert shown < limit  # never "1,000.0 MB" where "1.00 GB" fits
    if unit != "B":
        assert shown >= 1


@given(sizes, sizes)
def test_size_is_monotone(a, b):
    lo, hi = sorted((a, b))
    assert parse(size(lo), SIZE_UNITS)[0] <= parse(size(hi), SIZE_UNITS)[0]


@given(st.floats(min_value=1e-3, max_value=1e6))
def test_negative_values_mirror_positive_ones(x):
    assert duration(-x) == "-" + duration(x)
    assert size(-x * 1e3) == "-" + size(x * 1e3)


def test_a_count_is_singular_at_one():
    from tokenwalk.numbers import counted

    assert counted(1, "chunk") == "1 chunk"
    assert counted(64, "chunk") == "64 chunks"
    assert counted(1024, "chunk") == "1,024 chunks"


def test_free_memory_below_zero_says_what_is_missing():
    from tokenwalk.render.fmt import free

    assert free(1.44e9) == "1.44 GB"
    assert free(-22.3e9) == "short by 22.3 GB"


def test_parameter_counts_have_one_format():
    """Three significant digits in every range, as sizes: '23.0 M' beside '2.95 B', not '23 M'."""
    from tokenwalk.render.fmt import params

    cases = {35_505_251_456: "35.5 B", 2.95e9: "2.95 B", 845e6: "845 M", 23e6: "23.0 M"}
    cases |= {135e3: "135 K", 999.6e6: "1.00 B", 1.2e12: "1.20 T"}
    for n, text in cases.items():
        assert params(n) == text, n
