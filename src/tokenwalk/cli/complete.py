"""Shell completion of the names a user types: catalogue models and machine slugs.

Typer calls these while the shell completes a word (`tokenwalk --install-completion` sets the
shell up); they read the catalogue, never the network, and fail silent: a completion that
raises would print a traceback into the user's prompt.
"""

from __future__ import annotations

__all__ = ["complete_model", "complete_machine"]


def complete_model(incomplete: str) -> list[str]:
    """Catalogue model names (slugs and aliases) that start with what is typed so far; none for
    a path or URL (the shell's own file completion is what those need)."""
    if "/" in incomplete:
        return []
    try:
        from tokenwalk.catalog import load_models

        names = [n for e in load_models() for n in (e.slug, *e.aliases)]
    except Exception:  # noqa: BLE001  (completion must never break the shell)
        return []
    return _starting(names, incomplete)


def complete_machine(incomplete: str) -> list[str]:
    """Machine slugs (catalogue and the user's own files) that start with what is typed; after
    a ',' (a list of machines), a '+' (rtx-3090+rtx-3060) or a count (2xrtx-3090, 2x-rtx-3090)
    the next name is completed."""
    import re

    from tokenwalk.system import COUNT_PREFIX

    split = re.match(rf"(?P<head>(?:.*[,+])?(?:{COUNT_PREFIX})?)(?P<word>.*)", incomplete)
    head, word = split["head"], split["word"]
    try:
        from tokenwalk.catalog import load_machines
        from tokenwalk.machine import user_machine_files

        slugs = [e.slug for e in load_machines(tuple(user_machine_files())) if not e.benchmark_only]
    except Exception:  # noqa: BLE001  (completion must never break the shell)
        return []
    return [head + s for s in _starting(slugs, word)]


def _starting(names: list[str], incomplete: str) -> list[str]:
    low = incomplete.lower()
    return [n for n in dict.fromkeys(names) if n.lower().startswith(low)]
