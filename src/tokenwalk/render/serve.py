"""Rich view of `ServeReport`: several users on one box."""

from __future__ import annotations

from rich.console import Console

from tokenwalk.costs.serve import ServeReport
from tokenwalk.render.fmt import count, human_bytes, rate, seconds
from tokenwalk.render.layout import Facts, FitTable, Whole, title_of
from tokenwalk.render.safe import visible

__all__ = ["render_serve"]


def _users(n: int) -> str:
    return f"{count(n)} user" if n == 1 else f"{count(n)} users"


def render_serve(r: ServeReport, console: Console) -> None:
    cache = "one cache (-kvu)" if r.kv_unified else f"{count(r.ctx_per_user)} tokens a slot"
    engine = f"vLLM (x{r.engine_factor:g} the pass model); " if r.engine == "vllm" else ""
    parts = [f"{visible(r.model)} {visible(r.quant)}", visible(r.machine_name)]
    title = title_of([*parts, f"{_users(r.users)} writing"], console.width, markup=False)
    console.print(title, style="bold", markup=False)
    if r.command:  # whole on one line, to paste (`Whole`)
        console.print(Whole([("llama-server", r.command)], indent=0), crop=False)
    console.print(
        f"[dim]{engine}{cache}; requests of {count(r.prompt_tokens)} tokens in, "
        f"{count(r.output_tokens)} out ({r.kv_type} cache)[/dim]"
    )
    s = Facts(pad_edge=False)
    s.add_row(
        "each user",
        rate(r.user_tok_s),
        f"one step of {_users(r.users)}: {seconds(r.step_s)}, {r.bound}-bound; the weights "
        "read once for all, each user's KV at its own depth",
    )
    s.add_row("all users", rate(r.aggregate_tok_s), f"{count(r.users)} tokens a step")
    s.add_row(
        f"users at {r.min_tok_s:g} tok/s",
        count(r.users_at_min_tok_s),
        "the most users who each get --min-tok-s (reading speed by default)",
    )
    s.add_row(
        "compute-bound from",
        _users(r.compute_bound_users) if r.compute_bound_users else "never",
        "where more users stop coming nearly free",
    )
    if r.max_users_fit is not None:
        s.add_row(
            "memory holds",
            _users(r.max_users_fit),
            f"each with {count(r.ctx_per_user)} tokens of KV, next to the weights and buffers",
        )
    s.add_row("first token, alone", seconds(r.ttft_alone_s), "the prompt read with no one writing")
    if r.users > 1:
        s.add_row(
            "first token, busy",
            seconds(r.ttft_busy_s),
            f"read while {_users(r.users - 1)} write; they slow to "
            f"{rate(r.user_tok_s_while_reading)} meanwhile",
        )
    console.print(s)
    if r.vllm is not None:
        v = r.vllm
        console.print(
            f"[bold]vLLM at start-up[/bold] [dim]({v.gpu_memory_utilization:g} of "
            f"{human_bytes(v.gpu_bytes)}: weights {human_bytes(v.checkpoint_bytes)}, activations "
            f"{human_bytes(v.activation_bytes)} at {count(v.max_num_batched_tokens)} tokens, "
            f"CUDA graphs and the rest {human_bytes(v.cuda_graph_bytes + v.non_torch_bytes)}; "
            f"blocks of {v.block_tokens})[/dim]"
        )
        for line in v.lines:
            console.print(f"  {line}")
    sim = r.simulation
    if sim is not None:
        t = Facts(
            f"A server under {sim.rate_rps:g} requests a second ({sim.n_requests} requests, "
            f"seed {sim.seed}, {sim.slots} slots)",
            pad_edge=False,
        )
        t.add_row(
            "first token",
            f"{seconds(sim.ttft_median_s)} / {seconds(sim.ttft_p95_s)}",
            "median / p95, the queue included",
        )
        t.add_row(
            "each user",
            f"{rate(sim.user_tok_s_median)} / {rate(sim.user_tok_s_p95)}",
            "median / the speed 95% of requests reach",
        )
        t.add_row(
            "queue",
            f"{sim.queue_mean:.1f} / {sim.queue_max}",
            f"waiting for a slot, mean / most; the wait {seconds(sim.wait_median_s)} median, "
            f"{seconds(sim.wait_p95_s)} p95",
        )
        t.add_row("served", rate(sim.aggregate_tok_s), f"{sim.served_rps:.2f} requests a second")
        if sim.overloaded:
            t.add_row("", "", "[bold red]overloaded: requests arrive faster than they end[/]")
        console.print(t)
    table = FitTable(title="against the number of users", title_justify="left")
    for name in ("users", "each", "all", "step", "bound", "cache", "fits"):
        table.add_column(name, justify="left" if name in ("bound", "fits") else "right")
    for p in r.by_users:
        fits = "" if p.fits is None else ("yes" if p.fits else "no")
        style = "bold" if p.users == r.users else None
        table.add_row(
            count(p.users),
            rate(p.user_tok_s),
            rate(p.aggregate_tok_s),
            seconds(p.step_s),
            p.bound,
            human_bytes(p.cache_bytes),
            fits,
            style=style,
        )
    console.print(table)
