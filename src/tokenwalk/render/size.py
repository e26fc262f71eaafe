"""Rich view of a `SizeReport`."""

from __future__ import annotations

from rich.console import Console, Group

from tokenwalk.costs.size import SizeReport
from tokenwalk.render.fmt import count, human_bytes, params
from tokenwalk.render.layout import Facts, FitTable, title_of
from tokenwalk.render.safe import safe_markup, safe_text


def render_size(r: SizeReport, console: Console) -> None:
    parts = [safe_markup(r.model), safe_markup(r.architecture), safe_markup(r.quant)]
    title = title_of(parts, console.width)
    head = Facts(title, value_justify="left")
    exact = "exact, from the header" if r.file_bytes_exact else "estimated from the config"
    head.add_row("parameters", params(r.params), f"exactly {count(r.params)}")
    head.add_row("active per token", params(r.active_params), "weights a decoded token multiplies")
    head.add_row("file size", human_bytes(r.file_bytes), f"{count(r.file_bytes)} bytes, {exact}")
    head.add_row(
        "bits per weight",
        f"{r.bits_per_weight:.2f}",
        f"{r.bits_per_weight_data:.2f} counting tensor data only",
    )
    head.add_row(
        "read per token",
        human_bytes(r.weight_read_bytes_per_token),
        "bytes a decode step reads (weights only)",
    )
    head.add_row("FLOPs per token", f"{r.flops_per_token / 1e9:,.2f} GFLOP", "2 x active weights")
    head.add_row(
        "arithmetic intensity", f"{r.arithmetic_intensity:.1f} FLOP/byte", "at one token per pass"
    )
    lc = r.layer_counts
    kinds = ", ".join(
        f"{v} {k}"
        for k, v in (
            ("full", lc.full),
            ("sliding", lc.sliding),
            ("MLA", lc.mla),
            ("recurrent", lc.recurrent),
            ("no-attention", lc.none),
        )
        if v
    )
    ffn = ", ".join(f"{v} {k}" for k, v in (("MoE", lc.moe), ("dense", lc.dense)) if v)
    mtp = f" + {lc.mtp} MTP" if lc.mtp else ""
    head.add_row("layers", f"{r.n_layers}{mtp}", f"attention: {kinds}; FFN: {ffn}")
    head.add_row("tensors", count(r.n_tensors), "")
    if r.data_present is False:
        head.add_row("tensor data", "absent", "header only: sizes come from the tensor table")

    by_type = FitTable(title="By quant type", title_justify="left")
    for col in ("type", "tensors", "params", "bytes", "share"):
        by_type.add_column(col, justify="left" if col == "type" else "right")
    for s in r.by_type:
        by_type.add_row(
            safe_text(s.type),
            count(s.n_tensors),
            params(s.params),
            human_bytes(s.tensor_bytes),
            f"{s.tensor_bytes / r.tensor_bytes * 100:.1f}%" if r.tensor_bytes else "",
        )

    by_role = FitTable(title="By role", title_justify="left")
    for col in ("role", "tensors", "params", "bytes", "read per token"):
        by_role.add_column(col, justify="left" if col == "role" else "right")
    for s in r.by_role:
        by_role.add_row(
            safe_text(s.role),
            count(s.n_tensors),
            params(s.params),
            human_bytes(s.tensor_bytes),
            human_bytes(s.weight_read_bytes_per_token),
        )
    console.print(Group(head, "", by_type, "", by_role))
