"""Resolve a model reference to GGUF headers: local paths, split files, URLs, hf://, ollama:.

Only headers are read. Remote headers come through `HttpRangeReader` and are cached, so the
second query of a URL costs one tiny request (or none when offline).
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, replace
from pathlib import Path

from tokenwalk.errors import GGUFError, SourceError
from tokenwalk.gguf.reader import Header, read_header
from tokenwalk.sources import cache
from tokenwalk.sources.http import AuthError, HttpOptions, HttpRangeReader, NotFoundError, probe
from tokenwalk.sources.progress import FetchProgress
from tokenwalk.sources.split import shard_names

__all__ = ["FetchResult", "is_source_ref", "load_headers", "read_local"]


@dataclass(frozen=True)
class FetchResult:
    """The headers a reference names (one per shard, in order) and what reading them cost.

    `fetched_bytes` counts bytes read from files or taken off the network; `requests` the HTTP
    requests sent (0 for local files). `locations` are the paths or URLs read, one per header;
    `cached` is true when every header came from the header cache. `quant_used` is true when
    the quant argument picked the file (``hf://org/repo`` with a quant), so callers know it was
    consumed and is not a preset to apply.
    """

    ref: str
    headers: tuple[Header, ...]
    fetched_bytes: int
    requests: int = 0
    locations: tuple[str, ...] = ()
    cached: bool = False
    quant_used: bool = False


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
    """Parse the header of a local file; returns it and the bytes read."""
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
        try:
            header = read_header(counting, file_size=size, keep_tokens=keep_tokens)
        except GGUFError as exc:
            raise type(exc)(f"{p}: {exc}") from None
    return header, counting.count


def _check_shards(headers: list[Header], names: list[str]) -> None:
    """A split set's headers must agree with their names (llama.cpp writes split.count/no)."""
    for i, (h, name) in enumerate(zip(headers, names, strict=True)):
        count = h.metadata.get("split.count")
        no = h.metadata.get("split.no")
        if isinstance(count, int) and count != len(names):
            raise SourceError(
                f"{name} says the model has {count} shards, its name says {len(names)}"
            )
        if isinstance(no, int) and no != i:
            raise SourceError(f"{name} says it is shard {no + 1}, its name says {i + 1}")


def _load_local(ref: str, keep_tokens: bool) -> FetchResult:
    names = shard_names(ref) or [ref]
    if len(names) > 1:
        missing = [n for n in names if not os.path.isfile(n)]
        if missing:
            raise SourceError(
                f"missing shard {missing[0]} of the {len(names)}-part split model {names[0]}"
            )
    headers, total = [], 0
    for name in names:
        header, n = read_local(name, keep_tokens=keep_tokens)
        headers.append(header)
        total += n
    _check_shards(headers, names)
    return FetchResult(ref=ref, headers=tuple(headers), fetched_bytes=total, locations=tuple(names))


def _fetch_remote(
    url: str,
    *,
    auth_headers: dict[str, str],
    auth_hint,  # noqa: ANN001 - Callable[[int, str], str] | None
    options: HttpOptions,
    no_cache: bool,
    progress: bool,
    keep_tokens: bool,
) -> tuple[Header, int, int, bool]:
    """One remote header: (header, fetched bytes, requests, came from the cache)."""
    if not no_cache:
        entry = cache.load(url)
        requests = 0
        if entry is not None and not cache.offline():
            try:
                info, requests = probe(url, auth_headers=auth_headers, options=options)
            except (NotFoundError, AuthError):
                raise
            except SourceError:
                info = None  # unreachable: the cached header is the best answer we have
            if info is not None and (
                info.size != entry.size or (info.etag and entry.etag and info.etag != entry.etag)
            ):
                entry = None
        if entry is not None:
            raw = io.BytesIO(entry.raw)
            header = read_header(raw, file_size=entry.size, keep_tokens=keep_tokens)
            return header, 0, requests, True
    label = url.rsplit("/", 1)[-1] or url
    reader = HttpRangeReader(
        url,
        auth_headers=auth_headers,
        auth_hint=auth_hint,
        options=options,
        progress=FetchProgress(label, enabled=progress),
        label=url,
    )
    try:
        info = reader.open()
        header = read_header(reader, file_size=info.size, keep_tokens=keep_tokens)
    except GGUFError as exc:
        raise type(exc)(f"{url}: {exc}") from None
    finally:
        reader.close()
    assert reader.data is not None
    cache.store(url, bytes(reader.data[: header.data_offset]), size=info.size, etag=info.etag)
    return header, reader.fetched_bytes, reader.requests, False


def _load_remote(
    ref: str,
    files: list[tuple[str, dict[str, str]]],
    *,
    auth_hint,  # noqa: ANN001
    options: HttpOptions,
    no_cache: bool,
    progress: bool,
    keep_tokens: bool,
) -> FetchResult:
    headers, fetched, requests, all_cached = [], 0, 0, True
    for url, auth in files:
        try:
            header, n, r, cached = _fetch_remote(
                url,
                auth_headers=auth,
                auth_hint=auth_hint,
                options=options,
                no_cache=no_cache,
                progress=progress,
                keep_tokens=keep_tokens,
            )
        except NotFoundError:
            if len(files) > 1:
                raise NotFoundError(
                    f"missing shard {url} of the {len(files)}-part split model {files[0][0]}"
                ) from None
            raise
        headers.append(header)
        fetched += n
        requests += r
        all_cached = all_cached and cached
    names = [u for u, _ in files]
    _check_shards(headers, names)
    return FetchResult(
        ref=ref,
        headers=tuple(headers),
        fetched_bytes=fetched,
        requests=requests,
        locations=tuple(names),
        cached=all_cached,
    )


def load_headers(
    ref: str,
    *,
    keep_tokens: bool = False,
    quant: str | None = None,
    no_cache: bool = False,
    progress: bool = True,
    http_options: HttpOptions | None = None,
) -> FetchResult:
    """Read the header(s) of a GGUF reference without reading tensor data.

    `ref` is a local path, ``http(s)://.../file.gguf``, ``hf://org/repo/file.gguf``,
    ``hf://org/repo`` (with `quant` picking the file), or ``ollama:name[:tag]``. A shard name
    ``...-00001-of-00003.gguf`` loads every shard. `no_cache` skips the header cache (and
    refreshes it); `progress` allows a progress bar on stderr for slow fetches.
    Raises `SourceError` (or a `GGUFError` for bytes that are not a GGUF header).
    """
    options = http_options or HttpOptions()
    remote = {
        "options": options,
        "no_cache": no_cache,
        "progress": progress,
        "keep_tokens": keep_tokens,
    }
    if ref.startswith(("http://", "https://")):
        urls = shard_names(ref) or [ref]
        return _load_remote(ref, [(u, {}) for u in urls], auth_hint=None, **remote)
    if ref.startswith("hf://"):
        from tokenwalk.sources.hf import auth_hint, parse_hf_ref, resolve_hf

        files = resolve_hf(ref, quant)
        parsed = parse_hf_ref(ref, quant)
        result = _load_remote(
            ref,
            [(f.url, f.auth_headers) for f in files],
            auth_hint=auth_hint(parsed.repo_id),
            **remote,
        )
        if parsed.filename is None and parsed.quant:
            result = replace(result, quant_used=True)
        return result
    if ref.startswith("ollama:"):
        from tokenwalk.sources.ollama import resolve_ollama

        blob = resolve_ollama(ref)
        header, n = read_local(blob, keep_tokens=keep_tokens)
        return FetchResult(ref=ref, headers=(header,), fetched_bytes=n, locations=(str(blob),))
    return _load_local(ref, keep_tokens)
