"""What every timing command does around its answer: check the workload, say whether the model
and its KV fit the machine, warn, print. The checks themselves live in `costs.workload` and
`costs.budget`; this module only wires them to the options."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tokenwalk.cli.app import respond, warn

if TYPE_CHECKING:
    from tokenwalk.costs.budget import MemoryFit
    from tokenwalk.costs.split import Setup
    from tokenwalk.machine import Machine
    from tokenwalk.model.model import Model
    from tokenwalk.system import Offload, System, SystemSpec
    from tokenwalk.timing.accuracy import ExpectedError

__all__ = ["system_bytes", "fit_on", "system_fit", "answer", "on_system", "typical_error"]


def typical_error(system: System, setup: Setup | None, phase: str) -> ExpectedError | None:
    """The error to expect of a `phase` estimate where one device runs the whole pass (one
    pool of memory, or one card holding the whole model): its class's, from published runs
    (`tokenwalk.timing.accuracy`). None for a model split over devices, whose runs are too few."""
    from tokenwalk.timing.accuracy import expected_error

    if setup is not None and not setup.one_card:
        return None
    return expected_error(system.first, phase)


def on_system(spec: SystemSpec, *, load_mtp: bool = False) -> tuple[System, Offload]:
    """The system the options name and the placement asked. Placement flags on a machine of
    one memory pool place tensors between its GPU and its own CPU cores (`system.own_cpu`)."""
    from tokenwalk.errors import InputError
    from tokenwalk.system import Offload, own_cpu, resolve_system

    system = resolve_system(spec)
    offload = spec.offload(load_mtp=load_mtp)
    if not system.unified and not all(d.memory_bytes for d in system.devices):
        if spec.placement_given or len(system.devices) > 1:
            raise InputError("placing a model on cards needs their memory size: give --memory GiB")
        return system.model_copy(update={"host": None}), Offload(load_mtp=load_mtp)  # one pool
    if system.unified and spec.placement_given:
        return own_cpu(system, spec), offload
    return system, Offload(load_mtp=load_mtp) if system.unified else offload


def system_bytes(m: Machine, system_gb: float | None) -> int:
    """Memory held by the system: --system-gb, else what the machine's kind suggests."""
    from tokenwalk.costs.budget import default_system_bytes
    from tokenwalk.system import held_bytes

    if system_gb is not None:
        return int(held_bytes(system_gb) or 0)
    return default_system_bytes(m.kind, m.memory_bytes or 0)


def fit_on(
    models: list[Model], m: Machine, system_gb: float | None, *, ctx: int, **kw: Any
) -> MemoryFit | None:
    """Do `models` with `ctx` tokens of KV fit machine `m`? None when it has no memory size."""
    from tokenwalk.costs.budget import memory_fit

    if not m.memory_bytes:
        return None
    return memory_fit(
        models,
        capacity_bytes=int(m.memory_bytes),
        system_bytes=system_bytes(m, system_gb),
        ctx=ctx,
        gpu_limit_bytes=int(m.gpu_usable_bytes) if m.gpu_usable_bytes else None,
        **kw,
    )


def system_fit(
    models: list[Model],
    system: System,
    setup: Setup | None,
    system_gb: float | None,
    *,
    ctx: int,
    kv_type: str,
    load_mtp: bool = False,
    **kw: Any,
) -> MemoryFit | None:
    """Does a timing answer's request fit? On one pool of memory, `fit_on` its device with
    `ctx` tokens of KV (MTP blocks as `load_mtp` says); on a card and its host, the placement's
    verdict (`costs.split.split_memory_fit`; its offload says what MTP loads). `kw`: parallel
    or ubatch."""
    if setup is None:
        return fit_on(
            models,
            system.first,
            system_gb,
            ctx=ctx,
            kv_type=kv_type.lower(),
            load_mtp=load_mtp,
            **kw,
        )
    from tokenwalk.costs.split import split_memory_fit

    return split_memory_fit(setup, kv_type=kv_type.lower(), **kw)


def answer(report: Any, fit: MemoryFit | None, warnings: list[str], json: bool) -> None:
    """Print a timing answer with its fit and warnings: warnings on stderr; the fit note in the
    view (a red line) or, for --json, in the `fits` and `memory` keys and on stderr."""
    from tokenwalk.costs.budget import with_fit

    for w in warnings:
        warn(w)
    if json and fit is not None and not fit.fits:
        warn(fit.note)
    respond(with_fit(report, fit, warnings), json)
