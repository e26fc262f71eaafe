"""Several users on one box: a server's step over B sequences, continuous batching, and where
memory stops the count.

One step of a server writes one token for each of the B sequences it holds, in one pass
through the same pass model as decode and prefill (`costs.timing`):

    W(B)      the weights read once for all B tokens (routed experts: those B tokens wake,
              E (1 - (1 - k/E)^B) per layer, as a speculative verification counts them)
    KV        sum over sequences of the cells each one's query reads at its own depth c_i
    F         2 x P_active x B + sum_i A(1, c_i)      (the rows term: B rows per product)
    t(B)      max(memory, compute) + L x overhead     (`passes.pass_cost`)
              + (B - 1) x H x c_seq                    (H attention heads; `PoolPricer`)
              + (B - 1) x mean_i A(1, c_i) x a_seq

(c_seq: what each sequence beyond the first costs a GPU on its own, SEQUENCE_HEAD_S; a_seq:
what each FLOP of the one-query attention of each sequence beyond the first costs a CPU,
SEQUENCE_ATTENTION_S_PER_FLOP), so aggregate speed B / t(B) grows while the weights dominate
the read and per-user speed 1 / t(B) falls. A server whose users are spread over one
request's length holds them at depths c_i = P + (i + 1/2) O / B (P prompt, O output tokens):
their mean, P + O / 2, is where one user writing alone is timed by `tokenwalk decode --ctx`.

llama-server (`-np` slots, `-c` shared, `-b` / `-ub`) adds prompt tokens to the decode step
of the slots already writing (continuous batching): each step is one batch of at most `-b`
tokens, cut into micro-batches of at most `-ub`. With the cache split per slot (llama.cpp's
default for an explicit `-np`) a micro-batch holds sequences with the same number of tokens
each (`split_equal`): the decode tokens run in one, a prompt's chunk in its own. With
`-kvu` (one unified cache) micro-batches are cut from the batch in order, and every query
attends to all the cells in use (the mask covers the whole cache), which makes attention grow
with the number of users. `simulate` runs that loop over Poisson arrivals.

Everything here is pure: no I/O.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from tokenwalk.costs.command import Arg, cache_args, command_line
from tokenwalk.costs.kv import kv_bytes, state_bytes
from tokenwalk.costs.vllm import VllmMemory
from tokenwalk.costs.weights import per_model
from tokenwalk.errors import InputError
from tokenwalk.machine import Machine
from tokenwalk.model.layers import Attention
from tokenwalk.model.model import Model
from tokenwalk.timing.passes import (
    DEFAULT_UBATCH,
    FA_TILE_Q,
    READING_TOK_S,
    PassWork,
    attention_flops,
    kv_read_bytes,
    one_row_attention,
    pass_cost,
    pass_work,
    recurrent_flops,
    state_traffic_bytes,
)
from tokenwalk.units import Bytes

__all__ = [
    "DEFAULT_BATCH",
    "DEFAULT_MIN_TOK_S",
    "MAX_USERS",
    "Seq",
    "batch_work",
    "user_depths",
    "decode_batch",
    "prompt_batches",
    "Pricer",
    "PoolPricer",
    "StepPrice",
    "SEQUENCE_HEAD_S",
    "sequence_head_s",
    "SEQUENCE_ATTENTION_S_PER_FLOP",
    "sequence_attention_s_per_flop",
    "extra_sequence_attention_flops",
    "attention_heads",
    "UsersPoint",
    "BenchRow",
    "batched_bench",
    "ServeSimulation",
    "simulate",
    "users_curve",
    "largest_users",
    "first_users",
    "server_step",
    "step_price",
    "ServeReport",
    "serve_report",
    "SplitPricer",
    "curve_users",
    "ttft_while_busy",
    "users_step",
]

DEFAULT_BATCH = 2048  # llama.cpp's n_batch (-b): tokens one llama_decode takes at most
DEFAULT_MIN_TOK_S = READING_TOK_S[0]  # reading speed, the seed's lower figure
MAX_USERS = 256  # llama.cpp's LLAMA_MAX_SEQ: sequences one context holds at most


@dataclass(frozen=True)
class Seq:
    """A sequence's part of a micro-batch: `n` tokens on top of `ctx` already cached."""

    ctx: int
    n: int


# -- one micro-batch over several sequences ---------------------------------------------------


@per_model
def _memo(model: Model) -> dict[tuple, object]:
    """Terms of `batch_work` already computed for this model (a server's steps repeat them)."""
    return {}


def _seq_terms(
    model: Model, n: int, ctx: int, kv_type: str
) -> tuple[float, float, tuple[tuple[int, int, float], ...]]:
    """(KV bytes read, attention + state-update FLOPs, the attention in ggml-cpu's one-row
    loop by head size: `passes.one_row_attention`) of one sequence's n tokens at ctx."""
    memo = _memo(model)
    key = ("seq", n, ctx, kv_type)
    hit = memo.get(key)
    if hit is None:
        attn = attention_flops(model, n, ctx) + recurrent_flops(model, n)
        one_row = one_row_attention(model, n, ctx, kv_type)
        hit = memo[key] = (kv_read_bytes(model, n, ctx, kv_type), attn, one_row)
    return hit  # type: ignore[return-value]


def _add_rows(into: dict[tuple[int, int], float], rows: Sequence[tuple[int, int, float]]) -> None:
    for dk, dv, f in rows:
        into[dk, dv] = into.get((dk, dv), 0.0) + f


def _base_work(model: Model, tokens: int, n_logits: int, kv_type: str) -> PassWork:
    """A pass of `tokens` tokens of one sequence at depth 0: its weights, products and fixed
    cost, which do not depend on how the tokens divide among sequences."""
    memo = _memo(model)
    key = ("base", tokens, n_logits, kv_type)
    hit = memo.get(key)
    if hit is None:
        hit = memo[key] = pass_work(model, tokens, 0, kv_type=kv_type, n_logits=n_logits)
    return hit  # type: ignore[return-value]


def batch_work(
    model: Model,
    seqs: Sequence[Seq],
    *,
    kv_type: str = "f16",
    n_logits: int | None = None,
    cells_in_use: int | None = None,
) -> PassWork:
    """B(n, c) and F(n, c) of one micro-batch over several sequences, each with its own tokens
    n_i at its own depth c_i:

        W    weights of all T = sum n_i tokens (experts woken by T)   `weights.weight_bytes_read`
        KV   sum_i KV(n_i, c_i) (+ 2 S per sequence: recurrent state)  bytes
        A    sum_i A(n_i, c_i)                                          FLOP
        R    rows term: the weights' at T rows, attention's mean A_i / n_i

    `n_logits` defaults to every token (decoding). `cells_in_use` (a unified cache, `-kvu`):
    every query attends to all the cells of the cache in use, and the micro-batch reads them
    once. One sequence at depth c equals `passes.pass_work(model, n, c)`; B at one depth equal
    it with `streams=B`."""
    if not seqs:
        raise InputError("a micro-batch needs at least one sequence")
    total = sum(s.n for s in seqs)
    logits = total if n_logits is None else n_logits
    base = _base_work(model, total, logits, kv_type)
    kv = attn = rows = 0.0
    one_row: dict[tuple[int, int], float] = {}
    if cells_in_use is None:
        for s in seqs:
            kv_s, attn_s, one_s = _seq_terms(model, s.n, s.ctx, kv_type)
            kv, attn, rows = kv + kv_s, attn + attn_s, rows + attn_s / s.n
            _add_rows(one_row, one_s)
    else:
        # one stream: its queries take the one-row loop while the micro-batch is small
        kv = _seq_terms(model, total, max(cells_in_use - total, 0), kv_type)[0]
        for s in seqs:
            _, attn_s, one_s = _seq_terms(model, s.n, max(cells_in_use - s.n, 0), kv_type)
            attn, rows = attn + attn_s, rows + attn_s / s.n
            _add_rows(one_row, one_s if total < FA_TILE_Q else ())
    base_attn = _seq_terms(model, total, 0, kv_type)[1]
    # pass_work adds a pass's attention to its rows term once, as A / n of its one sequence:
    # here the mean over the sequences takes its place
    swap = rows / len(seqs) - base_attn / total
    return base.model_copy(
        update=dict(
            n_tokens=seqs[0].n if all(s.n == seqs[0].n for s in seqs) else total,
            streams=len(seqs) if all(s.n == seqs[0].n for s in seqs) else 1,
            ctx=round(sum(s.ctx for s in seqs) / len(seqs)),
            kv_read_bytes=kv,
            state_bytes=len(seqs) * state_traffic_bytes(model),
            attention_flops=attn,
            row_flops=base.row_flops + swap if base.row_flops else 0.0,
            cpu_row_flops=base.cpu_row_flops + swap,
            one_row_attention=tuple((dk, dv, f) for (dk, dv), f in sorted(one_row.items())),
        )
    )


def user_depths(users: int, prompt: int, output: int) -> list[int]:
    """Depths of `users` sequences spread evenly over one request's writing:
    c_i = P + floor((i + 1/2) O / B), their mean P + O / 2 (one user: `decode --ctx P + O/2`)."""
    return [prompt + (2 * i + 1) * output // (2 * users) for i in range(users)]


def decode_batch(depths: Sequence[int]) -> list[Seq]:
    """A decoding step: one token for each sequence, at its depth."""
    return [Seq(c, 1) for c in depths]


def prompt_batches(
    prompt: int,
    cached: int = 0,
    ubatch: int = DEFAULT_UBATCH,
    streams: int = 1,
    batch: int = DEFAULT_BATCH,
) -> list[list[Seq]]:
    """The micro-batches of `streams` prompts of `prompt` tokens (`cached` of each reused) read
    at once, as llama.cpp splits them with a cache per sequence (`split_equal`): each call of
    at most `batch` tokens holds whole prompts one after another, and each micro-batch takes
    the same number of tokens, at most `ubatch` together, from every prompt of its call."""
    todo = prompt - cached
    if todo < 1:
        raise InputError(f"--cached {cached:,} must be below --prompt {prompt:,}")
    per_call = max(1, min(streams, batch // todo)) if todo <= batch else 1
    out: list[list[Seq]] = []
    left = streams
    while left:
        in_call = min(per_call, left)
        left -= in_call
        if todo > batch:  # one prompt over several calls, each of `batch` tokens
            calls = [(s, min(batch, prompt - s)) for s in range(cached, prompt, batch)]
        else:
            calls = [(cached, todo)]
        for start, n_call in calls:
            step = max(1, ubatch // in_call)
            for s in range(start, start + n_call, step):
                n = min(step, start + n_call - s)
                out.append([Seq(s, n)] * in_call)
    return out


# -- pricing a micro-batch on a machine --------------------------------------------------------


class StepPrice(BaseModel):
    """A micro-batch (or a step of several) on a machine: its time and what bound it."""

    model_config = ConfigDict(frozen=True)
    time_s: float
    memory_s: float
    compute_s: float
    overhead_s: float
    read_bytes: float
    bound: str  # memory, compute, experts; on a split system the slowest part's ("gpu memory")

    @property
    def compute_bound(self) -> bool:
        return self.bound.split()[-1] in ("compute", "experts")


class Pricer:
    """Prices micro-batches: one pool of memory (`PoolPricer`) or a model placed on cards and a
    host (`costs.split`'s pass, in cli)."""

    kv_type: str = "f16"

    def price(
        self, seqs: Sequence[Seq], n_logits: int | None = None, cells_in_use: int | None = None
    ) -> StepPrice:
        raise NotImplementedError


# The fixed cost a pass pays for each sequence beyond the first, per attention head of every
# layer (`attention_heads`), on a GPU: kernels that run a block per sequence and head (its
# attention over its own cells) and, from two tokens on, no CUDA graph. Fitted where the pass
# model, which reads the weights once for all, leaves each extra sequence's time unexplained:
# the median over the H200's llama-batched-bench runs of Llama 3.1 8B with B = 2 to 32
# (tests/data/h200-cuda; each B's step beyond one sequence's, less the pass model's: 358 to
# 1,059 ns) is 685 ns; the published RTX 2060 run of PR #14363 (Qwen2.5-Coder-0.5B, B = 32)
# gives 634 ns. A CPU's: the recorded batched ground truth (tests/data/batched-ground-truth).
SEQUENCE_HEAD_S = {"gpu": 0.685e-6, "cpu": 0.0}


def sequence_head_s(backend: str) -> float:
    """The per-sequence cost of one attention head of one layer on a backend (SEQUENCE_HEAD_S)."""
    return SEQUENCE_HEAD_S["cpu" if backend == "cpu" else "gpu"]


# What a CPU pays for each FLOP of the attention of each sequence beyond the first, on top of
# the pass model's compute term. ggml-cpu's attention takes one query row at a time over the
# cells of its own sequence (a dot product of d_k, an online-softmax update and a d_v
# multiply-add per cell), so B sequences are B small mat-vec products, each at that loop's
# rate, not rows of one product at the matrix rate the fit gives the weights. One sequence's
# attention stays in the single-stream fit (so B = 1 is `decode` to the digit). Fitted as the
# median, over the 20 rows with B = 2 to 32 of the recorded batched ground truth
# (tests/data/batched-ground-truth: gemma-3-270m and SmolLM2-135M, prompts of 128 and 512,
# priced on the recording guest, epyc-kvm-2c-2t, calibrated on its own llama-bench runs), of
# each row's decoding time beyond the pass model's per FLOP of its extra sequences' one-query
# attention (`benchmarks/serve_cpu.py` `fit_cpu_sequence_attention`: -40 to 477 ps a row, the
# middle half 16 to 71; the ten rows of 512-token prompts alone, where attention weighs most,
# 37.9). A GPU's per-sequence cost is SEQUENCE_HEAD_S's.
SEQUENCE_ATTENTION_S_PER_FLOP = {"gpu": 0.0, "cpu": 34.6e-12}


def sequence_attention_s_per_flop(backend: str) -> float:
    """Seconds per FLOP of an extra sequence's one-query attention on a backend
    (SEQUENCE_ATTENTION_S_PER_FLOP)."""
    return SEQUENCE_ATTENTION_S_PER_FLOP["cpu" if backend == "cpu" else "gpu"]


def extra_sequence_attention_flops(
    model: Model, seqs: Sequence[Seq], *, kv_type: str = "f16", cells_in_use: int | None = None
) -> float:
    """The one-query attention of the sequences beyond the first, in FLOPs:

        (S - 1) x mean_i A(n_i, c_i) / n_i

    (A(n, c): `passes.attention_flops`, one query's share of each sequence's attention at its
    own depth; with a unified cache, `cells_in_use`, over all the cells in use). 0 for one
    sequence."""
    if len(seqs) < 2:
        return 0.0
    total = 0.0
    for s in seqs:
        ctx = s.ctx if cells_in_use is None else max(cells_in_use - s.n, 0)
        total += _seq_terms(model, s.n, ctx, kv_type)[1] / s.n
    return (len(seqs) - 1) * total / len(seqs)


@per_model
def attention_heads(model: Model) -> int:
    """Query heads of all the attention layers a pass runs (sum over layers of n_head)."""
    kinds = (Attention.FULL, Attention.SLIDING, Attention.MLA)
    return sum(model.spec.n_head[x.index] for x in model.decoding_layers if x.attention in kinds)


@dataclass
class PoolPricer(Pricer):
    """A model on one machine of one pool of memory: `batch_work`, then `passes.pass_cost`
    divided by an engine's `factor` (1: llama.cpp), and the cost of every sequence beyond the
    first:

        t = t_pass / factor + (S - 1) x H x seq_head_s + A_extra x seq_attention_s_per_flop

    (S sequences, H attention heads, A_extra `extra_sequence_attention_flops`). None takes the
    backend's (`sequence_head_s`, `sequence_attention_s_per_flop`)."""

    model: Model
    machine: Machine
    kv_type: str = "f16"
    factor: float = 1.0
    seq_head_s: float | None = None
    seq_attention_s_per_flop: float | None = None
    _memo: dict = field(default_factory=dict, repr=False)

    def price(
        self, seqs: Sequence[Seq], n_logits: int | None = None, cells_in_use: int | None = None
    ) -> StepPrice:
        key = (tuple(seqs), n_logits, cells_in_use)
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        work = batch_work(
            self.model, seqs, kv_type=self.kv_type, n_logits=n_logits, cells_in_use=cells_in_use
        )
        c = pass_cost(work, self.machine)
        tau = self.seq_head_s
        if tau is None:
            tau = sequence_head_s(self.machine.backend)
        extra = (len(seqs) - 1) * attention_heads(self.model) * tau
        alpha = self.seq_attention_s_per_flop
        if alpha is None:
            alpha = sequence_attention_s_per_flop(self.machine.backend)
        attn = 0.0
        if alpha:
            attn = alpha * extra_sequence_attention_flops(
                self.model, seqs, kv_type=self.kv_type, cells_in_use=cells_in_use
            )
        f = self.factor
        compute_s = c.compute_s / f + attn
        bound = c.bound  # the extra sequences' attention is compute: it may tip the step
        if bound == "memory" and compute_s > c.memory_s / f:
            bound = "compute"
        price = StepPrice(
            time_s=c.time_s / f + extra + attn,
            memory_s=c.memory_s / f,
            compute_s=compute_s,
            overhead_s=c.overhead_s / f + extra,
            read_bytes=work.bytes,
            bound=bound,
        )
        if len(self._memo) < 1 << 16:
            self._memo[key] = price
        return price


def step_price(parts: Sequence[StepPrice]) -> StepPrice:
    """Micro-batches run one after another: times add; the bound is the longest one's."""
    if len(parts) == 1:
        return parts[0]
    longest = max(parts, key=lambda p: p.time_s)
    return StepPrice(
        time_s=sum(p.time_s for p in parts),
        memory_s=sum(p.memory_s for p in parts),
        compute_s=sum(p.compute_s for p in parts),
        overhead_s=sum(p.overhead_s for p in parts),
        read_bytes=sum(p.read_bytes for p in parts),
        bound=longest.bound,
    )


class BenchRow(BaseModel):
    """What `llama-batched-bench -npp PP -ntg TG -npl B` prints for one row: prompts of PP
    tokens for B sequences read at once (S_PP), then TG steps of B tokens (S_TG)."""

    model_config = ConfigDict(frozen=True)
    pp: int
    tg: int
    pl: int
    t_pp_s: float
    s_pp_tok_s: float  # B x PP / T_PP
    t_tg_s: float
    s_tg_tok_s: float  # B x TG / T_TG


def batched_bench(
    pricer: Pricer,
    pp: int,
    tg: int,
    pl: int,
    *,
    ubatch: int = DEFAULT_UBATCH,
    batch: int = DEFAULT_BATCH,
) -> BenchRow:
    """llama-batched-bench's row (a cache per sequence, prompts not shared): the prompts in
    `prompt_batches`, then `tg` steps of `pl` tokens at depths PP, PP + 1, ...; every
    sequence's last prompt token and every decoded token get logits."""
    t_pp = 0.0
    if pp:
        for micro in prompt_batches(pp, 0, ubatch, pl, batch):
            last = micro[0].ctx + micro[0].n == pp
            t_pp += pricer.price(micro, n_logits=len(micro) if last else 0).time_s
    t_tg = sum(pricer.price(decode_batch([pp + i] * pl)).time_s for i in range(tg))
    return BenchRow(
        pp=pp,
        tg=tg,
        pl=pl,
        t_pp_s=t_pp,
        s_pp_tok_s=pl * pp / t_pp if t_pp else 0.0,
        t_tg_s=t_tg,
        s_tg_tok_s=pl * tg / t_tg if t_tg else 0.0,
    )


# -- B users writing at once -------------------------------------------------------------------


class UsersPoint(BaseModel):
    """B users writing at once, each at its own depth (`user_depths`)."""

    model_config = ConfigDict(frozen=True)
    users: int
    step_s: float  # one step: a token for each user
    aggregate_tok_s: float  # users / step_s
    user_tok_s: float  # 1 / step_s
    bound: str
    read_bytes: Bytes  # what a step reads: weights once, every user's KV
    # the cache the users hold (llama.cpp: -c = users x ctx per user): KV + recurrent state
    cache_bytes: Bytes
    fits: bool | None = None  # weights, KV and buffers fit the memory (None: no memory size)


def users_step(
    pricer: Pricer, users: int, prompt: int, output: int, *, unified: bool = False
) -> StepPrice:
    """One decoding step of `users` sequences spread over a request (`user_depths`)."""
    depths = user_depths(users, prompt, output)
    cells = sum(depths) + users if unified else None
    return pricer.price(decode_batch(depths), cells_in_use=cells)


def users_curve(
    pricer: Pricer,
    model: Model,
    users: Sequence[int],
    prompt: int,
    output: int,
    *,
    ctx_per_user: int,
    unified: bool = False,
    fits: Callable[[int], bool | None] | None = None,
) -> list[UsersPoint]:
    """`UsersPoint` at each count of `users`: step time, aggregate and per-user speed."""
    out = []
    for b in users:
        p = users_step(pricer, b, prompt, output, unified=unified)
        held = kv_bytes(model, b * ctx_per_user, pricer.kv_type, b) + state_bytes(model, b)
        out.append(
            UsersPoint(
                users=b,
                step_s=p.time_s,
                aggregate_tok_s=b / p.time_s,
                user_tok_s=1.0 / p.time_s,
                bound=p.bound,
                read_bytes=round(p.read_bytes),
                cache_bytes=round(held),
                fits=fits(b) if fits is not None else None,
            )
        )
    return out


def largest_users(ok: Callable[[int], bool], limit: int = MAX_USERS) -> int:
    """The largest B in 1..limit with ok(B), for an `ok` that holds up to some B and fails
    beyond it (0 when even one user fails): bisection."""
    if not ok(1):
        return 0
    lo, hi = 1, limit
    if ok(hi):
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


def first_users(ok: Callable[[int], bool], limit: int = MAX_USERS) -> int | None:
    """The smallest B in 1..limit with ok(B), None when none, for an `ok` that once it holds
    holds for every larger B (per-user speed falls with B, the compute term grows faster than
    the read): doubling, then bisection."""
    hi = 1
    while hi < limit and not ok(hi):
        hi = min(hi * 2, limit)
    if not ok(hi):
        return None
    lo = hi // 2  # ok(lo) is false, or lo == 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


# -- continuous batching: llama-server's slots under Poisson arrivals ----------------------------


class ServeSimulation(BaseModel):
    """A seeded run of llama-server's loop: requests arrive at `rate_rps` (Poisson), wait for a
    free slot, have their prompt read in chunks mixed into the running decode steps, and write
    `output_tokens` each."""

    model_config = ConfigDict(frozen=True)
    rate_rps: float
    n_requests: int
    seed: int
    slots: int
    kv_unified: bool  # one cache for all slots (-kvu)
    ttft_median_s: float  # arrival to first token, queue included
    ttft_p95_s: float
    user_tok_s_median: float  # output tokens after the first / time writing them, per request
    user_tok_s_p95: float  # 95% of requests write at least this fast
    wait_median_s: float  # arrival to a free slot
    wait_p95_s: float
    queue_mean: float  # requests waiting for a slot, averaged over time
    queue_max: int
    busy_slots_mean: float  # slots holding a request, averaged over time
    served_rps: float  # requests finished / time from the first arrival to the last end
    aggregate_tok_s: float  # output tokens / that time
    overloaded: bool  # arrivals outpace the server: the queue grows to the end
    duration_s: float


@dataclass
class _Slot:
    arrival: float
    prompt_left: int
    depth: int  # tokens in the cache
    written: int = 0
    first_token_s: float | None = None


def _percentile(values: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) of values, linear between order statistics."""
    if not values:
        return 0.0
    xs = sorted(values)
    pos = q * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def server_step(
    pricer: Pricer,
    writing: Sequence[int],
    prompts: Sequence[tuple[int, int]],
    *,
    ubatch: int,
    unified: bool,
    cells_in_use: int,
) -> StepPrice:
    """One llama-server step: a token for each slot writing (at its depth) and the chunks
    `prompts` ((depth, tokens) each) of slots reading their prompt, as micro-batches of at
    most `ubatch` tokens: with a cache per slot, the decode tokens in one micro-batch and each
    prompt chunk in its own; with a unified cache, the batch cut in order."""
    parts: list[StepPrice] = []
    if not unified:
        if writing:
            parts.append(pricer.price(decode_batch(writing)))
        for depth, n in prompts:
            for s in range(0, n, ubatch):
                k = min(ubatch, n - s)
                parts.append(pricer.price([Seq(depth + s, k)], n_logits=int(s + k == n)))
        return step_price(parts)
    # (sequence, whether its last token needs logits): decode tokens all do, a prompt its last
    items = [(Seq(c, 1), True) for c in writing] + [(Seq(d, n), True) for d, n in prompts]
    micro: list[Seq] = []
    logits = 0
    room = ubatch
    for seq, wants in items:
        c, n = seq.ctx, seq.n
        while n:
            k = min(n, room)
            micro.append(Seq(c, k))
            c, n, room = c + k, n - k, room - k
            logits += int(wants and n == 0)
            if room == 0:
                parts.append(pricer.price(micro, n_logits=logits, cells_in_use=cells_in_use))
                micro, logits, room = [], 0, ubatch
    if micro:
        parts.append(pricer.price(micro, n_logits=logits, cells_in_use=cells_in_use))
    return step_price(parts)


def simulate(
    pricer: Pricer,
    *,
    rate_rps: float,
    slots: int,
    prompt: int,
    output: int,
    cached: int = 0,
    batch: int = DEFAULT_BATCH,
    ubatch: int = DEFAULT_UBATCH,
    unified: bool = False,
    requests: int = 200,
    seed: int = 0,
) -> ServeSimulation:
    """llama-server's loop over `requests` Poisson arrivals at `rate_rps` (seeded):

    - a request takes a free slot in arrival order, else waits (the queue);
    - each step takes one token for every slot writing, then prompt tokens of slots reading
      their prompt, oldest first, up to `batch` tokens in all (llama-server's n_batch);
    - a slot whose prompt ends in this step writes its first token at the step's end (TTFT);
    - a slot that has written `output` tokens frees its slot.

    Time advances by each step's price (`server_step`); with no slot busy it jumps to the next
    arrival."""
    if rate_rps <= 0 or not math.isfinite(rate_rps):
        raise InputError(f"--rate must be a positive number of requests a second, not {rate_rps}")
    if output < 1:
        raise InputError("a server simulation needs --output of at least 1 token")
    rng = random.Random(seed)
    arrivals: list[float] = []
    t = 0.0
    for _ in range(requests):
        t += rng.expovariate(rate_rps)
        arrivals.append(t)
    queue: list[float] = []  # arrival times waiting
    busy: list[_Slot] = []
    now = 0.0
    i_next = 0
    ttft: list[float] = []
    speeds: list[float] = []
    waits: list[float] = []
    q_area = busy_area = 0.0
    q_max = 0
    done = 0
    last_end = 0.0
    todo = prompt - cached
    while done < requests:
        while i_next < requests and arrivals[i_next] <= now:
            queue.append(arrivals[i_next])
            i_next += 1
        while queue and len(busy) < slots:
            a = queue.pop(0)
            waits.append(now - a)
            busy.append(_Slot(arrival=a, prompt_left=todo, depth=cached))
        q_max = max(q_max, len(queue))
        if not busy:
            now = arrivals[i_next]
            continue
        writing = [s for s in busy if s.prompt_left == 0]
        room = batch - len(writing)
        chunks: list[tuple[_Slot, int]] = []
        for s in busy:
            if s.prompt_left and room > 0:
                n = min(s.prompt_left, room)
                chunks.append((s, n))
                room -= n
        cells = sum(s.depth for s in busy) + len(writing) + sum(n for _, n in chunks)
        price = server_step(
            pricer,
            [s.depth for s in writing],
            [(s.depth, n) for s, n in chunks],
            ubatch=ubatch,
            unified=unified,
            cells_in_use=cells,
        )
        dt = price.time_s
        q_area += len(queue) * dt
        busy_area += len(busy) * dt
        now += dt
        for s in writing:
            s.depth += 1
            s.written += 1
        for s, n in chunks:
            s.prompt_left -= n
            s.depth += n
            if s.prompt_left == 0:
                s.first_token_s = now
                s.written = 1
                ttft.append(now - s.arrival)
        for s in [s for s in busy if s.prompt_left == 0 and s.written >= output]:
            busy.remove(s)
            done += 1
            last_end = now
            if output > 1 and s.first_token_s is not None:
                speeds.append((output - 1) / (now - s.first_token_s))
    span = last_end - arrivals[0] if requests else 0.0
    # arrivals outpace the server when it finishes fewer requests a second than arrived
    overloaded = requests / last_end < 0.9 * requests / arrivals[-1] if last_end else False
    return ServeSimulation(
        rate_rps=rate_rps,
        n_requests=requests,
        seed=seed,
        slots=slots,
        kv_unified=unified,
        ttft_median_s=_percentile(ttft, 0.5),
        ttft_p95_s=_percentile(ttft, 0.95),
        user_tok_s_median=_percentile(speeds, 0.5) if speeds else 0.0,
        user_tok_s_p95=_percentile(speeds, 0.05) if speeds else 0.0,
        wait_median_s=_percentile(waits, 0.5),
        wait_p95_s=_percentile(waits, 0.95),
        queue_mean=q_area / span if span else 0.0,
        queue_max=q_max,
        busy_slots_mean=busy_area / span if span else 0.0,
        served_rps=requests / span if span else 0.0,
        aggregate_tok_s=requests * output / span if span else 0.0,
        overloaded=overloaded,
        duration_s=span,
    )


# -- the answer of `tokenwalk serve` ------------------------------------------------------------


class ServeReport(BaseModel):
    """The answer of `tokenwalk serve`: B users on one box, what each gets, and where memory
    and compute stop the count."""

    model_config = ConfigDict(frozen=True)
    model: str
    quant: str
    machine: str
    machine_name: str
    backend: str
    engine: str  # llama.cpp or vllm
    users: int  # sequences writing at once (B)
    slots: int  # llama-server -np (vLLM: max_num_seqs)
    ctx: int  # the cache's cells, all slots (llama.cpp -c; vLLM: its KV tokens)
    ctx_per_user: int  # cells one user may hold
    kv_unified: bool  # one cache shared by the slots (-kvu) rather than a part each
    batch: int  # tokens one step takes at most (-b; vLLM: max_num_batched_tokens)
    ubatch: int  # tokens of one micro-batch (-ub)
    kv_type: str
    swa_full: bool = False  # sliding-window layers hold the full context (--swa-full)
    command: str = ""  # llama-server's flags for this setting, as a user pastes them (llama.cpp)
    prompt_tokens: int
    cached_tokens: int
    output_tokens: int
    engine_factor: float  # step times divided by it (vLLM's kernels against llama.cpp's; 1)
    step_s: float  # a step of `users` tokens, each user at its own depth
    aggregate_tok_s: float  # users / step_s
    user_tok_s: float  # 1 / step_s
    bound: str
    ttft_alone_s: float  # a prompt read with no one else writing (`tokenwalk prefill`)
    ttft_busy_s: float  # the same prompt read while users - 1 others write
    user_tok_s_while_reading: float  # the others' speed while that prompt is read
    min_tok_s: float  # the per-user speed asked (--min-tok-s; reading speed by default)
    users_at_min_tok_s: int  # the most users who each get min_tok_s (0: not even one)
    compute_bound_users: int | None  # the fewest users whose step is compute-bound
    max_users_fit: int | None  # the most users whose KV (ctx_per_user each) fits (None: no size)
    by_users: list[UsersPoint]
    simulation: ServeSimulation | None = None
    vllm: VllmMemory | None = None  # vLLM's start-up accounting (--engine vllm)


def curve_users(users: int, limit: int = MAX_USERS) -> list[int]:
    """The user counts a curve is drawn at: powers of two up to `limit`, and `users`."""
    out = {users}
    b = 1
    while b <= limit:
        out.add(b)
        b *= 2
    return sorted(out)


def ttft_while_busy(
    pricer: Pricer,
    others: Sequence[int],
    prompt: int,
    cached: int,
    *,
    batch: int,
    ubatch: int,
    unified: bool,
) -> tuple[float, int]:
    """(seconds, steps) to read a prompt while the slots at depths `others` write: each step
    takes one token per writer and up to `batch` minus those of the prompt (llama-server)."""
    room = max(batch - len(others), 1)
    depths = list(others)
    t = 0.0
    steps = 0
    pos = cached
    while pos < prompt:
        n = min(room, prompt - pos)
        cells = sum(depths) + len(depths) + pos + n
        t += server_step(
            pricer, depths, [(pos, n)], ubatch=ubatch, unified=unified, cells_in_use=cells
        ).time_s
        depths = [d + 1 for d in depths]
        pos += n
        steps += 1
    return t, steps


@dataclass
class SplitPricer(Pricer):
    """A model placed on cards and a host (`costs.split.Setup`): each micro-batch through
    `offload.system_pass` as B streams of their mean tokens at their mean depth (exact for the
    KV of full attention, whose reads are linear in the depth)."""

    setup: object  # costs.split.Setup
    kv_type: str = "f16"
    _memo: dict = field(default_factory=dict, repr=False)

    def price(
        self, seqs: Sequence[Seq], n_logits: int | None = None, cells_in_use: int | None = None
    ) -> StepPrice:
        from tokenwalk.costs.split import split_pass_time

        b = len(seqs)
        n = max(1, round(sum(s.n for s in seqs) / b))
        ctx = cells_in_use if cells_in_use is not None else round(sum(s.ctx for s in seqs) / b)
        key = (b, n, ctx, n_logits)
        hit = self._memo.get(key)
        if hit is None:
            sp = split_pass_time(
                self.setup,  # type: ignore[arg-type]
                n,
                ctx,
                kv_type=self.kv_type,
                streams=b,
                n_logits=n_logits,
            )
            heads = attention_heads(self.setup.model)  # type: ignore[attr-defined]
            backend = self.setup.system.devices[0].backend  # type: ignore[attr-defined]
            extra = (b - 1) * heads * sequence_head_s(backend)
            hit = self._memo[key] = StepPrice(
                time_s=sp.time_s + extra,
                memory_s=sp.memory_s,
                compute_s=sp.compute_s,
                overhead_s=sp.overhead_s + extra,
                read_bytes=sp.bytes,
                bound=sp.bound,
            )
        return hit


def serve_report(
    model: Model,
    pricer: Pricer,
    *,
    machine: str,
    machine_name: str,
    backend: str,
    users: int,
    slots: int,
    ctx_per_user: int,
    prompt: int,
    output: int,
    cached: int = 0,
    unified: bool = False,
    batch: int = DEFAULT_BATCH,
    ubatch: int = DEFAULT_UBATCH,
    min_tok_s: float = DEFAULT_MIN_TOK_S,
    fits: Callable[[int], bool | None] | None = None,
    max_users_fit: int | None = None,
    rate_rps: float | None = None,
    requests: int = 200,
    seed: int = 0,
    engine: str = "llama.cpp",
    engine_factor: float = 1.0,
    limit: int = MAX_USERS,
    vllm: VllmMemory | None = None,
    ctx: int | None = None,
    placement: Sequence[Arg] = (),
) -> ServeReport:
    """`tokenwalk serve`'s answer: the step of `users` users, the curve against the number of
    users, the most users at `min_tok_s` each, the first compute-bound step, a prompt read
    alone and among the others, and (with `rate_rps`) the simulated server."""
    if not 1 <= users <= limit:
        raise InputError(f"--users must be between 1 and {limit}, not {users}")
    if slots < users:
        raise InputError(f"--slots {slots} is fewer than --users {users}: each user needs a slot")
    if min_tok_s <= 0 or not math.isfinite(min_tok_s):
        raise InputError(f"--min-tok-s must be a positive speed, not {min_tok_s}")
    step = users_step(pricer, users, prompt, output, unified=unified)

    def speed(b: int) -> float:
        return 1.0 / users_step(pricer, b, prompt, output, unified=unified).time_s

    slow = first_users(lambda b: speed(b) < min_tok_s, limit)
    at_min = limit if slow is None else slow - 1
    bound_at = first_users(
        lambda b: users_step(pricer, b, prompt, output, unified=unified).compute_bound, limit
    )
    cells = ctx if ctx is not None else slots * ctx_per_user
    command = ""
    if engine == "llama.cpp":
        command = command_line(
            [("-np", str(slots)), ("-c", str(cells)), ("-b", str(batch)), ("-ub", str(ubatch))],
            [("-kvu", None)] if unified else [],
            cache_args(model.swa_full, pricer.kv_type),
            placement,
        )
    alone, _ = ttft_while_busy(
        pricer, [], prompt, cached, batch=batch, ubatch=ubatch, unified=unified
    )
    others = user_depths(users - 1, prompt, output) if users > 1 else []
    busy, steps = ttft_while_busy(
        pricer, others, prompt, cached, batch=batch, ubatch=ubatch, unified=unified
    )
    sim = None
    if rate_rps is not None:
        sim = simulate(
            pricer,
            rate_rps=rate_rps,
            slots=slots,
            prompt=prompt,
            output=output,
            cached=cached,
            batch=batch,
            ubatch=ubatch,
            unified=unified,
            requests=requests,
            seed=seed,
        )
    return ServeReport(
        swa_full=model.swa_full,
        command=command,
        model=model.name,
        quant=model.quant,
        machine=machine,
        machine_name=machine_name,
        backend=backend,
        engine=engine,
        users=users,
        slots=slots,
        ctx=cells,
        ctx_per_user=ctx_per_user,
        kv_unified=unified,
        batch=batch,
        ubatch=ubatch,
        kv_type=pricer.kv_type,
        prompt_tokens=prompt,
        cached_tokens=cached,
        output_tokens=output,
        engine_factor=engine_factor,
        step_s=step.time_s,
        aggregate_tok_s=users / step.time_s,
        user_tok_s=1.0 / step.time_s,
        bound=step.bound,
        ttft_alone_s=alone,
        ttft_busy_s=busy,
        user_tok_s_while_reading=steps / busy if others else 0.0,
        min_tok_s=min_tok_s,
        users_at_min_tok_s=at_min,
        compute_bound_users=bound_at,
        max_users_fit=max_users_fit,
        by_users=users_curve(
            pricer,
            model,
            curve_users(users, limit),
            prompt,
            output,
            ctx_per_user=ctx_per_user,
            unified=unified,
            fits=fits,
        ),
        simulation=sim,
        vllm=vllm,
    )
