"""A cache of fetched GGUF headers, so a second query of the same URL is instant and offline.

Each entry is the raw header bytes (up to where tensor data starts) and a small JSON record of
the URL, the server's ETag and the file size. The header is re-parsed from the bytes, so a
newer parser reads old entries. Entries live in ``platformdirs.user_cache_dir("tokenwalk")``
(or ``$TOKENWALK_CACHE_DIR``); a broken or unwritable cache is ignored, never an error.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["CachedHeader", "cache_dir", "load", "load_json", "store", "store_json"]

_VERSION = 1


@dataclass(frozen=True)
class CachedHeader:
    """A cached header: its raw bytes and what the server said about the file then."""

    url: str
    raw: bytes
    size: int | None
    etag: str | None


def offline() -> bool:
    """`TOKENWALK_OFFLINE` or `HF_HUB_OFFLINE` set: no request is sent, what is cached answers."""
    return any(
        os.environ.get(v, "").lower() in ("1", "true", "yes", "on")
        for v in ("TOKENWALK_OFFLINE", "HF_HUB_OFFLINE")
    )


def cache_dir() -> Path:
    """Where entries live: ``$TOKENWALK_CACHE_DIR`` or the platform's user cache directory."""
    env = os.environ.get("TOKENWALK_CACHE_DIR")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("tokenwalk")) / "headers"


def _key(kind: str, name: str) -> str:
    return hashlib.sha256(f"{kind}\0{name}".encode()).hexdigest()[:40]


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def load(url: str) -> CachedHeader | None:
    """The cached header of `url`, or None when there is none (or it is unreadable)."""
    base = cache_dir() / _key("header", url)
    try:
        meta = json.loads(base.with_suffix(".json").read_text())
        raw = base.with_suffix(".gguf").read_bytes()
    except (OSError, ValueError):
        return None
    if meta.get("version") != _VERSION or meta.get("url") != url or len(raw) != meta.get("bytes"):
        return None
    return CachedHeader(url=url, raw=raw, size=meta.get("size"), etag=meta.get("etag"))


def store(url: str, raw: bytes, *, size: int | None, etag: str | None) -> None:
    """Remember the header bytes of `url` with the file's size and ETag."""
    base = cache_dir() / _key("header", url)
    meta = {"version": _VERSION, "url": url, "size": size, "etag": etag, "bytes": len(raw)}
    try:
        _atomic_write(base.with_suffix(".gguf"), raw)
        _atomic_write(base.with_suffix(".json"), json.dumps(meta).encode())
    except OSError:
        pass


def load_json(kind: str, name: str) -> Any | None:
    """A small cached JSON value (e.g. a repository's file listing), or None."""
    try:
        record = json.loads((cache_dir() / (_key(kind, name) + ".json")).read_text())
    except (OSError, ValueError):
        return None
    if record.get("version") != _VERSION or record.get("name") != name:
        return None
    return record.get("value")


def store_json(kind: str, name: str, value: Any) -> None:
    record = {"version": _VERSION, "name": name, "value": value}
    try:
        _atomic_write(cache_dir() / (_key(kind, name) + ".json"), json.dumps(record).encode())
    except OSError:
        pass
