"""`Bytes` and `Count`: whole numbers in every result object, whatever produced them."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from tokenwalk.units import Bytes, Count


class _R(BaseModel):
    n_bytes: Bytes
    params: Count
    maybe_bytes: Bytes | None = None


@given(st.floats(min_value=-1e18, max_value=1e18, allow_nan=False))
def test_floats_become_the_nearest_int(x):
    r = _R(n_bytes=x, params=x)
    assert type(r.n_bytes) is int and type(r.params) is int
    assert abs(r.n_bytes - x) <= 0.5
    assert '"n_bytes":' + str(round(x)) in r.model_dump_json()


def test_ints_stay_and_none_is_kept():
    assert _R(n_bytes=3, params=7).model_dump() == {"n_bytes": 3, "params": 7, "maybe_bytes": None}
    assert _R(n_bytes=1.5e9, params=0, maybe_bytes=2.4).maybe_bytes == 2


@pytest.mark.parametrize("bad", [math.nan, math.inf, "1.5", "many"])
def test_what_is_not_a_number_is_refused(bad):
    with pytest.raises(ValidationError):
        _R(n_bytes=bad, params=1)
