"""`tokenwalk compare`: models and machines side by side, one row per pair."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from tokenwalk.cli.app import (
    CTX_MEANING,
    JsonOpt,
    KvTypeOpt,
    NoCacheOpt,
    QuantOpt,
    SwaFullOpt,
    UbatchOpt,
    app,
    load,
    respond,
    tokens_option,
    warn,
)
from tokenwalk.cli.checks import typical_error
from tokenwalk.cli.cost_opts import CostSpec, cost_options
from tokenwalk.cli.machine_opts import system_options
from tokenwalk.cli.output import output_options
from tokenwalk.cli.sweep import model_items
from tokenwalk.errors import InputError
from tokenwalk.system import SystemSpec

if TYPE_CHECKING:
    from tokenwalk.system import Offload, System

__all__ = ["compare", "machine_names", "systems_of"]

# What a discrete card takes and a machine of one memory pool refuses: its host and placement.
_CARD_ONLY = dict(
    host=None,
    host_bandwidth=None,
    host_memory=None,
    host_tflops=None,
    link_gbs=None,
    gpu_layers=None,
    cpu_moe=False,
    n_cpu_moe=None,
    split_mode="layer",
    no_op_offload=False,
)


def machine_names(value: str | None) -> list[str | None]:
    """`--machine a,b,c` as a list of names (cards of one box stay joined by '+'); no machine
    is one machine given inline (--bandwidth), or the error that asks for one."""
    from tokenwalk.cli.sweep import split_list

    if value is None:
        return [None]
    try:
        names = split_list(value, numbers=False)
    except typer.BadParameter as exc:
        raise InputError(f"--machine {exc.message}") from None
    return list(dict.fromkeys(names))


def systems_of(spec: SystemSpec) -> tuple[list[tuple[System, Offload]], list[str]]:
    """Each machine of `spec.machine` as a system and its placement, and notes: the host and
    placement options apply to the discrete cards, not to a machine of one memory pool."""
    from tokenwalk.cli.checks import on_system
    from tokenwalk.system import resolve_system

    out = []
    shared: list[str] = []
    for name in machine_names(spec.machine):
        one = spec.model_copy(update={"machine": name})
        bare = one.model_copy(update=_CARD_ONLY)
        if one != bare and (alone := resolve_system(bare)).unified:
            shared.append(alone.slug)
            out.append(on_system(bare))
        else:
            out.append(on_system(one))
    notes = []
    if shared:
        notes.append(
            f"{', '.join(shared)}: one pool of memory shared by GPU and CPU; the host and "
            "placement options apply to the discrete cards"
        )
    return out, notes


@app.command()
@system_options
@cost_options(one_price=False)
@output_options
def compare(
    models: Annotated[
        list[str],
        typer.Argument(
            help="One or more models (any model argument; a,b or a b), each compared on every "
            "machine.",
            show_default=False,
            metavar="MODEL",
        ),
    ],
    prompt: Annotated[
        int,
        tokens_option(
            "--prompt", "-p", help="Prompt length in tokens. Default: 4,096.", show_default=False
        ),
    ] = 4096,
    output: Annotated[int, tokens_option("--output", "-n", help="Tokens written.")] = 300,
    ctx: Annotated[
        int | None,
        tokens_option(
            "--ctx",
            "-c",
            help="Context reserved in memory and read by the decode step whose speed is shown, "
            + CTX_MEANING
            + " Default: --prompt + --output, the whole request.",
            show_default=False,
        ),
    ] = None,
    kv_type: KvTypeOpt = "f16",
    swa_full: SwaFullOpt = False,
    ubatch: UbatchOpt = 512,
    quant: QuantOpt = None,
    json: JsonOpt = False,
    no_cache: NoCacheOpt = False,
    *,
    system: SystemSpec,
    cost: CostSpec,
) -> None:
    """Machines and models side by side: give --machine a list (radeon-860m,rtx-5090,h100-sxm).
    One row per model and machine: does it fit and how much memory is left, the weights, the
    decode speed (estimate and bandwidth ceiling), the time to first token of --prompt and the
    whole request of --prompt + --output, each equal to what budget, decode and trace answer,
    and its energy and price: with both --kwh-price and --price-per-hour, data-center GPUs are
    rented by the hour and other machines pay for their energy."""
    from tokenwalk.costs.compare import compare_report

    systems, notes = systems_of(system)
    per_kwh = cost.model_copy(update={"price_per_hour": None}).price
    per_hour = cost.model_copy(update={"kwh_price": None}).price
    refs = [item for ref in models for item in model_items(ref)]  # a,b as every model list
    loaded = [
        load(ref, quant, json=json, no_cache=no_cache, swa_full=swa_full).model for ref in refs
    ]
    report = compare_report(
        loaded,
        systems,
        prompt=prompt,
        output=output,
        ctx=ctx,
        kv_type=kv_type,
        ubatch=ubatch,
        notes=notes,
        watts=cost.watts,
        per_kwh=per_kwh,
        per_hour=per_hour,
        quote=typical_error,
    )
    for w in dict.fromkeys(w for r in report.rows for w in r.warnings):
        warn(w)
    respond(report, json)
