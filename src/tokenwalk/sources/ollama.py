"""Resolve ``ollama:name[:tag]`` to the GGUF blob in the local Ollama store.

Ollama keeps a manifest per model at ``manifests/<registry>/<namespace>/<name>/<tag>`` (JSON,
OCI-like); its layer of media type ``application/vnd.ollama.image.model`` names the GGUF file as
``blobs/sha256-<hex>``. The store is ``$OLLAMA_MODELS``, else the first of the per-platform
defaults that exists.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from tokenwalk.errors import SourceError

__all__ = ["default_stores", "installed_models", "resolve_ollama"]

_REGISTRY = "registry.ollama.ai"
_NAMESPACE = "library"
_MODEL_MEDIA_TYPE = "application/vnd.ollama.image.model"


def default_stores() -> list[Path]:
    """Where Ollama keeps models when ``OLLAMA_MODELS`` is not set, most likely first."""
    home = Path.home() / ".ollama" / "models"
    if sys.platform.startswith("linux"):
        return [home, Path("/usr/share/ollama/.ollama/models")]
    return [home]  # macOS and Windows (%USERPROFILE%\.ollama\models)


def _store() -> Path:
    env = os.environ.get("OLLAMA_MODELS")
    if env:
        path = Path(env).expanduser()
        if not path.is_dir():
            raise SourceError(f"OLLAMA_MODELS is '{path}', which is not a directory")
        return path
    for path in default_stores():
        if (path / "manifests").is_dir():
            return path
    looked = ", ".join(str(p) for p in default_stores())
    raise SourceError(f"no Ollama model store found (looked in {looked}); set OLLAMA_MODELS")


def _split_ref(ref: str) -> tuple[list[str], str]:
    """``name[:tag]`` -> (path parts registry/namespace/name, tag)."""
    body = ref.removeprefix("ollama:")
    name, _, tag = body.rpartition(":") if ":" in body.split("/")[-1] else (body, "", "")
    tag = tag or "latest"
    parts = [p for p in name.split("/") if p]
    if not parts or any(p in (".", "..") for p in parts) or len(parts) > 3:
        raise SourceError(f"'{ref}' is not an Ollama model name (expected ollama:name[:tag])")
    if len(parts) == 1:
        parts = [_REGISTRY, _NAMESPACE, *parts]
    elif len(parts) == 2:
        parts = [_REGISTRY, *parts]
    if tag in (".", "..") or "/" in tag:
        raise SourceError(f"'{ref}' has an invalid tag '{tag}'")
    return parts, tag


def installed_models(store: Path) -> list[str]:
    """The models in `store`, written as Ollama writes them (``name:tag``, ``user/name:tag``)."""
    root = store / "manifests"
    out = []
    for path in sorted(root.glob("*/*/*/*")):
        if not path.is_file():
            continue
        registry, namespace, name, tag = path.relative_to(root).parts
        short = (
            name
            if (registry, namespace) == (_REGISTRY, _NAMESPACE)
            else (
                f"{namespace}/{name}" if registry == _REGISTRY else f"{registry}/{namespace}/{name}"
            )
        )
        out.append(f"{short}:{tag}")
    return out


def resolve_ollama(ref: str) -> Path:
    """The path of the GGUF blob that ``ollama:name[:tag]`` names in the local store."""
    store = _store()
    parts, tag = _split_ref(ref)
    manifest = store.joinpath("manifests", *parts, tag)
    if not manifest.is_file():
        models = installed_models(store)
        have = ", ".join(models) if models else "none"
        raise SourceError(
            f"Ollama model '{ref.removeprefix('ollama:')}' is not in {store} (installed: {have})"
        )
    try:
        layers = json.loads(manifest.read_text())["layers"]
        digest = next(la["digest"] for la in layers if la.get("mediaType") == _MODEL_MEDIA_TYPE)
    except (OSError, ValueError, KeyError, TypeError):
        raise SourceError(f"cannot read the Ollama manifest {manifest}") from None
    except StopIteration:
        raise SourceError(f"the Ollama manifest {manifest} has no model layer") from None
    algo, _, hexdigest = str(digest).partition(":")
    if not hexdigest.isalnum():
        raise SourceError(f"the Ollama manifest {manifest} has a bad digest '{digest}'")
    for name in (f"{algo}-{hexdigest}", f"{algo}:{hexdigest}"):
        blob = store / "blobs" / name
        if blob.is_file():
            return blob
    raise SourceError(f"the blob {algo}-{hexdigest} of '{ref}' is missing from {store / 'blobs'}")
