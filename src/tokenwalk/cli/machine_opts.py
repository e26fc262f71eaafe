"""Typer options that name or describe a machine, shared by every command that needs one."""

from __future__ import annotations

from typing import Annotated

import typer

from tokenwalk.cli.app import parse_gb
from tokenwalk.machine import Machine

__all__ = [
    "MachineOpt",
    "BandwidthOpt",
    "TflopsOpt",
    "MemoryOpt",
    "GpuLimitOpt",
    "BackendOpt",
    "KindOpt",
    "MachinesFileOpt",
    "machine_from_options",
]

MachineOpt = Annotated[
    str | None,
    typer.Option(
        "--machine",
        "-m",
        help="A machine by name (see `tokenwalk machines`), or give --bandwidth (and --tflops "
        "for prefill).",
        show_default=False,
    ),
]
BandwidthOpt = Annotated[
    float | None,
    typer.Option(
        "--bandwidth",
        help="Memory bandwidth, GB/s (overrides the named machine's).",
        show_default=False,
    ),
]
TflopsOpt = Annotated[
    float | None,
    typer.Option(
        "--tflops",
        help="Compute rate, TFLOPS: dense FP16 on a GPU, FP32 SIMD on a cpu backend "
        "(overrides the named machine's).",
        show_default=False,
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
    ),
]
GpuLimitOpt = Annotated[
    float | None,
    typer.Option(
        "--gpu-limit",
        help="GiB the GPU may hold, where less than the memory. A Mac's GPU gets 2/3 of the RAM "
        "(3/4 above 36 GiB) unless raised with `sudo sysctl iogpu.wired_limit_mb=N`: "
        "give N / 1024.",
        show_default=False,
        parser=parse_gb,
        metavar="GiB",
    ),
]
BackendOpt = Annotated[
    str | None,
    typer.Option(
        "--backend",
        help="Backend: metal, cuda, rocm, vulkan, cpu, sycl, opencl.",
        show_default=False,
    ),
]
KindOpt = Annotated[
    str | None,
    typer.Option(
        "--kind", help="Machine kind: igpu, apple, gpu, datacenter, cpu, sbc.", show_default=False
    ),
]
MachinesFileOpt = Annotated[
    str | None,
    typer.Option(
        "--machines-file",
        help="A YAML file of your own machines, merged over the catalogue "
        "(also $TOKENWALK_MACHINES and the config-dir machines.yaml).",
        show_default=False,
    ),
]


def machine_from_options(
    machine: str | None,
    bandwidth: float | None = None,
    tflops: float | None = None,
    memory: float | None = None,
    backend: str | None = None,
    kind: str | None = None,
    machines_file: str | None = None,
    gpu_limit: float | None = None,
) -> Machine:
    """Resolve the machine options (see `tokenwalk.machine.resolve_machine`)."""
    from tokenwalk.machine import resolve_machine

    return resolve_machine(
        machine,
        bandwidth=bandwidth,
        tflops=tflops,
        memory=memory,
        backend=backend,
        kind=kind,
        machines_file=machines_file,
        gpu_limit=gpu_limit,
    )
