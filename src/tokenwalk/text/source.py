"""Which counter a model gets: its GGUF vocabulary, its repository's tokenizer.json, or an
estimate that says it is one (see `tokenwalk.text.prompt`)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from tokenwalk.text.prompt import Counter, EstimateCounter, GgufCounter, HubCounter

__all__ = ["counter_for", "repo_of_source"]

_HF_URL = re.compile(r"https://huggingface\.co/([\w.-]+/[\w.-]+)")


def repo_of_source(source: str) -> str | None:
    """The Hugging Face repository a catalogue entry's `source:` cites first, if any."""
    m = _HF_URL.search(source or "")
    return m[1] if m else None


def counter_for(ref: str, metadata: Mapping[str, Any] | None, source: str) -> Counter:
    """The best counter for a model: `metadata` is the GGUF header's (read with keep_tokens),
    None for a config or a catalogue model; `source` is the model's source kind."""
    if metadata is not None:
        from tokenwalk.text.vocab import SUPPORTED_MODELS, Vocab

        model = metadata.get("tokenizer.ggml.model")
        if model not in SUPPORTED_MODELS:
            return EstimateCounter(
                f"tokenizer model '{model}' is not one tokenwalk reads"
                if isinstance(model, str)
                else "the header has no tokenizer"
            )
        return GgufCounter(Vocab.from_metadata(metadata))
    if source == "catalogue":
        from tokenwalk.catalog import find_model

        repo = repo_of_source(find_model(ref).source)
        hub = _hub_counter(repo) if repo else None
        if hub is not None:
            return hub
        where = f": its repository {repo} was not reachable" if repo else ""
        return EstimateCounter(
            f"a catalogue model has no tokenizer{where}. Give its GGUF file (or hf://) to count "
            "with the model's own tokenizer"
        )
    return EstimateCounter(
        "a config has no tokenizer; give the GGUF file for a count with the model's own one"
    )


def _hub_counter(repo: str) -> HubCounter | None:
    """The repository's tokenizer.json and template through huggingface_hub (its cache first),
    or None when the package, the network or the files are missing."""
    try:
        from huggingface_hub import hf_hub_download
        from tokenizers import Tokenizer
    except ImportError:
        return None
    from tokenwalk.sources.hf import quiet_hub

    def fetch(name: str) -> str:
        try:  # the cache first: no request at all
            return hf_hub_download(repo, name, local_files_only=True)
        except Exception:
            if not _hub_reachable():
                raise
        with quiet_hub():  # its retry messages are not ours to show
            return hf_hub_download(repo, name, etag_timeout=5)

    try:
        tok = Tokenizer.from_file(fetch("tokenizer.json"))
    except Exception:  # offline, gated, missing: the estimate says so
        return None
    template, special = None, {}
    try:
        with open(fetch("tokenizer_config.json"), encoding="utf-8") as fh:
            cfg = json.load(fh)
        t = cfg.get("chat_template")
        if isinstance(t, list):  # named templates: the default one
            t = next((x.get("template") for x in t if x.get("name") == "default"), None)
        template = t if isinstance(t, str) else None
        for key in ("bos_token", "eos_token", "unk_token", "pad_token"):
            v = cfg.get(key)
            if isinstance(v, dict):
                v = v.get("content")
            if isinstance(v, str):
                special[key] = v
    except Exception:
        pass
    return HubCounter(tok, repo, template, special)


def _hub_reachable() -> bool:
    """False when tokenwalk or huggingface_hub is told to stay offline or the Hub cannot be
    reached (no network, a refused connection): then there is nothing to wait for, and its
    retries are skipped."""
    from tokenwalk.sources.cache import offline
    from tokenwalk.sources.hf import endpoint, unreachable

    return not offline() and unreachable(endpoint()) is None
