"""costs/compare.py: rows built from the single answers, and the order of `models --fits`."""

from __future__ import annotations

from tokenwalk.costs.compare import ModelFit, compare_report, price_for, sort_fits
from tokenwalk.costs.energy import Price
from tokenwalk.model.resolve import load_model
from tokenwalk.system import Offload, SystemSpec, resolve_system


def _row(slug: str, weights: int, tok_s: float, fits: bool, ctx: int = 4096) -> ModelFit:
    return ModelFit(
        slug=slug,
        name=slug,
        params=weights,
        active_params=weights,
        weights_bytes=weights,
        ctx=4096,
        fits=fits,
        verdict="fits with room" if fits else "does not fit",
        free_bytes=1 if fits else -1,
        max_fit_ctx=ctx if fits else 0,
        max_ctx=ctx,
        placement="",
        split="",
        tok_s=tok_s,
        ceiling_tok_s=2 * tok_s,
    )


def test_those_that_fit_come_first_largest_first_then_the_rest_smallest_first():
    rows = [
        _row("big-out", 90, 1.0, False),
        _row("small", 1, 100.0, True, ctx=8192),
        _row("medium", 10, 20.0, True, ctx=131072),
        _row("huge-out", 900, 0.5, False),
    ]
    assert [r.slug for r in sort_fits(rows, "size")] == ["medium", "small", "big-out", "huge-out"]
    assert [r.slug for r in sort_fits(rows, "speed")][:2] == ["small", "medium"]
    assert [r.slug for r in sort_fits(rows, "ctx")][:2] == ["medium", "small"]


def test_the_context_reserved_is_the_whole_request_unless_given():
    model = load_model("qwen3-0.6b", "Q4_K_M").model
    system = resolve_system(SystemSpec(machine="radeon-860m"))
    r = compare_report([model], [(system, Offload())], prompt=1000, output=24)
    assert r.ctx == 1024 and r.rows[0].fits
    r = compare_report([model], [(system, Offload())], prompt=1000, output=24, ctx=8192)
    assert (
        r.ctx == 8192
        and r.rows[0].free_bytes
        < compare_report([model], [(system, Offload())], prompt=1000, output=24).rows[0].free_bytes
    )


def test_both_prices_rent_the_data_center_gpu_and_bill_the_others_energy():
    laptop = resolve_system(SystemSpec(machine="radeon-860m"))
    card = resolve_system(SystemSpec(machine="rtx-5090"))
    cloud = resolve_system(SystemSpec(machine="h100-sxm"))
    kwh, hour, none = Price(per_kwh=0.3), Price(per_hour=2.5), Price()
    assert price_for(laptop, kwh, hour) is kwh and price_for(card, kwh, hour) is kwh
    assert price_for(cloud, kwh, hour) is hour
    assert price_for(laptop, none, hour) is hour and price_for(cloud, kwh, none) is kwh
    assert not price_for(cloud, none, none).given
