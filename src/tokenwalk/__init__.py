"""tokenwalk: inference-cost calculator for local language models.

The public API mirrors the commands: load a model, then ask a cost function about it. Every
error raised on purpose is a `TokenwalkError`. Names are imported lazily so that the command
line starts fast.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from tokenwalk.errors import (
    GGUFError,
    InputError,
    MetadataError,
    SourceError,
    SpecError,
    TokenwalkError,
    TruncatedError,
    UnknownArchitectureError,
    UnknownNameError,
    UnsupportedError,
)

__version__ = "0.1.0"

_LAZY = {
    "read_header": "tokenwalk.gguf.reader",
    "Header": "tokenwalk.gguf.reader",
    "TensorInfo": "tokenwalk.gguf.reader",
    "Model": "tokenwalk.model.model",
    "Role": "tokenwalk.model.model",
    "ArchSpec": "tokenwalk.model.spec",
    "load_model": "tokenwalk.model.resolve",
    "model_from_config": "tokenwalk.model.resolve",
    "size_report": "tokenwalk.costs.size",
    "kv_report": "tokenwalk.costs.kv",
    "budget_report": "tokenwalk.costs.budget",
}

__all__ = [
    "GGUFError",
    "InputError",
    "MetadataError",
    "SourceError",
    "SpecError",
    "TokenwalkError",
    "TruncatedError",
    "UnknownArchitectureError",
    "UnknownNameError",
    "UnsupportedError",
    "read_header",
    "Header",
    "TensorInfo",
    "Model",
    "Role",
    "ArchSpec",
    "load_model",
    "model_from_config",
    "size_report",
    "kv_report",
    "budget_report",
]

if TYPE_CHECKING:
    from tokenwalk.costs.budget import budget_report
    from tokenwalk.costs.kv import kv_report
    from tokenwalk.costs.size import size_report
    from tokenwalk.gguf.reader import Header, TensorInfo, read_header
    from tokenwalk.model.model import Model, Role
    from tokenwalk.model.resolve import load_model, model_from_config
    from tokenwalk.model.spec import ArchSpec


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tokenwalk' has no attribute '{name}'")
    return getattr(import_module(module), name)
