"""Speculative decoding: when a draft pays, and why it loses on a mixture of experts.

A round drafts gamma tokens with a cheap model, then the target verifies all of them in one pass
of n = gamma + 1 tokens. With acceptance rate alpha (Leviathan et al. 2023):

    E[tokens per round] = (1 - alpha^(gamma+1)) / (1 - alpha)
    round time          = gamma x t_draft(1) + t_target(gamma + 1)
    speculative tok/s   = E / round time,   speedup = that / (1 / t_target(1))

A dense target reads its weights once for the whole verify pass, so it costs about one decode
step. A MoE target reads the experts the n tokens wake, E x (1 - (1 - k/E)^n) per layer: for
Qwen3.6, 5 tokens wake about 38 of 256 experts instead of 8, and the verify pass reads several
times what one step reads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from pydantic import BaseModel, ConfigDict

from tokenwalk.costs.budget import BudgetReport, MemoryFit
from tokenwalk.costs.energy import EnergyCost
from tokenwalk.costs.weights import experts_woken
from tokenwalk.errors import InputError
from tokenwalk.model.model import Model, Role

__all__ = [
    "PassTime",
    "tokens_per_round",
    "break_even_alpha",
    "alpha_for_speedup",
    "mtp_draft_model",
    "SpecCell",
    "SpecReport",
    "spec_report",
    "ALPHAS",
    "GAMMAS",
]

# Seconds a pass of `n_tokens` tokens at context `ctx` takes for `model` (the timing model).
PassTime = Callable[[Model, int, int], float]

ALPHAS = (0.5, 0.6, 0.7, 0.8, 0.9)
GAMMAS = (1, 2, 3, 4, 5, 6, 7, 8)


def tokens_per_round(alpha: float, gamma: int) -> float:
    """E[tokens per round] = (1 - alpha^(gamma+1)) / (1 - alpha); gamma + 1 when alpha = 1."""
    if alpha >= 1.0:
        return float(gamma + 1)
    return (1.0 - alpha ** (gamma + 1)) / (1.0 - alpha)


def _speedup(alpha: float, gamma: int, t_draft: float, t_verify: float, t_step: float) -> float:
    return tokens_per_round(alpha, gamma) / (gamma * t_draft + t_verify) * t_step


_ALPHA_MAX = 0.999999  # the acceptance rate's top: alpha = 1 would accept drafts forever


def break_even_alpha(gamma: int, t_draft: float, t_verify: float, t_step: float) -> float | None:
    """Smallest alpha at which speculation matches plain decoding (bisection; E grows with alpha).

    None when even alpha -> 1 does not pay.
    """
    if _speedup(_ALPHA_MAX, gamma, t_draft, t_verify, t_step) < 1.0:
        return None
    if _speedup(0.0, gamma, t_draft, t_verify, t_step) >= 1.0:
        return 0.0
    return _smallest_alpha(1.0, gamma, t_draft, t_verify, t_step)


def _smallest_alpha(
    speedup: float, gamma: int, t_draft: float, t_verify: float, t_step: float
) -> float:
    """The smallest alpha in [0, 1) whose speedup reaches `speedup`, by bisection (the speedup
    grows with alpha); the caller checks that the range holds it."""
    lo, hi = 0.0, _ALPHA_MAX
    for _ in range(60):
        mid = (lo + hi) / 2
        if _speedup(mid, gamma, t_draft, t_verify, t_step) >= speedup:
            hi = mid
        else:
            lo = mid
    return hi


def alpha_for_speedup(
    speedup: float, gamma: int, t_draft: float, t_verify: float, t_step: float
) -> float | None:
    """The acceptance rate at which the model predicts `speedup` (bisection); None if out of reach.

    Turns a measured speedup (tok/s with drafting over tok/s without) into the alpha it implies.
    """
    if (
        not _speedup(0.0, gamma, t_draft, t_verify, t_step)
        <= speedup
        <= _speedup(_ALPHA_MAX, gamma, t_draft, t_verify, t_step)
    ):
        return None
    return _smallest_alpha(speedup, gamma, t_draft, t_verify, t_step)


_BLK = "blk."


def mtp_draft_model(model: Model) -> Model:
    """The target's own multi-token-prediction block(s) seen as a small model of their own.

    A draft step runs the MTP block(s) once and scores the vocabulary with the shared head: the
    view keeps the MTP tensors (renumbered as layers 0..n-1 so they get their normal roles), the
    embedding table and the output head.
    """
    spec = model.spec
    n = spec.n_nextn
    if n <= 0:
        raise InputError(
            f"{model.name} has no multi-token-prediction block (nextn_predict_layers is 0); "
            "use --draft with a small model instead"
        )
    first = spec.n_layer
    sl = slice(first, spec.n_layer_all)

    def cut(t: tuple) -> tuple:
        return t[sl] if t else t

    view = replace(
        spec,
        n_layer_all=n,
        n_nextn=0,
        n_head=cut(spec.n_head),
        n_head_kv=cut(spec.n_head_kv),
        n_ff=cut(spec.n_ff),
        is_swa=cut(spec.is_swa),
        is_recurrent=cut(spec.is_recurrent),
        n_layer_dense_lead=max(0, spec.n_layer_dense_lead - first),
    )
    infos = []
    for t in model.tensors:
        if t.role is Role.MTP and t.name.startswith(_BLK):
            il_str, rest = t.name[len(_BLK) :].split(".", 1)
            infos.append(replace(t.info, name=f"blk.{int(il_str) - first}.{rest}"))
        elif t.role in (Role.EMBEDDING, Role.OUTPUT):
            infos.append(t.info)
    draft = Model.from_parts(
        f"{model.name} (MTP)",
        view,
        infos,
        file_bytes=sum(i.n_bytes for i in infos),
        file_bytes_exact=False,
        quant=model.quant,
        source=model.source,
        # an MTP block is one of its model's layers (attention and FFN): its graph nodes per
        # layer are the model's mean, the nearest measured
        layer_nodes=model.layer_nodes,
    )
    return draft.with_swa_full() if model.swa_full_layers else draft


class SpecCell(BaseModel):
    model_config = ConfigDict(frozen=True)
    alpha: float
    gamma: int
    tokens_per_round: float
    tok_s: float
    speedup: float
    verify_s: float  # the target's pass over the gamma + 1 tokens of a round
    best: bool = False


class SpecReport(BaseModel):
    """The answer of `tokenwalk spec`."""

    model_config = ConfigDict(frozen=True)
    target: str
    draft: str
    mtp: bool
    machine: str
    alpha: float
    gamma: int
    ctx: int
    swa_full: bool = False  # sliding-window layers hold the full context (--swa-full)
    tokens_per_round: float
    draft_step_s: float
    verify_s: float
    target_step_s: float
    round_s: float
    tok_s: float
    baseline_tok_s: float
    speedup: float
    pays: bool
    break_even_alpha: float | None
    experts_per_token: int  # k: experts one token wakes per layer (0 for dense)
    experts_total: int  # E per layer
    experts_woken_per_layer: float  # E x (1 - (1 - k/E)^(gamma+1)) for the verify pass
    verify_over_step: float  # what the verify pass costs in decode steps
    best_gamma: int  # for the alpha asked
    table: list[SpecCell]
    warnings: list[str]
    observed_speedup: float | None = None
    observed_alpha: float | None = None  # the alpha that reproduces observed_speedup
    # target and draft loaded together, when the machine has a memory size
    budget: BudgetReport | None = None
    fits: bool | None = None  # both in memory at ctx; None when the machine has no memory size
    memory: MemoryFit | None = None
    energy: EnergyCost | None = None  # power x time, and its price (costs.energy)


def spec_report(
    target: Model,
    draft: Model,
    pass_time: PassTime,
    *,
    machine: str,
    alpha: float = 0.7,
    gamma: int = 4,
    ctx: int = 4096,
    mtp: bool = False,
    draft_pass_time: PassTime | None = None,
    observed_speedup: float | None = None,
) -> SpecReport:
    """Price speculative decoding of `target` with `draft` (or its MTP block) on one machine."""
    if not 0.0 < alpha < 1.0:
        raise InputError(f"--alpha must be between 0 and 1 (exclusive), not {alpha}")
    if gamma < 1:
        raise InputError(f"--gamma must be at least 1 draft token, not {gamma}")
    if gamma > 64:
        raise InputError(f"--gamma {gamma} is beyond any useful draft length (at most 64)")
    if ctx < 0:
        raise InputError(f"--ctx cannot be negative ({ctx})")
    if observed_speedup is not None and not 0.0 < observed_speedup <= gamma + 1:
        # a round yields at most gamma + 1 tokens for at least one verify pass of the target
        raise InputError(
            f"--observed-speedup {observed_speedup:g} is impossible with {gamma} draft tokens: "
            f"a round yields at most {gamma + 1} tokens, so the speedup is at most {gamma + 1}x"
        )
    dpt = draft_pass_time or pass_time
    t_step = pass_time(target, 1, ctx)
    t_draft = dpt(draft, 1, ctx)

    def verify(g: int) -> float:
        return pass_time(target, g + 1, ctx)

    t_verify = verify(gamma)
    e = tokens_per_round(alpha, gamma)
    round_s = gamma * t_draft + t_verify
    tok_s = e / round_s
    baseline = 1.0 / t_step
    speedup = tok_s / baseline

    verifies = {g: verify(g) for g in GAMMAS}
    table = []
    for a in ALPHAS:
        cells = [
            SpecCell(
                alpha=a,
                gamma=g,
                tokens_per_round=tokens_per_round(a, g),
                tok_s=tokens_per_round(a, g) / (g * t_draft + verifies[g]),
                speedup=_speedup(a, g, t_draft, verifies[g], t_step),
                verify_s=verifies[g],
            )
            for g in GAMMAS
        ]
        top = max(cells, key=lambda c: c.speedup)
        table.extend(c.model_copy(update={"best": c is top}) for c in cells)
    best_gamma = max(
        GAMMAS,
        key=lambda g: _speedup(alpha, g, t_draft, verifies.get(g) or verify(g), t_step),
    )

    n_exp, k = target.spec.n_expert, target.spec.n_expert_used
    warnings = []
    if not mtp and draft.n_vocab and target.n_vocab and draft.n_vocab != target.n_vocab:
        warnings.append(
            f"the draft's vocabulary ({draft.n_vocab:,} tokens) differs from the target's "
            f"({target.n_vocab:,}): this estimate runs, but a real run needs a draft that shares "
            "the target's tokenizer"
        )
    elif (
        not mtp
        and draft.tokenizer_model
        and target.tokenizer_model
        and draft.tokenizer_model != target.tokenizer_model
    ):
        warnings.append(
            f"the draft's tokenizer ({draft.tokenizer_model}) differs from the target's "
            f"({target.tokenizer_model})"
        )
    return SpecReport(
        swa_full=target.swa_full,
        target=target.name,
        draft=draft.name,
        mtp=mtp,
        machine=machine,
        alpha=alpha,
        gamma=gamma,
        ctx=ctx,
        tokens_per_round=e,
        draft_step_s=t_draft,
        verify_s=t_verify,
        target_step_s=t_step,
        round_s=round_s,
        tok_s=tok_s,
        baseline_tok_s=baseline,
        speedup=speedup,
        pays=speedup > 1.0,
        break_even_alpha=break_even_alpha(gamma, t_draft, t_verify, t_step),
        experts_per_token=k if n_exp else 0,
        experts_total=n_exp,
        experts_woken_per_layer=experts_woken(n_exp, k, gamma + 1) if n_exp else 0.0,
        verify_over_step=t_verify / t_step,
        best_gamma=best_gamma,
        table=table,
        warnings=warnings,
        observed_speedup=observed_speedup,
        observed_alpha=(
            alpha_for_speedup(observed_speedup, gamma, t_draft, t_verify, t_step)
            if observed_speedup is not None
            else None
        ),
    )
