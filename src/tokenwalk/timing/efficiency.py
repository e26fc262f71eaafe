"""A machine's efficiencies: the fitted part of the timing model, and where they come from.

`Efficiency` holds the share of the bandwidth and of the compute an engine reaches, the rows at
which a product reaches half of it, the routed experts' share and a fixed cost per layer and
pass. A machine gets them, in this order, from its own `fit:` (written by `tokenwalk
calibrate`), from the per-machine fits shipped in `data/timing.yaml`, or composed from that
file's global fit times a factor per group it belongs to, level by level (`FIT_LEVELS`:
vendor, peak, backend, kind, kind/backend; `fit_keys`). The fit that writes them is
`tokenwalk.timing.fit`.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from tokenwalk.errors import SpecError

__all__ = [
    "Efficiency",
    "TimingDefaults",
    "timing_defaults",
    "FIT_LEVELS",
    "default_efficiency",
    "compose_efficiency",
    "machine_vendor",
    "machine_segment",
    "fit_keys",
    "peak_of",
    "entry_efficiency",
    "GPU_PEAKS",
    "PEAK_KINDS",
    "entry_fit",
]


FittedTo = Literal["groups", "benchmarks", "machine file"]


class Efficiency(BaseModel):
    """The fitted part of the timing model: time = max(B / (BW x eff_bw), (F + rows_half x R)
    / (FLOPS x eff_compute), routed experts at eff_experts of that rate) + layers x
    overhead_per_layer_s (see `tokenwalk.timing.passes`).
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


FIT_LEVELS = ("vendor", "peak", "backend", "kind", "kind/backend")


# What a spec-sheet compute rate is the peak of: a GPU's matrix units (tensor cores, XMX, WMMA,
# Apple's Neural Accelerators) or its vector ALUs (`fp16_kind` in the catalogue); a cpu
# backend computes at its cores' SIMD rate.
GPU_PEAKS = ("matrix", "vector")


PEAK_KINDS = (*GPU_PEAKS, "simd")


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
        if level not in FIT_LEVELS or not isinstance(groups, Mapping):
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
    from tokenwalk.catalog import read_data, read_yaml

    raw = (read_yaml(Path(path)) if path else read_data("timing.yaml")) or {}
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


_PRO_NAME = re.compile(
    r"\b(rtx pro|rtx a\d+|ada generation|radeon pro|arc pro|quadro|tesla)\b", re.IGNORECASE
)


def machine_segment(
    kind: str, vendor: str, name: str, backend: str = "", unified_memory: bool = False
) -> str:
    """A machine's class, maker x segment: what leave-one-group-out cross-validation leaves
    out together (benchmarks/accuracy.py), and whose error a machine of a class without runs
    quotes (`tokenwalk.timing.accuracy`); not a level of the fit, no prediction reads it. The
    maker in front but for Apple's: 'nvidia geforce', 'nvidia pro', 'amd apu', 'apple',
    'intel cpu', 'amd consumer'. A machine computing on its CPU cores (kind cpu, or a cpu
    backend) is its maker's `cpu`; an integrated GPU, a board's GPU or one sharing one memory
    with its CPU (GB10, Jetson) an `apu`; a data-center card or a workstation card by its name
    (RTX PRO, RTX A5000, RTX 4000 Ada Generation, Radeon PRO, Arc Pro, Quadro, Tesla) `pro`
    (workstation and data-center); another card its maker's consumer line (NVIDIA's
    `geforce`)."""
    kind, vendor, backend = kind.lower(), vendor.lower(), backend.lower()
    if kind == "cpu" or backend == "cpu":
        return f"{vendor} cpu"
    if kind == "apple" or vendor == "apple":
        return "apple"
    if kind in ("igpu", "sbc") or unified_memory:
        return f"{vendor} apu"
    if kind == "datacenter" or _PRO_NAME.search(name):
        return f"{vendor} pro"
    return f"{vendor} {'geforce' if vendor == 'nvidia' else 'consumer'}"


def peak_of(backend: str, fp16_kind: str | None) -> str | None:
    """What a machine's compute rate on `backend` is the peak of (one of PEAK_KINDS): `simd`
    on a cpu backend, else the catalogue's `fp16_kind` (matrix or vector; None when not
    known)."""
    if backend.lower() == "cpu":
        return "simd"
    return fp16_kind.lower() if fp16_kind else None


def fit_keys(
    vendor: str, kind: str, backend: str, slug: str = "", peak: str | None = None
) -> dict[str, str]:
    """The groups a machine belongs to in the fit, level by level. A CPU's vendor group is
    kept apart from the same maker's GPUs (`amd-cpu`); `peak` (`peak_of`) is left out when
    not known."""
    kind, backend = kind.lower(), backend.lower()
    keys = {
        "vendor": f"{vendor}-cpu" if kind == "cpu" else vendor,
        "peak": peak or "",
        "backend": backend,
        "kind": kind,
        "kind/backend": f"{kind}/{backend}",
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
    slug: str | None, kind: str, backend: str, vendor: str, *, peak: str | None
) -> Efficiency:
    """Shipped efficiencies for a machine: its own fit, else composed from its groups."""
    d = timing_defaults()
    if slug and slug in d.machines:
        return d.machines[slug]
    return compose_efficiency(fit_keys(vendor, kind, backend, peak=peak), d)


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
    return default_efficiency(slug, (kind or entry.kind).lower(), b, maker, peak=peak), peak
