"""gguf's constant tables, without the rest of the gguf package.

The tables (value types, ggml types, quant block sizes, file types) live in `gguf.constants`,
a module that imports only `enum` and `typing`. Importing it the usual way runs the package's
`__init__`, which loads numpy and every reader and writer: about 130 ms that reading a header
does not need. So the module is loaded from the installed package's file on its own; if gguf is
already imported, or its layout ever changes, the normal import is used instead.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def _load() -> ModuleType:
    if "gguf.constants" in sys.modules:
        return sys.modules["gguf.constants"]
    name = "tokenwalk.gguf._gguf_constants"
    if name in sys.modules:
        return sys.modules[name]
    try:
        spec = importlib.util.find_spec("gguf")
        assert spec is not None and spec.submodule_search_locations
        path = Path(next(iter(spec.submodule_search_locations))) / "constants.py"
        file_spec = importlib.util.spec_from_file_location(name, path)
        assert file_spec is not None and file_spec.loader is not None
        module = importlib.util.module_from_spec(file_spec)
        sys.modules[name] = module
        file_spec.loader.exec_module(module)
        return module
    except Exception:  # any surprise: the ordinary, slower import
        sys.modules.pop(name, None)
        import gguf.constants

        return gguf.constants


_c = _load()
GGML_QUANT_SIZES = _c.GGML_QUANT_SIZES
GGUF_DEFAULT_ALIGNMENT: int = _c.GGUF_DEFAULT_ALIGNMENT
GGUF_MAGIC: int = _c.GGUF_MAGIC
GGMLQuantizationType = _c.GGMLQuantizationType
GGUFValueType = _c.GGUFValueType
LlamaFileType = _c.LlamaFileType

__all__ = [
    "GGML_QUANT_SIZES",
    "GGUF_DEFAULT_ALIGNMENT",
    "GGUF_MAGIC",
    "GGMLQuantizationType",
    "GGUFValueType",
    "LlamaFileType",
]
