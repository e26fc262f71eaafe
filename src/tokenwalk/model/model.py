"""`Model`: a list of layers and a table of tensors, each tensor with a role.

Every number tokenwalk prints comes from here: parameters, bytes, what a token reads. A model
read from a GGUF header and the same model synthesised from its config go through the same
type, so the two can be checked against each other.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace
from enum import Enum

from tokenwalk.gguf.reader import Header, TensorInfo
from tokenwalk.model.layers import Attention, Ffn, Layer, build_layers
from tokenwalk.model.spec import ArchSpec, from_gguf_metadata

__all__ = ["Role", "Tensor", "Model", "tensor_role"]


class Role(str, Enum):
    EMBEDDING = "embedding"
    OUTPUT = "output"
    ATTENTION = "attention"
    LINEAR = "linear"  # linear attention / SSM / short convolution
    FFN = "ffn"
    EXPERT = "expert"
    SHARED_EXPERT = "shared_expert"
    ROUTER = "router"
    NORM = "norm"
    MTP = "mtp"
    OTHER = "other"


@dataclass(frozen=True)
class Tensor:
    """A tensor of the table with its role and the layer it belongs to (None for globals)."""

    info: TensorInfo
    role: Role
    layer: int | None

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def n_elements(self) -> int:
        return self.info.n_elements

    @property
    def n_bytes(self) -> int:
        return self.info.n_bytes

    @property
    def type_name(self) -> str:
        return self.info.type_name


_BLOCK = re.compile(r"^blk\.(\d+)\.(.+)$")
_LINEAR_PREFIXES = ("ssm_", "shortconv", "conv1d", "time_mix", "channel_mix")


def tensor_role(name: str, layers: tuple[Layer, ...]) -> tuple[Role, int | None]:
    """Classify a tensor by its llama.cpp name and the kind of layer it sits in."""
    m = _BLOCK.match(name)
    if m is None:
        if name.startswith("token_embd.") and not name.startswith("token_embd_norm"):
            return Role.EMBEDDING, None
        if name.startswith("output.") or name == "output":
            return Role.OUTPUT, None
        if "norm" in name:
            return Role.NORM, None
        return Role.OTHER, None
    il = int(m.group(1))
    rest = m.group(2)
    layer = layers[il] if il < len(layers) else None
    if layer is None or layer.mtp:
        return Role.MTP, il
    if "norm" in rest.split(".")[0]:
        return Role.NORM, il
    if rest.startswith("ffn_gate_inp_shexp"):
        return Role.SHARED_EXPERT, il
    if rest.startswith(("ffn_gate_inp", "exp_probs_b")):
        return Role.ROUTER, il
    if "_exps" in rest or "_exp." in rest:
        return Role.EXPERT, il
    if "_shexp" in rest:
        return Role.SHARED_EXPERT, il
    if rest.startswith("ffn_"):
        return Role.FFN, il
    if rest.startswith(_LINEAR_PREFIXES) or layer.attention is Attention.RECURRENT:
        return Role.LINEAR, il
    if rest.startswith("attn_"):
        return Role.ATTENTION, il
    return Role.OTHER, il


@dataclass(frozen=True)
class Model:
    """A model as tokenwalk sees it: hyperparameters, layers and a roled tensor table."""

    name: str
    spec: ArchSpec
    layers: tuple[Layer, ...]
    tensors: tuple[Tensor, ...]
    file_bytes: int  # exact for a GGUF, estimated for a config
    file_bytes_exact: bool
    quant: str  # preset name, or the file type a GGUF declares
    source: str  # "gguf", "config", "catalogue"
    header_bytes: int = 0
    data_present: bool | None = None
    tokenizer_model: str | None = None
    # llama.cpp's compute-graph nodes per decoding layer, measured for the catalogue
    # (data/graph_nodes.yaml; `catalog.graph_nodes_per_layer`); None where unknown
    layer_nodes: float | None = None
    # sliding-window layers given a cache of the full context (llama.cpp --swa-full)
    swa_full_layers: int = 0

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def from_parts(
        cls,
        name: str,
        spec: ArchSpec,
        infos: list[TensorInfo] | tuple[TensorInfo, ...],
        **kw: object,
    ) -> Model:
        names = {t.name for t in infos}
        if "output.weight" not in names and not spec.tied_embeddings:
            spec = replace(spec, tied_embeddings=True)
        layers = build_layers(spec)
        tensors = []
        for info in infos:
            role, il = tensor_role(info.name, layers)
            tensors.append(Tensor(info, role, il))
        return cls(name=name, spec=spec, layers=layers, tensors=tuple(tensors), **kw)  # type: ignore[arg-type]

    @classmethod
    def from_headers(cls, name: str, headers: tuple[Header, ...] | list[Header]) -> Model:
        """A model from one GGUF header, or from every shard of a split file."""
        first = headers[0]
        infos = [t for h in headers for t in h.tensors]
        n_vocab = 0
        for t in infos:
            if t.name == "token_embd.weight" and len(t.shape) >= 2:
                n_vocab = t.shape[1]
        spec = from_gguf_metadata(first.metadata, n_vocab_from_tensors=n_vocab)
        if n_vocab and spec.n_vocab != n_vocab:
            spec = replace(spec, n_vocab=n_vocab)
        file_bytes = sum(h.expected_file_size for h in headers)
        present = [h.data_present for h in headers]
        data_present = None if None in present else all(present)
        ftype = first.metadata.get("general.file_type")
        quant = _file_type_name(ftype) if isinstance(ftype, int) else "unknown"
        tok = first.metadata.get("tokenizer.ggml.model")
        return cls.from_parts(
            name,
            spec,
            infos,
            file_bytes=file_bytes,
            file_bytes_exact=True,
            quant=quant,
            source="gguf",
            header_bytes=sum(h.data_offset for h in headers),
            data_present=data_present,
            tokenizer_model=tok if isinstance(tok, str) else None,
        )

    def with_swa_full(self) -> Model:
        """The model as llama.cpp runs it with --swa-full: each sliding-window layer keeps a
        cache of the whole context (llama-kv-cache-iswa.cpp: size_swa = size_base) and its
        attention reads every cell held, so it costs what a full-attention layer costs."""
        sliding = [x for x in self.layers if x.attention is Attention.SLIDING]
        if not sliding:
            return self
        layers = tuple(
            replace(x, attention=Attention.FULL, window=0)
            if x.attention is Attention.SLIDING
            else x
            for x in self.layers
        )
        return replace(self, layers=layers, swa_full_layers=len(sliding))

    @property
    def swa_full(self) -> bool:
        return self.swa_full_layers > 0

    # -- totals --------------------------------------------------------------------------------
    @property
    def params(self) -> int:
        return sum(t.n_elements for t in self.tensors)

    @property
    def tensor_bytes(self) -> int:
        return sum(t.n_bytes for t in self.tensors)

    @property
    def is_moe(self) -> bool:
        return any(layer.ffn is Ffn.MOE for layer in self.layers)

    @property
    def n_vocab(self) -> int:
        return self.spec.n_vocab

    @property
    def embedding(self) -> Tensor | None:
        for t in self.tensors:
            if t.role is Role.EMBEDDING:
                return t
        return None

    @functools.cached_property
    def decoding_layers(self) -> tuple[Layer, ...]:
        return tuple(layer for layer in self.layers if not layer.mtp)

    @property
    def has_mtp(self) -> bool:
        return self.spec.n_nextn > 0


def _file_type_name(ftype: int) -> str:
    from tokenwalk.gguf.constants import LlamaFileType

    try:
        name = LlamaFileType(ftype).name
    except ValueError:
        return f"file type {ftype}"
    return name.removeprefix("MOSTLY_").replace("ALL_F32", "F32")
