"""Rich views of `TokenCount` (`tokenwalk tokens`) and `SessionReport` (`trace --chat`)."""

from __future__ import annotations

from rich.console import Console, Group

from tokenwalk.costs.trace import SessionReport
from tokenwalk.render.fmt import count, seconds
from tokenwalk.render.layout import Facts, FitTable, left_out_note
from tokenwalk.render.safe import safe_markup, safe_text
from tokenwalk.render.timing import error_note
from tokenwalk.text.prompt import TokenCount


def render_tokens(r: TokenCount, console: Console) -> None:
    where = "stdin" if r.input == "-" else r.input
    what = "estimated" if r.counted_with == "estimate" else "counted"
    s = Facts(f"{safe_markup(r.model)}: {safe_markup(where)}")
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
        t = FitTable(title="calls of the conversation", title_justify="left")
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
    t = FitTable(
        title=f"{safe_markup(r.model)} on {safe_markup(r.machine)}: {len(r.calls)} calls",
        title_justify="left",
    )
    # narrow headings (the legend is under the table); a narrow terminal leaves columns out
    rows = [
        {
            "call": str(c.index + 1),
            "at": seconds(c.start_s),
            "load": seconds(c.load_s) if c.cold else "",
            "prompt": count(c.prompt_tokens),
            "cached": count(c.cached_tokens),
            "new": count(c.computed_tokens),
            "TTFT": seconds(c.ttft_s),
            "reply": count(c.output_tokens),
            "writing": seconds(c.decode_s),
            "total": seconds(c.total_s),
        }
        for c in r.calls
    ]
    order = ("at", "cached", "reply", "load") if r.n_cold_loads else ("load", "at", "cached")
    dropped = t.fill(rows, console.width, order)
    s = Facts()
    s.add_row(
        "prompt tokens sent",
        count(r.prompt_tokens),
        f"{count(r.cached_tokens)} reused from the cache, {count(r.computed_tokens)} prefilled",
    )
    s.add_row("tokens written", count(r.output_tokens), "")
    # the typical error of each phase's estimate (tokenwalk prefill and decode say on what)
    errors = error_note(r.prefill_error, r.decode_error)
    s.add_row("busy", seconds(r.busy_s), "the calls themselves" + (f"; {errors}" if errors else ""))
    s.add_row("", "", "at: start; new: prompt tokens prefilled; TTFT: to the first token")
    keep = (
        "the model stays loaded"
        if r.keep_alive_s is None
        else (f"unloaded after {seconds(r.keep_alive_s)} idle")
    )
    s.add_row("session", seconds(r.wall_s), f"with {seconds(r.gap_s)} between calls; {keep}")
    if r.n_cold_loads:
        s.add_row("cold loads", str(r.n_cold_loads), f"at {r.load_gbs:.3g} GB/s, {r.load_from}")
    parts: list = [t]
    if dropped:
        parts.append(left_out_note(dropped, console.width))
    console.print(Group(*parts, "", s))
