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

import functools
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from tokenwalk.errors import InputError, SpecError

__all__ = [
    "Efficiency",
    "Machine",
    "GIB",
    "metal_working_set_bytes",
    "TimingDefaults",
    "MAX_BANDWIDTH_GBS",
    "MAX_TFLOPS",
    "MAX_MEMORY_GIB",
    "timing_defaults",
    "FIT_LEVELS",
    "ENGINE_LEVEL",
    "DEFAULT_ENGINE",
    "default_efficiency",
    "compose_efficiency",
    "machine_vendor",
    "fit_keys",
    "peak_of",
    "SEGMENTS",
    "machine_segment",
    "entry_efficiency",
    "GPU_PEAKS",
    "PEAK_KINDS",
    "user_machine_files",
    "user_machines_path",
    "entry_fit",
    "resolve_machine",
]

MAX_BANDWIDTH_GBS = 100_000.0
MAX_TFLOPS = 100_000.0
MAX_MEMORY_GIB = 1e6


FittedTo = Literal["groups", "benchmarks", "machine file"]


class Efficiency(BaseModel):
    """The fitted part of the timing model: time = max(B / (BW x eff_bw), (F + rows_half x R)
    / (FLOPS x eff_compute), routed experts at eff_experts of that rate) + layers x
    overhead_per_layer_s (see `tokenwalk.costs.timing`).
    `source` says where the numbers come from. Files written before the parameter had its unit
    in its name say `overhead_s`; both are read."""

    model_config = ConfigDict(frozen=True)
    eff_bw: float  # share of the spec-sheet bandwidth a pass reaches (0..1)
    eff_compute: float  # share of the dense FP16 rate a large matrix product reaches (0..1)
    overhead_per_layer_s: float  # fixed cost per layer and pass (kernel launches, syncs), seconds
    rows_half: float = 0.0  # rows at which a matrix product reaches half of eff_compute
    # share of a dense product's rate a routed-expert product (llama.cpp's mul_mat_id) of as
    # many rows reaches on a GPU; a cpu backend's experts run at the dense rate
    eff_experts: float = 1.0
    source: str = "default"
    # what the numbers are fitted to: "groups" (composed from the machine's groups: a machine
    # tokenwalk has no runs of), "benchmarks" (a benchmarked machine's published runs, in
    # data/timing.yaml) or "machine file" (a user's own runs, `tokenwalk calibrate`)
    fitted_to: FittedTo = "groups"


# Used only when no data/timing.yaml can be found (a broken install); a rough middle of the fit.
_FALLBACK = Efficiency(
    eff_bw=0.7,
    eff_compute=0.5,
    overhead_per_layer_s=5e-5,
    rows_half=16.0,
    source="built-in fallback",
)
FIT_LEVELS = ("vendor", "peak", "backend", "kind", "kind/backend", "segment")
# The engine a published run went through where it is not llama.cpp itself (Ollama, llamafile):
# an offset of the fit of its own, so that a wrapper's runs do not define their hardware class.
# A machine of the catalogue composed from its groups is priced as llama.cpp runs it; a
# benchmarked machine's own fit keeps the engine its runs were made with.
ENGINE_LEVEL = "engine"
DEFAULT_ENGINE = "llama.cpp"
# What a spec-sheet compute rate is the peak of: a GPU's matrix units (tensor cores, XMX, WMMA,
# Apple's Neural Accelerators) or its vector ALUs (`fp16_kind` in the catalogue); a cpu
# backend computes at its cores' SIMD rate.
GPU_PEAKS = ("matrix", "vector")
PEAK_KINDS = (*GPU_PEAKS, "simd")


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
    # dense INT8 and FP4 peaks of a GPU (TOPS, TFLOPS): the rates llama.cpp's integer and FP4
    # kernels multiply quantized weights at (`costs.timing.weight_kernel_time`); None: unknown,
    # priced at the FP16 rate
    int8_tops: float | None = None
    fp4_tflops: float | None = None
    gpu_limit_bytes: float | None = None  # what the GPU may hold, where set below the memory
    disk_read_gbs: float | None = None
    load_gbs: float | None = None  # a measured cold load: file bytes / seconds
    load_source: str | None = None
    pcie_gen: int | None = None  # a card's interface, or a host's slot for the card
    pcie_lanes: int | None = None
    unified_memory: bool = False  # one memory for GPU and CPU although of kind gpu
    power_w: float | None = None  # board, package or CPU power at full load, W (costs.energy)
    power_source: str | None = None
    fit: Efficiency

    @property
    def balance_flop_per_byte(self) -> float | None:
        """Machine balance = FLOPS / bandwidth = tflops x 1e12 / (GB/s x 1e9). FLOP per byte."""
        if not self.tflops:
            return None
        return self.tflops * 1e12 / (self.bandwidth_gbs * 1e9)

    @property
    def gpu_usable_bytes(self) -> float | None:
        """Bytes the engine's GPU may hold: the set limit (--gpu-limit, `gpu_limit_gb`), else on a
        Mac running Metal the default working set (`metal_working_set_bytes`), else the whole
        memory. None when the memory is unknown."""
        if self.memory_bytes is None:
            return None
        if self.gpu_limit_bytes is not None:
            return min(self.gpu_limit_bytes, self.memory_bytes)
        if self.kind == "apple" and self.backend == "metal":
            return metal_working_set_bytes(self.memory_bytes)
        return self.memory_bytes

    @property
    def gpu_limit_note(self) -> str:
        """Where the GPU's limit comes from; empty when the GPU may use the whole memory."""
        if self.memory_bytes is None:
            return ""
        if self.gpu_limit_bytes is not None and self.gpu_limit_bytes < self.memory_bytes:
            return "the limit set for this machine (--gpu-limit)"
        if self.gpu_limit_bytes is None and self.kind == "apple" and self.backend == "metal":
            share = "2/3" if self.memory_bytes <= APPLE_SMALL_RAM_BYTES else "3/4"
            return (
                f"Metal's default working set, {share} of the RAM (raised by "
                "`sudo sysctl iogpu.wired_limit_mb=N`: then give --gpu-limit)"
            )
        return ""


# -- shipped fitted defaults ------------------------------------------------------------------


class TimingDefaults(BaseModel):
    """`data/timing.yaml`: the global fit, one factor per group of each level (vendor, peak,
    backend, kind, kind/backend), and the fits of benchmarked machines."""

    fitted: str = ""
    global_fit: Efficiency = _FALLBACK
    factors: dict[str, dict[str, dict[str, float]]] = {}  # level -> group -> param -> factor
    machines: dict[str, Efficiency] = {}


_FIT_KEYS = ("eff_bw", "eff_compute", "overhead_per_layer_s", "rows_half", "eff_experts")
# (low, high, low excluded) of each fitted number: a share of a rate, seconds, rows
_FIT_RANGE = {
    "eff_bw": (0.0, 10.0, True),
    "eff_compute": (0.0, 10.0, True),
    "overhead_per_layer_s": (0.0, 1.0, False),
    "rows_half": (0.0, 1e6, False),
    "eff_experts": (0.0, 10.0, True),
}
# keys a fit may leave out (files written before the parameter existed): their neutral value
_FIT_OPTIONAL = {"eff_experts": 1.0}
_OLD_KEYS = {"overhead_per_layer_s": "overhead_s"}  # the name files written before used


def _key(raw: Mapping, key: str) -> Any:
    """raw[key], or the value under the name older files used for it, or its neutral value
    where older files have none."""
    if key not in raw and _OLD_KEYS.get(key) in raw:
        return raw[_OLD_KEYS[key]]
    if key not in raw and key in _FIT_OPTIONAL:
        return _FIT_OPTIONAL[key]
    return raw[key]


def _efficiency(raw: Any, source: str, fitted_to: FittedTo = "groups") -> Efficiency:
    if not isinstance(raw, Mapping):
        raise SpecError(
            f"{source}: a fit must be a mapping of eff_bw, eff_compute, overhead_per_layer_s, "
            "rows_half, eff_experts"
        )
    try:
        values = {
            "eff_bw": float(raw["eff_bw"]),
            "eff_compute": float(raw["eff_compute"]),
            "overhead_per_layer_s": float(_key(raw, "overhead_per_layer_s")),
            "rows_half": float(raw.get("rows_half", 0.0)),
            "eff_experts": float(_key(raw, "eff_experts")),
        }
    except (KeyError, TypeError, ValueError) as exc:
        raise SpecError(f"{source}: bad fit ({exc})") from None
    for key, (lo, hi, strict) in _FIT_RANGE.items():
        v = values[key]
        if not (math.isfinite(v) and (v > lo if strict else v >= lo) and v <= hi):
            within = f"{'above' if strict else 'at least'} {lo:g} and at most {hi:g}"
            raise SpecError(f"{source}: fit {key} is {v:g}; it must be {within}")
    return Efficiency(**values, source=str(raw.get("source", source)), fitted_to=fitted_to)


def _factors(raw: Any) -> dict[str, dict[str, dict[str, float]]]:
    if not isinstance(raw, Mapping):
        raise SpecError("data/timing.yaml: factors must be a mapping of level -> group -> factors")
    out: dict[str, dict[str, dict[str, float]]] = {}
    for level, groups in raw.items():
        if level not in (*FIT_LEVELS, ENGINE_LEVEL) or not isinstance(groups, Mapping):
            raise SpecError(f"data/timing.yaml: unknown fit level '{level}'")
        out[level] = {}
        for group, f in groups.items():
            if not isinstance(f, Mapping):
                raise SpecError(f"data/timing.yaml: bad factors for {level} {group}")
            try:
                out[level][str(group)] = {k: float(_key(f, k)) for k in _FIT_KEYS}
            except (KeyError, TypeError, ValueError) as exc:
                raise SpecError(
                    f"data/timing.yaml: bad factors for {level} {group} ({exc})"
                ) from None
    return out


@functools.lru_cache(maxsize=4)
def timing_defaults(path: str | None = None) -> TimingDefaults:
    """Load `data/timing.yaml` (or `path`)."""
    from tokenwalk.catalog import data_path, read_yaml

    raw = read_yaml(Path(path) if path else data_path("timing.yaml")) or {}
    if not isinstance(raw, dict):
        raise SpecError(f"{path or 'data/timing.yaml'}: expected a mapping of fitted values")
    return TimingDefaults(
        fitted=str(raw.get("fitted", "")),
        global_fit=_efficiency(raw.get("global", {}), "global fit (data/timing.yaml)"),
        factors=_factors(raw.get("factors") or {}),
        machines={
            str(k): _efficiency(v, f"machine {k} (data/timing.yaml)", "benchmarks")
            for k, v in (raw.get("machines") or {}).items()
        },
    )


_VENDOR_WORDS = (
    ("apple", ("apple",)),
    ("nvidia", ("nvidia", "geforce", "rtx", "gtx", "tesla", "jetson", "quadro", "dgx", "gb10")),
    ("amd", ("amd", "radeon", "ryzen", "epyc", "instinct", "threadripper")),
    ("intel", ("intel", "arc", "core", "xeon")),
    ("qualcomm", ("qualcomm", "snapdragon", "adreno")),
)
VENDORS = tuple(maker for maker, _ in _VENDOR_WORDS)  # what --vendor takes
_BACKEND_VENDOR = {"metal": "apple", "cuda": "nvidia", "rocm": "amd", "sycl": "intel"}


def machine_vendor(name: str, backend: str, vendor: str | None = None) -> str:
    """Who made the chip: the entry's `vendor`, else what the backend implies (CUDA: nvidia,
    ROCm: amd, Metal: apple, SYCL: intel), else a maker's name in the machine's name."""
    if vendor:
        return vendor.lower()
    if backend.lower() in _BACKEND_VENDOR:
        return _BACKEND_VENDOR[backend.lower()]
    words = name.lower().replace("-", " ").split()
    for maker, names in _VENDOR_WORDS:
        if any(w in words for w in names):
            return maker
    return "other"


def peak_of(backend: str, fp16_kind: str | None) -> str | None:
    """What a machine's compute rate on `backend` is the peak of (one of PEAK_KINDS): `simd`
    on a cpu backend, else the catalogue's `fp16_kind` (matrix or vector; None when not
    known)."""
    if backend.lower() == "cpu":
        return "simd"
    return fp16_kind.lower() if fp16_kind else None


# The market segment of a machine, for cross-validation that leaves out a whole class of
# hardware (benchmarks/accuracy.py) and for the error a command quotes on a class with no runs
# (tokenwalk.accuracy): a maker's consumer cards (GeForce for NVIDIA), its workstation and
# data-center parts, APUs, integrated GPUs and unified-memory SoCs, Apple's, and CPUs.
SEGMENTS = ("GeForce", "consumer", "pro/data-center", "APU/iGPU", "Apple", "CPU")
_PRO_NAME = re.compile(
    r"\b(rtx pro|rtx a\d+|ada generation|radeon pro|arc pro|quadro|tesla)\b", re.IGNORECASE
)


def machine_segment(kind: str, vendor: str, name: str, unified_memory: bool = False) -> str:
    """A machine's class by maker and segment (one of SEGMENTS, the maker in front but for
    Apple's): 'nvidia GeForce', 'nvidia pro/data-center', 'amd APU/iGPU', 'Apple', 'amd CPU'.
    A card is a workstation part by its name (RTX PRO, RTX A5000, RTX 4000 Ada Generation,
    Radeon PRO, Arc Pro, Quadro, Tesla); a GPU that shares one memory with its CPU (GB10,
    Jetson) is counted with the APUs."""
    kind, vendor = kind.lower(), vendor.lower()
    if kind in ("cpu", "sbc"):
        return f"{vendor} CPU"
    if kind == "apple" or vendor == "apple":
        return "Apple"
    if kind == "igpu" or unified_memory:
        return f"{vendor} APU/iGPU"
    if kind == "datacenter" or _PRO_NAME.search(name):
        return f"{vendor} pro/data-center"
    return f"{vendor} {'GeForce' if vendor == 'nvidia' else 'consumer'}"


def fit_keys(
    vendor: str,
    kind: str,
    backend: str,
    slug: str = "",
    peak: str | None = None,
    engine: str = DEFAULT_ENGINE,
    segment: str = "",
) -> dict[str, str]:
    """The groups a machine belongs to in the fit, level by level. A CPU's vendor group is
    kept apart from the same maker's GPUs (`amd-cpu`); `peak` (`peak_of`) is left out when
    not known, and the engine when it is llama.cpp itself (`ENGINE_LEVEL`); `segment` is the
    maker's segment (`machine_segment`: 'amd APU/iGPU', 'nvidia GeForce')."""
    kind, backend = kind.lower(), backend.lower()
    keys = {
        "vendor": f"{vendor}-cpu" if kind == "cpu" else vendor,
        "peak": peak or "",
        "backend": backend,
        "kind": kind,
        "kind/backend": f"{kind}/{backend}",
        "segment": segment,
        ENGINE_LEVEL: "" if engine == DEFAULT_ENGINE else engine,
    }
    if slug:
        keys["machine"] = slug
    return keys


def compose_efficiency(keys: Mapping[str, str], d: TimingDefaults | None = None) -> Efficiency:
    """Efficiencies of a machine without its own fit: the global fit times the factor of every
    group it belongs to that has one (vendor, peak, backend, kind, kind/backend)."""
    d = d or timing_defaults()
    g = d.global_fit
    values = {k: getattr(g, k) for k in _FIT_KEYS}
    used = []
    for level in FIT_LEVELS:
        f = d.factors.get(level, {}).get(keys.get(level, ""))
        if f is None:
            continue
        used.append(f"{level} {keys[level]}")
        for k in _FIT_KEYS:
            values[k] *= f[k]
    values["eff_bw"] = min(values["eff_bw"], 1.0)
    source = "global fit" + (" x " + ", ".join(used) if used else "") + " (data/timing.yaml)"
    return Efficiency(**values, source=source)


def default_efficiency(
    slug: str | None,
    kind: str,
    backend: str,
    vendor: str,
    *,
    peak: str | None,
    segment: str = "",
) -> Efficiency:
    """Shipped efficiencies for a machine: its own fit, else composed from its groups."""
    d = timing_defaults()
    if slug and slug in d.machines:
        return d.machines[slug]
    return compose_efficiency(fit_keys(vendor, kind, backend, peak=peak, segment=segment), d)


# -- user files -------------------------------------------------------------------------------


def user_machines_path() -> Path:
    """The machine file in the platform's config directory (may not exist)."""
    from platformdirs import user_config_dir

    return Path(user_config_dir("tokenwalk")) / "machines.yaml"


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


def entry_fit(entry: Any) -> Efficiency | None:
    fit = getattr(entry, "fit", None)
    if not fit:
        return None
    return _efficiency(fit, f"machine {entry.slug} (machine file)", "machine file")


def entry_efficiency(
    entry: Any,
    *,
    backend: str | None = None,
    kind: str | None = None,
    tflops_kind: str | None = None,
    vendor: str | None = None,
) -> tuple[Efficiency, str | None]:
    """A catalogue or user machine's efficiencies, and the peak its compute rate is: its own
    fit (machine file, else data/timing.yaml), unless another backend or another peak than its
    `fp16_kind` is asked for, which composes them from its groups (of `kind`, default the
    entry's; of `vendor`, default the maker its name says) instead."""
    b = (backend or entry.backend).lower()
    peak = peak_of(b, tflops_kind or entry.fp16_kind)
    maker = (vendor or machine_vendor(entry.name, b, getattr(entry, "vendor", None))).lower()
    changed = backend is not None or peak != peak_of(b, entry.fp16_kind)
    own = entry_fit(entry)
    if own is not None and not changed:
        return own, peak
    slug = None if changed else entry.slug
    k = (kind or entry.kind).lower()
    segment = machine_segment(k, maker, entry.name, bool(entry.unified_memory))
    return default_efficiency(slug, k, b, maker, peak=peak, segment=segment), peak


def _check_peak(tflops_kind: str | None, backend: str) -> None:
    if tflops_kind is not None and backend.lower() == "cpu":
        raise InputError(
            "--tflops-kind is for a GPU's rate; a cpu backend computes at its cores' SIMD rate"
        )


def _default_backend(kind: str) -> str:
    return {"apple": "metal", "cpu": "cpu", "sbc": "cpu"}.get(kind, "vulkan")


def _gpu_limit(machine: Machine) -> Machine:
    """Refuse a GPU limit above the machine's memory (it would mean nothing)."""
    limit, memory = machine.gpu_limit_bytes, machine.memory_bytes
    if limit is not None and memory is not None and limit > memory:
        raise InputError(
            f"--gpu-limit {limit / GIB:g} GiB is more than the {memory / GIB:g} GiB of memory "
            f"of '{machine.slug}'"
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
    int8_tops: float | None = None,
) -> Machine:
    """A named machine (catalogue or user file), optionally overridden by inline numbers, or a
    machine given only inline (`--bandwidth` at least; `--tflops` for prefill). `tflops_kind`
    says what a GPU's rate is the peak of, matrix or vector units (the named machine's
    `fp16_kind` otherwise); `vendor` who made an inline machine's chip (one of VENDORS), so
    that it borrows its maker's factors of the fit as a named machine does.

    `int8_tops` is a GPU's dense INT8 rate (TOPS), at which llama.cpp's CUDA, ROCm and Vulkan
    kernels multiply quantized weights in prefill; a named machine's catalogue figure otherwise.

    Inline `memory` and `gpu_limit` are GiB (2^30 bytes), the unit a "24 GB" card or a "16 GB"
    Mac is sold in; bandwidth is decimal GB/s and compute TFLOPS.
    """
    _check_numbers(bandwidth, tflops, memory, gpu_limit)
    if int8_tops is not None and not (0 < int8_tops <= MAX_TFLOPS):
        raise InputError(f"--int8-tops must be in (0, {MAX_TFLOPS:,.0f}] TOPS, not {int8_tops:g}")
    if tflops_kind is not None and tflops_kind.lower() not in GPU_PEAKS:
        raise InputError(f"--tflops-kind must be matrix or vector, not '{tflops_kind}'")
    if vendor is not None and vendor.lower() not in VENDORS:
        raise InputError(f"--vendor must be one of {', '.join(VENDORS)}, not '{vendor}'")
    limit_bytes = gpu_limit * GIB if gpu_limit is not None else None
    if name:
        from tokenwalk.catalog import find_machine

        extra = user_machine_files(machines_file)
        entry = find_machine(name, extra_files=extra) if extra else find_machine(name)
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
            int8_tops=int8_tops if int8_tops is not None else entry.int8_tops,
            fp4_tflops=entry.fp4_tflops,
            gpu_limit_bytes=limit_bytes,
            disk_read_gbs=entry.disk_read_gbs,
            load_gbs=entry.load_gbs,
            load_source=entry.load_source,
            pcie_gen=entry.pcie_gen,
            pcie_lanes=entry.pcie_lanes,
            unified_memory=bool(entry.unified_memory),
            power_w=entry.power_w,
            power_source=entry.power_source,
            fit=fit,
        )
        _check_numbers(machine.bandwidth_gbs, machine.tflops, None)
        return _gpu_limit(machine)
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
            int8_tops=int8_tops,
            gpu_limit_bytes=limit_bytes,
            fit=default_efficiency(
                None, k, b, vendor, peak=peak, segment=machine_segment(k, vendor, "")
            ),
        )
    )
