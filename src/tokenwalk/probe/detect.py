"""What this machine is: CPU, memory, GPUs, read from what the operating system and the vendors'
tools tell.

Every source is optional. A library that is not installed, a tool that is not on the PATH, a file
that cannot be read: each is one `Note` in the result, never an error. The parsers are pure
functions of the text (or the values) a source returns, so each is tested on recorded output
without the hardware:

- CPU: `/proc/cpuinfo` (Linux), `sysctl` (macOS), `platform` elsewhere;
- memory: `/proc/meminfo`, `sysctl hw.memsize`; type and speed from `dmidecode -t memory`
  (Linux, needs root) or `system_profiler SPMemoryDataType` (macOS);
- GPUs: NVIDIA through `nvidia-ml-py` (NVML) or `nvidia-smi`; AMD through `amdsmi` or the
  amdgpu driver's sysfs files; Apple through `system_profiler SPDisplaysDataType`; Intel and
  others through `/sys/class/drm` and `lspci`.

Sizes are bytes; GPU memory as the driver reports it (NVML and sysfs give bytes, nvidia-smi and
system_profiler MiB or "GB" meaning GiB).
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

__all__ = [
    "Note",
    "CpuInfo",
    "MemoryInfo",
    "GpuInfo",
    "Detected",
    "simd_features",
    "native_simd",
    "clean_model_name",
    "parse_cpuinfo",
    "parse_meminfo",
    "parse_sysctl",
    "parse_dmidecode_memory",
    "parse_system_profiler_memory",
    "parse_system_profiler_displays",
    "parse_nvidia_smi",
    "gpus_from_nvml",
    "gpus_from_amdsmi",
    "parse_drm_sysfs",
    "parse_lspci",
    "llama_backend",
    "cpu_kernels",
    "detect_machine",
]

MIB = 1 << 20
GIB = 1 << 30
_TIMEOUT_S = 10

# PCI vendor ids of GPU makers; other display adapters (a server's ASPEED, a VM's virtio) are
# no compute device and are only noted
PCI_VENDORS = {
    "0x10de": "nvidia",
    "0x1002": "amd",
    "0x8086": "intel",
    "0x106b": "apple",
    "0x5143": "qualcomm",
    "0x1ed5": "moore-threads",
}


class Note(BaseModel):
    """What one source said: `found` (it answered), `absent` (not installed or not on this
    OS) or `failed` (it ran and gave nothing usable)."""

    source: str
    status: str  # found, absent, failed
    detail: str = ""


class CpuInfo(BaseModel):
    name: str | None  # the CPU's model name
    vendor: str | None = None
    arch: str
    n_cores: int | None  # physical cores
    n_threads: int | None  # logical CPUs
    n_usable_threads: int  # this process's affinity mask
    simd: list[str]  # avx2, avx512, avx512_vnni, avx512_bf16, amx, neon, sve, sve2, i8mm, ...
    l3_bytes: int | None = None
    source: str


class MemoryInfo(BaseModel):
    total_bytes: int | None
    available_bytes: int | None = None
    dram_type: str | None = None  # DDR5, LPDDR5X, ...
    speed_mts: int | None = None  # configured speed, MT/s
    n_modules: int | None = None  # populated DIMMs, where told
    source: str


class GpuInfo(BaseModel):
    vendor: str  # nvidia, amd, intel, apple, ...
    name: str
    memory_bytes: int | None  # the GPU's own memory (None: shared with the CPU, or not told)
    n_gpu_cores: int | None = None  # Apple: GPU cores
    driver: str | None = None
    bus_id: str | None = None
    source: str


class Detected(BaseModel):
    os: str
    cpu: CpuInfo
    memory: MemoryInfo
    gpus: list[GpuInfo]
    backend: str  # the llama.cpp backend that would run: cuda, rocm, metal, vulkan, sycl, cpu
    backend_reason: str
    notes: list[Note]


# -- CPU --------------------------------------------------------------------------------------

# /proc/cpuinfo flag (x86 `flags`, Arm `Features`) -> the feature as tokenwalk names it
_X86_FEATURES = (
    ("avx2", "avx2"),
    ("avx512f", "avx512"),
    ("avx512_vnni", "avx512_vnni"),
    ("avx512_bf16", "avx512_bf16"),
    ("avx512_fp16", "avx512_fp16"),
    ("avx_vnni", "avx_vnni"),
    ("amx_tile", "amx"),
    ("amx_int8", "amx_int8"),
    ("amx_bf16", "amx_bf16"),
    ("f16c", "f16c"),
    ("fma", "fma"),
)
_ARM_FEATURES = (
    ("asimd", "neon"),
    ("asimdhp", "neon_fp16"),
    ("asimddp", "dotprod"),
    ("i8mm", "i8mm"),
    ("sve", "sve"),
    ("sve2", "sve2"),
    ("sme", "sme"),
    ("bf16", "bf16"),
)


def simd_features(flags: Iterable[str]) -> list[str]:
    """The SIMD and matrix features llama.cpp's CPU kernels use, from a CPU's flag words."""
    have = {f.lower() for f in flags}
    out = [name for flag, name in _X86_FEATURES + _ARM_FEATURES if flag in have]
    return list(dict.fromkeys(out))


def native_simd(simd: Iterable[str]) -> str | None:
    """The SIMD a native build of llama.cpp's CPU backend (GGML_NATIVE, its cmake default)
    uses here, as `MachineEntry.cpu_simd` names it; None where none of those is there."""
    have = set(simd)
    for feature in ("avx512_fp16", "avx512", "avx2"):
        if feature in have:
            return feature
    return "neon" if "neon_fp16" in have else None


def clean_model_name(name: str) -> str:
    """'Intel(R) Xeon(R) Gold 6430 CPU @ 2.10GHz' -> 'Intel Xeon Gold 6430 CPU @ 2.10GHz'."""
    name = re.sub(r"\((?:R|TM|tm|r)\)", "", name)
    return " ".join(name.split())


def parse_cpuinfo(text: str) -> dict[str, Any]:
    """Model, vendor, flags, logical CPUs and physical cores from Linux's /proc/cpuinfo.

    Physical cores are the distinct (physical id, core id) pairs; where those are missing (Arm),
    every logical CPU is a core. Arm kernels print no model name: the model is then the
    `Hardware` or `Model` line when there is one."""
    blocks = [b for b in re.split(r"\n\s*\n", text.strip()) if b.strip()]
    procs: list[dict[str, str]] = []
    for b in blocks:
        d: dict[str, str] = {}
        for line in b.splitlines():
            key, sep, value = line.partition(":")
            if sep:
                d.setdefault(key.strip().lower(), value.strip())
        procs.append(d)
    cpus = [p for p in procs if "processor" in p]
    extra = {k: v for p in procs if "processor" not in p for k, v in p.items()}
    first = cpus[0] if cpus else extra
    model = first.get("model name") or extra.get("hardware") or extra.get("model")
    flags = (first.get("flags") or first.get("features") or "").split()
    cores = {(p.get("physical id"), p.get("core id")) for p in cpus if "core id" in p}
    return {
        "model": clean_model_name(model) if model else None,
        "vendor": first.get("vendor_id") or first.get("cpu implementer"),
        "flags": flags,
        "threads": len(cpus) or None,
        "cores": len(cores) if cores else (len(cpus) or None),
        "cache_kb": _int(re.sub(r"\D", "", first.get("cache size", "")) or None),
    }


def parse_sysctl(text: str) -> dict[str, str]:
    """`sysctl -a` (or `sysctl key ...`) output, `key: value` lines, as a mapping."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip():
            out[key.strip()] = value.strip()
    return out


def _cpu_from_sysctl(s: Mapping[str, str]) -> dict[str, Any]:
    """Model, cores, threads and features of a Mac from its sysctl keys."""
    flags = []
    for key, value in s.items():
        if value != "1":
            continue
        if key.startswith("hw.optional.arm.FEAT_"):
            flags.append(key.removeprefix("hw.optional.arm.FEAT_").lower())
        elif key.startswith("hw.optional."):
            flags.append(key.removeprefix("hw.optional.").removesuffix("_0").lower())
    if s.get("hw.optional.neon") == "1" or s.get("hw.optional.AdvSIMD") == "1":
        flags.append("asimd")
    if "dotprod" in flags:
        flags.append("asimddp")
    if "fp16" in flags or "neon_fp16" in flags:
        flags.append("asimdhp")
    return {
        "model": s.get("machdep.cpu.brand_string"),
        "vendor": "Apple" if "Apple" in s.get("machdep.cpu.brand_string", "") else None,
        "flags": flags,
        "threads": _int(s.get("hw.logicalcpu")),
        "cores": _int(s.get("hw.physicalcpu")),
        "memory_bytes": _int(s.get("hw.memsize")),
        "l3_bytes": _int(s.get("hw.l3cachesize")) or None,
    }


def _int(value: Any) -> int | None:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


def _l3_bytes_sysfs(root: Path) -> int | None:
    """The largest cache of cpu0 in sysfs (`index*/size`, '491520K')."""
    best = None
    for idx in sorted((root / "devices/system/cpu/cpu0/cache").glob("index*")):
        size = _read(idx / "size")
        m = re.fullmatch(r"(\d+)\s*([KMG]?)", size or "")
        if m:
            n = int(m[1]) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m[2]]
            best = max(best or 0, n)
    return best


# -- memory -----------------------------------------------------------------------------------


def parse_meminfo(text: str) -> dict[str, int | None]:
    """MemTotal and MemAvailable from /proc/meminfo, in bytes (the file says kB = KiB)."""
    vals: dict[str, int | None] = {"total": None, "available": None}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if key in ("MemTotal", "MemAvailable"):
            n = _int(rest.split()[0]) if rest.split() else None
            vals["total" if key == "MemTotal" else "available"] = n * 1024 if n else None
    return vals


def parse_dmidecode_memory(text: str) -> dict[str, Any]:
    """Type, configured speed and module count from `dmidecode -t memory` (SMBIOS type 17).

    Empty slots ('No Module Installed') are skipped; the speed is the configured one
    ('Configured Memory Speed' or, in older versions, 'Configured Clock Speed'), else the
    module's rated speed, in MT/s."""
    types, speeds, modules = [], [], 0
    for block in re.split(r"\n(?=Handle )", text):
        if "Memory Device" not in block:
            continue
        fields = {}
        for line in block.splitlines():
            key, sep, value = line.strip().partition(":")
            if sep:
                fields[key.strip()] = value.strip()
        if fields.get("Size", "").startswith(("No Module", "Not Installed")) or not fields:
            continue
        modules += 1
        if fields.get("Type") not in (None, "Unknown", "Other"):
            types.append(fields["Type"])
        for key in ("Configured Memory Speed", "Configured Clock Speed", "Speed"):
            m = re.match(r"(\d+)\s*(MT/s|MHz)", fields.get(key, ""))
            if m:
                speeds.append(int(m[1]))
                break
    return {
        "type": types[0] if types else None,
        "speed_mts": min(speeds) if speeds else None,
        "modules": modules or None,
    }


def parse_system_profiler_memory(data: Mapping[str, Any]) -> dict[str, Any]:
    """Type and size of a Mac's memory from `system_profiler -json SPMemoryDataType`."""
    items = data.get("SPMemoryDataType") or []
    first = items[0] if items and isinstance(items[0], Mapping) else {}
    size = _gib_text(first.get("SPMemoryDataType"))
    speed = re.match(r"(\d+)", str(first.get("dimm_speed", "")))
    return {
        "type": first.get("dimm_type"),
        "total_bytes": size,
        "speed_mts": int(speed[1]) if speed else None,
    }


def _gib_text(text: Any) -> int | None:
    """'32 GB' (Apple's GB are GiB) or '8192 MB' -> bytes."""
    m = re.match(r"\s*([\d.]+)\s*([MGT])B", str(text or ""))
    if not m:
        return None
    return round(float(m[1]) * {"M": MIB, "G": GIB, "T": GIB << 10}[m[2]])


# -- GPUs -------------------------------------------------------------------------------------


def parse_system_profiler_displays(data: Mapping[str, Any]) -> list[GpuInfo]:
    """GPUs from `system_profiler -json SPDisplaysDataType`: Apple silicon gives the chip and
    its GPU cores (memory is the unified RAM, so None here); Intel Macs give a VRAM size."""
    gpus = []
    for item in data.get("SPDisplaysDataType") or []:
        if not isinstance(item, Mapping):
            continue
        name = item.get("sppci_model") or item.get("_name")
        if not name:
            continue
        vendor_raw = str(item.get("spdisplays_vendor") or item.get("sppci_vendor") or "").lower()
        vendor = next(
            (v for v in ("apple", "amd", "nvidia", "intel") if v in vendor_raw), None
        ) or _vendor_from_name(str(name))
        vram = _gib_text(item.get("spdisplays_vram") or item.get("_spdisplays_vram"))
        gpus.append(
            GpuInfo(
                vendor=vendor,
                name=str(name),
                memory_bytes=None if vendor == "apple" else vram,
                n_gpu_cores=_int(item.get("sppci_cores")),
                source="system_profiler",
            )
        )
    return gpus


def _vendor_from_name(name: str) -> str:
    low = name.lower()
    for vendor, words in (
        ("nvidia", ("nvidia", "geforce", "quadro", "tesla")),
        ("amd", ("amd", "radeon", "ati ", "instinct")),
        ("intel", ("intel", " arc")),
        ("apple", ("apple",)),
        ("qualcomm", ("qualcomm", "adreno")),
    ):
        if any(w in f" {low}" for w in words):
            return vendor
    return "other"


def parse_nvidia_smi(text: str) -> list[GpuInfo]:
    """GPUs from `nvidia-smi --query-gpu=name,memory.total,driver_version,pci.bus_id
    --format=csv,noheader,nounits` (memory in MiB)."""
    gpus = []
    for line in text.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 2 or not parts[0]:
            continue
        mib = _int(parts[1])
        gpus.append(
            GpuInfo(
                vendor="nvidia",
                name=parts[0],
                memory_bytes=mib * MIB if mib else None,
                driver=parts[2] if len(parts) > 2 and parts[2] else None,
                bus_id=parts[3].lower() if len(parts) > 3 and parts[3] else None,
                source="nvidia-smi",
            )
        )
    return gpus


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def gpus_from_nvml(nvml: Any) -> list[GpuInfo]:
    """GPUs through NVML (`import pynvml`, the nvidia-ml-py package): name, total memory
    (bytes), driver version and PCI bus id of each device."""
    nvml.nvmlInit()
    try:
        driver = _text(nvml.nvmlSystemGetDriverVersion())
        gpus = []
        for i in range(nvml.nvmlDeviceGetCount()):
            h = nvml.nvmlDeviceGetHandleByIndex(i)
            try:
                bus = _text(nvml.nvmlDeviceGetPciInfo(h).busId).lower()
            except Exception:  # an old driver without PCI info: the rest still stands
                bus = None
            gpus.append(
                GpuInfo(
                    vendor="nvidia",
                    name=_text(nvml.nvmlDeviceGetName(h)),
                    memory_bytes=int(nvml.nvmlDeviceGetMemoryInfo(h).total),
                    driver=driver,
                    bus_id=bus,
                    source="nvml",
                )
            )
        return gpus
    finally:
        nvml.nvmlShutdown()


def gpus_from_amdsmi(amdsmi: Any) -> list[GpuInfo]:
    """AMD GPUs through the `amdsmi` library: market name and VRAM (bytes) of each device."""
    amdsmi.amdsmi_init()
    try:
        gpus = []
        for h in amdsmi.amdsmi_get_processor_handles():
            asic = amdsmi.amdsmi_get_gpu_asic_info(h)
            vram = amdsmi.amdsmi_get_gpu_memory_total(h, amdsmi.AmdSmiMemoryType.VRAM)
            try:
                bus = str(amdsmi.amdsmi_get_gpu_device_bdf(h)).lower()
            except Exception:  # not every version has it
                bus = None
            gpus.append(
                GpuInfo(
                    vendor="amd",
                    name=str(asic.get("market_name") or asic.get("device_id") or "AMD GPU"),
                    memory_bytes=int(vram) if vram else None,
                    bus_id=bus,
                    source="amdsmi",
                )
            )
        return gpus
    finally:
        amdsmi.amdsmi_shut_down()


def parse_drm_sysfs(root: Path) -> tuple[list[GpuInfo], list[str]]:
    """GPUs under ROOT/class/drm/card*/device (Linux sysfs): PCI vendor, driver, and the VRAM
    the amdgpu driver reports (`mem_info_vram_total`, bytes); the name is the PCI id until
    `lspci` names it. Returns the GPUs of GPU makers and the other display adapters seen."""
    gpus, others = [], []
    seen = set()
    for card in sorted((root / "class/drm").glob("card[0-9]*")):
        dev = card / "device"
        if "-" in card.name or not dev.exists():
            continue  # card0-HDMI-A-1: a connector, not a device
        uevent = dict(
            line.split("=", 1) for line in (_read(dev / "uevent") or "").splitlines() if "=" in line
        )
        bus = uevent.get("PCI_SLOT_NAME", "").lower() or None
        if bus in seen:
            continue
        seen.add(bus)
        vendor_id = (_read(dev / "vendor") or "").lower()
        device_id = (_read(dev / "device") or "").lower()
        vendor = PCI_VENDORS.get(vendor_id)
        if vendor is None:
            others.append(f"{vendor_id or '?'}:{device_id or '?'} ({uevent.get('DRIVER', '?')})")
            continue
        vram = _int(_read(dev / "mem_info_vram_total"))
        gpus.append(
            GpuInfo(
                vendor=vendor,
                name=f"PCI {vendor_id[2:]}:{device_id[2:]}",
                memory_bytes=vram or None,
                driver=uevent.get("DRIVER"),
                bus_id=bus,
                source="sysfs",
            )
        )
    return gpus, others


_LSPCI_CLASSES = ("VGA compatible controller", "3D controller", "Display controller")


def parse_lspci(text: str) -> list[GpuInfo]:
    """Display devices from plain `lspci` output: '01:00.0 VGA compatible controller: NVIDIA
    Corporation AD102 [GeForce RTX 4090] (rev a1)'. The bracketed marketing name is the name
    when there is one. No memory: lspci does not tell it."""
    gpus = []
    for line in text.splitlines():
        m = re.match(r"(\S+)\s+(.+?):\s+(.+)", line)
        if not m or not any(m[2].endswith(c) for c in _LSPCI_CLASSES):
            continue
        desc = re.sub(r"\s*\(rev [0-9a-f]+\)\s*$", "", m[3])
        names = re.findall(r"\[([^\]]+)\]", desc)
        vendor = _vendor_from_name(desc)
        # AMD lists every board of a chip: '[Radeon RX 7900 XT/7900 XTX/7900M]'; the memory
        # tells them apart when the catalogue is matched
        name = names[-1] if names and vendor != "other" else desc
        bus = m[1].lower()
        gpus.append(
            GpuInfo(
                vendor=vendor,
                name=name,
                memory_bytes=None,
                bus_id=bus if bus.count(":") == 2 else f"0000:{bus}",
                source="lspci",
            )
        )
    return gpus


# -- which llama.cpp backend ------------------------------------------------------------------


def cpu_kernels(simd: Iterable[str], vendor: str | None = None) -> str:
    """The widest SIMD llama.cpp's CPU backend uses here, and the variant a build with every
    CPU variant (GGML_CPU_ALL_VARIANTS) loads: sapphirerapids (AMX), zen4, icelake, skylakex,
    alderlake, haswell; on Arm NEON, dot product, i8mm, SVE."""
    have = set(simd)
    amd = "amd" in (vendor or "").lower()
    if "amx_int8" in have and "avx512" in have:
        return "AVX-512 and AMX (ggml's sapphirerapids variant)"
    if "avx512" in have:
        if amd:
            return "AVX-512 (ggml's zen4 variant)"
        return "AVX-512" + (
            " VNNI (ggml's icelake variant)"
            if "avx512_vnni" in have
            else " (ggml's skylakex variant)"
        )
    if "avx2" in have:
        return "AVX2" + (
            " VNNI (ggml's alderlake variant)"
            if "avx_vnni" in have
            else " (ggml's haswell variant)"
        )
    arm = [f for f in ("neon", "dotprod", "i8mm", "sve", "sve2", "sme") if f in have]
    if arm:
        return "Arm " + ", ".join(arm)
    return "no AVX2 or NEON: ggml's slowest kernels"


def llama_backend(gpus: list[GpuInfo], rocm: bool = False) -> tuple[str, str]:
    """The backend a llama.cpp build for this machine would run on, and why: CUDA for an NVIDIA
    GPU, Metal on Apple silicon, ROCm for an AMD GPU where ROCm is installed (else Vulkan),
    Vulkan for Intel and other GPUs, else the CPU backend."""
    by_vendor = {g.vendor for g in gpus}
    if "nvidia" in by_vendor:
        return "cuda", "an NVIDIA GPU: llama.cpp's CUDA build"
    if "apple" in by_vendor:
        return "metal", "Apple silicon: Metal (llama.cpp's default build on macOS)"
    if "amd" in by_vendor:
        if rocm:
            return "rocm", "an AMD GPU with ROCm installed: llama.cpp's HIP build"
        return "vulkan", "an AMD GPU without ROCm: llama.cpp's Vulkan build"
    if by_vendor & {"intel", "qualcomm", "moore-threads", "other"}:
        return "vulkan", "a GPU without CUDA, ROCm or Metal: llama.cpp's Vulkan build"
    return "cpu", "no GPU found: llama.cpp's CPU backend"


# -- running the sources ----------------------------------------------------------------------


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def _run(argv: list[str]) -> tuple[str | None, str]:
    """stdout of a tool, or None and why not (not found, failed, timed out)."""
    exe = shutil.which(argv[0])
    if exe is None:
        return None, "not found on the PATH"
    try:
        res = subprocess.run(
            [exe, *argv[1:]], capture_output=True, text=True, timeout=_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"did not run ({type(exc).__name__})"
    if res.returncode != 0:
        err = (res.stderr or res.stdout).strip().splitlines()
        return None, f"exit code {res.returncode}" + (f": {err[0][:120]}" if err else "")
    return res.stdout, ""


def _import(name: str) -> Any:
    import importlib

    return importlib.import_module(name)


class _Probe:
    """Collects notes while the sources are tried one by one."""

    def __init__(self, root: Path, run: Callable, importer: Callable) -> None:
        self.root, self.run, self.importer = root, run, importer
        self.notes: list[Note] = []

    def note(self, source: str, status: str, detail: str = "") -> None:
        self.notes.append(Note(source=source, status=status, detail=detail))

    def tool(self, argv: list[str], source: str) -> str | None:
        out, why = self.run(argv)
        if out is None:
            self.note(source, "absent" if "not found" in why else "failed", why)
        return out

    def module(self, name: str, source: str) -> Any:
        try:
            return self.importer(name)
        except ImportError:
            self.note(source, "absent", f"Python package not installed (import {name})")
        except Exception as exc:  # a broken install is a line, not a failure
            self.note(source, "failed", f"import {name}: {type(exc).__name__}")
        return None


def _detect_cpu(p: _Probe, system: str, usable: int) -> tuple[CpuInfo, dict[str, Any]]:
    info: dict[str, Any] = {}
    source = "platform"
    if system == "Linux":
        text = _read(p.root / "proc/cpuinfo")
        if text:
            info = parse_cpuinfo(text)
            source = "/proc/cpuinfo"
            p.note("/proc/cpuinfo", "found", info.get("model") or "")
        else:
            p.note("/proc/cpuinfo", "failed", "cannot read")
    elif system == "Darwin":
        out = p.tool(["sysctl", "-a"], "sysctl")
        if out:
            info = _cpu_from_sysctl(parse_sysctl(out))
            source = "sysctl"
            p.note("sysctl", "found", info.get("model") or "")
    l3 = info.get("l3_bytes") or (_l3_bytes_sysfs(p.root / "sys") if system == "Linux" else None)
    if l3 is None and info.get("cache_kb"):
        l3 = info["cache_kb"] * 1024
    cpu = CpuInfo(
        name=info.get("model") or platform.processor() or None,
        vendor=info.get("vendor"),
        arch=platform.machine(),
        n_cores=info.get("cores"),
        n_threads=info.get("threads") or os.cpu_count(),
        n_usable_threads=usable,
        simd=simd_features(info.get("flags", [])),
        l3_bytes=l3,
        source=source,
    )
    return cpu, info


def _detect_memory(p: _Probe, system: str, cpu_info: dict[str, Any]) -> MemoryInfo:
    total = available = None
    source = "none"
    kind = speed = modules = None
    if system == "Linux":
        text = _read(p.root / "proc/meminfo")
        if text:
            vals = parse_meminfo(text)
            total, available, source = vals["total"], vals["available"], "/proc/meminfo"
        out = p.tool(["dmidecode", "-t", "memory"], "dmidecode")
        if out:
            d = parse_dmidecode_memory(out)
            kind, speed, modules = d["type"], d["speed_mts"], d["modules"]
            p.note("dmidecode", "found" if kind or speed else "failed", kind or "no memory devices")
    elif system == "Darwin":
        total = cpu_info.get("memory_bytes")
        source = "sysctl hw.memsize"
        out = p.tool(["system_profiler", "-json", "SPMemoryDataType"], "system_profiler memory")
        if out:
            try:
                d = parse_system_profiler_memory(json.loads(out))
                kind, speed = d["type"], d["speed_mts"]
                total = total or d["total_bytes"]
                p.note("system_profiler memory", "found", kind or "")
            except (ValueError, AttributeError):
                p.note("system_profiler memory", "failed", "not JSON")
    if total is None:
        try:
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
            source = "sysconf"
        except (ValueError, OSError, AttributeError):
            pass
    return MemoryInfo(
        total_bytes=total,
        available_bytes=available,
        dram_type=kind,
        speed_mts=speed,
        n_modules=modules,
        source=source,
    )


def _merge_names(gpus: list[GpuInfo], named: list[GpuInfo]) -> list[GpuInfo]:
    """Give sysfs GPUs the names lspci prints for the same PCI slot."""
    by_bus = {g.bus_id: g for g in named if g.bus_id}
    out = []
    for g in gpus:
        n = by_bus.get(g.bus_id)
        out.append(g.model_copy(update={"name": n.name, "source": "sysfs+lspci"}) if n else g)
    return out


def _detect_gpus(p: _Probe, system: str) -> tuple[list[GpuInfo], bool]:
    """GPUs from the best source for each maker, and whether ROCm is installed."""
    if system == "Darwin":
        out = p.tool(["system_profiler", "-json", "SPDisplaysDataType"], "system_profiler")
        if not out:
            return [], False
        try:
            gpus = parse_system_profiler_displays(json.loads(out))
        except (ValueError, AttributeError):
            p.note("system_profiler", "failed", "not JSON")
            return [], False
        p.note("system_profiler", "found", ", ".join(g.name for g in gpus) or "no GPU")
        return gpus, False

    nvidia: list[GpuInfo] = []
    nvml = p.module("pynvml", "nvidia-ml-py")
    if nvml is not None:
        try:
            nvidia = gpus_from_nvml(nvml)
            p.note("nvidia-ml-py", "found", f"{len(nvidia)} NVIDIA GPU(s)")
        except Exception as exc:  # no driver, no device: NVML raises its own errors
            p.note("nvidia-ml-py", "failed", f"{type(exc).__name__}: {str(exc)[:100]}")
    if not nvidia:
        out = p.tool(
            [
                "nvidia-smi",
                "--query-gpu=name,memory.total,driver_version,pci.bus_id",
                "--format=csv,noheader,nounits",
            ],
            "nvidia-smi",
        )
        if out is not None:
            nvidia = parse_nvidia_smi(out)
            p.note("nvidia-smi", "found", f"{len(nvidia)} NVIDIA GPU(s)")

    amd: list[GpuInfo] = []
    amdsmi = p.module("amdsmi", "amdsmi")
    rocm = amdsmi is not None or (p.root / "opt/rocm").is_dir()
    if amdsmi is not None:
        try:
            amd = gpus_from_amdsmi(amdsmi)
            p.note("amdsmi", "found", f"{len(amd)} AMD GPU(s)")
        except Exception as exc:  # no amdgpu driver loaded
            p.note("amdsmi", "failed", f"{type(exc).__name__}: {str(exc)[:100]}")

    sysfs: list[GpuInfo] = []
    if system == "Linux":
        drm = p.root / "sys"
        if (drm / "class/drm").is_dir():
            sysfs, others = parse_drm_sysfs(drm)
            detail = f"{len(sysfs)} GPU(s)"
            if others:
                detail += f"; other display adapters (no compute): {', '.join(others)}"
            p.note("sysfs /sys/class/drm", "found", detail)
        else:
            p.note("sysfs /sys/class/drm", "absent", "no DRM devices")
    lspci_out = p.tool(["lspci"], "lspci")
    named = parse_lspci(lspci_out) if lspci_out else []
    if lspci_out is not None:
        p.note("lspci", "found", f"{len(named)} display device(s)")
    sysfs = _merge_names(sysfs, named)
    if not sysfs:  # no sysfs (a container): what lspci names, from GPU makers only
        sysfs = [g for g in named if g.vendor != "other"]

    gpus = list(nvidia) + list(amd)
    taken = {g.vendor for g in gpus}
    gpus += [g for g in sysfs if g.vendor not in taken]
    return gpus, rocm


def detect_machine(
    root: Path | str = "/",
    *,
    run: Callable[[list[str]], tuple[str | None, str]] | None = None,
    importer: Callable[[str], Any] | None = None,
    system: str | None = None,
) -> Detected:
    """Describe this machine. `root`, `run` and `importer` are where files, tools and optional
    libraries come from (tests point them at recorded output)."""
    from tokenwalk.probe.measure import usable_cpus

    p = _Probe(Path(root), run or _run, importer or _import)
    system = system or platform.system()
    cpu, cpu_raw = _detect_cpu(p, system, usable_cpus())
    memory = _detect_memory(p, system, cpu_raw)
    gpus, rocm = _detect_gpus(p, system)
    backend, reason = llama_backend(gpus, rocm)
    kernels = cpu_kernels(cpu.simd, cpu.vendor)
    reason += (
        f"; its CPU backend (for what stays on the CPU) uses {kernels}"
        if backend != "cpu"
        else f", {kernels}"
    )
    return Detected(
        os=f"{system} {platform.release()}".strip(),
        cpu=cpu,
        memory=memory,
        gpus=gpus,
        backend=backend,
        backend_reason=reason,
        notes=p.notes,
    )
