"""Shared fixtures: real header-only GGUF files cut by scripts/make_fixtures.py."""

from __future__ import annotations

import copy
import hashlib
import os
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True, scope="session")
def _no_user_machine_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every test sees the catalogue alone: not the machine file of whoever runs the suite (a
    `probe --write` or `calibrate --from` of theirs would change the numbers tests pin), and a
    command that stores a machine without `--machines-file` writes to a scratch directory.
    Session-wide, so that module fixtures resolving a machine see it too."""
    scratch = tmp_path_factory.mktemp("config") / "machines.yaml"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("tokenwalk.machine.user_machines_path", lambda: scratch)
        mp.delenv("TOKENWALK_MACHINES", raising=False)
        yield


@pytest.fixture(autouse=True, scope="session")
def _scratch_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Compiled catalogues and fetched headers go to a scratch directory, not to the cache of
    whoever runs the suite (tests that swap the shipped data would replace its entries)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TOKENWALK_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        yield


@pytest.fixture(autouse=True, scope="session")
def _one_fit_per_input() -> Iterator[None]:
    """A fit of the timing model's hierarchy takes seconds, and the same input always gives the
    same fit: the suite fits the shipped data in five places (calibrate's table on two pages of
    the docs, its JSON, two tests of calibrate). Each distinct input is fitted once and every
    caller gets its own copy of that fit; a fit from a starting point is always run."""
    import tokenwalk.timing.calibrate
    import tokenwalk.timing.fit

    real = tokenwalk.timing.fit.fit_hierarchy
    fits: dict[str, object] = {}

    def remembered(design: Any, train: Any = None, **kw: Any) -> Any:
        if kw.get("start") is not None:
            return real(design, train, **kw)
        rows = [
            (o.label, o.machine, o.phase, o.bandwidth_gbs, o.tflops, o.tokens, o.passes,
             o.measured_tok_s, sorted(o.keys.items()))
            for o in design.obs
        ]  # fmt: skip
        sigma = kw.get("sigma") or tokenwalk.timing.fit.PRIOR_SIGMA
        given = sorted((k, v) for k, v in kw.items() if k != "sigma")
        mask = None if train is None else np.asarray(train, dtype=bool).tobytes()
        key = hashlib.sha256(
            pickle.dumps((rows, mask, sorted((k, list(v)) for k, v in sigma.items()), given))
        ).hexdigest()
        if key not in fits:
            fits[key] = real(design, train, **kw)
        return copy.deepcopy(fits[key])

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(tokenwalk.timing.fit, "fit_hierarchy", remembered)
        mp.setattr(tokenwalk.timing.calibrate, "fit_hierarchy", remembered)
        yield


@pytest.fixture(autouse=True, scope="session")
def _one_click_command() -> Iterator[None]:
    """Typer builds the click command of the whole app (every command's options, from their
    signatures) at each call: once a process for a user, a thousand times in this suite. Built
    once here for each setting of typer's own variables; click makes a new context for every
    call, so no call sees another's state."""
    import typer.main

    real = typer.main.get_command
    built: dict[tuple, tuple[object, object]] = {}

    def once(typer_instance: Any) -> Any:
        # typer reads its own variables as it builds (shell detection for --show-completion)
        env = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("_TYPER")))
        # commands are registered as they are first run: a new one means a new build
        key = (id(typer_instance), len(typer_instance.registered_commands), env)
        if key not in built:
            built[key] = (typer_instance, real(typer_instance))
        return built[key][1]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(typer.main, "get_command", once)
        yield


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture(scope="session")
def gemma3_path() -> Path:
    return FIXTURES / "gemma-3-270m-q4_k_m.header.gguf"


@pytest.fixture(scope="session")
def qwen2_path() -> Path:
    return FIXTURES / "deepseek-r1-distill-qwen-7b-q4_k_m.header.gguf"


@pytest.fixture(scope="session")
def gemma4_path() -> Path:
    return FIXTURES / "gemma-4-vocab.header.gguf"
