"""--explain of size, kv and the catalogue: parameters, bytes by tensor type, the cache."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tokenwalk.render.explain.steps import Step, flop, nbytes, show, summed, unbroken
from tokenwalk.render.fmt import params

if TYPE_CHECKING:
    from rich.console import Console

    from tokenwalk.costs.kv import KvReport
    from tokenwalk.costs.size import SizeReport


__all__ = [
    "explain_size_report",
    "explain_kv_report",
    "explain_catalogue",
]


# -- size, kv, budget --------------------------------------------------------------------------


def _type_bits(type_name: str) -> float | None:
    """Bits per weight of a ggml type: block bytes x 8 / block size (gguf's table)."""
    from tokenwalk.gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    try:
        block, type_bytes = GGML_QUANT_SIZES[GGMLQuantizationType[type_name.upper()]]
    except KeyError:
        return None
    return type_bytes * 8 / block


def _size_by_type(r: SizeReport) -> list[Step]:
    steps = []
    for t in r.by_type[:4]:
        bits = _type_bits(t.type)
        bits = bits if bits is not None else (t.tensor_bytes * 8 / t.params if t.params else 0)
        steps.append(
            Step(
                f"  {t.type}",
                "elements x bits / 8",
                f"{unbroken(params(t.params))} x {bits:.4g} / 8",
                nbytes(t.tensor_bytes),
            )
        )
    if len(r.by_type) > 4:
        rest = sum(t.tensor_bytes for t in r.by_type[4:])
        steps.append(Step("  other types", f"{len(r.by_type) - 4} more", "", nbytes(rest)))
    steps.append(
        Step(
            "tensor data",
            "sum over types",
            summed([nbytes(t.tensor_bytes) for t in r.by_type], limit=5),
            nbytes(r.tensor_bytes),
        )
    )
    return steps


def explain_size_report(r: SizeReport, console: Console) -> None:
    """params, bytes by type, bits per weight, bytes and FLOPs a token reads."""
    steps = [
        Step(
            "params",
            "sum of every tensor's elements",
            "",
            f"{unbroken(params(r.params))} ({r.params:,})",
            f"active per token: {params(r.active_params)} (routed experts at k/E)",
        ),
        *_size_by_type(r),
        Step(
            "file",
            "tensor data + header (and alignment)",
            f"{nbytes(r.tensor_bytes)} + {nbytes(r.file_bytes - r.tensor_bytes)}",
            nbytes(r.file_bytes),
        ),
        Step(
            "bits per weight",
            "file bytes x 8 / params",
            f"{nbytes(r.file_bytes)} x 8 / {unbroken(params(r.params))}",
            f"{r.bits_per_weight:.2f}",
        ),
        Step(
            "bytes per token",
            "sum over tensors of bytes x share a token reads",
            "",
            nbytes(r.weight_read_bytes_per_token),
            "share: 1 for dense weights, k/E for routed experts, one row of the embedding",
        ),
        Step(
            "FLOPs per token",
            "2 x active params",
            f"2 x {unbroken(params(r.active_params))}",
            flop(r.flops_per_token),
        ),
        Step(
            "intensity",
            "FLOPs per token / bytes per token",
            f"{flop(r.flops_per_token)} / {nbytes(r.weight_read_bytes_per_token)}",
            unbroken(f"{r.arithmetic_intensity:,.2f} FLOP/byte"),
        ),
    ]
    show(console, "How the size is worked out", steps)


def explain_kv_report(r: KvReport, console: Console) -> None:
    """per-token bytes per layer kind x cells, plus the recurrent state."""
    from tokenwalk.costs.kv import kv_element_bytes

    elem = kv_element_bytes(r.kv_type)
    steps = []
    streams = f" x {r.parallel} streams" if r.parallel > 1 else ""
    for k in r.kinds:
        if k.attention == "recurrent":
            per = k.cache_bytes / k.n_layers / max(1, r.parallel) if k.n_layers else 0
            steps.append(
                Step(
                    "  recurrent",
                    "layers x state elements x 4 bytes (f32), fixed",
                    f"{k.n_layers} x {nbytes(per)}{streams}",
                    nbytes(k.cache_bytes),
                )
            )
            continue
        cells = "pad256(min(ctx, window + ubatch))" if k.attention == "sliding" else "pad256(ctx)"
        width = k.kv_bytes_per_token / k.n_layers / elem if k.n_layers and elem else 0.0
        steps.append(
            Step(
                f"  {k.attention}, a token",
                "layers x (K width + V width) x bytes per element",
                f"{k.n_layers} x {width:,.6g} x {elem:g} B",
                nbytes(k.kv_bytes_per_token),
                f"{r.kv_type}: {elem:g} B per element; K width = KV heads x key length "
                "(MLA: the latent, no V)",
            )
        )
        steps.append(
            Step(
                f"  {k.attention}",
                f"a token x cells, cells = {cells}",
                f"{nbytes(k.kv_bytes_per_token)} x {k.cells:,}{streams}",
                nbytes(k.cache_bytes),
                f"window {k.window:,}" if k.window else "",
            )
        )
    kv_terms = [nbytes(k.cache_bytes) for k in r.kinds if k.attention != "recurrent"]
    steps.append(
        Step(
            "KV",
            "sum over attention kinds",
            summed(kv_terms) if len(kv_terms) > 1 else "",
            nbytes(r.kv_bytes),
        )
    )
    steps.append(
        Step(
            "cache",
            "KV + recurrent state",
            f"{nbytes(r.kv_bytes)} + {nbytes(r.state_bytes)}",
            nbytes(r.cache_bytes),
        )
    )
    show(console, f"How the KV cache at {r.ctx:,} tokens is worked out", steps)


# -- commands that print their own views ----------------------------------------------------------


def explain_catalogue(example: SizeReport | None, console: Console) -> None:
    """How a catalogue size is computed, on one model of the list."""
    if example is None:
        return
    steps = [
        Step(
            "size",
            "sum over tensors of elements x bits of the preset's type / 8, + header",
            note=f"{example.model} at {example.quant}, its tensors built from its config",
        ),
        *_size_by_type(example),
        Step(
            "file",
            "tensor data + header",
            f"{nbytes(example.tensor_bytes)} + {nbytes(example.file_bytes - example.tensor_bytes)}",
            nbytes(example.file_bytes),
        ),
        Step(
            "bits per weight",
            "file bytes x 8 / params",
            f"{nbytes(example.file_bytes)} x 8 / {unbroken(params(example.params))}",
            f"{example.bits_per_weight:.2f}",
        ),
    ]
    show(console, f"How a catalogue size is worked out ({example.model})", steps)
