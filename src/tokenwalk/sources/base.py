"""Resolve a model reference to GGUF headers."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tokenwalk.errors import SourceError
from tokenwalk.gguf.reader import Header, read_header


@dataclass(frozen=True)
class FetchResult:
    """The headers a reference names (one per shard) and what reading them cost."""

    ref: str
    headers: tuple[Header, ...]
    fetched_bytes: int
    requests: int = 0


class _CountingFile:
    def __init__(self, fh) -> None:  # noqa: ANN001
        self.fh = fh
        self.count = 0

    def read(self, n: int) -> bytes:
        data = self.fh.read(n)
        self.count += len(data)
        return data


def is_source_ref(ref: str) -> bool:
    """True when `ref` names a GGUF source (a .gguf path or a remote/store reference)."""
    if ref.startswith(("http://", "https://", "hf://", "ollama:")):
        return True
    return ref.lower().endswith(".gguf") or (os.path.isfile(ref) and _is_gguf(ref))


def _is_gguf(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"GGUF"
    except OSError:
        return False


def read_local(path: str | os.PathLike[str], *, keep_tokens: bool = False) -> tuple[Header, int]:
    p = Path(path)
    if p.is_dir():
        raise SourceError(f"'{p}' is a directory, not a GGUF file")
    try:
        size = p.stat().st_size
        fh = p.open("rb")
    except FileNotFoundError:
        raise SourceError(f"no such file: '{p}'") from None
    except OSError as exc:
        raise SourceError(f"cannot open '{p}': {exc.strerror}") from None
    with fh:
        counting = _CountingFile(fh)
        header = read_header(counting, file_size=size, keep_tokens=keep_tokens)
    return header, counting.count


def load_headers(ref: str, *, keep_tokens: bool = False) -> FetchResult:
    """Read the header(s) of a GGUF reference: for now a local path."""
    header, n = read_local(ref, keep_tokens=keep_tokens)
    return FetchResult(ref=ref, headers=(header,), fetched_bytes=n)
