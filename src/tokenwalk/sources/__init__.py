"""Where header bytes come from: local files now; URLs, hf:// and ollama: references later.

`load_headers(ref)` returns every header a model reference names (several for split files),
with how many bytes it took to read them.
"""

from __future__ import annotations

from tokenwalk.sources.base import FetchResult, is_source_ref, load_headers

__all__ = ["FetchResult", "is_source_ref", "load_headers"]
