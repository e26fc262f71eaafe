"""Split GGUF files: ``name-00001-of-00003.gguf`` and its siblings, as llama.cpp's gguf-split
names them. Every shard has its own header; tensors are spread over them."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

__all__ = ["shard_names", "split_key"]

_SPLIT = re.compile(r"^(?P<prefix>.*)-(?P<no>\d{5})-of-(?P<count>\d{5})(?P<ext>\.gguf)$", re.I)


def split_key(name: str) -> tuple[str, int] | None:
    """``(prefix, count)`` shared by all shards of a split set, or None for a single file."""
    m = _SPLIT.match(name)
    if not m or int(m.group("count")) < 1:
        return None
    return m.group("prefix") + m.group("ext"), int(m.group("count"))


def shard_names(name: str) -> list[str] | None:
    """All shard names of the split set `name` belongs to, in order; None if it is not split.

    `name` may be a path or a URL (the pattern applies to the URL's path; the query is kept).
    """
    if "://" in name:
        parts = urlsplit(name)
        names = shard_names(parts.path)
        if names is None:
            return None
        return [urlunsplit(parts._replace(path=p)) for p in names]
    m = _SPLIT.match(name)
    if not m:
        return None
    count = int(m.group("count"))
    if count < 1 or int(m.group("no")) > count:
        return None
    width = len(m.group("no"))
    return [
        f"{m.group('prefix')}-{i:0{width}d}-of-{m.group('count')}{m.group('ext')}"
        for i in range(1, count + 1)
    ]
