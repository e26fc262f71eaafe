"""Rich views of `TokenCount` (`tokenwalk tokens`) and `SessionReport` (`trace --chat`)."""

from __future__ import annotations

from rich.console import Console, Group
from rich.table import Table

from tokenwalk.costs.trace import SessionReport
from tokenwalk.render.fmt import count, seconds
from tokenwalk.render.safe import safe_markup, safe_text
from tokenwalk.text.prompt import TokenCount


def render_tokens(r: TokenCount, console: Console) -> None:
    where = "stdin" if r.input == "-" else r.input
    what = "estimated" if r.counted_with == "estimate" else "counted"
    s = Table(
        show_header=False,
        box=None,
        title=f"{safe_markup(r.model)}: {safe_markup(where)}",
        title_justify="left",
    )
    s.add_column(style="bold")
    s.add_column(justify="right")
    s.add_column(style="dim")
    s.add_row("tokens", count(r.prompt_tokens), what + ("" if r.exact else ", not exact"))
    if r.input_kind == "chat":
        s.add_row(
            "of which the template", count(r.template_tokens), "roles, turn markers, BOS, tools"
        )
        s.add_row("of which the messages", count(r.text_tokens), f"{r.n_messages} messages")
    elif r.template_tokens:
        s.add_row("of which BOS/EOS", count(r.template_tokens), "added by the tokenizer")
    s.add_row("characters", count(r.n_chars), f"{r.tokens_per_char:.3f} tokens a character")
    s.add_row("words", count(r.n_words), f"{r.tokens_per_word:.2f} tokens a word")
    parts: list = [s]
    if len(r.calls) > 1:
        t = Table(title="calls of the conversation", title_justify="left")
        for col in ("call", "messages", "prompt", "cached", "new", "reply"):
            t.add_column(col, justify="right")
        for c in r.calls:
            t.add_row(
                str(c.index + 1),
                str(c.n_messages),
                count(c.prompt_tokens),
                count(c.cached_tokens),
                count(c.prompt_tokens - c.cached_tokens),
                count(c.output_tokens) if c.output_tokens else "",
            )
        parts += ["", t]
    how = "" if r.counted_with == "estimate" else "counted with "
    parts += ["", safe_text(f"{how}{r.tokenizer}", style="dim", limit=None)]
    console.print(Group(*parts))


def render_session(r: SessionReport, console: Console) -> None:
    t = Table(
        title=f"{safe_markup(r.model)} on {safe_markup(r.machine)}: {len(r.calls)} calls",
        title_justify="left",
    )
    # narrow headings: the table fits 80 columns (the legend is under it)
    for col in (
        "call",
        "at",
        "load",
        "prompt",
        "cached",
        "new",
        "TTFT",
        "reply",
        "writing",
        "total",
    ):
        t.add_column(col, justify="right")
    for c in r.calls:
        t.add_row(
            str(c.index + 1),
            seconds(c.start_s),
            seconds(c.load_s) if c.cold else "",
            count(c.prompt_tokens),
            count(c.cached_tokens),
            count(c.computed_tokens),
            seconds(c.ttft_s),
            count(c.output_tokens),
            seconds(c.decode_s),
            seconds(c.total_s),
        )
    s = Table(show_header=False, box=None)
    s.add_column(style="bold")
    s.add_column(justify="right")
    s.add_column(style="dim")
    s.add_row(
        "prompt tokens sent",
        count(r.prompt_tokens),
        f"{count(r.cached_tokens)} reused from the cache, {count(r.computed_tokens)} prefilled",
    )
    s.add_row("tokens written", count(r.output_tokens), "")
    s.add_row("busy", seconds(r.busy_s), "the calls themselves")
    s.add_row("", "", "at: start; new: prompt tokens prefilled; TTFT: to the first token")
    keep = (
        "the model stays loaded"
        if r.keep_alive_s is None
        else (f"unloaded after {seconds(r.keep_alive_s)} idle")
    )
    s.add_row("session", seconds(r.wall_s), f"with {seconds(r.gap_s)} between calls; {keep}")
    if r.n_cold_loads:
        s.add_row("cold loads", str(r.n_cold_loads), f"at {r.load_gbs:.3g} GB/s, {r.load_from}")
    console.print(Group(t, "", s))
