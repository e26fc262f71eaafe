"""One request from the disk to the last token, as a timeline (the seed's "Trace of the request").

    cold load     file bytes / load rate                              (--cold)
    tokenize      template + tokenizer: about a microsecond a token
    restore KV    KV of the cached prefix / load rate                 (--restore-kv)
    prefill       chunks of ubatch tokens, context growing            (timing model)
    first token   the last chunk's LM head scores the vocabulary; the sampler draws
    decode        one step per output token, each reading the weights and a growing KV cache
    end           the end-of-turn token stops the loop

TTFT is everything up to the first token; writing time is the decode steps.

The load rate is the machine's measured cold load (`load_gbs`: file bytes / seconds, disk to
RAM and on to the GPU's memory, as a runtime does it) where a source gives one, else its disk
read speed, else an assumed NVMe SSD. A disk's read speed alone is an upper bound: the seed's
laptop read 21.7 GB in 55 s (0.39 GB/s) through Ollama, far below its SSD. A saved KV cache
(--restore-kv) is read back from the same disk by the same runtime, at the same rate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict

from tokenwalk.costs.energy import EnergyCost
from tokenwalk.costs.kv import kv_stored_bytes, state_bytes
from tokenwalk.errors import InputError
from tokenwalk.machine import Machine
from tokenwalk.model.model import Model
from tokenwalk.numbers import counted, duration, size
from tokenwalk.timing.accuracy import ExpectedError
from tokenwalk.timing.passes import PrefillReport, pass_time, prefill_report
from tokenwalk.units import Bytes

__all__ = [
    "Phase",
    "TraceReport",
    "trace_report",
    "decode_seconds",
    "TOKENIZE_S_PER_TOKEN",
    "DEFAULT_DISK_READ_GBS",
    "load_rate",
    "SessionCall",
    "SessionReport",
    "session_report",
]

TOKENIZE_S_PER_TOKEN = 1e-6  # BPE tokenizers run at about a million tokens a second
DEFAULT_DISK_READ_GBS = 3.0  # a PCIe 3/4 NVMe SSD, when the machine entry has no disk speed
_MAX_CHUNK_PHASES = 32


class Phase(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    start_s: float
    duration_s: float
    detail: str = ""
    data_bytes: Bytes = 0  # what the phase loads, restores, stores or reads (0: none counted)


class TraceReport(BaseModel):
    """The answer of `tokenwalk trace`."""

    model_config = ConfigDict(frozen=True)
    model: str
    machine: str
    prompt_tokens: int
    output_tokens: int
    cached_tokens: int
    cold: bool
    restore_kv: bool
    ubatch: int
    swa_full: bool = False  # sliding-window layers hold the full context (--swa-full)
    n_chunks: int  # prefill chunks
    phases: list[Phase]
    load_s: float
    prefill_s: float
    ttft_s: float
    decode_s: float
    total_s: float
    kv_stored_bytes: Bytes  # KV the prompt filled (the cache contents, not the allocation)
    state_bytes: Bytes  # recurrent state, fixed
    decode_step_read_bytes: Bytes  # what the first decode step reads
    decode_step_s: float
    decode_tok_s: float
    load_gbs: float  # the rate of the cold load (--cold) and of a KV restore, decimal GB/s
    load_from: str  # where that rate comes from
    load_assumed: bool  # no source for it: an assumed NVMe SSD
    energy: EnergyCost | None = None  # power x time, and its price (costs.energy)
    # the error to expect of the prefill and decode times (tokenwalk.timing.accuracy); one machine
    # only
    prefill_error: ExpectedError | None = None
    decode_error: ExpectedError | None = None


def load_rate(machine: Machine) -> tuple[float, str, bool]:
    """(GB/s, where it comes from, assumed) of a cold load on `machine`: its measured load
    rate, else its disk read speed, else DEFAULT_DISK_READ_GBS."""
    if machine.load_gbs:
        src = f" ({machine.load_source})" if machine.load_source else ""
        return machine.load_gbs, f"a measured cold load on {machine.slug}{src}", False
    if machine.disk_read_gbs:
        return machine.disk_read_gbs, f"the disk read speed of {machine.slug}", False
    return DEFAULT_DISK_READ_GBS, "assumed: an NVMe SSD, no load rate for this machine", True


def decode_seconds(
    model: Model,
    machine: Machine,
    start_ctx: int,
    steps: int,
    kv_type: str = "f16",
    step: Callable[[int], tuple[float, float]] | None = None,
) -> tuple[float, list[float]]:
    """Sum of `steps` decode steps with the context growing from `start_ctx`.

    A step's time is piecewise linear in the context, so it is sampled at up to 17 points and
    integrated with the trapezoid rule. `step(ctx)` -> (seconds, bytes) times a step on a split
    system. Returns (seconds, sampled step times).
    """
    if steps <= 0:
        return 0.0, []
    points = sorted({start_ctx + round(i * (steps - 1) / 16) for i in range(17)})
    if step is not None:
        times = [step(c)[0] for c in points]
    else:
        times = [pass_time(model, machine, 1, c, kv_type=kv_type).time_s for c in points]
    if len(points) == 1:
        return times[0] * steps, times
    total = 0.0
    for i in range(1, len(points)):
        total += (times[i - 1] + times[i]) / 2 * (points[i] - points[i - 1])
    # the trapezoids cover steps - 1 intervals; add the last step itself
    return total + times[-1], times


def trace_report(
    model: Model,
    machine: Machine,
    *,
    prompt: int,
    output: int = 300,
    cold: bool = False,
    cached: int = 0,
    restore_kv: bool = False,
    ubatch: int = 512,
    kv_type: str = "f16",
    tokenize_s: float | None = None,
    tokenize_detail: str | None = None,
    prefill: PrefillReport | None = None,
    step: Callable[[int], tuple[float, float]] | None = None,
    upload: tuple[float, float] | None = None,
) -> TraceReport:
    """The whole request as phases with start and duration, and its totals.

    `tokenize_s` is a given time of rendering the template and tokenizing the prompt
    (`tokenize_detail` says what was counted); without it, TOKENIZE_S_PER_TOKEN a token. A
    model split over cards and host brings its own `prefill` and decode `step(ctx)` ->
    (seconds, bytes); with cards over RPC, `upload` (bytes, seconds) is what a cold load then
    sends them over the network (part of `load_s`)."""
    if output < 0:
        raise InputError(f"--output cannot be negative ({output})")
    if output > 1 << 24:
        raise InputError(f"--output {output:,} tokens is beyond any request")
    if restore_kv and cached <= 0:
        raise InputError("--restore-kv restores a saved prefix: give its length with --cached K")
    pre = prefill or prefill_report(
        model, machine, prompt=prompt, cached=cached, ubatch=ubatch, kv_type=kv_type
    )
    phases: list[Phase] = []
    t = 0.0

    def add(name: str, duration: float, detail: str = "", nbytes: float = 0.0) -> None:
        nonlocal t
        phases.append(
            Phase(name=name, start_s=t, duration_s=duration, detail=detail, data_bytes=nbytes)
        )
        t += duration

    # a saved KV cache is read back from the disk the weights load from, at the same rate
    load_gbs, load_from, load_assumed = load_rate(machine)
    load_s = 0.0
    if cold:
        load_s = model.file_bytes / (load_gbs * 1e9)
        add(
            "load from disk",
            load_s,
            f"{size(model.file_bytes)} at {load_gbs:.3g} GB/s",
            model.file_bytes,
        )
        if upload is not None:
            add(
                "upload to the rpc: cards",
                upload[1],
                f"{size(upload[0])} over the network",
                upload[0],
            )
            load_s += upload[1]
    add(
        "template + tokenize",
        prompt * TOKENIZE_S_PER_TOKEN if tokenize_s is None else tokenize_s,
        tokenize_detail or f"{prompt:,} tokens",
    )
    if restore_kv:
        restored = kv_stored_bytes(model, cached, kv_type, ubatch) + state_bytes(model)
        add(
            "restore KV from disk",
            restored / (load_gbs * 1e9),
            f"{cached:,} tokens, {size(restored)}",
            restored,
        )
    elif cached:
        add("reuse prefix cache", 0.0, f"{cached:,} tokens already in memory")
    if len(pre.chunks) <= _MAX_CHUNK_PHASES:
        for c in pre.chunks:
            add(
                f"prefill chunk {c.index + 1}/{len(pre.chunks)}",
                c.time_s,
                f"{c.tokens:,} tokens at {c.ctx:,}, {c.bound}",
            )
    else:
        bounds = ", ".join(
            f"{n} {what}"
            for n, what in (
                (pre.compute_bound_chunks, "compute"),
                (pre.experts_bound_chunks, "routed experts"),
                (pre.memory_bound_chunks, "memory"),
            )
            if n
        )
        add(
            "prefill",
            pre.ttft_s,
            f"{counted(len(pre.chunks), 'chunk')} of up to {ubatch:,} tokens; bound by {bounds}",
        )
    kv_after = kv_stored_bytes(model, prompt, kv_type, ubatch)
    state = state_bytes(model)
    stored = f"{size(kv_after)} of KV for {prompt:,} tokens"
    if state:
        stored += f" + {size(state)} of recurrent state"
    add("KV stored", 0.0, stored, kv_after + state)
    add("LM head + first token", 0.0, f"scores {model.n_vocab:,} tokens, samples one")
    ttft = t
    if step is not None:
        first_s, first_bytes = step(prompt)
    else:
        first = pass_time(model, machine, 1, prompt, kv_type=kv_type)
        first_s, first_bytes = first.time_s, first.work.bytes
    steps = max(output - 1, 0)
    dec_s, _ = decode_seconds(model, machine, prompt + 1, steps, kv_type, step)
    if steps:
        add(
            "decode",
            dec_s,
            f"{steps:,} steps, context {prompt + 1:,} to {prompt + steps:,}; "
            f"a step reads {size(first_bytes)} in {duration(first_s)}",
            first_bytes * steps,
        )
    add("end", 0.0, "end-of-turn token")
    return TraceReport(
        swa_full=model.swa_full,
        model=model.name,
        machine=machine.slug,
        prompt_tokens=prompt,
        output_tokens=output,
        cached_tokens=cached,
        cold=cold,
        restore_kv=restore_kv,
        ubatch=ubatch,
        n_chunks=len(pre.chunks),
        phases=phases,
        load_s=load_s,
        prefill_s=pre.ttft_s,
        ttft_s=ttft,
        decode_s=dec_s,
        total_s=t,
        kv_stored_bytes=kv_after,
        state_bytes=state,
        decode_step_read_bytes=first_bytes,
        decode_step_s=first_s,
        decode_tok_s=(steps / dec_s) if dec_s else 1.0 / first_s,
        load_gbs=load_gbs,
        load_from=load_from,
        load_assumed=load_assumed,
    )


class SessionCall(BaseModel):
    """One call of a conversation on the session's timeline."""

    model_config = ConfigDict(frozen=True)
    index: int  # position, from 0
    start_s: float  # when the call starts on the session's clock
    gap_s: float  # idle time before it (0 for the first)
    cold: bool  # the weights are loaded from disk first (the first call with --cold, or after
    # an idle gap longer than --keep-alive)
    prompt_tokens: int  # sent
    cached_tokens: int  # of which reused from the prefix cache
    computed_tokens: int  # of which prefilled: prompt_tokens - cached_tokens
    output_tokens: int
    load_s: float
    tokenize_s: float
    prefill_s: float
    ttft_s: float  # from the call's start to its first token
    decode_s: float
    total_s: float


class SessionReport(BaseModel):
    """The answer of `tokenwalk trace --chat` for a conversation of several calls: each call
    prefills what the previous one did not leave in the cache."""

    model_config = ConfigDict(frozen=True)
    model: str
    machine: str
    calls: list[SessionCall]
    gap_s: float
    keep_alive_s: float | None  # None: the model stays loaded (llama-server)
    swa_full: bool = False  # sliding-window layers hold the full context (--swa-full)
    n_cold_loads: int
    prompt_tokens: int  # sent, all calls
    cached_tokens: int  # reused, all calls
    computed_tokens: int  # prefilled, all calls
    output_tokens: int
    busy_s: float  # the calls themselves
    wall_s: float  # first start to last end, idle gaps included
    load_gbs: float
    load_from: str
    energy: EnergyCost | None = None  # power x time, and its price (costs.energy)
    # the error to expect of the prefill and decode times (tokenwalk.timing.accuracy); one machine
    # only
    prefill_error: ExpectedError | None = None
    decode_error: ExpectedError | None = None


def session_report(
    model: Model,
    machine: Machine,
    calls: list[tuple[int, int, int]],
    *,
    gap_s: float = 0.0,
    keep_alive_s: float | None = None,
    cold: bool = False,
    ubatch: int = 512,
    kv_type: str = "f16",
    tokenize_s: list[float] | None = None,
    trace: Callable[..., TraceReport] | None = None,
    machine_name: str | None = None,
) -> SessionReport:
    """Trace each call of a conversation: `calls` holds (prompt, cached, output) tokens per
    call, `cached` being the prefix the previous call left (its prompt and its reply). Calls are
    `gap_s` apart; when a gap is longer than `keep_alive_s` the runtime has unloaded the model,
    so the call loads it again and its cache is gone (all of its prompt is prefilled).

    `trace(prompt=, output=, cold=, cached=, tokenize_s=)` traces one call (default:
    `trace_report` of `model` on `machine`); a model split over cards and a host brings its
    own (`costs.compare.system_session`), and `machine_name` names that system."""
    if not calls:
        raise InputError("a session needs at least one call")
    if gap_s < 0:
        raise InputError(f"--gap cannot be negative ({gap_s})")
    if keep_alive_s is not None and keep_alive_s < 0:
        raise InputError(f"--keep-alive cannot be negative ({keep_alive_s})")
    out: list[SessionCall] = []
    clock = 0.0
    loads = 0

    def _one_pool(**kw: Any) -> TraceReport:
        return trace_report(model, machine, ubatch=ubatch, kv_type=kv_type, **kw)

    for i, (prompt, cached, output) in enumerate(calls):
        gap = gap_s if i else 0.0
        unloaded = i > 0 and keep_alive_s is not None and gap > keep_alive_s
        is_cold = (cold and i == 0) or unloaded
        if unloaded:
            cached = 0
        clock += gap
        tr = (trace or _one_pool)(
            prompt=prompt,
            output=output,
            cold=is_cold,
            cached=min(cached, prompt - 1),
            tokenize_s=tokenize_s[i] if tokenize_s else None,
        )
        loads += is_cold
        tok = next(p.duration_s for p in tr.phases if p.name == "template + tokenize")
        out.append(
            SessionCall(
                index=i,
                start_s=clock,
                gap_s=gap,
                cold=is_cold,
                prompt_tokens=prompt,
                cached_tokens=tr.cached_tokens,
                computed_tokens=prompt - tr.cached_tokens,
                output_tokens=output,
                load_s=tr.load_s,
                tokenize_s=tok,
                prefill_s=tr.prefill_s,
                ttft_s=tr.ttft_s,
                decode_s=tr.decode_s,
                total_s=tr.total_s,
            )
        )
        clock += tr.total_s
    rate, source, _ = load_rate(machine)
    return SessionReport(
        swa_full=model.swa_full,
        model=model.name,
        machine=machine_name or machine.slug,
        calls=out,
        gap_s=gap_s,
        keep_alive_s=keep_alive_s,
        n_cold_loads=loads,
        prompt_tokens=sum(c.prompt_tokens for c in out),
        cached_tokens=sum(c.cached_tokens for c in out),
        computed_tokens=sum(c.computed_tokens for c in out),
        output_tokens=sum(c.output_tokens for c in out),
        busy_s=sum(c.total_s for c in out),
        wall_s=clock,
        load_gbs=rate,
        load_from=source,
    )
