"""How big a model is, and what one decoded token reads and computes."""

from __future__ import annotations

from collections import defaultdict

from pydantic import BaseModel, ConfigDict

from tokenwalk.costs.weights import active_params, tensor_read_fraction
from tokenwalk.model.layers import Attention, Ffn
from tokenwalk.model.model import Model
from tokenwalk.units import Bytes, Count

__all__ = ["SizeReport", "TypeShare", "RoleShare", "LayerCounts", "size_report", "bits_per_weight"]


class TypeShare(BaseModel):
    model_config = ConfigDict(frozen=True)
    type: str
    n_tensors: int
    params: Count
    tensor_bytes: Bytes


class RoleShare(BaseModel):
    model_config = ConfigDict(frozen=True)
    role: str
    n_tensors: int
    params: Count
    tensor_bytes: Bytes
    weight_read_bytes_per_token: Bytes  # what a decoded token reads of this role


class LayerCounts(BaseModel):
    model_config = ConfigDict(frozen=True)
    full: int
    sliding: int
    mla: int
    recurrent: int
    none: int
    moe: int
    dense: int
    mtp: int


class SizeReport(BaseModel):
    """The answer of `tokenwalk size`."""

    model_config = ConfigDict(frozen=True)
    model: str
    architecture: str
    quant: str
    source: str
    params: Count
    active_params: Count
    n_tensors: int
    n_layers: int
    layer_counts: LayerCounts
    file_bytes: Bytes
    file_bytes_exact: bool
    tensor_bytes: Bytes
    header_bytes: Bytes
    data_present: bool | None
    bits_per_weight: float  # whole file
    bits_per_weight_data: float  # tensor data only
    weight_read_bytes_per_token: Bytes  # weights a decoded token reads (no KV)
    flops_per_token: float
    arithmetic_intensity: float  # FLOPs per byte read at one token
    by_type: list[TypeShare]
    by_role: list[RoleShare]
    fetched_bytes: Bytes = 0  # header bytes read to answer (remote sources: what was downloaded)
    requests: int = 0


def bits_per_weight(n_bytes: float, params: float) -> float:
    """Bits per weight = bytes x 8 / parameters."""
    return n_bytes * 8 / params if params else 0.0


def size_report(model: Model) -> SizeReport:
    """Parameters, bytes, bits per weight, and what one decoded token reads and computes."""
    by_type: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    by_role: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0, 0.0])
    read = 0.0
    for t in model.tensors:
        ty = by_type[t.type_name]
        ty[0] += 1
        ty[1] += t.n_elements
        ty[2] += t.n_bytes
        r = by_role[t.role.value]
        share = t.n_bytes * tensor_read_fraction(model, t, 1)
        r[0] += 1
        r[1] += t.n_elements
        r[2] += t.n_bytes
        r[3] += share
        read += share
    params = model.params
    active = active_params(model)
    flops = 2.0 * active
    layers = model.layers
    counts = LayerCounts(
        full=sum(1 for x in layers if not x.mtp and x.attention is Attention.FULL),
        sliding=sum(1 for x in layers if not x.mtp and x.attention is Attention.SLIDING),
        mla=sum(1 for x in layers if not x.mtp and x.attention is Attention.MLA),
        recurrent=sum(1 for x in layers if not x.mtp and x.attention is Attention.RECURRENT),
        none=sum(1 for x in layers if not x.mtp and x.attention is Attention.NONE),
        moe=sum(1 for x in layers if not x.mtp and x.ffn is Ffn.MOE),
        dense=sum(1 for x in layers if not x.mtp and x.ffn is Ffn.DENSE),
        mtp=sum(1 for x in layers if x.mtp),
    )
    return SizeReport(
        model=model.name,
        architecture=model.spec.arch,
        quant=model.quant,
        source=model.source,
        params=params,
        active_params=active,
        n_tensors=len(model.tensors),
        n_layers=model.spec.n_layer,
        layer_counts=counts,
        file_bytes=model.file_bytes,
        file_bytes_exact=model.file_bytes_exact,
        tensor_bytes=model.tensor_bytes,
        header_bytes=model.header_bytes,
        data_present=model.data_present,
        bits_per_weight=bits_per_weight(model.file_bytes, params),
        bits_per_weight_data=bits_per_weight(model.tensor_bytes, params),
        weight_read_bytes_per_token=read,
        flops_per_token=flops,
        arithmetic_intensity=flops / read if read else 0.0,
        by_type=sorted(
            (
                TypeShare(type=k, n_tensors=v[0], params=v[1], tensor_bytes=v[2])
                for k, v in by_type.items()
            ),
            key=lambda s: -s.tensor_bytes,
        ),
        by_role=sorted(
            (
                RoleShare(
                    role=k,
                    n_tensors=int(v[0]),
                    params=int(v[1]),
                    tensor_bytes=int(v[2]),
                    weight_read_bytes_per_token=v[3],
                )
                for k, v in by_role.items()
            ),
            key=lambda s: -s.tensor_bytes,
        ),
    )
