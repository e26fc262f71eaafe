"""The answers of `budget`, `decode`, `prefill`, `trace` and `spec` on a system of cards and a
host: the placement (`costs.offload`) turned into the same result objects as one pool gives,
with every device's figures added (`BudgetReport.devices`, `DecodeReport.split`, ...).

A system whose model sits whole on one card is timed exactly as one pool (the card's fitted
model); anything in RAM, or several cards, goes through `offload.system_pass`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from pydantic import BaseModel

from tokenwalk.costs.budget import (
    ROOM_FRACTION,
    BudgetModel,
    BudgetReport,
    MemoryFit,
    budget_contexts,
    default_system_bytes,
    loaded_weight_bytes,
    runtime_settings,
)
from tokenwalk.costs.command import Arg, cache_args, command_line
from tokenwalk.costs.kv import cache_by_context, kv_bytes, state_bytes
from tokenwalk.costs.offload import (
    ON_THE_CPU,
    DeviceMemory,
    Placement,
    SystemPass,
    device_memory,
    fit_auto,
    place,
    system_pass,
    tensor_parallel_machine,
)
from tokenwalk.costs.workload import (
    check_workload,
    default_context,
    largest_context,
    shortest_trained,
    stream_warnings,
)
from tokenwalk.errors import InputError
from tokenwalk.machine import Machine
from tokenwalk.model.model import Model
from tokenwalk.numbers import duration, size
from tokenwalk.system import Offload, System, held_bytes
from tokenwalk.timing.efficiency import Efficiency
from tokenwalk.timing.passes import (
    DEFAULT_UBATCH,
    READING_TOK_S,
    ContextPoint,
    DecodeReport,
    DevicePart,
    PrefillChunk,
    PrefillReport,
    RpcLink,
    SplitInfo,
    compared_with_reading,
    compute_fit,
    context_points,
    decode_report,
    expert_rows,
    prefill_chunks,
    prefill_report,
)

R = TypeVar("R", bound=BaseModel)

__all__ = [
    "Setup",
    "system_bytes",
    "plan",
    "split_text",
    "split_budget_report",
    "split_memory_fit",
    "split_decode_report",
    "split_prefill_report",
    "split_pass_time",
    "rpc_note",
    "ubatch_warnings",
]


@dataclass(frozen=True)
class Setup:
    """A model placed on a system: what the timing functions need."""

    model: Model
    system: System
    offload: Offload
    placement: Placement

    @property
    def one_card(self) -> bool:
        """The whole model on one card in this box: timed as one pool on that card."""
        return (
            self.placement.all_on_gpu and len(self.system.devices) == 1 and not self.system.has_rpc
        )

    @property
    def host_computes(self) -> bool:
        """Some of the model's work runs on the host (layers, experts or part of a block in
        RAM): its power counts in full (`costs.energy.system_power`)."""
        return not self.placement.all_on_gpu

    @property
    def tensor_split(self) -> bool:
        return self.offload.split_mode == "tensor" and len(self.system.devices) > 1


def system_bytes(system: System) -> list[int]:
    """Memory held by others on each card (--system-gb, else 0.5 GB of a discrete card) and,
    last, on the host (8 GB, at most a quarter of its RAM; a machine of one memory, the host
    being its own CPU cores, holds its share once, the card's)."""
    out = []
    for d in system.devices:
        if system.system_gb is not None:
            out.append(int(held_bytes(system.system_gb) or 0))
        else:
            out.append(default_system_bytes(d.kind, d.memory_bytes or 0))
    if system.host is not None:
        out.append(
            out[0] if system.shared else default_system_bytes("cpu", system.host.memory_bytes or 0)
        )
    return out


# KV cache types llama.cpp's --split-mode tensor takes (docs/multi-gpu.md: non-quantized only)
TENSOR_SPLIT_KV_TYPES = ("f16", "bf16", "f32")


def _shares(system: System, offload: Offload, sysb: list[int]) -> list[float]:
    if offload.split_mode == "tensor" and len(system.devices) > 1:
        return [1.0]  # one device made of all the cards
    return [
        float(max(0, (d.memory_bytes or 0) - s)) for d, s in zip(system.devices, sysb, strict=False)
    ]


def _pool(system: System, offload: Offload) -> System:
    """The system as the placement sees it: tensor-split cards are one device."""
    if offload.split_mode == "tensor" and len(system.devices) > 1:
        return system.model_copy(update={"devices": (tensor_parallel_machine(system),)})
    return system


def plan(
    model: Model,
    system: System,
    offload: Offload,
    *,
    ctx: int | None,
    kv_type: str = "f16",
    parallel: int = 1,
    ubatch: int = 512,
    strict: bool = True,
) -> Setup:
    """Place `model` on `system` as llama.cpp would for `offload` (auto: `--fit`). `ctx` None
    is an unset context: `--fit` may shrink it; otherwise the trained context is reserved.
    `strict` refuses expert flags for a model without experts (a dense draft loaded beside a
    mixture of experts just has none to move)."""
    if system.host is None:
        raise InputError("placement flags need a discrete card and its host")
    if system.has_rpc and offload.split_mode == "tensor":
        raise InputError(
            "--split-mode tensor does not reach cards over RPC (llama.cpp #26610, open): "
            "rpc: cards take whole layers (--split-mode layer)"
        )
    if offload.split_mode == "tensor" and len(system.devices) > 1:
        if not model.spec.tensor_split_supported:
            raise InputError(
                f"llama.cpp does not run {model.spec.arch} models with --split-mode tensor "
                "(LLAMA_SPLIT_MODE_TENSOR not implemented for the architecture): use "
                "--split-mode layer"
            )
        if kv_type not in TENSOR_SPLIT_KV_TYPES:
            raise InputError(
                f"--split-mode tensor needs an f16, bf16 or f32 KV cache, not {kv_type} "
                "(llama.cpp: tensor split with a quantized KV cache is not implemented)"
            )
    if strict and (offload.n_cpu_moe or offload.cpu_moe):
        if not model.is_moe:
            raise InputError(
                f"{model.name} has no routed experts: --cpu-moe and --n-cpu-moe keep experts in RAM"
            )
    sysb = system_bytes(system)
    shares = _shares(system, offload, sysb)
    if offload.auto:
        placement = fit_auto(
            model,
            _pool(system, offload),
            ctx=ctx,
            kv_type=kv_type,
            parallel=parallel,
            ubatch=ubatch,
            system_bytes=sysb,
            offload=offload,
        )
    else:
        c = ctx if ctx is not None else (model.spec.n_ctx_train or 4096)
        placement = place(model, offload, shares, ctx=c)
    return Setup(model, system, offload, placement)


def _memory(setup: Setup, kv_type: str, parallel: int, ubatch: int) -> list[DeviceMemory]:
    o = setup.offload
    return device_memory(
        setup.model,
        setup.system,
        setup.placement,
        kv_type=kv_type,
        parallel=parallel,
        ubatch=ubatch,
        system_bytes=system_bytes(setup.system),
        op_offload=o.op_offload,
        load_mtp=o.load_mtp,
        tensor_split=len(setup.system.devices) if setup.tensor_split else 1,
    )


def split_text(gpu_share: float) -> str:
    """The split as `ollama ps` prints it: "41%/59% CPU/GPU", "100% GPU", "100% CPU"."""
    gpu = round(gpu_share * 100)
    if gpu >= 100:
        return "100% GPU"
    if gpu <= 0:
        return "100% CPU"
    return f"{100 - gpu}%/{gpu}% CPU/GPU"


def _memory_split(devices: Sequence[DeviceMemory]) -> str:
    """Share of the weights held by the host and by the GPUs, as `ollama ps` reports where a
    loaded model sits: the one meaning of "CPU/GPU" in every answer (the KV, which follows its
    layers, is left out so that the split does not move with the context)."""
    gpu = sum(d.weights_bytes for d in devices if d.role == "gpu")
    total = sum(d.weights_bytes for d in devices)
    return split_text(gpu / total if total else 1.0)


def _sum_devices(rows: list[list[DeviceMemory]]) -> list[DeviceMemory]:
    """Several models loaded together: their rows added device by device."""
    if len(rows) == 1:
        return rows[0]
    out = []
    for group in zip(*rows, strict=True):
        first = group[0]
        used = sum(d.used_bytes for d in group)
        out.append(
            first.model_copy(
                update=dict(
                    weights_bytes=sum(d.weights_bytes for d in group),
                    kv_bytes=sum(d.kv_bytes for d in group),
                    buffers_bytes=sum(d.buffers_bytes for d in group),
                    used_bytes=used,
                    free_bytes=first.room_bytes - used,
                    layers=sum(d.layers for d in group),
                    expert_layers=sum(d.expert_layers for d in group),
                    output=any(d.output for d in group),
                    fits=first.room_bytes - used >= 0,
                )
            )
        )
    return out


def _devices_at(
    models: list[Model],
    system: System,
    offload: Offload,
    ctx: int | None,
    kv_type: str,
    parallel: int,
    ubatch: int,
) -> tuple[list[DeviceMemory], list[Setup]]:
    setups = [
        plan(
            m,
            system,
            offload,
            ctx=ctx,
            kv_type=kv_type,
            parallel=parallel,
            ubatch=ubatch,
            strict=len(models) == 1,
        )
        for m in models
    ]
    return _sum_devices([_memory(s, kv_type, parallel, ubatch) for s in setups]), setups


def _alternatives(
    model: Model,
    system: System,
    offload: Offload,
    ctx: int,
    kv_type: str,
    parallel: int,
    ubatch: int,
) -> list[str]:
    """What would make `model` fit: --fit's choice, the experts in RAM, whole layers."""
    hints = []
    tries: list[tuple[str, Offload]] = [("--gpu-layers auto", Offload(auto=True))]
    if model.is_moe:
        tries.append(("--cpu-moe", Offload(cpu_moe=True)))
    for label, o in tries:
        o = o.model_copy(
            update={"split_mode": offload.split_mode, "op_offload": offload.op_offload}
        )
        if o.auto and o.split_mode == "tensor":
            continue
        try:
            devices, setups = _devices_at([model], system, o, ctx, kv_type, parallel, ubatch)
        except InputError:
            continue
        if all(d.fits for d in devices):
            p = setups[0].placement
            at = f", context {p.ctx:,}" if p.ctx != ctx else ""
            hints.append(f"{label} fits ({_memory_split(devices)}{at}): {p.flags}")
    return hints


def split_budget_report(
    models: list[Model],
    system: System,
    offload: Offload,
    *,
    ctx: int | None = None,
    kv_type: str = "f16",
    parallel: int = 1,
    ubatch: int = 512,
    smaller_quants: Sequence[tuple[str, list[Model]]] = (),
) -> BudgetReport:
    """Memory of every card and of the host for `models` placed by `offload`; fits when every
    device fits. The totals at the top of the report are the cards' (VRAM)."""
    if not models:
        raise InputError("give at least one model")
    if offload.default and len(models) > 1:
        offload = offload.model_copy(update={"auto": False, "default": False})
    if offload.auto and len(models) > 1:
        raise InputError("--gpu-layers auto places one model; give the placement of several")
    for d in system.devices:
        if not d.memory_bytes:
            raise InputError(f"machine '{d.slug}' has no memory size; give --memory GiB")
    shortest = shortest_trained(models)
    if ctx is None and not offload.shrinks_ctx:
        ctx = default_context(models, parallel)
    if ctx is not None:
        check_workload(ctx=ctx, parallel=parallel, ubatch=ubatch)
    devices, setups = _devices_at(models, system, offload, ctx, kv_type, parallel, ubatch)
    ctx = setups[0].placement.ctx
    warnings = stream_warnings(models, ctx, parallel)
    gpus = [d for d in devices if d.role == "gpu"]
    fits = all(d.fits for d in devices)
    rows = [
        BudgetModel(
            model=m.name,
            weights_bytes=loaded_weight_bytes(m, offload.load_mtp),
            kv_bytes=kv_bytes(m, ctx, kv_type, parallel, ubatch),
            state_bytes=state_bytes(m, parallel),
            buffers_bytes=0,
            max_ctx=m.spec.n_ctx_train,
        )
        for m in models
    ]
    cap = sum(d.capacity_bytes for d in gpus)
    room = sum(d.room_bytes for d in gpus)
    used = sum(d.used_bytes for d in gpus)
    if not fits:
        verdict = "does not fit"
    elif min(d.free_bytes / d.capacity_bytes for d in devices if d.capacity_bytes) >= ROOM_FRACTION:
        verdict = "fits with room"
    else:
        verdict = "tight"

    def fits_at(c: int) -> bool:
        try:
            devs, _ = _devices_at(models, system, offload, c, kv_type, parallel, ubatch)
        except InputError:
            return False
        return all(d.fits for d in devs)

    best = largest_context(fits_at, shortest * parallel or 131072)
    if best and best < ctx and not offload.shrinks_ctx:
        warnings.append(f"the largest context that fits is {best:,} tokens: the settings use it")
    hints: list[str] = []
    if not fits:
        over = [d for d in devices if not d.fits]
        for d in over:
            hints.append(
                f"{d.device}: {size(d.used_bytes)} asked of {size(d.room_bytes)} "
                f"({size(-d.free_bytes)} short)"
            )
        if len(models) == 1:
            hints += _alternatives(models[0], system, offload, ctx, kv_type, parallel, ubatch)
        for preset, alt in smaller_quants:
            try:
                devs, _ = _devices_at(alt, system, offload, ctx, kv_type, parallel, ubatch)
            except InputError:
                continue
            if all(d.fits for d in devs):
                hints.append(f"--quant {preset} fits as placed ({_memory_split(devs)})")
                break
    placements = [(s.model.name, _args(s)) for s in setups]
    swa_full = any(m.swa_full for m in models)
    settings = (
        runtime_settings(ctx if fits else best, kv_type, parallel, placements, swa_full)
        if fits or best
        else {}
    )
    flags = "; ".join(dict.fromkeys(command_line(args) for _, args in placements))
    if setups[0].tensor_split and kv_type != "f16":
        warnings.append("--split-mode tensor needs an unquantized KV cache (llama.cpp)")
    default_ctx = max((m.spec.n_ctx_train for m in models), default=0) or ctx
    return BudgetReport(
        swa_full=swa_full,
        machine=system.slug,
        capacity_bytes=cap,
        system_bytes=sum(d.system_bytes for d in gpus),
        ctx=ctx,
        kv_type=kv_type,
        parallel=parallel,
        models=rows,
        weights_bytes=sum(d.weights_bytes for d in gpus),
        cache_bytes=sum(d.kv_bytes for d in gpus),
        buffers_bytes=sum(d.buffers_bytes for d in gpus),
        used_bytes=used,
        free_bytes=room - used,
        fits=fits,
        verdict=verdict,
        max_fit_ctx=best,
        default_ctx=default_ctx,
        default_cache_bytes=sum(
            kv_bytes(m, m.spec.n_ctx_train or ctx, kv_type, parallel, ubatch)
            + state_bytes(m, parallel)
            for m in models
        ),
        settings=settings,
        warnings=warnings,
        hints=hints,
        cache_room_bytes=room
        - sum(d.weights_bytes for d in gpus)
        - sum(d.buffers_bytes for d in gpus),
        by_context=cache_by_context(
            models, budget_contexts(ctx, default_ctx, best), kv_type, parallel, ubatch
        ),
        devices=devices,
        placement=flags,
        placement_note="; ".join(n for n in dict.fromkeys(s.placement.note for s in setups) if n),
        split=_memory_split(devices),
        host=system.host_note
        + (f"; link {system.link}" if system.link else "")
        + (
            "; " + rpc_note(system, sum(d.weights_bytes for d in devices if d.remote))
            if system.has_rpc
            else ""
        ),
    )


def split_memory_fit(
    setup: Setup, *, kv_type: str, parallel: int = 1, ubatch: int = 512
) -> MemoryFit:
    """Does the placed model fit every device? One note naming those that overflow."""
    devices = _memory(setup, kv_type, parallel, ubatch)
    over = [d for d in devices if not d.fits]
    needed = int(sum(d.used_bytes for d in devices))
    pools = [d for d in devices if not d.shared]  # one memory counted once
    ctx = setup.placement.ctx
    name = setup.model.name
    if not over:
        free = min(devices, key=lambda d: d.free_bytes)
        note = (
            f"{name} fits as placed: {size(free.free_bytes)} free on "
            f"{free.device} at {ctx:,} tokens"
        )
    else:
        short = "; ".join(
            f"{d.device} needs {size(d.used_bytes)} of {size(d.room_bytes)}" for d in over
        )
        note = (
            f"{name} does not fit as placed: {short}; these times "
            "assume it does (`tokenwalk budget` says what fits)"
        )
    return MemoryFit(
        fits=not over,
        ctx=ctx,
        capacity_bytes=int(sum(d.capacity_bytes for d in pools)),
        system_bytes=int(sum(d.system_bytes for d in pools)),
        needed_bytes=needed,
        free_bytes=int(min(d.free_bytes for d in devices)),  # the tightest device
        note=note,
    )


def split_pass_time(
    setup: Setup,
    n_tokens: int,
    ctx: int,
    *,
    kv_type: str = "f16",
    streams: int = 1,
    n_logits: float | None = None,
) -> SystemPass:
    """A pass over the placed model (`offload.system_pass`)."""
    return system_pass(
        setup.model,
        setup.system,
        setup.placement,
        n_tokens,
        ctx,
        kv_type=kv_type,
        streams=streams,
        n_logits=n_logits,
        op_offload=setup.offload.op_offload,
        load_mtp=setup.offload.load_mtp,
        tensor_split=setup.tensor_split,
    )


def _args(setup: Setup) -> tuple[Arg, ...]:
    """The llama.cpp flags of a placed model: its placement's, -sm tensor where asked, and
    its cache's (`command.cache_args`)."""
    sm: tuple[Arg, ...] = (("-sm", "tensor"),) if setup.tensor_split else ()
    return (*setup.placement.args, *sm, *cache_args(setup.model.swa_full))


def _info(setup: Setup, sp: SystemPass | None, gpu_share: float) -> SplitInfo:
    """How `setup` splits the model: `split` is the share of the weights each side holds, as
    `budget` reports it (`_memory_split`); `gpu_share` the share of the bytes a step reads that
    sit on a GPU."""
    s = setup.system
    return SplitInfo(
        system=s.name,
        host=s.host_note,
        link=s.link,
        placement=command_line(_args(setup)),
        placement_note=setup.placement.note,
        split=_memory_split(_memory(setup, "f16", 1, 512)),
        gpu_share=gpu_share,
        parts=sp.parts if sp is not None else [],
        rpc=sp.rpc if sp is not None else None,
        host_fit=_host_fit(s, sp.parts if sp is not None else []),
    )


def _host_fit(system: System, parts: Sequence[DevicePart]) -> Efficiency | None:
    """The host's efficiencies where its CPU does a part of the work (the `cpu` backend's:
    routed experts at the dense rate), else None."""
    if system.host is None or not any(p.how == ON_THE_CPU and p.time_s > 0 for p in parts):
        return None
    return compute_fit(system.host.fit, system.host.backend)


def _sum_rpc(terms: list[RpcLink]) -> RpcLink | None:
    """The network terms of several passes (a prompt's micro-batches) added; the upload once."""
    if not terms:
        return None
    first = terms[0]
    added = {
        k: sum(getattr(t, k) for t in terms)
        for k in (
            "splits",
            "input_bytes",
            "graph_bytes",
            "output_bytes",
            "transfer_s",
            "latency_total_s",
            "time_s",
        )
    }
    return first.model_copy(update=added)


def rpc_note(system: System, upload_bytes: float) -> str:
    """The network to the rpc: cards, as an answer states it, with the load's upload."""
    if not system.has_rpc or not system.rpc_link_gbs:
        return ""
    up = upload_bytes / (system.rpc_link_gbs * 1e9)
    return (
        f"RPC {system.rpc}; the weights on the rpc: cards ({size(upload_bytes)}) cross it once "
        f"at load: {duration(up)}"
    )


def _updated(report: R, **update: object) -> R:
    """`report` with fields replaced, validated again (byte counts become integers)."""
    return type(report).model_validate({**report.model_dump(), **update})


def _whole(setup: Setup, weights: float, kv: float, flops: float):  # noqa: ANN202
    """The one part of a model that sits whole on one card."""
    from tokenwalk.timing.passes import DevicePart

    def part(time_s: float, bound: str) -> DevicePart:
        return DevicePart(
            device=_card(setup).slug,
            role="gpu",
            weight_bytes=weights,
            kv_read_bytes=kv,
            flops=flops,
            time_s=time_s,
            bound=bound,
            how="the whole model on the card",
        )

    return part


def _card(setup: Setup) -> Machine:
    return setup.system.devices[0]


def _ceiling_tok_s(setup: Setup, sp: SystemPass) -> float:
    """The ceiling of a split step: every device reading its bytes (weights, KV and the
    recurrent state of its layers) at its full rate, one after another, as the cards of a
    layer split work, 1 / sum(bytes_d / BW_d) tokens a second (0 when no device reads)."""
    ceiling_s = 0.0
    devices = {d.slug: d for d in (*setup.system.devices, setup.system.host) if d is not None}
    if setup.tensor_split:
        tp = tensor_parallel_machine(setup.system)
        devices[tp.slug] = tp
    for p in sp.parts:
        if p.role == "link":
            continue
        d = devices.get(p.device)
        if d is not None:
            read = p.weight_bytes + p.kv_read_bytes + p.state_bytes
            ceiling_s += read / (d.bandwidth_gbs * 1e9)
    return 1.0 / ceiling_s if ceiling_s else 0.0


def split_decode_report(
    setup: Setup, *, ctx: int = 0, kv_type: str = "f16", parallel: int = 1, curve: bool = True
) -> DecodeReport:
    """A decoding step on the placed model: the parts of every device add; `curve` as in
    `decode_report`."""
    if setup.one_card:
        r = decode_report(
            setup.model, _card(setup), ctx=ctx, kv_type=kv_type, parallel=parallel, curve=curve
        )
        whole = _whole(setup, r.weight_read_bytes, r.kv_read_bytes, r.flops_per_token * parallel)
        return _updated(
            r,
            split=_info(setup, None, 1.0).model_copy(
                update={"parts": [whole(r.ms_per_token / 1e3, r.bound)]}
            ),
        )
    sp = split_pass_time(setup, 1, ctx, kv_type=kv_type.lower(), streams=parallel)
    base = decode_report(
        setup.model, _card(setup), ctx=ctx, kv_type=kv_type, parallel=parallel, curve=False
    )
    ceiling = _ceiling_tok_s(setup, sp) or base.ceiling_tok_s
    t = sp.time_s
    points = []
    for c in context_points(ctx, setup.model.spec.n_ctx_train) if curve else ():
        at = split_pass_time(setup, 1, c, kv_type=kv_type.lower(), streams=parallel)
        points.append(
            ContextPoint(ctx=c, tok_s=1.0 / at.time_s, ceiling_tok_s=_ceiling_tok_s(setup, at))
        )
    return _updated(
        base,
        **dict(
            machine=setup.system.slug,
            machine_name=setup.system.name,
            bandwidth_gbs=sp.bytes * ceiling / 1e9,
            ceiling_tok_s=ceiling,
            tok_s=1.0 / t,
            aggregate_tok_s=parallel / t,
            aggregate_ceiling_tok_s=ceiling * parallel,
            ms_per_token=t * 1e3,
            step_read_bytes=sp.bytes,
            read_bytes_per_token=sp.bytes / parallel,
            weight_read_bytes=sp.weight_bytes,
            kv_read_bytes=sp.kv_read_bytes,
            state_traffic_bytes=sp.state_bytes,
            flops_per_token=sp.flops / parallel,
            memory_s=sp.memory_s,
            compute_s=sp.compute_s,
            compute_flops=None,
            row_flops=None,
            overhead_s=sp.overhead_s,
            bound=sp.bound,
            bandwidth_used_gbs=sp.bytes / t / 1e9,
            arithmetic_intensity=sp.flops / sp.bytes if sp.bytes else 0.0,
            reading_tok_s=READING_TOK_S,
            vs_reading=compared_with_reading(1.0 / t),
            by_context=points,
            split=_info(setup, sp, sp.gpu_share),
        ),
    )


def split_prefill_report(
    setup: Setup, *, prompt: int, cached: int = 0, ubatch: int = 512, kv_type: str = "f16"
) -> PrefillReport:
    """Prefill on the placed model, chunk by chunk (op offload where a chunk has 32 tokens)."""
    card = _card(setup)
    if setup.one_card:
        r = prefill_report(
            setup.model, card, prompt=prompt, cached=cached, ubatch=ubatch, kv_type=kv_type
        )
        weights = sum(c.weight_read_bytes for c in r.chunks)
        whole = _whole(setup, weights, 0, r.flops)
        return _updated(
            r, split=_info(setup, None, 1.0).model_copy(update={"parts": [whole(r.ttft_s, "")]})
        )
    base = prefill_report(
        setup.model, card, prompt=prompt, cached=cached, ubatch=ubatch, kv_type=kv_type
    )
    plan_ = prefill_chunks(prompt, cached, ubatch)
    chunks: list[PrefillChunk] = []
    totals: dict[tuple[str, str, str], list[float]] = {}
    share = 1.0
    rpcs: list[RpcLink] = []
    for i, (c, n) in enumerate(plan_):
        last = i == len(plan_) - 1
        sp = split_pass_time(setup, n, c, kv_type=kv_type.lower(), n_logits=1 if last else 0)
        share = sp.gpu_share
        if sp.rpc is not None:
            rpcs.append(sp.rpc)
        for p in sp.parts:
            acc = totals.setdefault((p.device, p.role, p.how), [0.0, 0.0, 0.0, 0.0])
            acc[0] += p.weight_bytes
            acc[1] += p.kv_read_bytes
            acc[2] += p.flops
            acc[3] += p.time_s
        chunks.append(
            PrefillChunk(
                index=i,
                tokens=n,
                ctx=c,
                time_s=sp.time_s,
                bound=sp.bound.split(" ")[-1],
                memory_s=sp.memory_s,
                compute_s=sp.compute_s,
                expert_s=sp.expert_s,
                overhead_s=sp.overhead_s,
                weight_read_bytes=sp.weight_bytes,
                read_bytes=sp.bytes,
                flops=sp.flops,
                attention_share=base.chunks[i].attention_share,
                expert_rows=expert_rows(setup.model, n) if setup.model.spec.n_expert else 0.0,
            )
        )
    ttft = sum(x.time_s for x in chunks)
    tokens = prompt - cached
    from tokenwalk.timing.passes import DevicePart

    parts = [
        DevicePart(
            device=k[0],
            role=k[1],
            how=k[2],
            weight_bytes=v[0],
            kv_read_bytes=v[1],
            flops=v[2],
            time_s=v[3],
            bound="",
        )
        for k, v in totals.items()
    ]
    info = _info(setup, None, share).model_copy(
        update={
            "parts": parts,
            "rpc": _sum_rpc(rpcs),
            "host_fit": _host_fit(setup.system, parts),
        }
    )
    return _updated(
        base,
        **dict(
            machine=setup.system.slug,
            machine_name=setup.system.name,
            ttft_s=ttft,
            tok_s=tokens / ttft,
            compute_bound_chunks=sum(x.bound == "compute" for x in chunks),
            memory_bound_chunks=sum(x.bound in ("memory", "link") for x in chunks),
            experts_bound_chunks=sum(x.bound == "experts" for x in chunks),
            chunks=chunks,
            split=info,
        ),
    )


def ubatch_warnings(
    models: Iterable[Model], ubatch: int, tokens: int, system: System, setup: Setup | None
) -> list[str]:
    """One warning per mixture-of-experts model whose prefill of `tokens` (computed, not
    cached) is timed in chunks of more than llama.cpp's 512 on GPUs that hold all of it
    (`setup`: its placement on a card and a host, None on one pool). Of six published sweeps,
    four gained 8 to 29% from two to four times the micro-batch where the timing model's row
    term gives 41 to 152% (Qwen3.5-35B-A3B on an RTX 4090 and an MI100, Qwen3-30B-A3B on a
    Radeon PRO W7800 and an RTX 4080), gpt-oss-20b on an RTX 4090 lost 19% (the model: +19%),
    and Gemma 4 26B-A4B on an RTX 3090 gained 49% (the model: 34%); docs/prefill.md. A CPU's
    experts have no row term; with weights in the host's RAM a larger micro-batch also
    spreads their copy to the card over more tokens, which no sweep has measured apart."""
    if min(ubatch, tokens) <= DEFAULT_UBATCH or system.devices[0].backend == "cpu":
        return []
    if setup is not None and not setup.placement.all_on_gpu:
        return []
    return [
        f"{m.name}: published sweeps of mixtures of experts on GPUs mostly gained less from a "
        f"micro-batch of {ubatch:,} over {DEFAULT_UBATCH} than this estimate does: its prefill "
        "time may be too short (docs/prefill.md)"
        for m in models
        if m.is_moe
    ]
