"""Turn what a user typed (a GGUF path or URL, a config file, a catalogue name) into a `Model`."""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tokenwalk.errors import InputError, SourceError, SpecError, TokenwalkError
from tokenwalk.gguf.constants import GGUF_DEFAULT_ALIGNMENT
from tokenwalk.gguf.reader import TensorInfo, align_up
from tokenwalk.model.model import Model

__all__ = [
    "DEFAULT_QUANT",
    "load_model",
    "model_from_config",
    "model_name",
    "estimate_header_bytes",
    "ModelLoad",
]

DEFAULT_QUANT = "Q4_K_M"


@dataclass(frozen=True)
class ModelLoad:
    """A loaded model and what loading it cost (bytes fetched, requests), for `--json`."""

    model: Model
    fetched_bytes: int = 0
    requests: int = 0
    quant_used: bool = False  # --quant picked the file of an hf:// repository
    # the first header's metadata, vocabulary included, when loaded with keep_tokens
    metadata: Mapping[str, Any] | None = None


def estimate_header_bytes(n_vocab: int, n_tensors: int) -> int:
    """Rough GGUF header size: tokenizer (~37 B a token) + tensor infos (~80 B each). Bytes.

    37 B a token fits BPE vocabularies (token string, type and a merge per token: Qwen2 7B's
    real header is 5.95 MB); SentencePiece ones store scores instead of merges and come out
    about a third smaller. Either way the header is a tiny share of a model file.
    """
    return n_vocab * 37 + n_tensors * 80 + 16_384


_BUILT: OrderedDict[str, Model] = OrderedDict()  # the models built last, by what they were built of
_BUILT_MAX = 64


def model_from_config(
    config: Mapping[str, Any], name: str, quant: str | None = None, source: str = "config"
) -> Model:
    """Synthesise the tensor table llama.cpp would write for `config` at a quant preset.

    A model is frozen and the same config always gives the same one, so the last models built
    are kept: a sweep, `models` or `compare` asks for one catalogue model many times."""
    try:
        key = json.dumps([config, name, (quant or DEFAULT_QUANT).upper(), source], sort_keys=True)
    except (TypeError, ValueError, RecursionError):  # not plain data: build it every time
        return _build_from_config(config, name, quant, source)
    if key in _BUILT:
        _BUILT.move_to_end(key)
        return _BUILT[key]
    model = _BUILT[key] = _build_from_config(config, name, quant, source)
    if len(_BUILT) > _BUILT_MAX:
        _BUILT.popitem(last=False)
    return model


def _build_from_config(
    config: Mapping[str, Any], name: str, quant: str | None, source: str
) -> Model:
    from tokenwalk.model.hf import spec_from_config
    from tokenwalk.model.quant import assign_types, ud_base
    from tokenwalk.model.synth import synthesize_tensors

    preset = ud_base(quant or "") or (quant or DEFAULT_QUANT).upper()
    spec = spec_from_config(config, source=name)
    shapes = synthesize_tensors(spec)
    infos: list[TensorInfo] = assign_types(spec, shapes, preset)
    data = sum(align_up(t.n_bytes, GGUF_DEFAULT_ALIGNMENT) for t in infos)
    header = estimate_header_bytes(spec.n_vocab, len(infos))
    return with_graph_nodes(
        Model.from_parts(
            name,
            spec,
            infos,
            file_bytes=data + header,
            file_bytes_exact=False,
            quant=preset,
            source=source,
            header_bytes=header,
            data_present=None,
        )
    )


def with_graph_nodes(model: Model) -> Model:
    """`model` with llama.cpp's compute-graph nodes per layer where they are known
    (`catalog.graph_nodes_per_layer`: the catalogue's measurements, data/graph_nodes.yaml)."""
    from tokenwalk.catalog import graph_nodes_per_layer

    nodes = graph_nodes_per_layer(model.name, model.spec.arch, bool(model.spec.n_expert))
    return replace(model, layer_nodes=nodes)


def _read_config_file(path: Path) -> tuple[dict[str, Any], str]:
    """A Hugging Face config.json, or a YAML spec (plain keys or a catalogue-shaped entry)."""
    name = path.stem if path.name != "config.json" else (path.parent.name or "config")
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except UnicodeDecodeError:
            raise SpecError(f"{path}: not a text file (expected JSON)") from None
        except OSError as exc:
            raise SourceError(f"cannot read '{path}': {exc.strerror}") from None
        except json.JSONDecodeError as exc:
            raise SpecError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
        except (ValueError, RecursionError) as exc:
            raise SpecError(f"{path}: unreadable JSON ({_parse_problem(exc)})") from None
    else:
        from tokenwalk.catalog import read_yaml

        try:
            data = read_yaml(path)
        except (ValueError, RecursionError) as exc:
            raise SpecError(f"{path}: unreadable YAML ({_parse_problem(exc)})") from None
        if isinstance(data, list) and len(data) == 1:
            data = data[0]
        if isinstance(data, dict) and isinstance(data.get("config"), dict):
            name = str(data.get("slug") or data.get("name") or name)
            data = data["config"]
    if not isinstance(data, dict):
        raise SpecError(f"{path}: expected a mapping of config keys, got {type(data).__name__}")
    return data, name


def _parse_problem(exc: BaseException) -> str:
    """What a parser's ValueError or RecursionError means, in words."""
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    if "integer string conversion" in str(exc):
        return "a number with more than 4,300 digits"
    return str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__


def load_model(
    ref: str,
    quant: str | None = None,
    *,
    no_cache: bool = False,
    progress: bool = False,
    keep_tokens: bool = False,
) -> ModelLoad:
    """Resolve `ref`: GGUF path or URL -> header; .json/.yaml -> config; else catalogue."""
    from tokenwalk.sources import is_source_ref, load_headers

    if not ref or not ref.strip():
        raise InputError("no model given")
    path = Path(ref)
    if path.suffix.lower() in (".json", ".yaml", ".yml"):
        if not path.exists():
            raise SourceError(f"no such file: '{ref}'")
        config, name = _read_config_file(path)
        return ModelLoad(model_from_config(config, name, quant, source="config"))
    if is_source_ref(ref):
        result = load_headers(
            ref, quant=quant, no_cache=no_cache, progress=progress, keep_tokens=keep_tokens
        )
        name = model_name(ref, result.headers[0].metadata)
        model = with_graph_nodes(Model.from_headers(name, result.headers))
        md = result.headers[0].metadata if keep_tokens else None
        return ModelLoad(model, result.fetched_bytes, result.requests, result.quant_used, md)
    if path.is_dir():
        cfg = path / "config.json"
        if cfg.exists():
            config, name = _read_config_file(cfg)
            return ModelLoad(model_from_config(config, name, quant, source="config"))
        raise SourceError(f"'{ref}' is a directory with no config.json or .gguf file to read")
    if path.exists():
        raise SpecError(
            f"'{ref}' is neither a GGUF file nor a .json/.yaml config "
            "(safetensors and other weight files have no header tokenwalk can read)"
        )
    from tokenwalk.catalog import find_model

    entry = find_model(ref)
    try:
        return ModelLoad(model_from_config(entry.config, entry.slug, quant, source="catalogue"))
    except TokenwalkError as exc:
        raise type(exc)(f"catalogue model '{entry.slug}': {exc}") from None


def model_name(ref: str, metadata: Mapping[str, Any]) -> str:
    """The name a GGUF model is shown by: general.name and the file, or the file alone."""
    name = metadata.get("general.name")
    base = ref.rstrip("/").rsplit("/", 1)[-1]
    if isinstance(name, str) and name.strip():
        return f"{name.strip()} ({base})" if base and len(base) < 80 else name.strip()
    return base or ref
