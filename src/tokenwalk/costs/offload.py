"""Where llama.cpp puts each tensor on a system of cards and a host, what each device holds, and
how long a pass takes when the model is split.

Placement (llama.cpp `llama_model_base::load_tensors`, `common/fit.cpp`; see
docs/offload.md for the sources):

- `-ngl N` puts the LAST N "layers" on the GPUs, the output head counting as layer n_layer_all
  (MTP blocks included in n_layer_all) and going first: GPU layers are il >= n_layer_all + 1 - N.
- The token embedding always stays in RAM; a tied head is duplicated onto the output device.
- Layers are split over several GPUs in proportion to their free memory: layer il goes to the
  first device whose cumulative share exceeds (il - i_gpu_start) / N.
- `--cpu-moe` / `--n-cpu-moe N` keep the routed experts (`ffn_*_exps`) of all / the first N
  layers in RAM; attention, router, shared experts and KV stay with the layer.
- `auto` is `--fit`: everything if it fits with 1024 MiB free per device; else an unset context
  shrinks towards 4096; else for a MoE the experts of the LAST layers go to RAM (layers converted
  to full GPU layers front to back, card by card: `_MoeFit`), for a dense model the most whole
  layers that fit. The first layer of a card whose experts did not fit may then keep part of its
  FFN on that card (`BOUNDARY_PARTS`: up, up + gate, or attention only), as fit.cpp's
  LAYER_FRACTION_* do, the rest going to the next card or RAM (`Partial`).
- Each layer's KV cache lives with its layer; MTP blocks are not loaded unless an MTP draft
  asks for them (`Offload.load_mtp`).

Memory per device = weights placed there + KV of its layers + recurrent state + its compute
buffer (`compute_buffer_bytes`).

Time of a pass (`system_pass`): the model's parts run one after another, each on its device at
that device's rates and fitted efficiencies (`passes.pass_seconds`): GPU parts at VRAM speed,
RAM-resident weights on the CPU at RAM speed; every change of device moves the hidden state,
n_embd x tokens x 4 bytes, over the link. A micro-batch of 32 tokens or more copies the
RAM-resident weights it uses over the link and multiplies them on the GPU (op offload), while
attention of a RAM-resident layer stays on the CPU beside its KV (llama.cpp's scheduler offloads
whenever it may; `--no-op-offload` keeps the work on the CPU). `--split-mode tensor` adds the
cards' bandwidth and compute and pays two all-reduces per layer.

A card in another box (`rpc:NAME`) holds its share like any card; each evaluation of a split on
it sends that split's inputs, the graph and gets its outputs over the network, then waits for
them: one round trip (`rpc_terms`).
Formulas: docs/timing-model.md ("Split systems"), docs/offload.md ("Cards in another box").
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, replace
from functools import cached_property

from pydantic import BaseModel, ConfigDict

from tokenwalk.costs.command import Arg, blocks_regex, command_line
from tokenwalk.costs.kv import context_cells, kv_bytes_per_cell, sliding_cells
from tokenwalk.costs.weights import weight_bytes_read
from tokenwalk.costs.workload import largest_that_fits
from tokenwalk.errors import InputError
from tokenwalk.machine import Machine
from tokenwalk.model.layers import Attention, Ffn, Layer
from tokenwalk.model.model import Model, Role, Tensor
from tokenwalk.system import Offload, System
from tokenwalk.timing.passes import (
    DevicePart,
    PassWork,
    RpcLink,
    pass_cost,
    pass_work,
)
from tokenwalk.units import Bytes

__all__ = [
    "HOST",
    "FIT_MARGIN_BYTES",
    "FIT_MIN_CTX",
    "OP_OFFLOAD_MIN_BATCH",
    "ALLREDUCE_LATENCY_S",
    "ALLREDUCE_LINK_SHARE",
    "HOST_EXPERT_LAYER_S",
    "LINK_COPY_EFFICIENCY",
    "ON_THE_CPU",
    "Placement",
    "Partial",
    "buft_names",
    "DeviceMemory",
    "SystemPass",
    "activation_floats",
    "compute_buffer_bytes",
    "place",
    "fit_auto",
    "device_memory",
    "system_pass",
    "tensor_parallel_machine",
    "RPC_TENSOR_BYTES",
    "RPC_GRAPH_RECOMPUTE_BYTES",
    "RPC_NODES_PER_LAYER",
    "rpc_graph_bytes",
    "rpc_terms",
]

HOST = -1
MIB = 1 << 20
FIT_MARGIN_BYTES = 1024 * MIB  # llama.cpp --fit-target default, per device
FIT_MIN_CTX = 4096  # llama.cpp --fit-ctx default
OP_OFFLOAD_MIN_BATCH = 32  # GGML_OP_OFFLOAD_MIN_BATCH default (ggml-cuda.cu, ggml-metal)
# One all-reduce of a small tensor across cards (NCCL over PCIe): derived from llama.cpp #19378,
# 4 x RTX 4090, gpt-oss-120b tg128 at 180 t/s with --split-mode tensor: 5.5 ms a token, of which
# the cards' reads and per-layer overheads take about 3.7 ms, leaves 1.8 ms for 72 all-reduces.
ALLREDUCE_LATENCY_S = 25e-6
# The share of the link's rate an all-reduce of a prefill's hidden states moves at: GeForce
# cards have no PCIe peer-to-peer, so NCCL stages each ring step through host memory. Derived
# from llama.cpp #19378, 4 x RTX 4090, Llama 3.2 1B F16 pp512 with --split-mode tensor (18,753
# t/s: 27.3 ms a micro-batch, of which the cards' own work takes 3.5 ms and 32 all-reduces of
# 4.2 MB the rest); checked on gpt-oss-120b pp512 of the same run (5,446 t/s; docs/offload.md).
ALLREDUCE_LINK_SHARE = 0.268
# A block whose only work on the CPU is its routed experts pays a fixed cost there (the hidden
# state copied out and back with a stream sync each way, the CPU threads woken for the expert
# ops) instead of the CPU fit's per-layer overhead, which covers a whole block: derived from the
# RTX 5080 runs of Qwen3.5-35B-A3B (research section 7: -ot exps=CPU 51.0 tok/s, --n-cpu-moe 24
# 69.6 tok/s; 16 blocks' experts moved to the GPU save 5.2 ms, 0.33 ms a block, of which the
# expert bytes at RAM speed are 0.22 ms).
HOST_EXPERT_LAYER_S = 100e-6
# Op offload copies weights over the link synchronously: the share of PCIe's rate a large
# host-to-device copy sustains (CUDA's bandwidthTest: about 26 GB/s on PCIe 4.0 x16 of 31.5).
LINK_COPY_EFFICIENCY = 0.85
# How a host part whose CPU does the work says so (`DevicePart.how`)
ON_THE_CPU = "on the CPU"
F32 = 4
# llama.cpp's RPC backend (ggml/src/ggml-rpc/ggml-rpc.cpp): a serialized tensor (`rpc_tensor`)
# is 296 bytes; GRAPH_COMPUTE sends | device (4) | n_nodes (4) | n_nodes x 8 | n_tensors (4) |
# n_tensors x 296 |; a graph whose uid is unchanged is run again by GRAPH_RECOMPUTE, whose
# request is the device (4 bytes) (#15405, #22701).
RPC_TENSOR_BYTES = 296
RPC_GRAPH_HEADER_BYTES = 12
RPC_GRAPH_RECOMPUTE_BYTES = 4
# Graph nodes per transformer block. Assumed, no source: llama.cpp's graph of a llama-type
# block has about 30 operations (norms, projections, rope, cache writes, attention, FFN, adds);
# the one measured RPC graph (1,080 nodes, 1,400 tensors, #15405) fits a model of 32 to 36
# blocks at that rate. The bytes it stands for are small beside the hidden state.
RPC_NODES_PER_LAYER = 30
# what the network part of a split pass is, as a report states it
RPC_HOW = "RPC: inputs, graph and outputs of each remote split, and a round trip"


# -- what each layer weighs ----------------------------------------------------------------------


def _is_output(t: Tensor) -> bool:
    return t.layer is None and (t.role is Role.OUTPUT or t.name.startswith("output"))


@dataclass(frozen=True)
class _Weights:
    """Bytes of a model by where llama.cpp may place them (per block index, n_layer_all)."""

    dense: tuple[int, ...]  # a block's tensors other than routed experts
    experts: tuple[int, ...]  # its routed experts (ffn_*_exps)
    largest_expert: tuple[int, ...]  # its largest single expert tensor
    largest: tuple[int, ...]  # its largest single tensor
    embd: int  # token embedding and other input-side globals: always in RAM
    output: int  # output head + output norm (+ the tied copy)


def _weights(model: Model, load_mtp: bool) -> _Weights:
    n = model.spec.n_layer_all
    dense, experts, lx, lg = [0] * n, [0] * n, [0] * n, [0] * n
    embd = output = 0
    for t in model.tensors:
        if t.layer is None:
            if _is_output(t):
                output += t.n_bytes
            else:
                embd += t.n_bytes
            continue
        if t.role is Role.MTP and not load_mtp:
            continue  # TENSOR_SKIP: llama.cpp allocates nothing for it
        il = t.layer
        if t.role is Role.EXPERT:
            experts[il] += t.n_bytes
            lx[il] = max(lx[il], t.n_bytes)
        else:
            dense[il] += t.n_bytes
        lg[il] = max(lg[il], t.n_bytes)
    if model.spec.tied_embeddings and model.embedding is not None:
        output += model.embedding.n_bytes  # TENSOR_DUPLICATED onto the output device
    return _Weights(tuple(dense), tuple(experts), tuple(lx), tuple(lg), embd, output)


# -- placement -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Partial:
    """A block split by part, as fit.cpp's first partial layer of a device: `part` (a key of
    BOUNDARY_PARTS) stays on the block's GPU, the tensors its pattern matches go to `to` (RAM,
    or on several cards the next card)."""

    block: int
    part: str
    to: int


@dataclass(frozen=True)
class Placement:
    """Where each block, its experts and the output head live. Devices are 0..n_devices-1;
    HOST (-1) is RAM. `ngl` is llama.cpp's -ngl value that gives the layer split."""

    n_devices: int
    layer_device: tuple[int, ...]  # per block, n_layer_all of them
    output_device: int
    experts_host: frozenset[int]  # blocks whose routed experts are in RAM
    ngl: int
    ctx: int  # the context reserved (--fit may shrink an unset one)
    args: tuple[Arg, ...]  # llama.cpp flags that reproduce it
    partial: tuple[Partial, ...] = ()  # --fit's partial layers: blocks split by part
    notes: tuple[str, ...] = ()  # what the -ot overrides keep where, in words

    @property
    def flags(self) -> str:
        """The llama.cpp flags, as a user pastes them (`command.command_line`)."""
        return command_line(self.args)

    @property
    def note(self) -> str:
        """What the -ot overrides do, said beside the command, never inside it."""
        return "; ".join(self.notes)

    @cached_property
    def _partial_of(self) -> dict[int, Partial]:
        return {p.block: p for p in self.partial}

    @cached_property
    def all_on_gpu(self) -> bool:
        return (
            HOST not in self.layer_device
            and self.output_device != HOST
            and not (self.experts_host)
            and all(p.to != HOST for p in self.partial)
        )

    def expert_device(self, il: int) -> int:
        """Where the routed experts of block `il` run (a partial block's: where its overflow
        goes, RAM or the next card)."""
        split = self._partial_of.get(il)
        if split is not None:
            return split.to
        if il in self.experts_host:
            return HOST
        return self.layer_device[il]

    def tensor_device(self, t: Tensor) -> int:
        """Device of one block tensor: a partial block's by BOUNDARY_PARTS' pattern."""
        assert t.layer is not None
        split = self._partial_of.get(t.layer)
        if split is not None:
            moved = boundary_pattern(t.layer, split.part).search(t.name)
            return split.to if moved else self.layer_device[t.layer]
        return self.expert_device(t.layer) if t.role is Role.EXPERT else self.layer_device[t.layer]


# fit.cpp `get_overflow_pattern`: the tensors of the partial boundary block that go to RAM; what
# the pattern leaves stays on the GPU. "up": attention + ffn_up (LAYER_FRACTION_UP), "gate":
# attention + up + gate (LAYER_FRACTION_GATE), "attn": attention only (LAYER_FRACTION_ATTN;
# the router and shared experts go too, as the pattern matches them).
BOUNDARY_PARTS: dict[str, str] = {
    "attn": r"ffn_(gate|up|gate_up|down).*",
    "up": r"ffn_(gate|gate_up|down).*",
    "gate": r"ffn_down.*",
}


def boundary_pattern(il: int, part: str) -> re.Pattern[str]:
    """llama.cpp's -ot pattern (regex_search on the tensor name) for block `il`'s `part`."""
    return re.compile(rf"blk\.{il}\.{BOUNDARY_PARTS[part]}")


def _proportional(i_gpu_start: int, n_all: int, shares: list[float]) -> list[int]:
    """Device of each index i_gpu_start..n_all (the last one is the output): the first device
    whose cumulative share of free memory exceeds (il - i_gpu_start) / act (upper_bound)."""
    total = sum(shares) or 1.0
    cum, acc = [], 0.0
    for s in shares:
        acc += s / total
        cum.append(acc)
    act = n_all + 1 - i_gpu_start
    out = []
    for il in range(i_gpu_start, n_all + 1):
        frac = (il - i_gpu_start) / act
        out.append(min(bisect.bisect_right(cum, frac), len(shares) - 1))
    return out


def place(
    model: Model,
    offload: Offload,
    shares: list[float],
    *,
    ctx: int,
    experts_host: frozenset[int] | None = None,
    ngl: int | None = None,
    counts: list[int] | None = None,
    partial: tuple[Partial, ...] = (),
    buft_names: tuple[str, ...] = (),
) -> Placement:
    """The placement llama.cpp makes for `-ngl` (offload.gpu_layers, None: all), `--cpu-moe`,
    `--n-cpu-moe`, over devices with free memory `shares` (bytes). `counts` gives layers per
    device explicitly (llama.cpp's -ts as --fit writes it), from the first device on.
    `partial` blocks (on a GPU, their experts not in `experts_host`) keep their part of the
    FFN on the GPU and send the rest to RAM or another card (`BOUNDARY_PARTS`); `buft_names`
    names the cards in the flags (CUDA0, ...)."""
    n_all = model.spec.n_layer_all
    n_gpu = n_all + 1 if ngl is None else ngl
    if ngl is None and offload.gpu_layers is not None:
        n_gpu = offload.gpu_layers
    n_gpu = max(0, min(n_gpu, n_all + 1))
    start = n_all + 1 - n_gpu
    if counts is not None:
        devs = [d for d, c in enumerate(counts) for _ in range(c)]
    else:
        devs = _proportional(start, n_all, shares) if n_gpu else []
    layer_device = [HOST] * n_all
    output_device = HOST
    for k, il in enumerate(range(start, n_all + 1)):
        if il == n_all:
            output_device = devs[k]
        else:
            layer_device[il] = devs[k]
    moe = [il for il, layer in enumerate(model.layers) if layer.ffn is Ffn.MOE]
    if experts_host is None:
        if offload.cpu_moe:
            experts_host = frozenset(moe)
        elif offload.n_cpu_moe:
            experts_host = frozenset(il for il in moe if il < offload.n_cpu_moe)
        else:
            experts_host = frozenset()
    # experts of a RAM layer are in RAM anyway: keep the set to layers on a GPU
    experts_host = frozenset(il for il in experts_host if layer_device[il] != HOST)
    args: list[Arg] = [("-ngl", str(n_gpu) if n_gpu <= n_all else "all")]
    notes: list[str] = []
    if experts_host:
        args.append(_experts_flag(experts_host, moe, model))
        if args[-1][0] == "-ot":
            notes.append(f"routed experts of {_blocks_words(experts_host)} in RAM")
    partial = tuple(p for p in partial if layer_device[p.block] != HOST)
    for p in partial:
        pattern = boundary_pattern(p.block, p.part).pattern
        to = "CPU" if p.to == HOST else _buft_name(buft_names, p.to)
        args.append(("-ot", f"{pattern}={to}"))
        where = "in RAM" if p.to == HOST else f"on {to}"
        notes.append(f"block {p.block}: {_PART_WORDS[p.part]}, the rest of its FFN {where}")
    if counts is not None and len(counts) > 1:
        args.append(("-ts", ",".join(str(c) for c in counts)))
    return Placement(
        n_devices=len(shares),
        layer_device=tuple(layer_device),
        output_device=output_device,
        experts_host=experts_host,
        ngl=n_gpu,
        ctx=ctx,
        args=tuple(args),
        partial=partial,
        notes=tuple(notes),
    )


def _buft_name(names: tuple[str, ...], d: int) -> str:
    return names[d] if d < len(names) else f"GPU{d}"


# llama.cpp's names of a backend's devices (ggml_backend_dev_name), for -ot flags
_BUFT_PREFIX = {"cuda": "CUDA", "rocm": "ROCm", "vulkan": "Vulkan", "sycl": "SYCL", "metal": "MTL"}


def buft_names(system: System) -> tuple[str, ...]:
    """The name llama.cpp gives each card of `system` (CUDA0, CUDA1, Vulkan0, ...), numbered
    per backend among the cards of this box; a card in another box is an RPC device, which
    llama.cpp names after its endpoint (RPC[host:port]) and this names RPC0, RPC1, ..."""
    seen: dict[str, int] = {}
    out = []
    for i, d in enumerate(system.devices):
        prefix = "RPC" if system.is_remote(i) else _BUFT_PREFIX.get(d.backend, d.backend.upper())
        out.append(f"{prefix}{seen.get(prefix, 0)}")
        seen[prefix] = seen.get(prefix, 0) + 1
    return tuple(out)


_PART_WORDS = {
    "attn": "attention on its card",
    "up": "attention and ffn_up on its card",
    "gate": "attention, ffn_up and ffn_gate on its card",
}


def _blocks_words(blocks: frozenset[int]) -> str:
    """'blocks 18-35', 'block 7', 'blocks 3, 5-9': the runs of consecutive blocks."""
    runs: list[list[int]] = []
    for b in sorted(blocks):
        if runs and runs[-1][1] == b - 1:
            runs[-1][1] = b
        else:
            runs.append([b, b])
    words = ", ".join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in runs)
    return ("block " if len(blocks) == 1 else "blocks ") + words


def _experts_flag(host: frozenset[int], moe: list[int], model: Model) -> Arg:
    """--cpu-moe, --n-cpu-moe N, or an -ot override naming the blocks whose routed experts
    go to RAM (a run may cross blocks without experts, which the pattern cannot match)."""
    if set(moe) <= host:
        return ("--cpu-moe", None)
    top = max(host)
    if host == {il for il in moe if il <= top}:
        return ("--n-cpu-moe", str(top + 1))
    no_experts = set(range(model.spec.n_layer_all)) - set(moe)
    return ("-ot", rf"blk\.{blocks_regex(host, no_experts)}\.ffn_.*_exps=CPU")


# -- memory --------------------------------------------------------------------------------------


def activation_floats(model: Model, layer: Layer, *, experts: bool = True) -> float:
    """f32 values per micro-batch token live at a layer's peak: the residual stream and the
    normed input (2 x n_embd) plus the larger of

        attention: MLA absorbed path over all heads, n_head x (3 kv_lora_rank + rope)
        FFN:       dense 3 x n_ff (gate, up, activated);
                   MoE 3 x n_ff_exp x k + n_embd x k (weighted expert outputs before the sum)
                   + 3 x n_ff_shexp x shared experts

    `experts` False leaves the routed experts out (they run elsewhere)."""
    spec = model.spec
    attn = 0.0
    if layer.attention is Attention.MLA:
        # absorbed path: q_nope x wk_b (kv_lora_rank), q with rope (kv_lora_rank + rope), and
        # the attention output in the latent (kv_lora_rank), over all heads
        n_head = spec.n_head[layer.index]
        attn = n_head * (2 * spec.kv_lora_rank + layer.k_width)
    ffn = 0.0
    if layer.ffn is Ffn.DENSE:
        ffn = 3.0 * layer.n_ff
    elif layer.ffn is Ffn.MOE:
        if experts:
            ffn = 3.0 * layer.n_ff_exp * layer.n_expert_used + spec.n_embd * layer.n_expert_used
        ffn += 3.0 * spec.n_ff_shexp * max(layer.n_expert_shared, 1 if spec.n_ff_shexp else 0)
        if spec.dense_ffn_beside_experts and layer.n_ff:
            ffn += 3.0 * layer.n_ff
    return 2.0 * spec.n_embd + max(attn, ffn)


def logits_floats(model: Model) -> float:
    """f32 values per micro-batch token when the head runs: n_vocab logits + 2 x n_embd (a CLI
    or llama-bench reserves logits for every token of the micro-batch), plus the rows some
    graphs still hold then (`ArchSpec.head_extra_rows`): n_embd x (k + shared experts) on
    DeepSeek-V2-Lite (240.26 MiB at ubatch 512 where the logits alone give 208), two n_embd on
    Kimi K2, one for Qwen3-Next and Qwen3.5/3.6, two for Granite 4.0 H, none for Qwen3-MoE
    (tests/data/fit_params.md)."""
    spec = model.spec
    return spec.n_vocab + (2.0 + spec.head_extra_rows) * spec.n_embd


def compute_buffer_bytes(
    model: Model,
    ubatch: int,
    layers: list[Layer],
    *,
    head: bool,
    experts: bool = True,
    ctx_cells: int = 0,
) -> int:
    """One device's compute buffer, the larger of

        layer peak: ubatch x max over `layers` of activation_floats x 4
                    + the KQ mask while attention runs, ctx_cells x ubatch x 2 (f16)
        head:       ubatch x (n_vocab + 2 n_embd) x 4, if the output head runs there

    Buffers are reused from layer to layer, so the peak counts once. Checked with
    `llama-fit-params -v` (tests/data/fit_params.md): Mixtral-shaped 204.01 MiB at ubatch 512
    and -c 4096, 816.05 MiB at ubatch 2048, 928.05 MiB at ubatch 2048 and -c 32768."""
    peak = max((activation_floats(model, x, experts=experts) for x in layers), default=0.0)
    attends = any(x.has_kv for x in layers)
    layer_bytes = ubatch * peak * F32 + (ctx_cells * ubatch * 2 if attends and layers else 0)
    head_bytes = ubatch * logits_floats(model) * F32 if head else 0.0
    return int(max(layer_bytes, head_bytes))


def mask_bytes(ctx_cells: int, ubatch: int) -> int:
    """The KQ mask, a graph input in the host's compute buffer: cells x ubatch x 4 bytes."""
    return ctx_cells * ubatch * F32


class DeviceMemory(BaseModel):
    """What one device (a GPU, or the host's RAM) holds. Bytes; capacity in the vendor's unit
    converted (GiB), `room` = capacity - system (or what the GPU may hold)."""

    model_config = ConfigDict(frozen=True)
    device: str  # slug
    name: str
    role: str  # "gpu" or "host"
    capacity_bytes: Bytes
    system_bytes: Bytes
    room_bytes: Bytes
    weights_bytes: Bytes
    kv_bytes: Bytes  # KV + recurrent state of its layers
    buffers_bytes: Bytes
    used_bytes: Bytes
    free_bytes: Bytes
    layers: int  # blocks placed here (for the host: blocks whose weights are all in RAM)
    expert_layers: int  # blocks whose routed experts are here while the block is elsewhere
    output: bool  # the output head is here
    fits: bool
    remote: bool = False  # a card in another box, reached over RPC
    # the host of a machine of one memory: its capacity is the GPU's, its room what the GPU
    # leaves of it (capacity - system - the GPU's use)
    shared: bool = False


def _layer_kv(model: Model, layer: Layer, ctx: int, kv_type: str, parallel: int, ub: int) -> float:
    if layer.mtp and not layer.has_kv:
        return 0.0
    if layer.attention is Attention.RECURRENT:
        return layer.state_elems * 4.0 * parallel
    if not layer.has_kv:
        return 0.0
    if layer.attention is Attention.SLIDING:
        cells = sliding_cells(ctx, layer.window, ub, parallel)
    else:
        cells = context_cells(ctx, parallel)
    return kv_bytes_per_cell(layer, kv_type) * cells * parallel


def device_memory(
    model: Model,
    system: System,
    placement: Placement,
    *,
    kv_type: str = "f16",
    parallel: int = 1,
    ubatch: int = 512,
    system_bytes: list[int],
    op_offload: bool = True,
    load_mtp: bool = False,
    tensor_split: int = 1,
) -> list[DeviceMemory]:
    """Memory of every GPU of `system` and of its host under `placement`, at placement.ctx.
    `system_bytes` holds the share held by others per device, the host last. With
    `tensor_split` cards sharing the work, each holds 1/n of weights, KV and buffers. Where
    the host is the GPU's own CPU cores (`System.shared`), both draw on one memory: the host
    has the room the GPU leaves."""
    assert system.host is not None
    w = _weights(model, load_mtp)
    ctx = placement.ctx
    nd = placement.n_devices
    weights = [0.0] * (nd + 1)  # index -1 is the host
    kv = [0.0] * (nd + 1)
    layers_at: list[list[Layer]] = [[] for _ in range(nd + 1)]
    expert_layers = [0] * (nd + 1)
    n_layers = [0] * (nd + 1)
    weights[HOST] += w.embd
    weights[placement.output_device] += w.output
    host_weights = [0]
    split_blocks = {p.block for p in placement.partial}
    for layer in model.layers:
        il = layer.index
        d = placement.layer_device[il]
        x = placement.expert_device(il)
        if x != d and il in split_blocks:  # a partial block: tensor by tensor
            moved = [
                t.n_bytes
                for t in model.tensors
                if t.layer == il and placement.tensor_device(t) == x
            ]
            weights[d] += w.dense[il] + w.experts[il] - sum(moved)
            weights[x] += sum(moved)
            expert_layers[x] += 1
            if x == HOST:
                host_weights.append(max(moved, default=0))
        else:
            weights[d] += w.dense[il]
            weights[x] += w.experts[il]
            if x != d and w.experts[il]:
                expert_layers[x] += 1
        if layer.mtp and not load_mtp:
            continue
        kv[d] += _layer_kv(model, layer, ctx, kv_type, parallel, ubatch)
        n_layers[d] += 1
        layers_at[d].append(layer)
        if d == HOST:
            host_weights.append(w.largest[il])
        elif x == HOST and il not in split_blocks:
            host_weights.append(w.largest_expert[il])
    cells = context_cells(ctx, parallel)
    out: list[DeviceMemory] = []
    devices = [*system.devices[:nd], system.host]
    for i, dev in enumerate(devices):
        k = HOST if i == nd else i
        is_host = k == HOST
        head = placement.output_device == k
        buf = compute_buffer_bytes(
            model, ubatch, layers_at[k], head=head, ctx_cells=0 if k == HOST else cells
        )
        if is_host:
            expert_only = [
                x
                for x in model.decoding_layers
                if placement.expert_device(x.index) == HOST
                and placement.layer_device[x.index] != HOST
            ]
            buf = max(
                buf,
                compute_buffer_bytes(model, ubatch, expert_only, head=False),
            ) + mask_bytes(cells, ubatch)
        elif k == 0 and op_offload and ubatch >= OP_OFFLOAD_MIN_BATCH:
            buf += max(host_weights)  # the largest RAM weight, copied in for one op at a time
        wk, kvk = weights[k], kv[k]
        cards = [(i, dev)]
        if not is_host and tensor_split > 1:  # every card holds its share of everything
            wk, kvk, buf = wk / tensor_split, kvk / tensor_split, int(buf / tensor_split)
            cards = list(enumerate(system.devices))
        for j, card in cards:
            capacity = int(card.memory_bytes or 0)
            sysb = system_bytes[-1] if is_host else system_bytes[min(j, len(system_bytes) - 2)]
            room = capacity - sysb
            if not is_host and card.gpu_usable_bytes is not None:
                room = min(room, int(card.gpu_usable_bytes))
            shared = is_host and system.shared
            if shared:
                room -= int(sum(d.used_bytes for d in out))
            used = wk + kvk + buf
            out.append(
                DeviceMemory(
                    device=card.slug,
                    name=card.name,
                    role="host" if is_host else "gpu",
                    capacity_bytes=capacity,
                    system_bytes=sysb,
                    room_bytes=room,
                    weights_bytes=int(wk),
                    kv_bytes=kvk,
                    buffers_bytes=buf,
                    used_bytes=used,
                    free_bytes=room - used,
                    layers=n_layers[k],
                    expert_layers=expert_layers[k],
                    output=head,
                    fits=room - used >= 0,
                    remote=not is_host and system.is_remote(j),
                    shared=shared,
                )
            )
    return out


def fit_auto(
    model: Model,
    system: System,
    *,
    ctx: int | None,
    kv_type: str,
    parallel: int,
    ubatch: int,
    system_bytes: list[int],
    offload: Offload,
    margin: int = FIT_MARGIN_BYTES,
) -> Placement:
    """llama.cpp's `--fit`: keep `margin` free on every GPU (the host's RAM is not checked).

    1. everything on the GPUs if it fits;
    2. if all cards together lack room, an unset context shrinks, by linear interpolation
       between FIT_MIN_CTX and the trained context (several cards keep a safety of (cards + 1)
       x the weights of a layer / 2, a MoE's / 6); one card is then done;
    3. a dense model keeps the most whole layers, filling the GPUs back to front
       (`_fill_back_to_front`);
    4. a MoE fills them back to front with its layers' experts in RAM, then, if that leaves a
       surplus, front to back with whole layers, each card trying part of one more layer
       whose rest goes to the next card or RAM (`_MoeFit`)."""
    nd = len(system.devices)
    shares = [
        float(max(0, (d.memory_bytes or 0) - s))
        for d, s in zip(system.devices, system_bytes, strict=False)
    ]
    trained = model.spec.n_ctx_train or 4096
    c0 = ctx if ctx is not None else trained

    def gpus(p: Placement) -> list[DeviceMemory]:
        """The cards' memory: --fit measures the cards only (the host's RAM is not its
        concern; mmap pages in)."""
        mem = device_memory(
            model,
            system,
            p,
            kv_type=kv_type,
            parallel=parallel,
            ubatch=ubatch,
            system_bytes=system_bytes,
            op_offload=offload.op_offload,
            load_mtp=offload.load_mtp,
        )
        return [m for m in mem if m.role == "gpu"]

    def free(p: Placement) -> list[float]:
        return [m.free_bytes for m in gpus(p)]

    def ok(p: Placement) -> bool:
        return all(f >= margin for f in free(p))

    full = place(model, offload, shares, ctx=c0)
    at_full = gpus(full)
    if all(m.free_bytes >= margin for m in at_full):
        return full
    c = c0
    moe = [x.index for x in model.layers if x.ffn is Ffn.MOE and not x.mtp]
    if ctx is None and trained > FIT_MIN_CTX and sum(m.free_bytes - margin for m in at_full) < 0:
        # fit.cpp step 2: the context that the memory of all cards together allows, by linear
        # interpolation between FIT_MIN_CTX and the trained context; several cards keep a
        # safety of (cards + 1) x half a layer (dense) or a sixth (MoE: whole tensors move)
        free_min = sum(free(place(model, offload, shares, ctx=FIT_MIN_CTX)))
        room = free_min - nd * margin
        if nd > 1:
            per_layer = sum(m.weights_bytes for m in at_full) / max(model.spec.n_layer, 1)
            room -= (nd + 1) * per_layer / (6 if moe else 2)
        c = FIT_MIN_CTX
        if room > 0:
            span = free_min - sum(m.free_bytes for m in at_full)
            c += int((trained - FIT_MIN_CTX) * room / span) if span > 0 else 0
            c = max(c - c % 256, FIT_MIN_CTX)
            if nd == 1:
                return _with_ctx(place(model, offload, shares, ctx=c), c)
    ctx_flag = c if ctx is None else None
    if not moe:
        return _with_ctx(_fill_back_to_front(model, offload, shares, c, ok, nd), ctx_flag)
    fitter = _MoeFit(model, offload, shares, c, free, margin, buft_names(system), moe)
    return _with_ctx(fitter.run(), ctx_flag)


@dataclass
class _Ngl:
    """fit.cpp's `ngl_t` for one card: its layers, how many of them are partial (the last ones
    of its range), and what of its first partial layer stays (`part`) and where the rest goes."""

    n_layer: int = 0
    n_part: int = 0
    part: str = "moe"  # "moe" (routed experts to RAM) or a key of BOUNDARY_PARTS
    to: int = HOST

    @property
    def n_full(self) -> int:
        return self.n_layer - self.n_part


class _MoeFit:
    """`--fit` for a mixture of experts over one or more cards, as `common/fit.cpp` steps 3 and
    4 do it (`llama_params_fit_impl`), with tokenwalk's memory of each try (`device_memory`):

    3. fill the cards back to front with "dense-only" layers (routed experts in RAM), each card
       as many as fit; the last card's range starts with one whole layer (fit.cpp counts the
       output head as that card's whole layer, but its -ot patterns start at the range's first
       block, so that block keeps its experts);
    4. if the dense-only model leaves a surplus over all cards, go front to back: each card
       turns the dense-only layers that follow it (its own and later cards') into whole layers
       of its own while they fit, then tries one more layer in part: attention + ffn_up
       (LAYER_FRACTION_UP), then + ffn_gate, else attention only, the rest of that block going
       to the next card (or RAM from the last card), both cards keeping more than the margin.

    fit.cpp searches the counts by false position on measured memory; a bisection on the same
    monotone memory finds the same largest count that fits."""

    def __init__(
        self,
        model: Model,
        offload: Offload,
        shares: list[float],
        ctx: int,
        free,  # noqa: ANN001
        margin: int,
        names: tuple[str, ...],
        moe: list[int],
    ) -> None:
        self.model, self.offload, self.shares, self.ctx = model, offload, shares, ctx
        self.free, self.margin, self.names = free, margin, names
        self.nd = len(shares)
        self.n_all = model.spec.n_layer_all
        self.moe = set(moe)  # the MoE blocks, MTP blocks left out

    def placement(self, st: list[_Ngl]) -> Placement:
        """fit.cpp `set_ngl_tensor_split_tbo`: -ngl, -ts and the -ot patterns of `st`."""
        ngl = sum(n.n_layer for n in st)
        il0 = self.n_all + 1 - ngl
        experts: set[int] = set()
        partial: list[Partial] = []
        for n in st:
            il0 += n.n_full
            for il in range(il0, il0 + n.n_part):
                if il >= self.n_all:  # the output head's index: no block to match
                    continue
                if il == il0 and n.part != "moe":
                    partial.append(Partial(il, n.part, n.to))
                elif il in self.moe:
                    experts.add(il)
            il0 += n.n_part
        return place(
            self.model,
            self.offload,
            self.shares,
            ctx=self.ctx,
            experts_host=frozenset(experts),
            ngl=ngl,
            counts=[n.n_layer for n in st],
            partial=tuple(partial),
            buft_names=self.names,
        )

    def fits(self, st: list[_Ngl], d: int) -> bool:
        return self.free(self.placement(st))[d] >= self.margin

    def _largest(self, lo: int, hi: int, make, d: int) -> int:  # noqa: ANN001
        """The largest k in [lo, hi) with make(k) fitting card d; make(lo) is taken to fit."""
        return largest_that_fits(lambda k: self.fits(make(k), d), lo, hi)

    def run(self) -> Placement:
        nd = self.nd
        everything = place(
            self.model, self.offload, self.shares, ctx=self.ctx, experts_host=frozenset(self.moe)
        )
        surplus = sum(f - self.margin for f in self.free(everything))
        st = [_Ngl() for _ in range(nd)]
        # step 3: dense-only layers, back to front
        for d in reversed(range(nd)):
            unassigned = self.n_all + 1 - sum(n.n_layer for n in st[d + 1 :])
            if unassigned <= 0:
                continue

            def dense_only(k: int, d: int = d, base: list[_Ngl] = st) -> list[_Ngl]:
                out = [replace(n) for n in base]
                out[d] = _Ngl(k, k if d < nd - 1 else max(k - 1, 0))
                return out

            high = dense_only(unassigned)
            k = unassigned if self.fits(high, d) else self._largest(0, unassigned, dense_only, d)
            st = dense_only(k)
        if surplus <= 0:
            return self.placement(st)
        # step 4: whole layers front to back, and part of one more
        ds = nd
        for d in reversed(range(nd)):
            if st[d].n_layer == 0:
                break
            ds = d
        d = 0
        while d <= ds < nd:
            high = [replace(n) for n in st]
            for jd in range(ds, nd):
                move = high[jd].n_layer if jd < nd - 1 else high[jd].n_layer - 1
                high[d].n_layer += move
                high[jd].n_layer -= move
                high[jd].n_part = 0
            if self.fits(high, d):
                st, ds = high, nd - 1
            else:

                def convert(
                    step: int, d: int = d, ds: int = ds, base: list[_Ngl] = st
                ) -> tuple[list[_Ngl], int]:
                    out = [replace(n) for n in base]
                    done, j = 0, ds
                    while j < nd:
                        n = min(step - done, out[j].n_part)
                        out[j].n_layer -= n
                        out[j].n_part -= n
                        out[d].n_layer += n
                        done += n
                        if out[j].n_part > 0:
                            break
                        j += 1
                    return out, j

                delta = high[d].n_full - st[d].n_full
                step = self._largest(0, delta, lambda k, f=convert: f(k)[0], d)
                st, ds = convert(step)
            st, ds = self._part_of_one_more(st, d, ds)
            d += 1
        return self.placement(st)

    def _part_of_one_more(self, st: list[_Ngl], d: int, ds: int) -> tuple[list[_Ngl], int]:
        """fit.cpp's "try to fit at least part of one more layer" on card d: the next
        dense-only layer joins card d in part, the rest of it going to card d + 1 (RAM from the
        last card); both must keep strictly more than the margin."""
        nd = self.nd
        if ds >= nd or st[ds].n_layer <= (0 if d < nd - 1 else 1) or st[ds].n_part < 1:
            return st, ds
        test = [replace(n) for n in st]
        dst = ds
        test[dst].n_layer -= 1
        test[dst].n_part -= 1
        test[d].n_layer += 1
        test[d].n_part += 1
        if test[dst].n_part == 0:  # after both, as fit.cpp checks (the same card when dst == d)
            dst += 1
        test[d].to = d + 1 if d < nd - 1 else HOST

        def good(part: str) -> list[_Ngl] | None:
            t = [replace(n) for n in test]
            t[d].part = part
            free = self.free(self.placement(t))
            if free[d] > self.margin and (d + 1 == nd or free[d + 1] > self.margin):
                return t
            return None

        up = good("up")
        if up is not None:
            return good("gate") or up, dst
        attn = good("attn")
        return (attn, dst) if attn is not None else (st, ds)


def _fill_back_to_front(
    model: Model,
    offload: Offload,
    shares: list[float],
    ctx: int,
    ok,  # noqa: ANN001
    nd: int,
) -> Placement:
    """A dense model's whole layers from the last device backwards: each device takes as many
    of the highest remaining layers (the output head first) as fit (fit.cpp step 3)."""
    n_all = model.spec.n_layer_all
    counts = [0] * nd
    taken = 0
    for d in reversed(range(nd)):
        while taken < n_all + 1:
            counts[d] += 1
            p = place(
                model,
                offload,
                shares,
                ctx=ctx,
                ngl=taken + 1,
                counts=counts,
            )
            if not ok(p):
                counts[d] -= 1
                break
            taken += 1
    return place(model, offload, shares, ctx=ctx, ngl=taken, counts=counts)


def _with_ctx(p: Placement, ctx: int | None) -> Placement:
    """`p` with the context --fit chose (-c), where the user gave none."""
    return p if ctx is None else replace(p, args=(*p.args, ("-c", str(ctx))))


# -- time ----------------------------------------------------------------------------------------


class SystemPass(BaseModel):
    """A pass over a split model: the parts in order and their sum."""

    model_config = ConfigDict(frozen=True)
    time_s: float
    memory_s: float
    compute_s: float
    expert_s: float  # the routed-expert products' share of compute_s, all devices
    overhead_s: float
    link_s: float
    bytes: float  # weights + KV + state read, all devices
    weight_bytes: float
    kv_read_bytes: float
    state_bytes: float
    flops: float
    bound: str
    parts: list[DevicePart]
    gpu_share: float  # share of the weights a step reads that sit on a GPU
    rpc: RpcLink | None = None  # cards in another box: what crosses the network


def _part_model(model: Model, tensors: list[Tensor], layers: set[int]) -> Model:
    """`model` cut to `tensors` and the decoding `layers` (their KV and attention)."""
    kept = tuple(
        x if x.index in layers and not x.mtp else replace(x, mtp=True) for x in model.layers
    )
    spec = replace(model.spec, tied_embeddings=False)
    return replace(model, spec=spec, layers=kept, tensors=tuple(tensors))


@dataclass
class _Part:
    device: int
    tensors: list[Tensor]
    layers: set[int]  # blocks whose attention and KV run here
    compute_layers: int  # blocks that run some of their products here (overhead)


def _parts(model: Model, placement: Placement, load_mtp: bool) -> list[_Part]:
    """The model cut by device, in the order a pass runs them (input, blocks, head)."""
    by_dev: dict[int, _Part] = {}

    def part(d: int) -> _Part:
        if d not in by_dev:
            by_dev[d] = _Part(d, [], set(), 0)
        return by_dev[d]

    counted: dict[int, set[int]] = {}
    for t in model.tensors:
        if t.layer is None:
            d = placement.output_device if _is_output(t) else HOST
            part(d).tensors.append(t)
            continue
        if t.role is Role.MTP and not load_mtp:
            continue
        il = t.layer
        d = placement.tensor_device(t)
        part(d).tensors.append(t)
        counted.setdefault(d, set()).add(il)
    emb = model.embedding
    if model.spec.tied_embeddings and emb is not None and placement.output_device != HOST:
        part(placement.output_device).tensors.append(Tensor(emb.info, Role.OUTPUT, None))
    elif model.spec.tied_embeddings and emb is not None:
        part(HOST).tensors.append(Tensor(emb.info, Role.OUTPUT, None))
    for layer in model.decoding_layers:
        part(placement.layer_device[layer.index]).layers.add(layer.index)
    for d, ils in counted.items():
        part(d).compute_layers = len(ils)
    return [by_dev[d] for d in sorted(by_dev, key=lambda d: (d != HOST, d))]


def _crossings(model: Model, placement: Placement) -> int:
    """Times the hidden state changes device along a pass: input (RAM) -> blocks -> head, a
    block whose experts are elsewhere crossing there and back."""
    where = HOST
    n = 0
    for layer in model.decoding_layers:
        d = placement.layer_device[layer.index]
        if d != where:
            n += 1
            where = d
        x = placement.expert_device(layer.index)
        if x != d and layer.ffn is Ffn.MOE:
            n += 2
    if placement.output_device != where:
        n += 1
    return n


def tensor_parallel_machine(system: System) -> Machine:
    """The cards of `--split-mode tensor` seen as one: bandwidth, compute and memory add."""
    devs = system.devices
    first = devs[0]
    mem = [d.memory_bytes for d in devs]
    return first.model_copy(
        update=dict(
            slug=system.slug,
            name=system.name + " (tensor split)",
            bandwidth_gbs=sum(d.bandwidth_gbs for d in devs),
            tflops=sum(d.tflops or 0 for d in devs) or None,
            memory_bytes=sum(m for m in mem if m) if all(mem) else None,
        )
    )


def _cost(work: PassWork, m: Machine) -> tuple[float, float, float, float, str, float]:
    """(time, memory, compute, overhead, bound, routed experts' share of compute) of a part on
    its device (`passes.pass_cost`)."""
    c = pass_cost(work, m)
    return c.time_s, c.memory_s, c.compute_s, c.overhead_s, c.bound, c.expert_s


def system_pass(
    model: Model,
    system: System,
    placement: Placement,
    n_tokens: int,
    ctx: int,
    *,
    kv_type: str = "f16",
    streams: int = 1,
    n_logits: float | None = None,
    op_offload: bool = True,
    load_mtp: bool = False,
    tensor_split: bool = False,
) -> SystemPass:
    """Time of a pass of `n_tokens` per stream at `ctx` over the split model (see the module's
    description): the parts' times and the link transfers add, no overlap."""
    if system.host is None:
        raise InputError("a split pass needs a host beside the cards")
    host = system.host
    link = (system.link_gbs or 1.0) * 1e9
    tokens = n_tokens * streams
    devices = [tensor_parallel_machine(system)] if tensor_split else list(system.devices)
    parts: list[DevicePart] = []
    mem_s = comp_s = over_s = link_s = exp_s = 0.0
    w_bytes = kv_b = st_b = flops = 0.0
    gpu_w = 0.0
    for part in _parts(model, placement, load_mtp):
        sub = _part_model(model, part.tensors, part.layers)
        work = pass_work(sub, n_tokens, ctx, kv_type=kv_type, streams=streams, n_logits=n_logits)
        full = len(part.layers)
        expert_only = max(part.compute_layers - full, 0)
        work = work.model_copy(
            update={"n_layers": full if part.device == HOST else part.compute_layers}
        )
        w_bytes += work.weight_bytes
        kv_b += work.kv_read_bytes
        st_b += work.state_bytes
        flops += work.flops
        if part.device != HOST:
            dev = devices[min(part.device, len(devices) - 1)]
            t, m, c, o, bound, x = _cost(work, dev)
            gpu_w += work.weight_bytes
            mem_s, comp_s, over_s, exp_s = mem_s + m, comp_s + c, over_s + o, exp_s + x
            parts.append(_work_part(dev.slug, "gpu", work, t, bound))
            continue
        # the host's part: on the CPU, or (a micro-batch of 32 tokens or more) its weights
        # copied over the link and multiplied on the first GPU, attention staying on the CPU
        if system.shared and not host.tflops:
            raise InputError(
                f"the catalogue has no rate for the CPU cores of '{system.first.slug}', which "
                "run what is placed off its GPU: give --host-tflops (llama.cpp's threads x clock "
                "x FP32 FLOP per cycle)"
            )
        t, m, c, o, bound, x = _cost(work, host)
        t, o = t + expert_only * HOST_EXPERT_LAYER_S, o + expert_only * HOST_EXPERT_LAYER_S
        how = ON_THE_CPU
        part_link = 0.0
        streamed = weight_bytes_read(sub, tokens) - _lookup_bytes(sub, tokens)
        if op_offload and tokens >= OP_OFFLOAD_MIN_BATCH and streamed > 0:
            gpu = devices[0]
            per_row = work.attention_flops / max(tokens, 1)
            on_gpu = work.model_copy(
                update=dict(
                    kv_read_bytes=0.0,
                    state_bytes=0.0,
                    attention_flops=0.0,
                    row_flops=max(work.row_flops - per_row, 0.0),
                )
            )
            on_cpu = work.model_copy(
                update=dict(
                    weight_bytes=0.0,
                    matmul_flops=0.0,
                    expert_flops=0.0,
                    expert_row_flops=0.0,
                    row_flops=per_row,
                    cpu_row_flops=per_row,
                )
            )
            tg, mg, cg, og, bg, x = _cost(on_gpu, gpu)
            tc, mc, cc, oc, _, _ = _cost(on_cpu, host)
            copy_s = streamed / (link * LINK_COPY_EFFICIENCY)
            # the scheduler offloads whenever it may, faster or not (--no-op-offload stops it)
            t, m, c, o = copy_s + tg + tc, mg + mc, cg + cc, og + oc
            part_link = copy_s
            bound = "link" if copy_s > tg + tc else bg
            how = "weights copied over the link, multiplied on the GPU"
        mem_s, comp_s, over_s, link_s = mem_s + m, comp_s + c, over_s + o, link_s + part_link
        exp_s += x
        parts.append(_work_part(host.slug, "host", work, t, bound, how))
    hops = _crossings(model, placement)
    if tensor_split and len(system.devices) > 1:
        nd = len(system.devices)
        # two all-reduces per layer (attention and FFN outputs), ring: 2 (nd-1)/nd x the tensor
        n_red = 2 * len(model.decoding_layers)
        size = model.spec.n_embd * tokens * F32
        ring = 2 * (nd - 1) / nd * size / (link * ALLREDUCE_LINK_SHARE)
        hop_s = n_red * (ring + ALLREDUCE_LATENCY_S)
    else:
        # a layer split moves the hidden state between cards, the host <-> card hops likewise
        hop_s = hops * model.spec.n_embd * tokens * F32 / link
    link_s += hop_s
    if hop_s:
        parts.append(
            DevicePart(
                device="link",
                role="link",
                weight_bytes=0.0,
                kv_read_bytes=0.0,
                flops=0.0,
                time_s=hop_s,
                bound="link",
                how="all-reduces" if tensor_split else f"{hops} hidden-state transfers",
            )
        )
    rpc = None
    if system.has_rpc and not tensor_split:
        rpc = rpc_terms(
            model,
            system,
            placement,
            n_tokens,
            ctx,
            streams=streams,
            n_logits=n_logits,
            load_mtp=load_mtp,
        )
        link_s += rpc.time_s
        parts.append(
            DevicePart(
                device="network",
                role="link",
                weight_bytes=0.0,
                kv_read_bytes=0.0,
                flops=0.0,
                time_s=rpc.time_s,
                bound="link",
                how=RPC_HOW,
            )
        )
    total = sum(p.time_s for p in parts)
    slowest = max(parts, key=lambda p: p.time_s)
    return SystemPass(
        time_s=total,
        memory_s=mem_s,
        compute_s=comp_s,
        expert_s=exp_s,
        overhead_s=over_s,
        link_s=link_s,
        bytes=w_bytes + kv_b + st_b,
        weight_bytes=w_bytes,
        kv_read_bytes=kv_b,
        state_bytes=st_b,
        flops=flops,
        bound=f"{slowest.role} {slowest.bound}" if slowest.role != "link" else "link",
        parts=parts,
        gpu_share=gpu_w / w_bytes if w_bytes else 1.0,
        rpc=rpc,
    )


def _work_part(
    device: str, role: str, work: PassWork, time_s: float, bound: str, how: str = ""
) -> DevicePart:
    """A device's share of a split pass: the weights, KV reads and FLOPs of its `work`, and
    its time."""
    return DevicePart(
        device=device,
        role=role,
        weight_bytes=work.weight_bytes,
        kv_read_bytes=work.kv_read_bytes,
        flops=work.flops,
        state_bytes=work.state_bytes,
        time_s=time_s,
        bound=bound,
        how=how,
    )


def _lookup_bytes(model: Model, tokens: int) -> float:
    """Bytes of the embedding rows a pass looks up (GET_ROWS is never offloaded)."""
    emb = [t for t in model.tensors if t.role is Role.EMBEDDING]
    if not emb:
        return 0.0
    e = emb[0]
    rows = e.info.shape[1] if len(e.info.shape) > 1 else 1
    return e.n_bytes * min(1.0, tokens / max(rows, 1))


# -- RPC -----------------------------------------------------------------------------------------


def rpc_graph_bytes(n_nodes: int, n_tensors: int) -> int:
    """The GRAPH_COMPUTE request: 12 + n_nodes x 8 + n_tensors x 296 bytes (ggml-rpc.cpp
    `serialize_graph`; the research's 423,040 B for 1,080 nodes and 1,400 tensors leaves out the
    12-byte header)."""
    return RPC_GRAPH_HEADER_BYTES + 8 * n_nodes + RPC_TENSOR_BYTES * n_tensors


@dataclass
class _Run:
    device: int
    layers: list[Layer]
    head: bool


def _remote_runs(model: Model, placement: Placement, system: System) -> list[_Run]:
    """The splits a pass evaluates on rpc: cards: each stretch of consecutive work (blocks,
    the head) on one remote device; a block whose experts are elsewhere leaves and comes back,
    starting a new split."""
    runs: list[_Run] = []
    where: int | None = None

    def visit(d: int, layer: Layer | None, head: bool = False) -> None:
        nonlocal where
        if d != where:
            where = d
            if d != HOST and system.is_remote(d):
                runs.append(_Run(d, [], False))
        if d != HOST and system.is_remote(d):
            if layer is not None and (not runs[-1].layers or runs[-1].layers[-1] is not layer):
                runs[-1].layers.append(layer)
            runs[-1].head = runs[-1].head or head

    visit(HOST, None)  # the token embedding
    for layer in model.decoding_layers:
        d = placement.layer_device[layer.index]
        visit(d, layer)
        x = placement.expert_device(layer.index)
        if x != d and layer.ffn is Ffn.MOE:
            visit(x, layer)
            visit(d, layer)
    visit(placement.output_device, None, head=True)
    return runs


def rpc_terms(
    model: Model,
    system: System,
    placement: Placement,
    n_tokens: int,
    ctx: int,
    *,
    streams: int = 1,
    n_logits: float | None = None,
    load_mtp: bool = False,
) -> RpcLink:
    """What a pass of `n_tokens` per stream at `ctx` sends to the rpc: cards, and its time.
    Per evaluation of a remote split (llama.cpp research notes 3.4, ggml-rpc.cpp), with
    T = n_tokens x streams tokens:

        inputs   SET_TENSOR: the hidden state n_embd x T x 4, the positions T x 4, and the KQ
                 mask n_kv x T x 4 where the split attends (n_kv: the context's cells, a
                 sliding window's for sliding layers)
        graph    GRAPH_COMPUTE, 12 + 8 n_nodes + 296 n_tensors (n_nodes = RPC_NODES_PER_LAYER
                 x blocks, n_tensors = n_nodes + the weights there), when the graph changed: a
                 micro-batch of a prompt (its context grows); a decode step runs the same
                 graph again, GRAPH_RECOMPUTE, 4 bytes
        outputs  GET_TENSOR: the hidden state n_embd x T x 4, or the logits n_vocab x n_logits
                 x 4 where the split ends with the head

        time = sum(inputs + graph + outputs) / rpc_link + splits x round trip

    SET_TENSOR and GRAPH_COMPUTE are sent without waiting (send_async); GET_TENSOR waits for
    the split to finish, hence one round trip per split. At load the weights on the rpc: cards
    cross the network once (SET_TENSOR; an rpc-server's -c cache skips tensors over 10 MiB it
    has seen): upload = their bytes / rpc_link."""
    assert system.rpc_link_gbs is not None
    link = system.rpc_link_gbs * 1e9
    tokens = n_tokens * streams
    spec = model.spec
    hidden = spec.n_embd * tokens * F32
    logits = spec.n_vocab * (tokens if n_logits is None else n_logits) * F32
    full_cells = context_cells(ctx + n_tokens, 1)
    reuse = n_tokens == 1
    inputs = graph = outputs = 0.0
    runs = _remote_runs(model, placement, system)
    for run in runs:
        mask = 0
        if any(x.has_kv and x.attention is not Attention.SLIDING for x in run.layers):
            mask += full_cells * tokens * F32
        windows = [x.window for x in run.layers if x.attention is Attention.SLIDING and x.window]
        if windows:
            mask += sliding_cells(ctx + n_tokens, max(windows), n_tokens) * tokens * F32
        inputs += hidden + tokens * F32 + mask
        if reuse:
            graph += RPC_GRAPH_RECOMPUTE_BYTES
        else:
            ils = {x.index for x in run.layers}
            weights = sum(
                1
                for t in model.tensors
                if t.layer in ils
                and (t.role is not Role.MTP or load_mtp)
                and placement.tensor_device(t) == run.device
            )
            nodes = RPC_NODES_PER_LAYER * len(run.layers) + (3 if run.head else 0)
            graph += rpc_graph_bytes(nodes, nodes + weights + (1 if run.head else 0))
        outputs += logits if run.head else hidden
    # the weights on the remote cards, tensor by tensor as `device_memory` places them (a
    # partial block's parts where they are)
    upload = sum(
        t.n_bytes
        for t in model.tensors
        if t.layer is not None
        and (t.role is not Role.MTP or load_mtp)
        and system.is_remote(placement.tensor_device(t))
    )
    if system.is_remote(placement.output_device):
        upload += _weights(model, load_mtp).output
    transfer = (inputs + graph + outputs) / link
    wait = len(runs) * system.rpc_latency_s
    return RpcLink(
        cards=[d.slug for i, d in enumerate(system.devices) if system.is_remote(i)],
        link=system.rpc,
        link_gbs=system.rpc_link_gbs,
        latency_s=system.rpc_latency_s,
        latency_assumed=system.rpc_latency_assumed,
        splits=len(runs),
        input_bytes=inputs,
        graph_bytes=graph,
        output_bytes=outputs,
        transfer_s=transfer,
        latency_total_s=wait,
        time_s=transfer + wait,
        upload_bytes=upload,
        upload_s=upload / link,
    )
