"""The energy and price options, declared once: `--watts`, `--kwh-price`, `--price-per-hour`,
`--currency`. `cost_options` adds them to a command (one "Energy and price" panel in its --help)
and hands the command one `CostSpec`; `tokenwalk.costs.energy` does the arithmetic."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from pydantic import BaseModel, ConfigDict

from tokenwalk.cli.declare import with_options

if TYPE_CHECKING:
    from tokenwalk.costs.energy import Power, Price
    from tokenwalk.system import System

__all__ = ["CostSpec", "cost_options", "COST_PANEL"]

COST_PANEL = "Energy and price"
_MAX_CURRENCY = 12


class CostSpec(BaseModel):
    """The energy and price options as typed: a power that replaces the catalogue's, a tariff
    per kWh or an hourly rent, and a currency label."""

    model_config = ConfigDict(frozen=True)
    watts: float | None = None
    kwh_price: float | None = None
    price_per_hour: float | None = None
    currency: str | None = None

    @property
    def price(self) -> Price:
        """The prices, checked (negative, nan or both given are refused)."""
        from tokenwalk.costs.energy import Price
        from tokenwalk.errors import InputError

        label = (self.currency or "").strip() or None
        if label is not None and (
            len(label) > _MAX_CURRENCY or not all(c.isprintable() for c in label)
        ):
            raise InputError(
                f"--currency is a short label (at most {_MAX_CURRENCY} printable characters), "
                "such as EUR or USD"
            )
        return Price(per_kwh=self.kwh_price, per_hour=self.price_per_hour, currency=label)

    def power(self, system: System, *, host_computes: bool = False) -> Power:
        """The power the system draws while it works (`costs.energy.system_power`)."""
        from tokenwalk.costs.energy import system_power

        # a machine of one memory placing tensors on its own CPU: its figure covers the chip
        host = None if system.shared else system.host
        return system_power(system.devices, host, host_computes=host_computes, watts=self.watts)


def _opt(*names: str, help: str, **kw: Any) -> Any:
    return typer.Option(*names, help=help, show_default=False, rich_help_panel=COST_PANEL, **kw)


_COST_OPTIONS: dict[str, tuple[Any, Any]] = {
    "watts": (
        Annotated[
            float | None,
            _opt(
                "--watts",
                help="Power the system draws while it works, W (overrides the catalogue's board "
                "power and the host's share; a measured draw makes the energy no longer an "
                "upper bound).",
                metavar="W",
            ),
        ],
        None,
    ),
    "kwh_price": (
        Annotated[
            float | None,
            _opt(
                "--kwh-price",
                help="Electricity price per kWh, for a box of your own: prices the energy.",
                metavar="PRICE",
            ),
        ],
        None,
    ),
    "price_per_hour": (
        Annotated[
            float | None,
            _opt(
                "--price-per-hour",
                help="Rent of the machine per hour, for a cloud GPU: prices the time.",
                metavar="PRICE",
            ),
        ],
        None,
    ),
    "currency": (
        Annotated[
            str | None,
            _opt(
                "--currency",
                help="A label printed after prices (EUR, USD); none by default.",
                metavar="LABEL",
            ),
        ],
        None,
    ),
}

F = TypeVar("F", bound=Callable[..., Any])


def cost_options(fn: F | None = None, *, one_price: bool = True) -> Any:
    """Give command `fn` the energy and price options (one panel of its --help) in place of its
    `cost: CostSpec` parameter, which receives them gathered and checked. `one_price=False`
    takes --kwh-price and --price-per-hour together (machines side by side: the command says
    which machine pays which), each checked on its own."""
    if fn is None:
        return lambda f: cost_options(f, one_price=one_price)

    def call(gathered: dict[str, Any], rest: dict[str, Any]) -> Any:
        spec = CostSpec(**gathered)
        if one_price:
            spec.price  # noqa: B018 - refuse bad prices before any work
        else:
            spec.model_copy(update={"price_per_hour": None}).price  # noqa: B018
            spec.model_copy(update={"kwh_price": None}).price  # noqa: B018
        if spec.watts is not None:
            from tokenwalk.costs.energy import system_power

            system_power((), watts=spec.watts)
        return fn(cost=spec, **rest)

    return with_options(fn, _COST_OPTIONS, call, replaces="cost")
