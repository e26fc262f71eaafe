"""costs/energy.py: energy = power x time, per million tokens, prices, the system's power."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenwalk.costs.energy import (
    HOST_FEED_SHARE,
    Price,
    decode_energy,
    energy_j,
    joules_to_wh,
    prefill_energy,
    request_cost,
    system_power,
)
from tokenwalk.errors import InputError
from tokenwalk.machine import resolve_machine
from tokenwalk.model.resolve import load_model


@pytest.fixture(scope="module")
def small_model():
    return load_model("qwen3-0.6b", "Q8_0").model


def test_energy_against_a_hand_computation():
    # 10 s at 575 W = 5,750 J = 1.597 Wh; for 1,000 tokens that is 1,597 Wh per million
    e = request_cost(10.0, 575.0, tokens=1000)
    assert e.energy_j == pytest.approx(5750.0)
    assert e.energy_wh == pytest.approx(5750.0 / 3600)
    assert e.j_per_token == pytest.approx(5.75)
    assert e.wh_per_million_tokens == pytest.approx(5750.0 / 3600 * 1000)
    assert e.upper_bound and e.cost is None and e.note == ""


def test_kwh_price_and_hourly_rent():
    # 1.597 Wh at 0.30 per kWh = 0.000479; per million tokens x 1000
    e = request_cost(10.0, 575.0, tokens=1000, price=Price(per_kwh=0.30, currency="EUR"))
    assert e.cost == pytest.approx(5750.0 / 3600 / 1000 * 0.30)
    assert e.cost_per_million_tokens == pytest.approx(e.cost * 1000)
    assert e.currency == "EUR"
    # a rented GPU: 36 s at 2.50 an hour = 0.025, whatever its power
    r = request_cost(36.0, None, tokens=100, price=Price(per_hour=2.5))
    assert r.cost == pytest.approx(0.025)
    assert r.cost_per_million_tokens == pytest.approx(250.0)
    assert r.energy_wh is None and "--watts" in r.note


def test_a_tariff_without_power_says_what_to_give():
    e = request_cost(10.0, None, tokens=10, price=Price(per_kwh=0.3))
    assert e.cost is None and e.energy_j is None and "--watts" in e.note


@pytest.mark.parametrize(
    "kw",
    [
        {"per_kwh": -0.1},
        {"per_kwh": math.nan},
        {"per_hour": math.inf},
        {"per_hour": -2.0},
        {"per_kwh": 0.3, "per_hour": 2.0},
    ],
)
def test_bad_prices_are_refused(kw):
    with pytest.raises(InputError):
        Price(**kw)


@pytest.mark.parametrize("watts", [0.0, -5.0, math.nan, 1e9])
def test_bad_watts_are_refused(watts):
    with pytest.raises(InputError, match="--watts"):
        system_power((), watts=watts)


def test_system_power_card_host_and_unified():
    # the catalogue's sourced figures: RTX 5090 575 W (lamonoai/gpumap, s), Ryzen 9 9950X 170 W
    card, host = resolve_machine("rtx-5090"), resolve_machine("pc-9950x-64gb")
    assert card.power_w == 575 and host.power_w == 170
    p = system_power([card], host)
    assert p.watts == pytest.approx(575 + 0.25 * 170) == 617.5  # HOST_FEED_SHARE of the CPU
    assert p.host_w == pytest.approx(HOST_FEED_SHARE * 170) and p.upper_bound
    busy = system_power([card], host, host_computes=True)
    assert busy.watts == pytest.approx(575 + 170)
    two = system_power([card, card], host)
    assert two.device_w == 1150
    # one package, no host beside it: the 860M's 15 W TDP (fpsbench, s)
    laptop = system_power([resolve_machine("radeon-860m")])
    assert laptop.watts == 15 and laptop.host_w == 0
    given_ = system_power([card], host, watts=400)
    assert given_.watts == 400 and not given_.upper_bound


def test_a_machine_without_power_is_a_note():
    p = system_power([resolve_machine("apple-m2")])
    assert p.watts is None and "apple-m2" in p.how and "--watts" in p.how
    e = request_cost(1.0, p, tokens=1)
    assert e.energy_j is None and e.wh_per_million_tokens is None and "--watts" in e.note


@given(
    st.floats(min_value=0.1, max_value=1e5),
    st.floats(min_value=0.0, max_value=1e5),
    st.integers(min_value=1, max_value=10**9),
)
def test_energy_is_power_times_time(watts, seconds, tokens):
    e = request_cost(seconds, watts, tokens=tokens)
    assert e.energy_j == pytest.approx(energy_j(watts, seconds))
    assert e.energy_wh == pytest.approx(joules_to_wh(watts * seconds))
    assert e.wh_per_million_tokens == pytest.approx(watts * seconds / 3600 * 1e6 / tokens)


def test_decode_and_prefill_per_million_tokens(small_model):
    from tokenwalk.timing.passes import decode_report, prefill_report

    m = resolve_machine("rtx-4090")
    d = decode_report(small_model, m, ctx=1024, parallel=4)
    e = decode_energy(d, 450.0)
    # a million tokens out take 1e6 / aggregate tok/s seconds at 450 W
    assert e.wh_per_million_tokens == pytest.approx(450 * 1e6 / d.aggregate_tok_s / 3600)
    p = prefill_report(small_model, m, prompt=2048, cached=512)
    e = prefill_energy(p, 450.0)
    assert e.tokens == 1536
    assert e.wh_per_million_tokens == pytest.approx(450 * p.ttft_s / 3600 * 1e6 / 1536)


def test_every_catalogue_power_has_a_source():
    from tokenwalk.catalog import load_machines

    machines = load_machines()
    powered = [m for m in machines if m.power_w is not None]
    assert len(powered) >= 30
    for m in powered:
        # a source one can open: a URL, or a repository at a commit (owner/repo@abc1234)
        cited = re.search(r"https?://|[\w.-]+/[\w.-]+@[0-9a-f]{7}", m.power_source or "")
        assert cited, m.slug
        assert f"{m.power_w:g}" in m.power_source.replace(",", ""), m.slug
    by_slug = {m.slug: m.power_w for m in machines}
    assert by_slug["h100-sxm"] == 700 and by_slug["rtx-4090"] == 450
    assert by_slug["mi300x"] == 750 and by_slug["b200"] == 1000
    # a range's default, not its top: Strix Halo 55 W (45-120), the 860M's 15 W
    assert by_slug["ryzen-ai-max-395"] == 55 and by_slug["radeon-860m"] == 15


def test_power_needs_its_source():
    from pydantic import ValidationError

    from tokenwalk.catalog import MachineEntry

    base = dict(slug="x", name="x", kind="gpu", backend="cuda", source="here")
    assert MachineEntry(**base, power_w=100, power_source="vendor page").power_w == 100
    with pytest.raises(ValidationError, match="power_source"):
        MachineEntry(**base, power_w=100)
    with pytest.raises(ValidationError):
        MachineEntry(**base, power_w=-1, power_source="vendor page")


@pytest.mark.parametrize(
    "value, text",
    [
        (1003.0, "1.00 kWh"),
        (58.0, "58.0 Wh"),
        (0.0709, "70.9 mWh"),
        (999.7, "1.00 kWh"),  # the unit chosen after rounding: never '1,000 Wh'
        (0.9997, "1.00 Wh"),
        (2.5e6, "2,500 kWh"),
    ],
)
def test_watt_hours_read_in_the_largest_sensible_unit(value, text):
    from tokenwalk.render.energy import wh

    assert wh(value) == text


@pytest.mark.parametrize(
    "value, text",
    [
        (3.8, "3.80 J"),
        (1870.0, "1.87 kJ"),
        (0.5, "0.500 J"),
        (0.012, "12.0 mJ"),
        (999.7, "1.00 kJ"),
    ],
)
def test_joules_read_in_the_largest_sensible_unit(value, text):
    from tokenwalk.render.energy import joules

    assert joules(value) == text


@pytest.mark.parametrize(
    "value, currency, text",
    [
        (0.000264, None, "0.000264"),
        (0.324, "EUR", "0.324 EUR"),
        (1234.5, None, "1,234"),
        (0, None, "0"),
    ],
)
def test_prices_never_in_exponent_form(value, currency, text):
    from tokenwalk.render.energy import money

    assert money(value, currency) == text
