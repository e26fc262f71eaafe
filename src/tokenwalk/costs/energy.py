"""What a request costs in energy and money: power x time.

    energy_j       = P x t                  P in watts, t in seconds: joules
    energy_wh      = energy_j / 3600        watt-hours
    per 1M tokens  = value x 1e6 / tokens   the tokens the time t produced or read
    money (local)  = energy_wh / 1000 x price_per_kwh          (--kwh-price)
    money (rented) = t / 3600 x price_per_hour                 (--price-per-hour)

P is the system's power while it works (`system_power`): the board power of each card (total
board power of a GeForce or Radeon card, the maximum TDP of a data-center part, the package power
of an APU or Apple chip, the TDP of a CPU), plus, for a discrete card in a PC, a share of the
host's CPU power: `HOST_FEED_SHARE` of it while the model is on the cards (a CPU thread feeds
them, the rest idles), all of it when the host holds layers and computes them too.

Full board power is what a card draws in compute-bound work (prefill). Memory-bound decode
draws less on most GPUs, and no sourced fraction is applied, so every energy here is an upper
bound (`upper_bound` in the result); a measured draw given with `--watts` replaces P. The rest of
the box (RAM, board, fans, power-supply losses) is not counted. A rented GPU's hourly price is
paid for the time only, as if the GPU did nothing else; its energy is the provider's.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict

from tokenwalk.errors import InputError
from tokenwalk.machine import Machine

__all__ = [
    "HOST_FEED_SHARE",
    "MAX_WATTS",
    "MAX_PRICE",
    "Price",
    "Power",
    "EnergyCost",
    "energy_j",
    "joules_to_wh",
    "per_million_tokens",
    "kwh_cost",
    "rental_cost",
    "check_price",
    "system_power",
    "request_cost",
    "decode_energy",
    "prefill_energy",
    "trace_energy",
    "spec_energy",
    "session_energy",
]

# Share of the host CPU's TDP counted while the cards do the work: one busy thread of a 16-core
# desktop part, rounded up for the memory copies it drives. An assumption, stated in the output.
HOST_FEED_SHARE = 0.25
MAX_WATTS = 1e6  # a rack, not a box; anything above is a typo
MAX_PRICE = 1e9


def energy_j(power_w: float, time_s: float) -> float:
    """E = P x t: joules from watts and seconds."""
    return power_w * time_s


def joules_to_wh(joules: float) -> float:
    """Wh = J / 3600 (one watt-hour is 3600 joules)."""
    return joules / 3600.0


def per_million_tokens(value: float, tokens: float) -> float:
    """value x 1e6 / tokens: a quantity for `tokens` scaled to one million tokens."""
    return value * 1e6 / tokens


def kwh_cost(energy_wh: float, price_per_kwh: float) -> float:
    """Money for the energy at a tariff: Wh / 1000 x price per kWh."""
    return energy_wh / 1000.0 * price_per_kwh


def rental_cost(time_s: float, price_per_hour: float) -> float:
    """Money for renting the machine for the time: s / 3600 x price per hour."""
    return time_s / 3600.0 * price_per_hour


def check_price(value: float | None, flag: str) -> None:
    """Refuse a price that is negative, not a number or absurdly large."""
    if value is None:
        return
    if not math.isfinite(value) or value < 0 or value > MAX_PRICE:
        raise InputError(f"{flag} must be a price of 0 or more (currency units), not {value:g}")


class Price(BaseModel):
    """What the user pays: a tariff per kWh for a local box, or an hourly price for a rented
    machine (one of them, or neither), and a label for the currency (none by default: the
    numbers are in the units the prices were given in)."""

    model_config = ConfigDict(frozen=True)
    per_kwh: float | None = None
    per_hour: float | None = None
    currency: str | None = None

    def model_post_init(self, __context: object) -> None:
        check_price(self.per_kwh, "--kwh-price")
        check_price(self.per_hour, "--price-per-hour")
        if self.per_kwh is not None and self.per_hour is not None:
            raise InputError(
                "give --kwh-price (a box of your own) or --price-per-hour (a rented GPU), not "
                "both: a rented GPU's hourly price already pays for its power"
            )

    @property
    def given(self) -> bool:
        return self.per_kwh is not None or self.per_hour is not None


class Power(BaseModel):
    """The power a system draws while it works on a request. `watts` is None when no figure is
    known (the catalogue entry has none and --watts was not given); `how` says where it comes
    from, or what to give."""

    model_config = ConfigDict(frozen=True)
    watts: float | None
    device_w: float | None  # the cards (or the unified machine)
    host_w: float  # the host's share (0 on a unified machine)
    how: str
    upper_bound: bool = True  # board power at full load; decode draws less on most GPUs


def _check_watts(watts: float) -> None:
    if not math.isfinite(watts) or not 0 < watts <= MAX_WATTS:
        raise InputError(f"--watts must be a power in (0, {MAX_WATTS:,.0f}] W, not {watts:g}")


def system_power(
    devices: list[Machine] | tuple[Machine, ...],
    host: Machine | None = None,
    *,
    host_computes: bool = False,
    watts: float | None = None,
) -> Power:
    """P of a system: the sum of the devices' `power_w`, plus the host's `power_w` x
    `HOST_FEED_SHARE` (x 1 when `host_computes`, the host holding layers). `watts` (--watts)
    replaces it all: a measured or known draw of the whole system."""
    if watts is not None:
        _check_watts(watts)
        return Power(watts=watts, device_w=watts, host_w=0.0, how="--watts", upper_bound=False)
    missing = [d.slug for d in devices if d.power_w is None]
    if missing:
        return Power(
            watts=None,
            device_w=None,
            host_w=0.0,
            how=f"no power figure for '{missing[0]}'; give --watts W",
        )
    device_w = sum(d.power_w or 0.0 for d in devices)
    names = " + ".join(f"{d.slug} {d.power_w:g} W" for d in devices)
    if host is None:
        how = devices[0].slug if len(devices) == 1 else names
        return Power(watts=device_w, device_w=device_w, host_w=0.0, how=how)
    if host.power_w is None:
        return Power(
            watts=device_w,
            device_w=device_w,
            host_w=0.0,
            how=f"{names}; host {host.slug} has no power figure, not counted",
        )
    share = 1.0 if host_computes else HOST_FEED_SHARE
    host_w = host.power_w * share
    part = (
        f"{host.power_w:g} W (it computes too)"
        if host_computes
        else f"{share:g} x {host.power_w:g} W"
    )
    return Power(
        watts=device_w + host_w,
        device_w=device_w,
        host_w=host_w,
        how=f"{names} + host {part}",
    )


class EnergyCost(BaseModel):
    """Energy (and money, when a price is given) for `time_s` of work that handled `tokens`
    tokens; the per-million-token figures scale it to 1e6 tokens. All values are None when the
    power is unknown (`note` says what to give). Money is in the units of the price given
    (`currency`, a label only)."""

    model_config = ConfigDict(frozen=True)
    power_w: float | None
    device_w: float | None
    host_w: float
    power_from: str
    upper_bound: bool
    time_s: float
    tokens: int
    energy_j: float | None
    energy_wh: float | None
    j_per_token: float | None
    wh_per_million_tokens: float | None
    price_per_kwh: float | None = None
    price_per_hour: float | None = None
    currency: str | None = None
    cost: float | None = None  # for time_s of work
    cost_per_million_tokens: float | None = None
    note: str = ""


def request_cost(
    time_s: float,
    power: Power | float | None,
    *,
    tokens: int,
    price: Price | None = None,
) -> EnergyCost:
    """Energy and money of `time_s` seconds of work at `power` (a `Power`, watts, or None
    when unknown) that produced or read `tokens` tokens:

        energy_j = P x t,  energy_wh = energy_j / 3600,  j_per_token = energy_j / tokens,
        wh_per_million_tokens = energy_wh x 1e6 / tokens,
        cost = energy_wh / 1000 x price_per_kwh   or   t / 3600 x price_per_hour,
        cost_per_million_tokens = cost x 1e6 / tokens.

    A rented machine's cost needs no power; a tariff per kWh does."""
    if not math.isfinite(time_s) or time_s < 0:
        raise InputError(f"a request's time must be 0 or more seconds, not {time_s:g}")
    if tokens < 1:
        raise InputError(f"a request handles at least one token, not {tokens}")
    if power is None or isinstance(power, (int, float)):
        if power is not None:
            _check_watts(float(power))
        power = (
            Power(watts=None, device_w=None, host_w=0.0, how="no power figure; give --watts W")
            if power is None
            else Power(watts=float(power), device_w=float(power), host_w=0.0, how=f"{power:g} W")
        )
    price = price or Price()
    watts = power.watts
    joules = energy_j(watts, time_s) if watts is not None else None
    wh = joules_to_wh(joules) if joules is not None else None
    cost: float | None = None
    note = "" if watts is not None else power.how
    if price.per_hour is not None:
        cost = rental_cost(time_s, price.per_hour)
    elif price.per_kwh is not None:
        if wh is not None:
            cost = kwh_cost(wh, price.per_kwh)
    return EnergyCost(
        power_w=watts,
        device_w=power.device_w,
        host_w=power.host_w,
        power_from=power.how,
        upper_bound=power.upper_bound,
        time_s=time_s,
        tokens=tokens,
        energy_j=joules,
        energy_wh=wh,
        j_per_token=joules / tokens if joules is not None else None,
        wh_per_million_tokens=per_million_tokens(wh, tokens) if wh is not None else None,
        price_per_kwh=price.per_kwh,
        price_per_hour=price.per_hour,
        currency=price.currency,
        cost=cost,
        cost_per_million_tokens=per_million_tokens(cost, tokens) if cost is not None else None,
        note=note,
    )


# -- the answers' energy ----------------------------------------------------------------------
# Each timing answer names the time and the tokens its energy covers; the report types are not
# imported (they import this module's EnergyCost).


def decode_energy(
    report: Any, power: Power | float | None, price: Price | None = None
) -> EnergyCost:
    """A decode step: t = ms_per_token / 1000 (one step of every stream), tokens = parallel
    (one per stream), so wh_per_million_tokens = P x t / 3600 x 1e6 / parallel, per token out."""
    return request_cost(report.ms_per_token / 1e3, power, tokens=report.parallel, price=price)


def prefill_energy(
    report: Any, power: Power | float | None, price: Price | None = None
) -> EnergyCost:
    """The prefill: t = ttft_s, tokens = computed_tokens (the cached prefix costs nothing), so
    the per-million figures are per token in."""
    return request_cost(report.ttft_s, power, tokens=report.computed_tokens, price=price)


def trace_energy(
    report: Any, power: Power | float | None, price: Price | None = None
) -> EnergyCost:
    """One request: t = total_s - load_s (tokenize to the end; a cold load reads the disk while
    the GPU waits, and is not counted), tokens = prompt_tokens + output_tokens."""
    return request_cost(
        report.total_s - report.load_s,
        power,
        tokens=report.prompt_tokens + report.output_tokens,
        price=price,
    )


def spec_energy(report: Any, power: Power | float | None, price: Price | None = None) -> EnergyCost:
    """Speculative decoding: t = 1 / tok_s (a round's time over the tokens it yields), tokens =
    1, so the per-million figures are per token out with drafting."""
    return request_cost(1.0 / report.tok_s, power, tokens=1, price=price)


def session_energy(
    report: Any, power: Power | float | None, price: Price | None = None
) -> EnergyCost:
    """A conversation of several calls: t = busy_s minus the calls' cold loads (idle gaps are
    not counted either), tokens = prompt_tokens + output_tokens of all calls."""
    loads = sum(c.load_s for c in report.calls)
    return request_cost(
        report.busy_s - loads,
        power,
        tokens=report.prompt_tokens + report.output_tokens,
        price=price,
    )
