"""`tokenwalk serve`: several users on one box (llama-server's slots, or vLLM on a GPU)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from tokenwalk.cli.app import (
    CachedOpt,
    JsonOpt,
    KvTypeOpt,
    ModelArg,
    NoCacheOpt,
    OutputOpt,
    ParallelOpt,
    PromptOpt,
    QuantOpt,
    SwaFullOpt,
    UbatchOpt,
    app,
    load,
    parse_positive_count,
    tokens_option,
)
from tokenwalk.cli.checks import answer, on_system, system_fit
from tokenwalk.cli.machine_opts import SYSTEM_LISTS, SYSTEM_SINGLE, system_options
from tokenwalk.cli.output import output_options
from tokenwalk.cli.prompt_opts import ChatOpt, PromptFileOpt, check_one_prompt, load_counted
from tokenwalk.cli.sweep import sweep
from tokenwalk.errors import InputError
from tokenwalk.system import SystemSpec

if TYPE_CHECKING:
    from tokenwalk.costs.serve import Pricer
    from tokenwalk.model.model import Model
    from tokenwalk.system import Offload, System

_SERVER = "Server"


@app.command()
@sweep(
    ["model", "users", "prompt", "output", "rate", "kv_type", "quant", *SYSTEM_LISTS],
    single=SYSTEM_SINGLE,
)
@system_options
@output_options
def serve(
    model: ModelArg,
    users: Annotated[
        int,
        typer.Option(
            "--users",
            "-u",
            help="Users writing at once: sequences one step decodes together.",
            parser=parse_positive_count,
            metavar="N",
        ),
    ] = 4,
    prompt: PromptOpt = 0,
    prompt_file: PromptFileOpt = None,
    chat: ChatOpt = None,
    output: OutputOpt = 300,
    cached: CachedOpt = 0,
    ctx: Annotated[
        int | None,
        tokens_option(
            "--ctx",
            "-c",
            help="The cache's cells, shared by the slots as llama-server's -c (each slot holds "
            "ctx / slots, or any share with --kv-unified). Default: slots x (prompt + output).",
            show_default=False,
            rich_help_panel=_SERVER,
        ),
    ] = None,
    parallel: ParallelOpt = 0,
    kv_unified: Annotated[
        bool,
        typer.Option(
            "--kv-unified",
            "-kvu",
            help="One cache for all slots (llama-server -kvu): a slot may grow into the whole "
            "--ctx, and every query attends to all the cells in use.",
            rich_help_panel=_SERVER,
        ),
    ] = False,
    batch: Annotated[
        int,
        tokens_option(
            "--batch",
            "-b",
            help="Tokens one server step takes at most (llama.cpp -b): the writers' tokens, "
            "then prompt tokens.",
            rich_help_panel=_SERVER,
        ),
    ] = 2048,
    ubatch: UbatchOpt = 512,
    kv_type: KvTypeOpt = "f16",
    swa_full: SwaFullOpt = False,
    min_tok_s: Annotated[
        float,
        typer.Option(
            "--min-tok-s",
            help="The speed each user should get: how many users get it. Default: reading speed.",
        ),
    ] = 5.0,
    rate: Annotated[
        float | None,
        typer.Option(
            "--rate",
            help="Requests a second arriving at random (Poisson): simulate the server's slots "
            "and queue, and give time to first token and per-user speed (median, p95).",
            show_default=False,
            rich_help_panel=_SERVER,
        ),
    ] = None,
    requests: Annotated[
        int,
        typer.Option(
            "--requests", help="Requests the simulation runs.", min=1, rich_help_panel=_SERVER
        ),
    ] = 200,
    seed: Annotated[
        int, typer.Option("--seed", help="Seed of the simulated arrivals.", rich_help_panel=_SERVER)
    ] = 0,
    engine: Annotated[
        str,
        typer.Option(
            "--engine",
            help="llama.cpp (llama-server) or vllm (one GPU; the checkpoint in its dtype, "
            "BF16 unless --quant).",
            rich_help_panel=_SERVER,
        ),
    ] = "llama.cpp",
    gpu_memory_utilization: Annotated[
        float,
        typer.Option(
            "--gpu-memory-utilization",
            help="vLLM: the share of the card it takes.",
            rich_help_panel=_SERVER,
        ),
    ] = 0.9,
    max_model_len: Annotated[
        int | None,
        tokens_option(
            "--max-model-len",
            help="vLLM: tokens per request its concurrency counts. Default: the model's.",
            show_default=False,
            rich_help_panel=_SERVER,
        ),
    ] = None,
    quant: QuantOpt = None,
    json: JsonOpt = False,
    no_cache: NoCacheOpt = False,
    *,
    system: SystemSpec,
) -> None:
    """How many users one box serves: a step of B users through the pass model (weights read
    once for all, each user's KV at its own depth), aggregate and per-user speed against B,
    where the step turns compute-bound, the most users at --min-tok-s each, a prompt read while
    others write, the most users whose KV fits, and with --rate a simulated server's queue.
    Warns when the model and the cache do not fit."""
    from tokenwalk.costs.workload import check_workload, context_warnings, stream_warnings

    if engine not in ("llama.cpp", "vllm"):
        raise InputError(f"--engine must be llama.cpp or vllm, not '{engine}'")
    if swa_full and engine == "vllm":
        raise InputError("--swa-full is llama.cpp's option; vLLM sizes its sliding layers itself")
    text = check_one_prompt(prompt, prompt_file, chat)
    if not text and prompt < 1:
        raise InputError(
            "give the prompt: --prompt N (at least 1 token), --prompt-file FILE or --chat FILE"
        )
    if users < 1:
        raise InputError(f"--users must be at least 1, not {users}")
    slots = parallel or users
    check_workload(prompt=max(prompt, 1), cached=cached, output=output, ubatch=ubatch)
    check_workload(ctx=ctx, parallel=slots, ubatch=batch)
    if output < 1:
        raise InputError("--output must be at least 1 token: a server's users write")
    if rate is not None and not rate > 0:
        raise InputError(f"--rate must be a positive number of requests a second, not {rate}")
    sysm, offload = on_system(system)
    want = quant or ("BF16" if engine == "vllm" else None)
    if text:
        loaded, counted = load_counted(
            model, want, prompt_file, chat, json=json, no_cache=no_cache, swa_full=swa_full
        )
        mdl, prompt = loaded.model, counted.prompt_tokens
        check_workload(prompt=prompt, cached=cached, output=output, ubatch=ubatch)
    else:
        mdl = load(model, want, json=json, no_cache=no_cache, swa_full=swa_full).model
    per_user = ctx // slots if ctx else prompt + output
    if per_user < prompt + output and not kv_unified:
        raise InputError(
            f"--ctx {ctx:,} over {slots} slots leaves {per_user:,} tokens a slot, fewer than "
            f"a request's {prompt + output:,} (--prompt + --output); give a larger --ctx"
        )
    common = dict(
        users=users,
        slots=slots,
        ctx_per_user=per_user,
        prompt=prompt,
        output=output,
        cached=cached,
        min_tok_s=min_tok_s,
        rate_rps=rate,
        requests=requests,
        seed=seed,
    )
    if engine == "vllm":
        report, fit = _vllm(
            mdl, sysm, offload, kv_type, gpu_memory_utilization, max_model_len, **common
        )
        warnings = context_warnings([mdl], prompt + output, "a request")
    else:
        report, fit = _llama(
            mdl, sysm, offload, system.system_gb, kv_type, kv_unified, batch, ubatch, **common
        )
        warnings = stream_warnings([mdl], slots * per_user, slots)
    answer(report, fit, warnings, json)


def _llama(
    mdl: Model,
    sysm: System,
    offload: Offload,
    system_gb: float | None,
    kv_type: str,
    unified: bool,
    batch: int,
    ubatch: int,
    **common: object,
):  # noqa: ANN202
    """llama-server: the model on one pool, or placed on cards and a host for the asked users."""
    import dataclasses

    from tokenwalk.costs.compare import reserve, system_plan
    from tokenwalk.costs.serve import PoolPricer, SplitPricer, largest_users, serve_report

    kv_type = kv_type.lower()
    slots = int(common["slots"])  # type: ignore[call-overload]
    per_user = int(common["ctx_per_user"])  # type: ignore[call-overload]
    setup = system_plan(mdl, sysm, offload, ctx=slots * per_user, kv_type=kv_type, parallel=slots)
    pricer: Pricer
    if setup is None or setup.one_card:  # one pool, or the whole model on one card
        pricer = PoolPricer(mdl, sysm.first, kv_type)
    else:
        pricer = SplitPricer(setup, kv_type)

    def fits(b: int) -> bool | None:
        """Whether b users' KV fits next to the weights as they are placed for the asked users
        (the placement the speeds and the printed command are of: another count of users at
        the same flags, not a placement of its own)."""
        ctx = b * per_user
        at = None
        if setup is not None:
            placement = dataclasses.replace(setup.placement, ctx=reserve(ctx, offload) or ctx)
            at = dataclasses.replace(setup, placement=placement)
        f = system_fit([mdl], sysm, at, system_gb, ctx=ctx, kv_type=kv_type, parallel=b)
        return None if f is None else f.fits

    known = fits(1) is not None
    most = largest_users(lambda b: bool(fits(b))) if known else None
    report = serve_report(
        mdl,
        pricer,
        machine=sysm.slug,
        machine_name=sysm.name,
        backend=sysm.first.backend,
        unified=unified,
        batch=batch,
        ubatch=ubatch,
        fits=fits if known else None,
        max_users_fit=most,
        placement=setup.placement.args if setup is not None else (),
        **common,  # type: ignore[arg-type]
    )
    fit = system_fit(
        [mdl],
        sysm,
        setup,
        system_gb,
        ctx=slots * per_user,
        kv_type=kv_type,
        parallel=slots,
        ubatch=ubatch,
    )
    return report, fit


def _vllm(
    mdl: Model,
    sysm: System,
    offload: Offload,
    kv_type: str,
    utilization: float,
    max_model_len: int | None,
    **common: object,
):  # noqa: ANN202
    """vLLM on one GPU: its start-up accounting, and the pass model scaled by its factor."""
    from tokenwalk.costs.budget import MemoryFit
    from tokenwalk.costs.serve import PoolPricer, serve_report
    from tokenwalk.costs.vllm import VLLM_ENGINE_FACTOR, VLLM_SEQUENCE_HEAD_S, vllm_memory
    from tokenwalk.numbers import size
    from tokenwalk.system import Offload as _Offload

    card = sysm.first
    placed = offload != _Offload() and not offload.default  # a placement flag was given
    if len(sysm.devices) > 1 or card.kind in ("cpu", "sbc") or placed:
        raise InputError("--engine vllm runs on one GPU: give one card, without placement flags")
    slots = int(common["slots"])  # type: ignore[call-overload]
    per_user = int(common["ctx_per_user"])  # type: ignore[call-overload]
    mem = vllm_memory(
        mdl,
        card,
        gpu_memory_utilization=utilization,
        max_model_len=max_model_len,
        max_num_seqs=slots if common.get("slots") != common.get("users") else None,
        kv_type=kv_type.lower(),
    )
    common["slots"] = max(slots, mem.max_num_seqs) if slots == common["users"] else slots
    pricer = PoolPricer(
        mdl, card, kv_type.lower(), factor=VLLM_ENGINE_FACTOR, seq_head_s=VLLM_SEQUENCE_HEAD_S
    )
    most = min(mem.kv_tokens // per_user, mem.max_num_seqs)
    report = serve_report(
        mdl,
        pricer,
        machine=sysm.slug,
        machine_name=sysm.name,
        backend=card.backend,
        batch=mem.max_num_batched_tokens,
        ubatch=mem.max_num_batched_tokens,
        fits=lambda b: b * per_user <= mem.kv_tokens,
        max_users_fit=most,
        engine="vllm",
        engine_factor=VLLM_ENGINE_FACTOR,
        limit=max(mem.max_num_seqs, 1),
        vllm=mem,
        ctx=mem.kv_tokens,
        **common,  # type: ignore[arg-type]
    )
    users = int(common["users"])  # type: ignore[call-overload]
    need = users * per_user
    free = (mem.kv_tokens - need) * mem.kv_bytes_per_token
    ok = need <= mem.kv_tokens
    note = (
        f"{mdl.name} under vLLM: {mem.kv_tokens:,} tokens of KV cache, "
        + (
            f"room for {users} users of {per_user:,} tokens"
            if ok
            else f"fewer than the {need:,} that {users} users of {per_user:,} tokens need"
        )
        + f" ({size(mem.kv_available_bytes)} for the cache)"
    )
    fit = MemoryFit(
        fits=ok,
        ctx=need,
        capacity_bytes=mem.gpu_bytes,
        system_bytes=mem.gpu_bytes - mem.requested_bytes,
        needed_bytes=mem.requested_bytes - mem.kv_available_bytes + need * mem.kv_bytes_per_token,
        free_bytes=free,
        note=note,
    )
    return report, fit
