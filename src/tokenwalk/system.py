"""`System`: the devices a model runs on and the host beside them.

Most machines people run models on are not one pool of memory: a graphics card with 8 to 32 GB
of fast memory sits in a PC with more, slower RAM, joined by a PCIe link. A system is

- one machine whose GPU and CPU share one memory (Apple, iGPUs, Strix Halo, GB10, Jetson, or a
  CPU alone): `host` is None, everything is in that pool, as tokenwalk has always counted it;
- the same machine asked to place tensors (`-ngl N`, `--n-cpu-moe N`): llama.cpp runs what it
  keeps off the GPU on its CPU backend, on the same chip's cores, reading the same memory
  (`own_cpu`). The host is then those cores (`shared`), the memory is counted once, and what
  crosses between the two is a copy within that memory, not over PCIe;
- or one or more discrete cards (`--machine rtx-5080`, `rtx-3090+rtx-3060`, `2xrtx-3090`) and a
  host (`--host NAME`, kind cpu in the catalogue: RAM capacity and bandwidth, CPU compute, the
  PCIe slot). A card without `--host` sits in `DEFAULT_HOST`, and the answer says so.

The link runs at the lower PCIe generation and lane count of card and slot, at the per-lane rate
of that generation after line encoding (`PCIE_LANE_GBS`), one direction; `--link-gbs` sets it.

A card named `rpc:NAME` (`--machine rtx-4090+rpc:rtx-3090`) sits in another box and is reached
over the network through llama.cpp's RPC backend (`rpc-server` there, `--rpc host:port` here).
llama.cpp lists RPC devices ahead of the local cards ("add RPC servers at the front of the list
to minimize network transfers", src/llama.cpp `llama_model_load_from_file_impl`), so the
system does too. The network's rate is `--rpc-link-gbs` (required: no default is right for both
1 GbE and 10 GbE); a round trip is `--rpc-latency-ms`, else `ASSUMED_RPC_LATENCY_MS`, an
assumption without a source that every answer names.

What the user asks of the engine (`-ngl`, `--cpu-moe`, `--n-cpu-moe`, `--split-mode`,
`--no-op-offload`) is an `Offload`; `tokenwalk.costs.offload` places the tensors from it.
A comma between machines compares them side by side (a sweep, `tokenwalk.cli.sweep`); it never
joins them.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

from tokenwalk.errors import InputError
from tokenwalk.machine import GIB, Machine

__all__ = [
    "held_bytes",
    "PCIE_LANE_GBS",
    "DEFAULT_HOST",
    "DEFAULT_PCIE",
    "UNIFIED_KINDS",
    "RPC_PREFIX",
    "ASSUMED_RPC_LATENCY_MS",
    "Offload",
    "SystemSpec",
    "System",
    "link_gbs",
    "own_cpu",
    "resolve_system",
]

# GB/s per lane and direction after encoding (PCI-SIG base specifications): 8 GT/s x 128/130 / 8
# for 3.0, 16 GT/s for 4.0, 32 GT/s for 5.0; 6.0 runs 64 GT/s PAM4 with 242/256 FLIT efficiency.
PCIE_LANE_GBS: dict[int, float] = {
    1: 0.25,
    2: 0.5,
    3: 0.985,
    4: 1.969,
    5: 3.938,
    6: 7.563,
    7: 15.13,
}
DEFAULT_PCIE = (4, 16)  # a card or slot whose link the catalogue does not give
DEFAULT_HOST = "pc-9950x-64gb"
UNIFIED_KINDS = ("igpu", "apple", "cpu", "sbc")
MAX_DEVICES = 16
# a count of one card: 2xrtx-3090, 2x rtx-3090, 2x-rtx-3090, 2*rtx-3090
COUNT_PREFIX = r"(\d+)\s*[xX*]\s*-?\s*"
_COUNT = re.compile(rf"^{COUNT_PREFIX}(.+)$")
RPC_PREFIX = "rpc:"
# A round trip between llama.cpp and an rpc-server, per evaluation of a remote split. No
# published figure: 0.5 ms is taken for a wired LAN (TCP request and reply), and every answer
# that uses it says so; --rpc-latency-ms replaces it.
ASSUMED_RPC_LATENCY_MS = 0.5


def held_bytes(system_gb: float | None) -> int | None:
    """Bytes --system-gb holds: GiB, the unit Task Manager and Activity Monitor print as "GB"
    (and --memory takes), so the "32 GB" Windows says it uses is 32 x 2^30 bytes."""
    return None if system_gb is None else int(system_gb * GIB)


class Offload(BaseModel):
    """llama.cpp's placement flags: `-ngl N|auto|all`, `--cpu-moe`, `--n-cpu-moe N`,
    `--split-mode layer|tensor`, `--no-op-offload`, and whether an MTP draft loads the MTP
    blocks. `gpu_layers` None means all (`-ngl all`); `auto` is `--fit`."""

    model_config = ConfigDict(frozen=True)
    gpu_layers: int | None = None
    auto: bool = False
    cpu_moe: bool = False
    n_cpu_moe: int = 0
    split_mode: Literal["layer", "tensor"] = "layer"
    op_offload: bool = True
    load_mtp: bool = False
    # no placement flag given: llama.cpp's default (-ngl auto, --fit on) at the context
    # tokenwalk reserves, which --fit then keeps; several models are placed whole (-ngl all)
    default: bool = False

    @property
    def shrinks_ctx(self) -> bool:
        """Whether --fit may choose the context (`--gpu-layers auto` with none given)."""
        return self.auto and not self.default


class SystemSpec(BaseModel):
    """The system options as typed, in one object: the machine (or cards joined by '+'), inline
    rates, the host and its inline twins, the link, and the placement flags."""

    model_config = ConfigDict(frozen=True)
    machine: str | None = None
    bandwidth: float | None = None
    tflops: float | None = None
    tflops_kind: str | None = None  # matrix or vector: what --tflops is the peak of
    vendor: str | None = None  # who made an inline machine's chip (efficiency.VENDORS)
    memory: float | None = None  # GiB
    gpu_limit: float | None = None  # GiB
    backend: str | None = None
    kind: str | None = None
    machines_file: str | None = None
    system_gb: float | None = None  # GiB held by the system on each device (`held_bytes`)
    host: str | None = None
    host_bandwidth: float | None = None
    host_memory: float | None = None  # GiB
    host_tflops: float | None = None
    link_gbs: float | None = None
    rpc_link_gbs: float | None = None  # network to the rpc: cards, GB/s
    rpc_latency_ms: float | None = None  # a round trip to an rpc-server, ms
    gpu_layers: str | None = None  # N, auto or all
    cpu_moe: bool = False
    n_cpu_moe: int | None = None
    split_mode: str = "layer"
    no_op_offload: bool = False

    @property
    def placement_given(self) -> bool:
        """Whether any placement flag was typed (a machine of one memory pool takes none)."""
        return bool(
            self.gpu_layers
            or self.cpu_moe
            or self.n_cpu_moe is not None
            or self.split_mode.strip().lower() != "layer"
            or self.no_op_offload
        )

    def offload(self, *, load_mtp: bool = False) -> Offload:
        """The placement flags, checked. Without --gpu-layers the placement is llama.cpp's
        default, `-ngl auto` with `--fit on`: every layer on the cards where they fit with
        --fit's margin, else as --fit moves them; --fit does not place layers where expert
        flags are given or the split mode is tensor, and then every layer is on the cards."""
        n: int | None = None
        auto = False
        value = (self.gpu_layers or "").strip().lower()
        if value == "":
            mode = self.split_mode.strip().lower()
            auto = not (self.cpu_moe or self.n_cpu_moe is not None or mode == "tensor")
        elif value == "all":
            n = None
        elif value in ("auto", "fit"):
            auto = True
        else:
            try:
                n = int(value)
            except ValueError:
                raise InputError(
                    f"--gpu-layers takes a number of layers, auto or all, not '{self.gpu_layers}'"
                ) from None
            if n == -1:  # llama.cpp: -1 is auto, any lower value all (common/arg.cpp)
                auto = True
                n = None
            elif n < 0:
                n = None
        if self.cpu_moe and self.n_cpu_moe is not None:
            raise InputError("give --cpu-moe or --n-cpu-moe N, not both")
        if self.n_cpu_moe is not None and self.n_cpu_moe < 0:
            raise InputError(f"--n-cpu-moe must be 0 or more layers, not {self.n_cpu_moe}")
        if auto and self.gpu_layers and (self.cpu_moe or self.n_cpu_moe):
            raise InputError(
                "--gpu-layers auto chooses the experts to keep in RAM itself (as llama.cpp's "
                "--fit, which stops where --cpu-moe or --n-cpu-moe are given): give one or "
                "the other"
            )
        mode = self.split_mode.strip().lower()
        if mode not in ("layer", "tensor"):
            raise InputError(f"--split-mode takes layer or tensor, not '{self.split_mode}'")
        if mode == "tensor" and auto and self.gpu_layers:
            raise InputError(
                "--gpu-layers auto does not work with --split-mode tensor (llama.cpp: "
                "llama_params_fit is not implemented for SPLIT_MODE_TENSOR)"
            )
        return Offload(
            gpu_layers=n,
            auto=auto,
            default=auto and not value,
            cpu_moe=self.cpu_moe,
            n_cpu_moe=self.n_cpu_moe or 0,
            split_mode=mode,  # type: ignore[arg-type]
            op_offload=not self.no_op_offload,
            load_mtp=load_mtp,
        )


class System(BaseModel):
    """Devices and host, resolved. `devices` are the GPUs in llama.cpp's order (a unified
    machine alone when `host` is None); `link_gbs` is the host link, one direction, GB/s.
    `remote` marks, per device, a card in another box reached over RPC (its slug starts with
    `rpc:`), `rpc_link_gbs` the network's rate and `rpc_latency_s` a round trip to it."""

    model_config = ConfigDict(frozen=True)
    devices: tuple[Machine, ...]
    host: Machine | None = None
    link_gbs: float | None = None
    link: str = ""  # how the link was worked out
    host_note: str = ""  # where the host comes from
    system_gb: float | None = None  # GiB, as --system-gb takes it
    remote: tuple[bool, ...] = ()
    rpc_link_gbs: float | None = None
    rpc_latency_s: float = 0.0
    rpc_latency_assumed: bool = False
    rpc: str = ""  # how the network was worked out
    shared: bool = False  # the host is the device's own CPU cores, in the same memory

    @property
    def unified(self) -> bool:
        """One pool of memory with nothing placed: the whole model on one machine."""
        return self.host is None

    def is_remote(self, i: int) -> bool:
        """Device `i` is a card in another box, reached over RPC."""
        return 0 <= i < len(self.remote) and self.remote[i]

    @property
    def has_rpc(self) -> bool:
        return any(self.remote)

    @property
    def first(self) -> Machine:
        return self.devices[0]

    @property
    def slug(self) -> str:
        """The cards as `--machine` takes them: runs of one card counted ('2xrtx-3090')."""
        parts: list[list] = []
        for d in self.devices:
            if parts and parts[-1][0] == d.slug:
                parts[-1][1] += 1
            else:
                parts.append([d.slug, 1])
        return "+".join(f"{n}x{slug}" if n > 1 else slug for slug, n in parts)

    @property
    def name(self) -> str:
        names = [d.name for d in self.devices]
        if len(set(names)) == 1 and len(names) > 1:
            return f"{len(names)} x {names[0]}"
        return " + ".join(names)


def link_gbs(card: Machine, host: Machine) -> tuple[float, str]:
    """(GB/s, how) of the PCIe link: the lower generation and lane count of card and slot, x
    the generation's rate per lane (`PCIE_LANE_GBS`). Unknown ends are taken as PCIe 4.0 x16."""
    gen_c, lanes_c = card.pcie_gen or DEFAULT_PCIE[0], card.pcie_lanes or DEFAULT_PCIE[1]
    gen_h, lanes_h = host.pcie_gen or DEFAULT_PCIE[0], host.pcie_lanes or DEFAULT_PCIE[1]
    gen, lanes = min(gen_c, gen_h), min(lanes_c, lanes_h)
    assumed = "" if card.pcie_gen and host.pcie_gen else " (PCIe 4.0 x16 assumed where not known)"
    gbs = PCIE_LANE_GBS.get(gen, PCIE_LANE_GBS[4]) * lanes
    return gbs, f"PCIe {gen}.0 x{lanes}, {gbs:.1f} GB/s{assumed}"


def own_cpu(system: System, spec: SystemSpec) -> System:
    """A machine of one memory pool asked to place tensors: its own CPU cores as the host.

    llama.cpp keeps what `-ngl N` or `--n-cpu-moe N` leave off the GPU in buffers of its CPU
    backend, which runs them on the cores of the same chip (as many threads as performance
    cores: `common_cpu_get_num_physical_cores`, hw.perflevel0.physicalcpu on macOS), reading
    the same memory. The host is those cores: the machine's bandwidth and memory, the CPU's
    rate (the catalogue's `cpu_tflops`, or --host-tflops). A GPU backend there still reads
    only its own buffers (ggml-metal's `supports_buft`; its buffers are not host buffers for
    the CPU backend either), so a tensor crossing between the two is copied, by memcpy within
    the one memory (`ggml_metal_buffer_set_tensor` on shared buffers): the link is that copy,
    which reads and writes the memory, at half its bandwidth."""
    from tokenwalk.machine import resolve_machine
    from tokenwalk.timing.efficiency import VENDORS

    dev = system.first
    if dev.backend == "cpu":
        raise InputError(
            f"'{dev.slug}' computes on its CPU alone: --gpu-layers, --cpu-moe and --n-cpu-moe "
            "place tensors on a GPU"
        )
    if not dev.memory_bytes:
        raise InputError(
            f"placing a model on '{dev.slug}' needs its memory size: give --memory GiB"
        )
    cpu = resolve_machine(
        None if dev.slug == "custom" else dev.slug,
        bandwidth=dev.bandwidth_gbs,
        tflops=spec.host_tflops,
        memory=dev.memory_bytes / GIB,
        backend="cpu",
        kind="cpu",
        machines_file=spec.machines_file,
        vendor=dev.vendor if dev.vendor in VENDORS else None,
    )
    cpu = cpu.model_copy(
        update=dict(slug=f"{dev.slug}-cpu", name=f"{dev.name}, CPU cores", power_w=None)
    )
    gbs = dev.bandwidth_gbs / 2
    return system.model_copy(
        update=dict(
            host=cpu,
            shared=True,
            link_gbs=gbs,
            link=f"one memory: a copy reads and writes it, {gbs:g} GB/s",
            host_note=(
                f"the CPU cores of {dev.slug}"
                + (f" ({cpu.tflops:g} TFLOPS)" if cpu.tflops else "")
                + f", in the same "
                f"{dev.memory_bytes / GIB:g} GiB at {dev.bandwidth_gbs:g} GB/s"
            ),
        )
    )


def _names(machine: str) -> list[tuple[str, bool]]:
    """'rtx-3090+rtx-3060' -> two names; '2xrtx-3090' -> the name twice; 'rpc:rtx-3090' (or
    '2xrpc:rtx-3090', 'rpc:2xrtx-3090') -> cards reached over RPC. Each name comes with
    whether it is remote."""
    if "," in machine:
        raise InputError(
            f"'{machine}': a comma lists machines to compare, each run on its own (--machine "
            "a,b on the command line); join the cards of one box with '+' (rtx-3090+rtx-3060) "
            "or '2x' (2xrtx-3090)"
        )
    names: list[tuple[str, bool]] = []
    for part in machine.split("+"):
        part = part.strip()
        if not part:
            raise InputError(f"'{machine}': an empty name between '+' signs")
        remote = part.lower().startswith(RPC_PREFIX)
        if remote:
            part = part[len(RPC_PREFIX) :].strip()
        m = _COUNT.match(part)
        count, name = (int(m[1]), m[2].strip()) if m else (1, part)
        if not name.strip("-"):
            raise InputError(f"'{part}': a count needs a card after it (2xrtx-3090)")
        if name.lower().startswith(RPC_PREFIX):
            if remote:
                raise InputError(f"'{machine}': 'rpc:' is written once before a card")
            remote, name = True, name[len(RPC_PREFIX) :].strip()
        if not name:
            raise InputError(f"'{machine}': 'rpc:' needs a card after it (rpc:rtx-3090)")
        if count < 1:
            raise InputError(f"'{part}': a count of cards must be at least 1")
        names.extend([(name, remote)] * count)
        if len(names) > MAX_DEVICES:
            raise InputError(f"'{machine}': at most {MAX_DEVICES} cards in one system")
    return names


def _is_unified(m: Machine) -> bool:
    return m.kind in UNIFIED_KINDS or m.unified_memory


def _check_link(value: float | None, flag: str) -> None:
    if value is not None and not (0 < value <= 10_000):
        raise InputError(f"{flag} must be in (0, 10,000] GB/s, not {value:g}")


def resolve_system(spec: SystemSpec) -> System:
    """The devices and host that `spec` names (see the module's description)."""
    from tokenwalk.machine import resolve_machine

    _check_link(spec.link_gbs, "--link-gbs")
    _check_link(spec.rpc_link_gbs, "--rpc-link-gbs")
    _check_link(spec.host_bandwidth, "--host-bandwidth")
    if spec.rpc_latency_ms is not None and not (0 <= spec.rpc_latency_ms <= 10_000):
        raise InputError(f"--rpc-latency-ms must be in [0, 10,000] ms, not {spec.rpc_latency_ms:g}")
    if spec.system_gb is not None and not spec.system_gb <= 1e6:
        raise InputError(
            f"--system-gb must be at most 1,000,000 GB (a machine's memory), not {spec.system_gb:g}"
        )
    if spec.host_memory is not None and not (0 < spec.host_memory <= 1e6):
        raise InputError(
            f"--host-memory must be a positive number of GiB, not {spec.host_memory:g}"
        )
    kw = dict(
        bandwidth=spec.bandwidth,
        tflops=spec.tflops,
        tflops_kind=spec.tflops_kind,
        vendor=spec.vendor,
        memory=spec.memory,
        backend=spec.backend,
        kind=spec.kind,
        machines_file=spec.machines_file,
        gpu_limit=spec.gpu_limit,
    )
    names = _names(spec.machine) if spec.machine else [(None, False)]
    # llama.cpp puts RPC devices first (stable: each group keeps the order typed)
    names = [n for n in names if n[1]] + [n for n in names if not n[1]]
    remote = tuple(r for _, r in names)
    devices = tuple(resolve_machine(n, **kw) for n, _ in names)  # type: ignore[arg-type]
    host_given = any(
        v is not None for v in (spec.host, spec.host_bandwidth, spec.host_memory, spec.link_gbs)
    )
    unified = [d for d in devices if _is_unified(d)]
    rpc_given = spec.rpc_link_gbs is not None or spec.rpc_latency_ms is not None
    if any(remote):
        shared = [d for d, r in zip(devices, remote, strict=True) if r and _is_unified(d)]
        if shared or unified:
            which = (shared or unified)[0].slug
            raise InputError(
                f"'{which}' shares its memory with its CPU: RPC is modelled between discrete "
                "cards (rpc:NAME names a card in another box, beside the cards and host here)"
            )
        if spec.rpc_link_gbs is None:
            raise InputError(
                "a card named rpc:NAME is reached over the network: give its speed with "
                "--rpc-link-gbs GB/s (1 GbE = 0.125, 10 GbE = 1.25, 25 GbE = 3.125)"
            )
    elif rpc_given:
        raise InputError(
            "--rpc-link-gbs and --rpc-latency-ms describe the network to a card in another "
            "box: name that card rpc:NAME in --machine (rtx-4090+rpc:rtx-3090)"
        )
    if any(remote):
        devices = tuple(
            d.model_copy(update={"slug": RPC_PREFIX + d.slug, "name": f"{d.name} (RPC)"})
            if r
            else d
            for d, r in zip(devices, remote, strict=True)
        )
    if unified:
        if len(devices) > 1:
            raise InputError(
                f"'{unified[0].slug}' shares its memory with its CPU: it cannot be joined with "
                "other cards ('+' joins discrete cards of one box)"
            )
        if host_given:
            raise InputError(
                f"'{unified[0].slug}' is one pool of memory shared by GPU and CPU: "
                "--host, --host-bandwidth, --host-memory and --link-gbs are for discrete cards"
            )
        return System(devices=devices, system_gb=spec.system_gb)
    host_name = spec.host or DEFAULT_HOST
    host = resolve_machine(
        host_name,
        bandwidth=spec.host_bandwidth,
        tflops=spec.host_tflops,
        memory=spec.host_memory,
        machines_file=spec.machines_file,
    )
    if host.kind not in ("cpu", "sbc"):
        raise InputError(
            f"--host '{host.slug}' is a {host.kind}, not a CPU: a host is a catalogue entry of "
            "kind cpu (`tokenwalk machines cpu` lists them)"
        )
    if not host.memory_bytes:
        raise InputError(f"host '{host.slug}' has no memory size; give --host-memory GiB")
    if spec.host:
        note = f"host {host.slug}"
    else:
        note = (
            f"host assumed: {host.slug} ({host.name}, {host.memory_bytes / GIB:g} GiB RAM at "
            f"{host.bandwidth_gbs:g} GB/s); give yours with --host NAME or --host-memory, "
            "--host-bandwidth"
        )
    local = [d for d, r in zip(devices, remote, strict=True) if not r] or list(devices)
    if spec.link_gbs is not None:
        gbs, how = spec.link_gbs, f"{spec.link_gbs:g} GB/s (--link-gbs)"
    else:
        links = [link_gbs(d, host) for d in local]
        gbs, how = min(links)
    rpc: dict = {}
    if any(remote):
        assumed = spec.rpc_latency_ms is None
        ms = ASSUMED_RPC_LATENCY_MS if assumed else float(spec.rpc_latency_ms)  # type: ignore[arg-type]
        latency = (
            f"{ms:g} ms a round trip (assumed, no published figure: give --rpc-latency-ms)"
            if assumed
            else f"{ms:g} ms a round trip (--rpc-latency-ms)"
        )
        rpc = dict(
            remote=remote,
            rpc_link_gbs=spec.rpc_link_gbs,
            rpc_latency_s=ms / 1e3,
            rpc_latency_assumed=assumed,
            rpc=f"{spec.rpc_link_gbs:g} GB/s (--rpc-link-gbs), {latency}",
        )
    return System(
        devices=devices,
        host=host,
        link_gbs=gbs,
        link=how,
        host_note=note,
        system_gb=spec.system_gb,
        **rpc,
    )
