"""One request from the disk to the last token, as a timeline (the seed's "Trace of the request").

    cold load     file bytes / load rate                              (--cold)
    tokenize      template + tokenizer: about a microsecond a token
    restore KV    KV of the cached prefix / disk read speed           (--restore-kv)
    prefill       chunks of ubatch tokens, context growing            (timing model)
    first token   the last chunk's LM head scores the vocabulary; the sampler draws
    decode        one step per output token, each reading the weights and a growing KV cache
    end           the end-of-turn token stops the loop

TTFT is everything up to the first token; writing time is the decode steps.

The load rate is the machine's measured cold load (`load_gbs`: file bytes / seconds, disk to
RAM and on to the GPU's memory, as a runtime does it) where a source gives one, else its disk
read speed, else an assumed NVMe SSD. A disk's read speed alone is an upper bound: the seed's
laptop read 21.7 GB in 55 s (0.39 GB/s) through Ollama, far below its SSD.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from tokenwalk.costs.kv import kv_stored_bytes, state_bytes
from tokenwalk.costs.timing import PrefillReport, pass_time, prefill_report
from tokenwalk.errors import InputError
from tokenwalk.machine import Machine
from tokenwalk.model.model import Model
from tokenwalk.units import Bytes

__all__ = [
    "Phase",
    "TraceReport",
    "trace_report",
    "decode_seconds",
    "TOKENIZE_S_PER_TOKEN",
    "DEFAULT_DISK_READ_GBS",
    "load_rate",
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
    disk_read_gbs: float
    disk_read_assumed: bool
    load_gbs: float  # the rate of the cold load (--cold), decimal GB/s
    load_from: str  # where that rate comes from
    load_assumed: bool  # no source for it: an assumed NVMe SSD


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
    prefill: PrefillReport | None = None,
    step: Callable[[int], tuple[float, float]] | None = None,
) -> TraceReport:
    """The whole request as phases with start and duration, and its totals. A model split over
    cards and host brings its own `prefill` and decode `step(ctx)` -> (seconds, bytes)."""
    if output < 0:
        raise InputError(f"--output cannot be negative ({output})")
    if output > 1 << 24:
        raise InputError(f"--output {output:,} tokens is beyond any request")
    if restore_kv and cached <= 0:
        raise InputError("--restore-kv restores a saved prefix: give its length with --cached K")
    pre = prefill or prefill_report(
        model, machine, prompt=prompt, cached=cached, ubatch=ubatch, kv_type=kv_type
    )
    disk = machine.disk_read_gbs or DEFAULT_DISK_READ_GBS
    phases: list[Phase] = []
    t = 0.0

    def add(name: str, duration: float, detail: str = "", nbytes: float = 0.0) -> None:
        nonlocal t
        phases.append(
            Phase(name=name, start_s=t, duration_s=duration, detail=detail, data_bytes=nbytes)
        )
        t += duration

    load_gbs, load_from, load_assumed = load_rate(machine)
    load_s = 0.0
    if cold:
        load_s = model.file_bytes / (load_gbs * 1e9)
        add(
            "load from disk",
            load_s,
            f"{model.file_bytes / 1e9:.1f} GB at {load_gbs:.3g} GB/s",
            model.file_bytes,
        )
    add("template + tokenize", prompt * TOKENIZE_S_PER_TOKEN, f"{prompt:,} tokens")
    if restore_kv:
        restored = kv_stored_bytes(model, cached, kv_type, ubatch) + state_bytes(model)
        add(
            "restore KV from disk",
            restored / (disk * 1e9),
            f"{cached:,} tokens, {restored / 1e6:.0f} MB",
            restored,
        )
    elif cached:
        add("reuse prefix cache", 0.0, f"{cached:,} tokens already in memory")
    if len(pre.chunks) <= _MAX_CHUNK_PHASES:
        for c in pre.chunks:
            add(
                f"prefill chunk {c.index + 1}/{len(pre.chunks)}",
                c.time_s,
                f"{c.tokens} tokens at {c.ctx:,}, {c.bound}",
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
            f"{len(pre.chunks)} chunks of up to {ubatch} tokens; bound by {bounds}",
        )
    kv_after = kv_stored_bytes(model, prompt, kv_type, ubatch)
    state = state_bytes(model)
    stored = f"{kv_after / 1e6:.0f} MB of KV for {prompt:,} tokens"
    if state:
        stored += f" + {state / 1e6:.0f} MB of recurrent state"
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
            f"a step reads {first_bytes / 1e9:.2f} GB in {first_s * 1e3:.0f} ms",
            first_bytes * steps,
        )
    add("end", 0.0, "end-of-turn token")
    return TraceReport(
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
        disk_read_gbs=disk,
        disk_read_assumed=machine.disk_read_gbs is None,
        load_gbs=load_gbs,
        load_from=load_from,
        load_assumed=load_assumed,
    )
