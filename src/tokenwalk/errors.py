"""The error hierarchy: every refusal tokenwalk makes is a `TokenwalkError`.

The CLI turns any of these into one line on stderr and exit code 2.
"""

from __future__ import annotations

__all__ = [
    "TokenwalkError",
    "GGUFError",
    "TruncatedError",
    "UnsupportedError",
    "MetadataError",
    "UnknownArchitectureError",
    "UnknownNameError",
    "SpecError",
    "InputError",
    "SourceError",
]


class TokenwalkError(Exception):
    """Base class of every error tokenwalk raises on purpose."""


class GGUFError(TokenwalkError):
    """The bytes are not a GGUF header we can read (bad magic, bad value, bad layout)."""


class TruncatedError(GGUFError):
    """The header ends before the bytes it announces."""


class UnsupportedError(GGUFError):
    """A well-formed header using something we (and llama.cpp) do not read: a version, a type id."""


class MetadataError(TokenwalkError):
    """A metadata key is missing, of the wrong type or out of range for the architecture."""


class UnknownArchitectureError(TokenwalkError):
    """An architecture tokenwalk does not model; the message lists the ones it does."""


class UnknownNameError(TokenwalkError):
    """A catalogue name (model, machine, quant preset) that does not exist."""


class SpecError(TokenwalkError):
    """A YAML or config.json specification that does not validate."""


class InputError(TokenwalkError):
    """An impossible number or combination of options."""


class SourceError(TokenwalkError):
    """Bytes could not be fetched: missing file, network failure, refused request."""
