"""`Machine`: what a computer can move and compute, and how much of it an engine gets.

A machine is a catalogue entry (`data/machines.yaml`), an entry of a user's own file
(`--machines-file`, `TOKENWALK_MACHINES`, `<config dir>/tokenwalk/machines.yaml`), or given
inline (`--bandwidth 128 --tflops 12`); inline flags also override fields of a named machine.

Units: bandwidth in decimal GB/s, compute in TFLOPS, memory capacity in the unit the vendor
means, which for DRAM is GiB (a "24 GB" RTX 4090 holds 24 x 2^30 = 25.8e9 bytes), so
`--memory 24` is 24 GiB. Output prints bytes in decimal GB (1e9).

Its `fit` holds the efficiencies of the timing model (share of the bandwidth and of the compute
an engine reaches, and a fixed cost per layer and pass). They come, in this order, from the
machine's own `fit:` (written by `tokenwalk calibrate`), from the per-machine fits shipped in
`data/timing.yaml`, from that file's fit for the machine's group (backend), or from its global fit.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from tokenwalk.errors import InputError
from tokenwalk.timing.efficiency import (
    GPU_PEAKS,
    VENDORS,
    Efficiency,
    default_efficiency,
    entry_efficiency,
    machine_vendor,
    peak_of,
)

__all__ = [
    "Machine",
    "GIB",
    "igpu_shared_bytes",
    "metal_working_set_bytes",
    "MAX_BANDWIDTH_GBS",
    "MAX_TFLOPS",
    "MAX_MEMORY_GIB",
    "user_machine_files",
    "user_machines_path",
    "machines_write_path",
    "resolve_machine",
]


MAX_BANDWIDTH_GBS = 100_000.0


MAX_TFLOPS = 100_000.0


MAX_MEMORY_GIB = 1e6


GIB = 1 << 30


# macOS lets Metal wire about 2/3 of the RAM on Macs with up to 36 GiB and 3/4 above (llama.cpp
# prints it as `recommendedMaxWorkingSetSize`: 10922.67 MB on a 16 GB M1, 49152 MB on a 64 GB
# M1 Max, 147456 MB on a 192 GB M2 Ultra); `sudo sysctl iogpu.wired_limit_mb=N` raises it.
APPLE_SMALL_RAM_BYTES = 36 * GIB


APPLE_SMALL_SHARE = 2 / 3


APPLE_LARGE_SHARE = 3 / 4


def metal_working_set_bytes(memory_bytes: float) -> float:
    """Metal's default GPU working set on a Mac: 2/3 of the RAM up to 36 GiB, 3/4 above."""
    share = APPLE_SMALL_SHARE if memory_bytes <= APPLE_SMALL_RAM_BYTES else APPLE_LARGE_SHARE
    return memory_bytes * share


# An integrated GPU on Windows or Linux may hold half the RAM by default. Windows (WDDM) gives
# it half the RAM as shared GPU memory; Linux's amdgpu maps it through GTT, which the kernel's
# TTM caps at half the RAM (`ttm.pages_limit`, raised at boot with it or `amdgpu.gttsize`).
# llama.cpp's Vulkan backend counts every heap of an integrated GPU, so its device memory is
# that half plus the BIOS carve-out (a "dedicated" size, 512 MiB by default on most laptops,
# which this leaves out; a larger one set in the BIOS is what --gpu-limit is for).
IGPU_SHARED_SHARE = 1 / 2


IGPU_LIMIT_NOTE = (
    "half the RAM, what Windows shares with an integrated GPU and Linux's TTM allows it "
    "(raised by a BIOS carve-out or the kernel's `amdgpu.gttsize` / `ttm.pages_limit`: "
    "then give --gpu-limit)"
)


def igpu_shared_bytes(memory_bytes: float) -> float:
    """What an integrated GPU may hold by default on Windows and Linux: RAM x 1/2."""
    return memory_bytes * IGPU_SHARED_SHARE


class Machine(BaseModel):
    """A machine as the timing and memory models see it.

    Rates are decimal (GB/s, TFLOPS); capacities are bytes, converted from the unit the vendor
    means (GiB for memory). `tflops` is the rate the backend computes at: the GPU's dense FP16
    rate, or the CPU cores' FP32 SIMD rate on a `cpu` backend; None when unknown, which decode
    does not need.
    """

    model_config = ConfigDict(frozen=True)
    slug: str
    name: str
    kind: str  # igpu, apple, gpu, datacenter, cpu, sbc
    backend: str  # metal, cuda, rocm, vulkan, cpu, ...
    vendor: str = "other"  # apple, nvidia, amd, intel, qualcomm, ...
    memory_bytes: float | None
    bandwidth_gbs: float
    tflops: float | None  # GPU dense FP16 or CPU FP32 SIMD; None: unknown
    peak: str | None = None  # what `tflops` is the peak of: matrix, vector, simd (PEAK_KINDS)
    gpu_limit_bytes: float | None = None  # what the GPU may hold, where set below the memory
    disk_read_gbs: float | None = None
    load_gbs: float | None = None  # a measured cold load: file bytes / seconds
    load_source: str | None = None
    pcie_gen: int | None = None  # a card's interface, or a host's slot for the card
    pcie_lanes: int | None = None
    unified_memory: bool = False  # one memory for GPU and CPU although of kind gpu
    power_w: float | None = None  # board, package or CPU power at full load, W (costs.energy)
    power_source: str | None = None
    cpu_simd: str | None = None  # the SIMD llama.cpp's CPU backend was built for (catalog.CpuSimd)
    fit: Efficiency

    @property
    def balance_flop_per_byte(self) -> float | None:
        """Machine balance = FLOPS / bandwidth = tflops x 1e12 / (GB/s x 1e9). FLOP per byte."""
        if not self.tflops:
            return None
        return self.tflops * 1e12 / (self.bandwidth_gbs * 1e9)

    @property
    def gpu_usable_bytes(self) -> float | None:
        """Bytes the engine's GPU may hold: the set limit (--gpu-limit, `gpu_limit_gb`), else the
        operating system's default share of a unified memory (a Mac's Metal working set,
        `metal_working_set_bytes`; an integrated GPU's half, `igpu_shared_bytes`), else the
        whole memory. None when the memory is unknown."""
        if self.memory_bytes is None:
            return None
        if self.gpu_limit_bytes is not None:
            return min(self.gpu_limit_bytes, self.memory_bytes)
        if self._default_limit == "metal":
            return metal_working_set_bytes(self.memory_bytes)
        if self._default_limit == "igpu":
            return igpu_shared_bytes(self.memory_bytes)
        return self.memory_bytes

    @property
    def _default_limit(self) -> str:
        """Which operating-system default caps the GPU's share of the memory, if any."""
        if self.kind == "apple" and self.backend == "metal":
            return "metal"
        if self.kind == "igpu" and self.backend != "cpu":
            return "igpu"
        return ""

    @property
    def gpu_limit_note(self) -> str:
        """Where the GPU's limit comes from; empty when the GPU may use the whole memory."""
        if self.memory_bytes is None:
            return ""
        if self.gpu_limit_bytes is not None:
            if self.gpu_limit_bytes < self.memory_bytes:
                return "the limit set for this machine (--gpu-limit)"
            return ""
        if self._default_limit == "metal":
            share = "2/3" if self.memory_bytes <= APPLE_SMALL_RAM_BYTES else "3/4"
            return (
                f"Metal's default working set, {share} of the RAM (raised by "
                "`sudo sysctl iogpu.wired_limit_mb=N`: then give --gpu-limit)"
            )
        if self._default_limit == "igpu":
            return IGPU_LIMIT_NOTE
        return ""


# -- user files -------------------------------------------------------------------------------


def user_machines_path() -> Path:
    """The machine file in the platform's config directory (may not exist)."""
    from platformdirs import user_config_dir

    return Path(user_config_dir("tokenwalk")) / "machines.yaml"


def machines_write_path(machines_file: str | Path | None = None) -> Path:
    """Where `probe --write` and `calibrate` store an entry: --machines-file, else
    $TOKENWALK_MACHINES, else the platform's config directory (never the package)."""
    named = machines_file or os.environ.get("TOKENWALK_MACHINES")
    return Path(named).expanduser() if named else user_machines_path()


def user_machine_files(machines_file: str | Path | None = None) -> list[Path]:
    """User machine files, lowest priority first: config dir, $TOKENWALK_MACHINES, --machines-file.

    Files named explicitly (flag or environment) must exist; the config-dir file is optional.
    """
    files: list[Path] = []
    default = user_machines_path()
    if default.is_file():
        files.append(default)
    env = os.environ.get("TOKENWALK_MACHINES")
    for named, what in ((env, "TOKENWALK_MACHINES"), (machines_file, "--machines-file")):
        if not named:
            continue
        p = Path(named).expanduser()
        if p.is_dir():
            raise InputError(f"{what}: '{named}' is a directory; give the machine file in it")
        if not p.is_file():
            raise InputError(f"{what}: no such machine file '{named}'")
        files.append(p)
    return files


# -- resolution -------------------------------------------------------------------------------


def _named_boards(slug: str) -> str:
    """', or name the board: A, B' when the catalogue has boards of `slug` with a bandwidth
    (`radeon-pro-w7800`, whose benchmark named no board: `radeon-pro-w7800-32gb`, `-48gb`)."""
    from tokenwalk.catalog import load_machines

    boards = [m.slug for m in load_machines() if m.slug.startswith(f"{slug}-") and m.bandwidth_gbs]
    return f", or name the board: {', '.join(boards)}" if boards else ""


def _check_numbers(
    bandwidth: float | None,
    tflops: float | None,
    memory: float | None,
    gpu_limit: float | None = None,
) -> None:
    if bandwidth is not None and not (0 < bandwidth <= MAX_BANDWIDTH_GBS):
        raise InputError(
            f"--bandwidth must be in (0, {MAX_BANDWIDTH_GBS:,.0f}] GB/s, not {bandwidth:g}"
        )
    if tflops is not None and not (0 < tflops <= MAX_TFLOPS):
        raise InputError(f"--tflops must be in (0, {MAX_TFLOPS:,.0f}] TFLOPS, not {tflops:g}")
    if memory is not None and not (0 < memory <= MAX_MEMORY_GIB):
        raise InputError(f"--memory must be a positive number of GiB, not {memory:g}")
    if gpu_limit is not None and not (0 < gpu_limit <= MAX_MEMORY_GIB):
        raise InputError(f"--gpu-limit must be a positive number of GiB, not {gpu_limit:g}")


def _check_peak(tflops_kind: str | None, backend: str) -> None:
    if tflops_kind is not None and backend.lower() == "cpu":
        raise InputError(
            "--tflops-kind is for a GPU's rate; a cpu backend computes at its cores' SIMD rate"
        )


def _default_backend(kind: str) -> str:
    return {"apple": "metal", "cpu": "cpu", "sbc": "cpu"}.get(kind, "vulkan")


def _gpu_limit(machine: Machine, *, typed: bool = True, memory_typed: bool = False) -> Machine:
    """Refuse a GPU limit above the machine's memory (it would mean nothing), naming what the
    user typed: --gpu-limit, or --memory below the limit the machine's entry gives."""
    limit, memory = machine.gpu_limit_bytes, machine.memory_bytes
    if limit is not None and memory is not None and limit > memory:
        if typed:
            raise InputError(
                f"--gpu-limit {limit / GIB:g} GiB is more than the {memory / GIB:g} GiB of "
                f"memory of '{machine.slug}'"
            )
        raise InputError(
            f"{'--memory' if memory_typed else 'the memory'} {memory / GIB:g} GiB is less than "
            f"the GPU limit of '{machine.slug}' ({limit / GIB:g} GiB, from its entry): give "
            "--gpu-limit too"
        )
    return machine


def resolve_machine(
    name: str | None,
    *,
    bandwidth: float | None = None,
    tflops: float | None = None,
    memory: float | None = None,
    backend: str | None = None,
    kind: str | None = None,
    machines_file: str | Path | None = None,
    gpu_limit: float | None = None,
    tflops_kind: str | None = None,
    vendor: str | None = None,
) -> Machine:
    """A named machine (catalogue or user file), optionally overridden by inline numbers, or a
    machine given only inline (`--bandwidth` at least; `--tflops` for prefill). `tflops_kind`
    says what a GPU's rate is the peak of, matrix or vector units (the named machine's
    `fp16_kind` otherwise); `vendor` who made an inline machine's chip (one of VENDORS), so
    that it borrows its maker's factors of the fit as a named machine does.

    Inline `memory` and `gpu_limit` are GiB (2^30 bytes), the unit a "24 GB" card or a "16 GB"
    Mac is sold in; bandwidth is decimal GB/s and compute TFLOPS.
    """
    _check_numbers(bandwidth, tflops, memory, gpu_limit)
    if tflops_kind is not None and tflops_kind.lower() not in GPU_PEAKS:
        raise InputError(f"--tflops-kind must be matrix or vector, not '{tflops_kind}'")
    if vendor is not None and vendor.lower() not in VENDORS:
        raise InputError(f"--vendor must be one of {', '.join(VENDORS)}, not '{vendor}'")
    limit_bytes = gpu_limit * GIB if gpu_limit is not None else None
    if name:
        from tokenwalk.catalog import find_machine

        extra = user_machine_files(machines_file)
        entry = find_machine(name, extra_files=extra) if extra else find_machine(name)
        if entry.benchmark_only:
            raise InputError(
                f"'{entry.slug}' ({entry.name}) is only named by published runs: no source gives"
                " its memory and bandwidth, so tokenwalk answers nothing for it; describe it in"
                f" a machine file of your own (docs/machines.md){_named_boards(entry.slug)}"
            )
        k = (kind or entry.kind).lower()
        b = (backend or entry.backend).lower()
        named = machine_vendor(entry.name, b, getattr(entry, "vendor", None))
        if vendor is not None and named != "other" and vendor.lower() != named:
            raise InputError(f"--vendor {vendor}: '{entry.slug}' is {named}'s")
        vendor = vendor.lower() if vendor else named
        _check_peak(tflops_kind, b)
        fit, peak = entry_efficiency(
            entry, backend=backend, kind=kind, tflops_kind=tflops_kind, vendor=vendor
        )
        if not entry.bandwidth_gbs and bandwidth is None:
            raise InputError(
                f"machine '{entry.slug}' has no bandwidth in the catalogue; give --bandwidth"
                + _named_boards(entry.slug)
            )
        if limit_bytes is None and entry.gpu_limit_gb is not None:
            limit_bytes = entry.gpu_limit_gb * entry.unit_bytes
        machine = Machine(
            slug=entry.slug,
            name=entry.name,
            kind=k,
            backend=b,
            vendor=vendor,
            memory_bytes=memory * GIB if memory is not None else entry.memory_bytes,
            bandwidth_gbs=bandwidth if bandwidth is not None else float(entry.bandwidth_gbs),
            tflops=tflops if tflops is not None else entry.tflops_for(b),
            peak=peak,
            gpu_limit_bytes=limit_bytes,
            disk_read_gbs=entry.disk_read_gbs,
            load_gbs=entry.load_gbs,
            load_source=entry.load_source,
            pcie_gen=entry.pcie_gen,
            pcie_lanes=entry.pcie_lanes,
            unified_memory=bool(entry.unified_memory),
            power_w=entry.power_w,
            power_source=entry.power_source,
            cpu_simd=entry.cpu_simd,
            fit=fit,
        )
        return _gpu_limit(machine, typed=gpu_limit is not None, memory_typed=memory is not None)
    if bandwidth is None:
        raise InputError(
            "no machine given: use --machine NAME (see `tokenwalk machines`) or give "
            "--bandwidth GBS (and --tflops T for prefill)"
        )
    # a cpu backend without a kind is a CPU machine, not a GPU computing on its cpu backend
    k = (kind or ("cpu" if (backend or "").lower() == "cpu" else "gpu")).lower()
    b = (backend or _default_backend(k)).lower()
    vendor = machine_vendor("", b, vendor)
    _check_peak(tflops_kind, b)
    peak = peak_of(b, tflops_kind)
    rates = f"{bandwidth:g} GB/s" + (f", {tflops:g} TFLOPS" if tflops is not None else "")
    return _gpu_limit(
        Machine(
            slug="custom",
            name=f"custom ({rates})",
            kind=k,
            backend=b,
            vendor=vendor,
            memory_bytes=memory * GIB if memory is not None else None,
            bandwidth_gbs=bandwidth,
            tflops=tflops,
            peak=peak,
            gpu_limit_bytes=limit_bytes,
            fit=default_efficiency(None, k, b, vendor, peak=peak),
        )
    )
