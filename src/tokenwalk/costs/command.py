"""llama.cpp command lines: the one place that writes the flags tokenwalk prints for a user to
paste. A line is a list of (flag, value) pairs; `command_line` writes each flag once (a later
value replaces an earlier one where it stood; `-ot` overrides join into one comma-separated
list, in order, as llama.cpp reads them: the first pattern that matches a tensor wins) and
quotes each word as a POSIX shell needs, so `shlex.split` gives llama.cpp's argv back.

`-ot` patterns are ECMAScript regexes searched in the tensor name (`std::regex_search`); a
range of blocks is an alternation of digit classes (`blk\\.(1[89]|2[0-9]|3[0-5])\\.`), never a
comma (llama.cpp splits the `-ot` value on commas)."""

from __future__ import annotations

import shlex
from collections.abc import Iterable

Arg = tuple[str, str | None]  # a flag and its value (None: a flag alone, such as --cpu-moe)


def command_line(*groups: Iterable[Arg]) -> str:
    """The words of `groups`, each flag once, shell-quoted: `-c 4096 -ngl all -ot '...'`."""
    merged: dict[str, str | None] = {}
    for flag, value in (a for g in groups for a in g):
        if flag == "-ot" and merged.get(flag):
            merged[flag] = f"{merged[flag]},{value}"
        else:
            merged[flag] = value
    words: list[str] = []
    for flag, value in merged.items():
        words.append(flag)
        if value is not None:
            words.append(shlex.quote(value))
    return " ".join(words)


def cache_args(swa_full: bool, kv_type: str | None = None) -> list[Arg]:
    """The cache's flags: its type where `kv_type` is given (`-ctk`/`-ctv`, and `-fa on`, which
    a quantized V cache needs), and `--swa-full` where the sliding-window layers hold the full
    context (llama.cpp's default keeps only their window). A placement line (decode, prefill,
    compare) passes no type: the user's `-ctk` stands."""
    args: list[Arg] = []
    if kv_type is not None:
        fa = "on" if kv_type != "f16" else "auto"
        args += [("-ctk", kv_type), ("-ctv", kv_type), ("-fa", fa)]
    if swa_full:
        args.append(("--swa-full", None))
    return args


def _digits(a: int, b: int) -> str:
    if a == b:
        return str(a)
    if a == 0 and b == 9:
        return "[0-9]"
    return f"[{a}{b}]" if b == a + 1 else f"[{a}-{b}]"


def _same_length(lo: str, hi: str) -> list[str]:
    """Alternatives matching exactly the numbers lo..hi, both written with as many digits."""
    if len(lo) == 1:
        return [_digits(int(lo), int(hi))]
    if lo[0] == hi[0]:
        return [lo[0] + p for p in _same_length(lo[1:], hi[1:])]
    n = len(lo) - 1
    out: list[str] = []
    first, last = int(lo[0]), int(hi[0])
    if lo[1:] != "0" * n:  # lo's leading digit covers only part of its tail
        out += [lo[0] + p for p in _same_length(lo[1:], "9" * n)]
        first += 1
    tail_hi = hi[1:] != "9" * n
    if tail_hi:
        last -= 1
    if first <= last:
        out.append(_digits(first, last) + "[0-9]" * n)
    if tail_hi:
        out += [hi[0] + p for p in _same_length("0" * n, hi[1:])]
    return out


def range_regex(lo: int, hi: int) -> list[str]:
    """Alternatives that match exactly the decimal numbers lo..hi (0 <= lo <= hi), each as a
    whole number once delimited (`1[89]`, `2[0-9]`, `3[0-5]` for 18..35)."""
    out: list[str] = []
    while lo <= hi:
        top = min(hi, 10 ** len(str(lo)) - 1)  # the numbers with as many digits as lo
        out += _same_length(str(lo), str(top))
        lo = top + 1
    return out


def blocks_regex(blocks: Iterable[int], free: Iterable[int] = ()) -> str:
    """A regex for the block numbers `blocks`, to stand between `blk\\.` and `\\.`: one number,
    or a group of alternatives over runs of consecutive blocks. Blocks in `free` hold no tensor
    the pattern could match (a dense block among experts), so a run may cross them."""
    wanted, gaps = sorted(set(blocks)), set(free)
    runs: list[list[int]] = []
    for b in wanted:
        if runs and all(x in gaps for x in range(runs[-1][1] + 1, b)):
            runs[-1][1] = b
        else:
            runs.append([b, b])
    parts = [p for lo, hi in runs for p in range_regex(lo, hi)]
    return parts[0] if len(parts) == 1 else "(" + "|".join(parts) + ")"
