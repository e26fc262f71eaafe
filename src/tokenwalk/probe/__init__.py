"""This machine: what it is (`detect`), what it does (`measure`), and the machine entry that
`tokenwalk probe --write` stores in the user's machine file.

The entry is a CPU machine with the measured rates (read bandwidth at every thread as
`bandwidth_gbs`, the f32 GEMM rate as `cpu_tflops`) unless a GPU is detected and matched to a
catalogue entry: then it is that GPU's entry (its spec-sheet bandwidth and FP16 rate, the memory
as detected), with the CPU's measured rates beside them.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from tokenwalk.errors import InputError, SpecError
from tokenwalk.probe.detect import Detected, detect_machine, native_simd, simd_features
from tokenwalk.probe.match import CatalogueMatch, match_catalogue
from tokenwalk.probe.measure import Measurement, measure_host

__all__ = [
    "ProbeReport",
    "probe",
    "machine_entry",
    "cpu_machine_entry",
    "recorded_cpu_entry",
    "write_machine_entry",
    "Detected",
    "Measurement",
    "CatalogueMatch",
    "detect_machine",
    "measure_host",
]

GIB = 1 << 30


class ProbeReport(BaseModel):
    detected: Detected
    cpu_match: CatalogueMatch | None
    gpu_match: CatalogueMatch | None
    measured: Measurement | None
    entry: dict[str, Any] | None  # the machine entry --write stores (None without measurements)
    written_to: str | None = None


def _match(d: Detected) -> tuple[CatalogueMatch | None, CatalogueMatch | None]:
    cpu = apu = None
    if d.cpu.name:
        cpu = match_catalogue(d.cpu.name, ("cpu", "sbc"))
        apu = match_catalogue(d.cpu.name, ("igpu",))
    gpu = None
    for g in d.gpus:
        kinds = ("apple",) if g.vendor == "apple" else ("gpu", "datacenter", "igpu")
        gpu = match_catalogue(g.name, kinds, memory_bytes=g.memory_bytes, gpu_cores=g.n_gpu_cores)
        if gpu is not None:
            break
    if gpu is None and apu is not None and d.gpus:
        gpu = apu  # an APU: the CPU's name names its integrated GPU, which was seen
    return cpu, gpu


def _gib(n: int | None) -> float | None:
    return round(n / GIB, 1) if n else None


def machine_entry(
    d: Detected,
    m: Measurement,
    gpu: CatalogueMatch | None,
    slug: str = "this",
    today: str | None = None,
) -> dict[str, Any]:
    """The machine-file entry for this machine (see the module docstring)."""
    today = today or _dt.date.today().isoformat()
    cpu_name = d.cpu.name or d.cpu.arch
    measured = (
        f"tokenwalk probe {today}: numpy read bandwidth over {m.buffer_bytes / GIB:.2f} GiB "
        f"({m.n_threads} threads, median of {m.n_repeats}) and f32 GEMM n={m.gemm_size} "
        f"({m.blas}); {d.cpu.n_threads or '?'} logical CPUs"
    )
    bw = m.read_gbs_all.median
    tflops = round(m.gemm_gflops_all.median / 1000, 4)
    # a build from source here; release binaries leave AVX512-FP16 out (avx512)
    simd = native_simd(d.cpu.simd)
    if gpu is not None:
        from tokenwalk.catalog import find_machine
        from tokenwalk.timing.efficiency import timing_defaults

        base = find_machine(gpu.slug)
        entry = base.model_dump(
            exclude_none=True,
            # what was measured on the catalogue's own machine is not this machine's
            exclude={
                "slug",
                "aliases",
                "source",
                "notes",
                "benchmark_names",
                "fit",
                "gpu_limit_gb",
                "disk_read_gbs",
                "load_gbs",
                "load_source",
            },
        )
        entry["name"] = f"this machine: {base.name} with {cpu_name}"
        own = next((g for g in d.gpus if g.memory_bytes), None)
        if base.kind == "apple" and d.memory.total_bytes:
            entry["memory_gb"] = _gib(d.memory.total_bytes)
            entry["memory_unit"] = "GiB"
        elif own is not None:
            entry["memory_gb"] = _gib(own.memory_bytes)
            entry["memory_unit"] = "GiB"
        entry["cpu_tflops"] = tflops
        entry["cpu_bandwidth_gbs"] = bw
        if simd is not None:
            entry["cpu_simd"] = simd  # its CPU's, for layers or experts left there
        # the backend that runs here (Vulkan on an AMD card without ROCm, say); the catalogue
        # machine's fit holds for its own backend only
        entry["backend"] = d.backend if d.backend != "cpu" else base.backend
        fit = timing_defaults().machines.get(gpu.slug)
        if fit is not None and entry["backend"] == base.backend:
            entry["fit"] = {
                "eff_bw": fit.eff_bw,
                "eff_compute": fit.eff_compute,
                "overhead_per_layer_s": fit.overhead_per_layer_s,
                "rows_half": fit.rows_half,
                "eff_experts": fit.eff_experts,
                "source": f"the fit of catalogue machine {gpu.slug} (data/timing.yaml)",
            }
        return {
            "slug": slug,
            **entry,
            "source": f"catalogue machine {gpu.slug} ({gpu.reason}); CPU rates: {measured}",
        }
    return cpu_machine_entry(
        slug,
        cpu_name=cpu_name,
        threads=m.n_threads,
        memory_bytes=d.memory.total_bytes,
        read_gbs=bw,
        gemm_gflops=m.gemm_gflops_all.median,
        source=measured,
        simd=simd,
    )


def cpu_machine_entry(
    slug: str,
    *,
    cpu_name: str,
    threads: int,
    memory_bytes: int | None,
    read_gbs: float,
    gemm_gflops: float,
    source: str,
    simd: str | None = None,
) -> dict[str, Any]:
    """A CPU machine with measured rates: `bandwidth_gbs` = the read bandwidth at `threads`,
    `cpu_tflops` = the f32 GEMM rate / 1000, the memory in GiB (MemTotal / 2^30). The CPU's
    name, without (R) and (TM), says its maker, which picks the efficiencies of its group.
    `simd` is the build llama.cpp's CPU backend uses there (`cpu_simd`), where known."""
    from tokenwalk.probe.detect import clean_model_name

    return {
        "slug": slug,
        "name": f"this machine: {clean_model_name(cpu_name)}, {threads} threads (measured)",
        "kind": "cpu",
        "backend": "cpu",
        "memory_gb": _gib(memory_bytes),
        "memory_unit": "GiB",
        "bandwidth_gbs": read_gbs,
        "cpu_tflops": round(gemm_gflops / 1000, 4),
        "cpu_bandwidth_gbs": read_gbs,
        **({"cpu_simd": simd} if simd else {}),
        "source": source,
    }


def recorded_cpu_entry(
    host: dict[str, Any], threads: int, *, source: str, cpu_flags: Sequence[str] = ()
) -> dict[str, Any]:
    """The `this` machine a recorded measurement (`scripts/measure_host.py`'s JSON, as in
    tests/data/cpu-ground-truth/host.json) gives at `threads` threads; `cpu_flags`, the
    /proc/cpuinfo flags recorded beside it (runs.json), give its `cpu_simd` as probe does."""
    from tokenwalk.probe.measure import host_rates

    read_gbs, gemm = host_rates(host, threads)
    return cpu_machine_entry(
        "this",
        cpu_name=host["cpu"]["model_name"] or "cpu",
        threads=threads,
        memory_bytes=host["mem_total_bytes"],
        read_gbs=read_gbs,
        gemm_gflops=gemm,
        source=source,
        simd=native_simd(simd_features(cpu_flags)),
    )


def probe(
    *,
    measure: bool = True,
    budget_bytes: int | None = None,
    repeats: int | None = None,
    slug: str = "this",
) -> ProbeReport:
    """Detect this machine, match it to the catalogue and (unless `measure` is False) measure
    it and build its machine entry."""
    d = detect_machine()
    cpu, gpu = _match(d)
    m = None
    entry = None
    if measure:
        kw: dict[str, Any] = {}
        if budget_bytes is not None:
            kw["budget_bytes"] = budget_bytes
        if repeats is not None:
            kw["repeats"] = repeats
        try:
            m = measure_host(
                l3_bytes=d.cpu.l3_bytes,
                available_bytes=d.memory.available_bytes,
                threads=d.cpu.n_usable_threads,
                **kw,
            )
        except ValueError as exc:
            raise InputError(str(exc)) from None
        entry = machine_entry(d, m, gpu, slug)
    return ProbeReport(detected=d, cpu_match=cpu, gpu_match=gpu, measured=m, entry=entry)


def write_machine_entry(path: Path, entry: dict[str, Any]) -> None:
    """Put `entry` into the machine file `path` (created if missing), replacing an entry of the
    same slug; the whole file is checked as tokenwalk will read it, written to a temporary file
    and renamed, so a failure leaves the file as it was."""
    import yaml

    from tokenwalk.catalog import load_machines_checked, read_yaml

    entries: list[Any] = []
    if path.exists():
        entries = read_yaml(path) or []
        if not isinstance(entries, list):
            raise SpecError(f"{path}: expected a YAML list of machines")
    slug = str(entry["slug"]).lower()
    entries = [
        e for e in entries if not (isinstance(e, dict) and str(e.get("slug", "")).lower() == slug)
    ]
    entries.append(entry)
    text = (
        "# tokenwalk machine file: entries here add machines or override catalogue fields\n"
        + yaml.safe_dump(entries, sort_keys=False, width=100)
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    try:
        # what tokenwalk will read back: refuse to store a file with any entry it leaves out
        _, broken = load_machines_checked((tmp,))
        if broken:
            raise next(iter(broken.values()))
    except SpecError as exc:
        tmp.unlink(missing_ok=True)
        raise SpecError(str(exc).replace(str(tmp), str(path))) from None
    tmp.replace(path)
