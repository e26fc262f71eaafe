"""Where header bytes come from: local files, split files, http(s) URLs, hf:// and ollama:.

`load_headers(ref)` returns every header a model reference names (several for split files),
with how many bytes and requests it took to read them. Tensor data is never read.
"""

from __future__ import annotations

from tokenwalk.sources.base import FetchResult, is_source_ref, load_headers
from tokenwalk.sources.http import AuthError, HttpOptions, NotFoundError, TimeoutSourceError

__all__ = [
    "AuthError",
    "FetchResult",
    "HttpOptions",
    "NotFoundError",
    "TimeoutSourceError",
    "is_source_ref",
    "load_headers",
]
