"""Which catalogue machine a detected CPU or GPU is.

A catalogue key (slug or alias, `rtx-4070-ti`) fits a detected name when every part of it is a
word of the name ('NVIDIA GeForce RTX 4070 Ti'). Parts that state a memory size (`16gb`) are
checked against the detected memory instead, parts that state Apple GPU cores (`14c`) against
the detected cores, and a word of the name that marks a different product (`Ti`, `Super`, `XT`,
`Pro`, `Max`, ...) must appear in the key or the entry's name. Of the entries that fit, the one
with the longest key wins, then the closest memory.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import BaseModel

from tokenwalk.catalog import MachineEntry, load_machines

__all__ = ["CatalogueMatch", "match_catalogue", "words"]

GIB = 1 << 30
# words that make a different product of the same number (RTX 4070 vs 4070 Ti, M2 vs M2 Pro)
_DISTINGUISHING = {"ti", "super", "xt", "xtx", "pro", "max", "ultra", "mobile", "laptop", "plus"}
_MEMORY_TOLERANCE = 0.12  # a detected size within 12% of the entry's (139.8 GiB of a "141 GB" H200)


class CatalogueMatch(BaseModel):
    slug: str
    name: str
    kind: str
    backend: str
    reason: str  # how it was matched: the key and the checks it passed


def words(text: str) -> list[str]:
    """Lower-case words and numbers of a name; '+' is a word ('Max+' is 'max plus')."""
    return re.findall(r"[a-z0-9]+", text.lower().replace("+", " plus "))


def _entry_memory_bytes(e: MachineEntry) -> int | None:
    return e.memory_bytes


def match_catalogue(
    name: str,
    kinds: Sequence[str],
    *,
    memory_bytes: int | None = None,
    gpu_cores: int | None = None,
    entries: Sequence[MachineEntry] | None = None,
) -> CatalogueMatch | None:
    """The catalogue machine of one of `kinds` that `name` names, or None. A name that lists
    boards of one chip ('Radeon RX 7900 XT/7900 XTX/7900M', as lspci prints it) is tried as
    each of them; the memory then tells them apart."""
    best: tuple[tuple[int, float], MachineEntry, str] | None = None
    for alt in _alternatives(name):
        found = _best(alt, name, kinds, memory_bytes, gpu_cores, entries)
        if found is not None and (best is None or found[0] > best[0]):
            best = found
    if best is None:
        return None
    _, e, reason = best
    return CatalogueMatch(slug=e.slug, name=e.name, kind=e.kind, backend=e.backend, reason=reason)


def _alternatives(name: str) -> list[str]:
    """'Radeon RX 7900 XT/7900 XTX/7900M' -> the three boards, each with the words before the
    first number ('Radeon RX'); a name without '/' is itself."""
    pieces = [p.strip() for p in name.split("/")]
    if len(pieces) < 2 or not all(pieces):
        return [name]
    head = pieces[0].split()
    lead = []
    for w in head:
        if re.search(r"\d", w):
            break
        lead.append(w)
    return [pieces[0], *(" ".join([*lead, p]) for p in pieces[1:])]


def _best(
    name: str,
    shown: str,
    kinds: Sequence[str],
    memory_bytes: int | None,
    gpu_cores: int | None,
    entries: Sequence[MachineEntry] | None,
) -> tuple[tuple[int, float], MachineEntry, str] | None:
    detected = set(words(name))
    best: tuple[tuple[int, float], MachineEntry, str] | None = None
    for e in entries if entries is not None else load_machines():
        if e.kind not in kinds or e.benchmark_only:
            continue
        entry_words = set(words(e.name))
        m = re.search(r"(\d+)-core GPU", e.name)
        entry_cores = int(m[1]) if m else None
        for key in (e.slug, *e.aliases):
            parts = key.lower().split("-")
            if e.kind in ("cpu", "sbc") and parts[-1] == "cpu":
                parts = parts[:-1]
            sizes = [p for p in parts if re.fullmatch(r"\d+gb", p)]
            parts = [p for p in parts if p not in sizes and not re.fullmatch(r"\d+c", p)]
            if not parts or not set(parts) <= detected:
                continue
            if (detected & _DISTINGUISHING) - set(parts) - entry_words:
                continue
            checks = []
            diff = 0.0
            want = _entry_memory_bytes(e)
            if sizes:
                want = int(sizes[0].removesuffix("gb")) * GIB
            if memory_bytes and want and e.kind in ("gpu", "datacenter"):
                diff = abs(memory_bytes / want - 1)
                if diff > _MEMORY_TOLERANCE:
                    continue
                checks.append(f"memory {memory_bytes / GIB:.1f} GiB")
            if gpu_cores and entry_cores:
                if gpu_cores != entry_cores:
                    continue
                checks.append(f"{gpu_cores} GPU cores")
            reason = f"'{key}' in '{shown}'" + (f", {', '.join(checks)}" if checks else "")
            score = (len(parts), -diff)
            if best is None or score > best[0]:
                best = (score, e, reason)
    return best
