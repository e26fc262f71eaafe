"""The system options, declared once: the machine (cards joined by '+'), inline rates, the host
and its link, and llama.cpp's placement flags. `system_options` adds them to a command (one
"System" panel in its --help) and hands the command one `SystemSpec`; `resolve_system` turns
that into devices and a host."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer

from tokenwalk.cli.app import parse_count, parse_gb
from tokenwalk.cli.complete import complete_machine
from tokenwalk.cli.declare import with_options
from tokenwalk.system import SystemSpec

__all__ = [
    "MachineOpt",
    "BandwidthOpt",
    "TflopsOpt",
    "MemoryOpt",
    "GpuLimitOpt",
    "BackendOpt",
    "KindOpt",
    "MachinesFileOpt",
    "system_options",
    "SYSTEM_PANEL",
    "SYSTEM_LISTS",
    "SYSTEM_SINGLE",
]

SYSTEM_PANEL = "System: cards, host, placement"

MachineOpt = Annotated[
    str | None,
    typer.Option(
        "--machine",
        "-m",
        help="A machine by name (see `tokenwalk machines`), or give --bandwidth (and --tflops "
        "for prefill). Cards of one box join with '+' (rtx-3090+rtx-3060) or 'Nx' "
        "(2xrtx-3090); a discrete card sits in a host (--host); rpc:NAME is a card in another "
        "box, reached over the network (rtx-4090+rpc:rtx-3090, with --rpc-link-gbs).",
        show_default=False,
        rich_help_panel=SYSTEM_PANEL,
        autocompletion=complete_machine,
    ),
]
BandwidthOpt = Annotated[
    float | None,
    typer.Option(
        "--bandwidth",
        help="Memory bandwidth, GB/s (overrides the named machine's).",
        show_default=False,
        rich_help_panel=SYSTEM_PANEL,
    ),
]
TflopsOpt = Annotated[
    float | None,
    typer.Option(
        "--tflops",
        help="Compute rate, TFLOPS: dense FP16 on a GPU, FP32 SIMD on a cpu backend "
        "(overrides the named machine's). A GeForce spec sheet gives two dense FP16 tensor "
        "figures: take the one with FP32 accumulate, the lower (RTX 4090: 165, not 330), and "
        "never a sparse one.",
        show_default=False,
        rich_help_panel=SYSTEM_PANEL,
    ),
]
TflopsKindOpt = Annotated[
    str | None,
    typer.Option(
        "--tflops-kind",
        help="What the GPU's --tflops is the peak of: matrix (tensor cores, XMX, WMMA, Apple's "
        "Neural Accelerators) or vector (shader ALUs). The fit prices them differently. "
        "Default: the named machine's; not known for an inline machine.",
        show_default=False,
        metavar="matrix|vector",
        rich_help_panel=SYSTEM_PANEL,
    ),
]
MemoryOpt = Annotated[
    float | None,
    typer.Option(
        "--memory",
        help="Memory capacity in GiB, as cards and Macs are sold: 24 for a '24 GB' card "
        "(overrides the named machine's). Output prints decimal GB (1e9 bytes).",
        show_default=False,
        parser=parse_gb,
        metavar="GiB",
        rich_help_panel=SYSTEM_PANEL,
    ),
]
GpuLimitOpt = Annotated[
    float | None,
    typer.Option(
        "--gpu-limit",
        help="GiB the GPU may hold, where less than the memory. A Mac's GPU gets 2/3 of the RAM "
        "(3/4 above 36 GiB) unless raised with `sudo sysctl iogpu.wired_limit_mb=N`: "
        "give N / 1024. An integrated GPU gets half the RAM (Windows' shared GPU memory, "
        "Linux's TTM limit) unless a BIOS carve-out or `amdgpu.gttsize` raises it.",
        show_default=False,
        parser=parse_gb,
        metavar="GiB",
        rich_help_panel=SYSTEM_PANEL,
    ),
]
BackendOpt = Annotated[
    str | None,
    typer.Option(
        "--backend",
        help="Backend: metal, cuda, rocm, vulkan, cpu, sycl, opencl. Default: the named machine's.",
        show_default=False,
        rich_help_panel=SYSTEM_PANEL,
    ),
]
KindOpt = Annotated[
    str | None,
    typer.Option(
        "--kind",
        help="Machine kind: igpu, apple, gpu, datacenter, cpu, sbc. Default: the named machine's.",
        show_default=False,
        rich_help_panel=SYSTEM_PANEL,
    ),
]
VendorOpt = Annotated[
    str | None,
    typer.Option(
        "--vendor",
        help="Who made the chip: apple, nvidia, amd, intel, qualcomm. The fit prices makers "
        "apart (what a spec-sheet rate means differs). Default: the maker a named machine's "
        "name says, else what --backend implies (cuda: nvidia, rocm: amd, metal: apple, sycl: "
        "intel), else none.",
        show_default=False,
        metavar="MAKER",
        rich_help_panel=SYSTEM_PANEL,
    ),
]
MachinesFileOpt = Annotated[
    str | None,
    typer.Option(
        "--machines-file",
        help="A YAML file of your own machines, merged over the catalogue. Always read: "
        "$TOKENWALK_MACHINES and machines.yaml in the config dir (~/.config/tokenwalk/ on "
        "Linux), where `probe --write` and `calibrate` store theirs.",
        show_default=False,
        rich_help_panel=SYSTEM_PANEL,
    ),
]


def _opt(*names: str, help: str, **kw: Any) -> Any:
    return typer.Option(*names, help=help, show_default=False, rich_help_panel=SYSTEM_PANEL, **kw)


# name -> (annotation, default) of every system option, in --help order
_SYSTEM_OPTIONS: dict[str, tuple[Any, Any]] = {
    "machine": (MachineOpt, None),
    "bandwidth": (BandwidthOpt, None),
    "tflops": (TflopsOpt, None),
    "tflops_kind": (TflopsKindOpt, None),
    "memory": (MemoryOpt, None),
    "gpu_limit": (GpuLimitOpt, None),
    "backend": (BackendOpt, None),
    "kind": (KindOpt, None),
    "vendor": (VendorOpt, None),
    "machines_file": (MachinesFileOpt, None),
    "system_gb": (
        Annotated[
            float | None,
            _opt(
                "--system-gb",
                help="Memory the system and other apps already use, in GiB as Task Manager and "
                'Activity Monitor print it (they say "GB"; --memory takes the same unit). '
                "Default: 8 GB on shared memory and on a host (a quarter of small machines), "
                "0.5 GB of each discrete card. Takes 6, 6.5, 6GB, 6GiB.",
                parser=parse_gb,
                metavar="GiB",
            ),
        ],
        None,
    ),
    "host": (
        Annotated[
            str | None,
            _opt(
                "--host",
                help="The PC a discrete card sits in: a catalogue entry of kind cpu (RAM, its "
                "bandwidth, CPU compute, PCIe slot). Default: pc-9950x-64gb, stated in the answer.",
            ),
        ],
        None,
    ),
    "host_bandwidth": (
        Annotated[
            float | None,
            _opt("--host-bandwidth", help="RAM bandwidth of the host, GB/s (overrides its own)."),
        ],
        None,
    ),
    "host_memory": (
        Annotated[
            float | None,
            _opt(
                "--host-memory",
                help="RAM of the host in GiB, as DIMMs are sold (overrides its own).",
                parser=parse_gb,
                metavar="GiB",
            ),
        ],
        None,
    ),
    "host_tflops": (
        Annotated[
            float | None,
            _opt(
                "--host-tflops",
                help="CPU compute of the host, FP32 SIMD TFLOPS (overrides its own); on a "
                "machine of one memory, of its own CPU cores, which run what placement flags "
                "keep off its GPU.",
            ),
        ],
        None,
    ),
    "link_gbs": (
        Annotated[
            float | None,
            _opt(
                "--link-gbs",
                help="Card-to-host link, GB/s one way. Default: the lower PCIe generation and "
                "lane count of card and slot (PCIe 4.0 x16 = 31.5, 5.0 x16 = 63).",
            ),
        ],
        None,
    ),
    "rpc_link_gbs": (
        Annotated[
            float | None,
            _opt(
                "--rpc-link-gbs",
                help="Network to the rpc: cards, GB/s one way: 1 GbE = 0.125, 2.5 GbE = 0.3125, "
                "10 GbE = 1.25 (line rates; give what your network carries). Required with "
                "rpc:NAME.",
                metavar="GB/s",
            ),
        ],
        None,
    ),
    "rpc_latency_ms": (
        Annotated[
            float | None,
            _opt(
                "--rpc-latency-ms",
                help="A round trip to an rpc-server, ms, paid once per evaluation of a remote "
                "split. Default: 0.5 ms, an assumption for a wired LAN (no published figure), "
                "stated in the answer.",
                metavar="ms",
            ),
        ],
        None,
    ),
    "gpu_layers": (
        Annotated[
            str | None,
            _opt(
                "--gpu-layers",
                "-ngl",
                help="Layers on the GPUs, as llama.cpp's -ngl: N puts the LAST N there (the "
                "output head counts as one and goes first; the token embedding stays in RAM); "
                "auto (or -1) keeps 1 GiB free per card as --fit does; all (or any value "
                "below -1) is everything. Default: llama.cpp's own, auto (all where --cpu-moe, "
                "--n-cpu-moe or --split-mode tensor is given, where --fit places nothing), at "
                "the context asked.",
                metavar="N|auto|all",
            ),
        ],
        None,
    ),
    "cpu_moe": (
        Annotated[
            bool,
            _opt(
                "--cpu-moe",
                help="Keep every layer's routed experts (ffn_*_exps) in RAM; attention, router, "
                "shared experts and KV stay on the GPU.",
            ),
        ],
        False,
    ),
    "n_cpu_moe": (
        Annotated[
            int | None,
            _opt(
                "--n-cpu-moe",
                "-ncmoe",
                help="Keep the routed experts of the FIRST N layers in RAM. Default: 0, none.",
                parser=parse_count,
                metavar="N",
            ),
        ],
        None,
    ),
    "split_mode": (
        Annotated[
            str,
            _opt(
                "--split-mode",
                "-sm",
                help="Several cards: layer (default: whole layers in proportion to free memory) "
                "or tensor (every layer across all cards, an all-reduce per layer).",
            ),
        ],
        "layer",
    ),
    "no_op_offload": (
        Annotated[
            bool,
            _opt(
                "--no-op-offload",
                help="Multiply RAM-resident weights on the CPU in prefill too, instead of "
                "copying them to the GPU for micro-batches of 32 tokens or more.",
            ),
        ],
        False,
    ),
}

# system options that take a list (a sweep: `tokenwalk.cli.sweep`), and those that take one value
SYSTEM_LISTS = ("machine", "n_cpu_moe", "rpc_link_gbs", "rpc_latency_ms")
SYSTEM_SINGLE = ("gpu_layers", "host", "split_mode", "backend", "kind", "tflops_kind", "vendor")

F = TypeVar("F", bound=Callable[..., Any])


def system_options(fn: F) -> F:
    """Give command `fn` the system options (one panel of its --help) in place of its
    `system: SystemSpec` parameter, which receives them gathered."""
    return with_options(
        fn,
        _SYSTEM_OPTIONS,
        lambda gathered, rest: fn(system=SystemSpec(**gathered), **rest),
        replaces="system",
    )
