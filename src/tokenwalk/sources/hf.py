"""Resolve ``hf://org/repo[/file.gguf]`` to download URLs on the Hugging Face Hub.

``huggingface_hub`` (the ``hf`` extra) supplies what users expect from the Hub: the
token (``HF_TOKEN`` or the saved login), the endpoint (``HF_ENDPOINT``), the repository listing
and the URL layout. The bytes themselves go through tokenwalk's range reader, with the token
sent only to the Hub's own host, never to the CDN it redirects to.

Forms: ``hf://org/repo/path/file.gguf``, ``hf://org/repo`` with a quant (``Q4_K_M``) picking
the file whose name carries it, ``hf://org/repo:Q4_K_M``, and ``@revision`` after the repo.
"""

from __future__ import annotations

import importlib
import logging
import os
import re
import socket
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import urlparse

from tokenwalk.errors import SourceError
from tokenwalk.sources import cache
from tokenwalk.sources.split import shard_names, split_key

__all__ = ["HfFile", "HfRef", "auth_hint", "parse_hf_ref", "pick_files", "resolve_hf"]

# tokenwalk is not on PyPI: what works is the package itself, or the extra from a checkout
_INSTALL = (
    "reading hf:// references needs huggingface_hub: pip install huggingface_hub "
    "(from a tokenwalk checkout: pip install '.[hf]')"
)
_LOGIN = "set HF_TOKEN or run `hf auth login` (`huggingface-cli login`)"
_REPO = re.compile(r"^[\w.-]+/[\w.-]+$")


@dataclass(frozen=True)
class HfRef:
    """A parsed ``hf://`` reference."""

    repo_id: str
    filename: str | None
    revision: str
    quant: str | None


@dataclass(frozen=True)
class HfFile:
    """One file to read: its URL and the headers that authenticate it on the Hub's host."""

    url: str
    filename: str
    auth_headers: dict[str, str]


def _hub():  # noqa: ANN202
    try:
        import huggingface_hub
    except ImportError:
        raise SourceError(_INSTALL) from None
    return huggingface_hub


@contextmanager
def quiet_hub() -> Iterator[None]:
    """huggingface_hub's own retry and warning messages silenced: what failed is the caller's
    one line to say."""
    logger = logging.getLogger("huggingface_hub")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def unreachable(base: str, timeout_s: float = 5.0) -> str | None:
    """Why the Hub at `base` cannot be reached (its name does not resolve, a connection is
    refused or not answered within `timeout_s`), or None when a connection opens or a proxy
    is set for it. Asked before huggingface_hub's own requests, which retry a refused
    connection for half a minute."""
    url = urlparse(base)
    if not url.hostname:
        return f"'{base}' names no host"
    proxies = urllib.request.getproxies()
    if (proxies.get(url.scheme) or proxies.get("all")) and not urllib.request.proxy_bypass(
        url.hostname
    ):
        return None  # through a proxy: a direct connection says nothing; the requests will
    port = url.port or (80 if url.scheme == "http" else 443)
    try:
        with socket.create_connection((url.hostname, port), timeout=timeout_s):
            return None
    except OSError as exc:
        return exc.strerror or str(exc) or type(exc).__name__


def endpoint() -> str:
    """The Hub endpoint: ``$HF_ENDPOINT`` at call time, else huggingface_hub's default."""
    env = os.environ.get("HF_ENDPOINT")
    if env:
        return env.rstrip("/")
    _hub()  # the install hint where it is missing
    # the submodule by name: huggingface_hub 1.x and later import theirs lazily, and the
    # package has no `constants` attribute until something imported it
    constants = importlib.import_module("huggingface_hub.constants")
    return str(constants.ENDPOINT).rstrip("/")


def parse_hf_ref(ref: str, quant: str | None = None) -> HfRef:
    """Split ``hf://org/repo[@rev][:QUANT][/path/file.gguf]`` into its parts."""
    body = ref.removeprefix("hf://").strip("/")
    parts = body.split("/")
    if len(parts) < 2 or not parts[0] or not parts[1]:
        raise SourceError(f"'{ref}' is not hf://org/repo or hf://org/repo/file.gguf")
    repo, rest = parts[1], parts[2:]
    if ":" in repo:
        repo, _, ref_quant = repo.partition(":")
        if quant and ref_quant and quant.lower() != ref_quant.lower():
            raise SourceError(f"'{ref}' names quant {ref_quant} but --quant says {quant}")
        quant = quant or ref_quant or None
    revision = "main"
    if "@" in repo:
        repo, _, revision = repo.partition("@")
    repo_id = f"{parts[0]}/{repo}"
    if not _REPO.match(repo_id) or not revision:
        raise SourceError(f"'{ref}' does not name a repository as org/repo")
    filename = "/".join(rest) or None
    if filename is not None and not filename.lower().endswith(".gguf"):
        raise SourceError(f"'{ref}' names '{filename}', which is not a .gguf file")
    return HfRef(repo_id=repo_id, filename=filename, revision=revision, quant=quant)


def auth_hint(repo_id: str) -> Callable[[int, str], str]:
    """The message of a 401/403 answer for a file of `repo_id`."""

    def hint(status: int, url: str) -> str:
        have = "your token was refused" if _token() else "no token was sent"
        return (
            f"access to hf://{repo_id} refused (HTTP {status}; {have}): the repository is gated "
            f"or private; accept its terms on the Hub if gated, then {_LOGIN}"
        )

    return hint


def _token() -> str | None:
    hub = _hub()
    try:
        return hub.get_token()
    except Exception:  # noqa: BLE001 - a broken token file must not stop a public download
        return None


def _quant_pattern(quant: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![A-Za-z0-9]){re.escape(quant)}(?![A-Za-z0-9_])", re.I)


def _groups(files: list[str]) -> list[list[str]]:
    """GGUF files of a listing as loadable units: a single file, or a whole split set."""
    singles: list[list[str]] = []
    sets: dict[tuple[str, int], list[str]] = {}
    for f in sorted(files):
        if not f.lower().endswith(".gguf") or os.path.basename(f).lower().startswith("mmproj"):
            continue
        key = split_key(f)
        if key is None:
            singles.append([f])
        else:
            sets.setdefault(key, []).append(f)
    return singles + [sorted(v) for v in sets.values()]


def _show(group: list[str]) -> str:
    if len(group) == 1:
        return group[0]
    return f"{group[0]} (+{len(group) - 1} more shards)"


def pick_files(files: list[str], repo_id: str, quant: str | None) -> list[str]:
    """The file (or split set) of `repo_id` to read: the one whose name carries `quant`."""
    groups = _groups(files)
    if not groups:
        raise SourceError(f"hf://{repo_id} has no GGUF files")
    if quant:
        pat = _quant_pattern(quant)
        chosen = [g for g in groups if pat.search(g[0])]
        if not chosen:
            avail = ", ".join(_show(g) for g in groups[:40])
            raise SourceError(f"no {quant} GGUF file in hf://{repo_id} (available: {avail})")
    else:
        chosen = groups
    if len(chosen) > 1:
        names = ", ".join(_show(g) for g in chosen[:40])
        what = f"{quant} files" if quant else "GGUF files; pick one with --quant"
        raise SourceError(f"hf://{repo_id} has several {what}: {names}")
    return chosen[0]


def _list_files(ref: HfRef, token: str | None, base: str) -> list[str]:
    hub = _hub()
    name = f"{base}/{ref.repo_id}@{ref.revision}"
    if cache.offline():
        cached = cache.load_json("hf-listing", name)
        if cached is not None:
            return list(cached)
        raise SourceError(
            f"offline (TOKENWALK_OFFLINE or HF_HUB_OFFLINE is set) and hf://{ref.repo_id} was "
            "never listed"
        )
    why = unreachable(base)
    if why is not None:
        cached = cache.load_json("hf-listing", name)
        if cached is not None:  # offline: the last listing we saw
            return list(cached)
        raise SourceError(f"cannot list hf://{ref.repo_id}: {base} cannot be reached ({why})")
    try:
        with quiet_hub():
            api = hub.HfApi(endpoint=base)
            files = api.list_repo_files(ref.repo_id, revision=ref.revision, token=token or False)
    except Exception as exc:  # noqa: BLE001 - huggingface_hub raises many kinds; map them here
        status = getattr(getattr(exc, "response", None), "status_code", None)
        kind = type(exc).__name__
        if kind == "GatedRepoError" or status in (401, 403):
            raise SourceError(auth_hint(ref.repo_id)(status or 403, base)) from None
        if kind == "RevisionNotFoundError":
            raise SourceError(
                f"revision '{ref.revision}' not found in hf://{ref.repo_id}"
            ) from None
        if kind == "RepositoryNotFoundError" or status == 404:
            raise SourceError(
                f"repository hf://{ref.repo_id} not found on {base} (if it is private, {_LOGIN})"
            ) from None
        cached = cache.load_json("hf-listing", name)
        if cached is not None:  # offline: the last listing we saw
            return list(cached)
        line = str(exc).strip().splitlines()[0] if str(exc).strip() else kind
        raise SourceError(f"cannot list hf://{ref.repo_id} on {base}: {line}") from None
    cache.store_json("hf-listing", name, files)
    return files


def resolve_hf(ref: str, quant: str | None = None) -> list[HfFile]:
    """The file(s) an ``hf://`` reference names, with URLs and auth headers, in shard order."""
    hub = _hub()
    parsed = parse_hf_ref(ref, quant)
    base = endpoint()
    token = _token()
    if parsed.filename is not None:
        filenames = shard_names(parsed.filename) or [parsed.filename]
    else:
        filenames = pick_files(_list_files(parsed, token, base), parsed.repo_id, parsed.quant)
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    return [
        HfFile(
            url=hub.hf_hub_url(parsed.repo_id, f, revision=parsed.revision, endpoint=base),
            filename=f,
            auth_headers=auth,
        )
        for f in filenames
    ]
