"""Machine options shared by the commands that need a machine."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tokenwalk.machine import Machine, resolve_machine

MachineOpt = Annotated[
    str | None,
    typer.Option(
        "--machine",
        "-m",
        help="A catalogue machine (see `tokenwalk machines`) or one from your machines file.",
        show_default=False,
    ),
]
BandwidthOpt = Annotated[
    float | None,
    typer.Option(
        "--bandwidth",
        help="Memory bandwidth, GB/s (inline machine or override).",
        show_default=False,
    ),
]
TflopsOpt = Annotated[
    float | None,
    typer.Option(
        "--tflops",
        help="Dense FP16 compute, TFLOPS (inline machine or override).",
        show_default=False,
    ),
]
MemoryOpt = Annotated[
    float | None,
    typer.Option(
        "--memory", help="Memory capacity, GB (inline machine or override).", show_default=False
    ),
]
BackendOpt = Annotated[
    str | None,
    typer.Option(
        "--backend", help="metal, cuda, rocm, vulkan, cpu, sycl, opencl.", show_default=False
    ),
]
KindOpt = Annotated[
    str | None,
    typer.Option("--kind", help="igpu, apple, gpu, datacenter, cpu, sbc.", show_default=False),
]
MachinesFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--machines-file",
        help="A YAML file of machines that adds to or overrides the catalogue.",
        show_default=False,
    ),
]


def machine_from_options(
    name: str | None,
    bandwidth: float | None,
    tflops: float | None,
    memory: float | None,
    backend: str | None,
    kind: str | None,
    machines_file: Path | None,
) -> Machine:
    return resolve_machine(
        name,
        bandwidth=bandwidth,
        tflops=tflops,
        memory=memory,
        backend=backend,
        kind=kind,
        machines_file=machines_file,
    )
