"""The catalogues: models, machines and published benchmarks, as validated YAML.

Three files ship with the package (`data/models.yaml`, `data/machines.yaml`,
`data/benchmarks.yaml`; `tokenwalk/data` inside a wheel). Each entry is checked by a pydantic
model on load, so a typo in a data file is a `SpecError` that names the file, the entry and the
key, never a wrong number later. Users can add machines of their own in YAML files with the
same schema; an entry whose slug is already known changes only the fields it gives.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import marshal
import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, ValidationError, model_validator

from tokenwalk.errors import SpecError, UnknownNameError
from tokenwalk.gguf.constants import GGMLQuantizationType

__all__ = [
    "MachineKind",
    "Backend",
    "ModelEntry",
    "MachineEntry",
    "BenchmarkEntry",
    "MACHINE_KINDS",
    "MEMORY_UNIT_BY_KIND",
    "UNIT_BYTES",
    "MemoryUnit",
    "BACKENDS",
    "data_path",
    "read_yaml",
    "read_data",
    "load_models",
    "load_machines",
    "load_machines_checked",
    "suggest",
    "load_benchmarks",
    "find_model",
    "find_machine",
]

MachineKind = Literal["igpu", "apple", "gpu", "datacenter", "cpu", "sbc"]
Backend = Literal["metal", "cuda", "rocm", "vulkan", "cpu", "sycl", "opencl"]
# the SIMD llama.cpp's CPU backend was built for (timing.passes.F16_VECTOR_STEPS)
CpuSimd = Literal["avx512_fp16", "avx512", "avx2", "neon"]
MACHINE_KINDS: tuple[str, ...] = ("igpu", "apple", "gpu", "datacenter", "cpu", "sbc")
MemoryUnit = Literal["GiB", "GB"]
UNIT_BYTES: dict[str, int] = {"GiB": 1 << 30, "GB": 10**9}
# The unit a vendor means by "GB" of memory, by kind. Every kind is binary: a "24 GB" card, a
# "16 GB" Mac, a "64 GB" laptop or a "16 GB" DIMM is built from DRAM chips of 2^n bits and holds
# 24, 16 or 64 GiB (a 24 GB RTX 4090 reports 24,564 MiB). An entry whose figure is decimal
# (a usable-capacity figure printed in 1e9 bytes) says `memory_unit: GB`.
MEMORY_UNIT_BY_KIND: dict[str, MemoryUnit] = {
    "igpu": "GiB",  # the laptop's RAM, shared with the GPU
    "apple": "GiB",  # unified memory
    "gpu": "GiB",  # GDDR / unified LPDDR on a board
    "datacenter": "GiB",  # HBM
    "cpu": "GiB",  # DIMMs
    "sbc": "GiB",  # LPDDR on the board
}
BACKENDS: tuple[str, ...] = ("metal", "cuda", "rocm", "vulkan", "cpu", "sycl", "opencl")

_MODELS_FILE = "models.yaml"
_MACHINES_FILE = "machines.yaml"
_BENCHMARKS_FILE = "benchmarks.yaml"

_DEFAULT_UBATCH = 512  # llama.cpp's default micro-batch (-ub), tokens


class _Entry(BaseModel):
    """Common strictness: unknown keys are errors, every entry says where it comes from."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str = Field(min_length=1)
    notes: str | None = None


class ModelEntry(_Entry):
    """A model architecture: a Hugging Face `config.json` (the `config` mapping, kept as the
    file has it) plus the catalogue's name, aliases and provenance."""

    slug: str = Field(min_length=1)
    name: str = Field(min_length=1)
    aliases: tuple[str, ...] = ()
    params_b: PositiveFloat | None = None  # as stated by the card or the name; a check only
    active_params_b: PositiveFloat | None = None
    config: dict[str, Any]

    @model_validator(mode="after")
    def _config_has_model_type(self) -> ModelEntry:
        if not isinstance(self.config.get("model_type"), str):
            raise ValueError("config needs a 'model_type' string, as in config.json")
        return self


class MachineEntry(_Entry):
    """A machine: capacity, peak bandwidth and compute rates.

    `memory_gb` is the capacity as the vendor prints it ("24 GB"), read in `memory_unit`: GiB
    (2^30 bytes) unless the entry says GB (1e9), because DRAM is made and sold in binary sizes
    (see `MEMORY_UNIT_BY_KIND`); `memory_bytes` is the converted capacity. `gpu_limit_gb`, in
    the same unit, is how much of it the GPU may hold where that is less (a raised Metal wired
    limit, say). Bandwidth is decimal GB/s.

    `fp16_tflops` is the GPU rate llama.cpp's kernels can use (tensor/matrix units where it uses
    them; `fp16_kind` says which). `int8_tops` and `fp4_tflops` are the GPU's dense INT8 and
    FP4 rates, at which llama.cpp's integer and FP4 kernels multiply quantized weights
    (`costs.timing.weight_kernel_time`). `cpu_tflops` is the CPU cores' FP32 SIMD rate, cores
    x clock x FLOP per cycle per core, which a `cpu` backend computes with. `load_gbs` is the
    rate of a measured cold load (file to the engine's memory), `disk_read_gbs` the disk's
    own. Unknown figures are None. `fit` holds efficiencies fitted by calibration (numbers,
    plus an optional `source` text); the timing model defines its keys.

    `pcie_gen` and `pcie_lanes` describe the link between a discrete card and its host: on a
    card its own interface, on a host (kind cpu) the slot it offers; the link runs at the lower
    of the two (`tokenwalk.system`). `unified_memory` marks a GPU of kind gpu whose memory is the
    CPU's too (GB10, Jetson): one pool, no host beside it.

    `benchmark_only` marks a device that published runs name but no source describes enough to
    answer for (a phone that is not named, a board whose memory variant is not stated): it is
    kept so that its runs have a device, and never listed, completed or answered for.

    `cpu_simd` is the SIMD llama.cpp's CPU backend was built for, where it decides a speed: a
    build from source (GGML_NATIVE, llama.cpp's default) uses the cores' own, so AVX512-FP16 on
    Sapphire Rapids and later Xeons; release binaries and Ollama load a variant built without it
    (avx512). Unknown: None, and the timing model adds nothing for it.

    `power_w` is the power the machine draws at full load, W: a card's total board power, a
    data-center part's maximum TDP, an APU's or SoC's package power (default TDP), a CPU's TDP;
    `power_source` says where it comes from (required with it). `tokenwalk.costs.energy` turns it
    into the energy and price of a request.
    """

    slug: str = Field(min_length=1)
    name: str = Field(min_length=1)
    aliases: tuple[str, ...] = ()
    kind: MachineKind
    backend: Backend
    # the bounds the inline options take (machine.MAX_MEMORY_GIB, MAX_BANDWIDTH_GBS,
    # MAX_TFLOPS), so that a file's value is refused as the file's, with its key
    memory_gb: PositiveFloat | None = Field(default=None, le=1e6)
    memory_unit: MemoryUnit | None = None
    gpu_limit_gb: PositiveFloat | None = Field(default=None, le=1e6)
    bandwidth_gbs: PositiveFloat | None = Field(default=None, le=100_000)
    fp16_tflops: PositiveFloat | None = Field(default=None, le=100_000)
    fp16_kind: Literal["matrix", "vector"] | None = None
    fp16_vector_tflops: PositiveFloat | None = Field(default=None, le=100_000)
    int8_tops: PositiveFloat | None = Field(default=None, le=100_000)
    fp4_tflops: PositiveFloat | None = Field(default=None, le=100_000)
    int8_source: str | None = None  # where int8_tops and fp4_tflops come from
    cpu_tflops: PositiveFloat | None = Field(default=None, le=100_000)
    disk_read_gbs: PositiveFloat | None = Field(default=None, le=100_000)
    load_gbs: PositiveFloat | None = Field(default=None, le=100_000)
    load_source: str | None = None
    cpu_bandwidth_gbs: PositiveFloat | None = Field(default=None, le=100_000)
    cpu_simd: CpuSimd | None = None
    benchmark_names: tuple[str, ...] = ()
    fit: dict[str, float | str] | None = None
    # the PCIe link: a card's own interface, or a host's slot for the card (generation, lanes)
    pcie_gen: int | None = Field(default=None, ge=1, le=7)
    pcie_lanes: int | None = Field(default=None, ge=1, le=32)
    unified_memory: bool | None = None  # true: a GPU sharing one memory with its CPU (GB10)
    power_w: PositiveFloat | None = Field(default=None, le=1e6)
    power_source: str | None = None
    benchmark_only: bool = False

    @model_validator(mode="after")
    def _fp16_kind_given(self) -> MachineEntry:
        if self.power_w is not None and not (self.power_source or "").strip():
            raise ValueError("power_source is required with power_w (where the watts come from)")
        if (self.int8_tops or self.fp4_tflops) and not (self.int8_source or "").strip():
            raise ValueError("int8_source is required with int8_tops or fp4_tflops")
        if self.fp16_tflops is not None and self.fp16_kind is None:
            raise ValueError("fp16_kind (matrix or vector) is required with fp16_tflops")
        if self.gpu_limit_gb is not None and self.memory_gb is not None:
            if self.gpu_limit_gb > self.memory_gb:
                raise ValueError("gpu_limit_gb cannot exceed memory_gb")
        return self

    @property
    def unit_bytes(self) -> int:
        """Bytes in one unit of `memory_gb`: 2^30 for GiB, 1e9 for GB."""
        unit = self.memory_unit or MEMORY_UNIT_BY_KIND[self.kind]
        return UNIT_BYTES[unit]

    @property
    def memory_bytes(self) -> int | None:
        """Capacity in bytes: memory_gb x 2^30 (GiB) or x 1e9 (GB)."""
        if self.memory_gb is None:
            return None
        return round(self.memory_gb * self.unit_bytes)

    def tflops_for(self, backend: str) -> float | None:
        """The compute rate a backend runs at: the CPU cores' for `cpu`, the GPU's otherwise."""
        return self.cpu_tflops if backend == "cpu" else self.fp16_tflops

    def lacks(self) -> list[str]:
        """What the timing and memory commands need and this entry does not give."""
        missing = []
        if self.memory_gb is None:
            missing.append("memory")
        if self.bandwidth_gbs is None:
            missing.append("bandwidth")
        if self.tflops_for(self.backend) is None:
            missing.append("compute")
        return missing


class BenchmarkEntry(_Entry):
    """One published speed measurement, tied to a catalogue machine and model.

    `test` keeps the source's label; the other fields are its normalised reading:
    - `phase` and `n_tokens`: prefill or decode, and the N of llama-bench's ppN / tgN (tokens
      processed or generated in the measured pass; None when the source does not say);
    - `depth`: tokens already in the KV cache before the pass (llama-bench `-d N`, the `@ dN`
      of a label); 0 for an empty context;
    - `ubatch`: the micro-batch (llama-bench `-ub N`) where the label or notes state it; None
      means llama.cpp's default of 512 tokens;
    - `kv_type`: the KV cache type where stated, a ggml type name (`q8_0`; llama-bench `-ctk`);
      `kv_type_v` the V cache type where it differs (`-ctv`); None: not stated (llama.cpp's
      default is f16);
    - `flash_attn`: whether flash attention was on (`-fa 1` / `-fa 0`), None when not stated;
    - `standard`: a plain llama-bench ppN / tgN run: llama.cpp, empty context, the default
      micro-batch and an f16 (or unstated) KV cache;
    - `offloaded`: the source says (or its numbers show) that part of the model ran from system
      RAM: not a run of the machine alone, so the fit leaves it out;
    - `doubtful`: the data's collector marks the figure doubtful (notes say why): the fit
      leaves it out.
    """

    machine: str = Field(min_length=1)
    device: str = Field(min_length=1)  # the device as the source names it
    backend: Backend
    engine: Literal["llama.cpp", "ollama", "llamafile", "vllm"] = "llama.cpp"
    model: str = Field(min_length=1)
    params_b: PositiveFloat | None = None
    quant: str = Field(min_length=1)
    model_file_gb: PositiveFloat | None = None
    test: str = Field(min_length=1)
    phase: Literal["decode", "prefill"]
    n_tokens: int | None = Field(default=None, gt=0)
    depth: int = Field(default=0, ge=0)
    ubatch: int | None = Field(default=None, gt=0)
    kv_type: str | None = Field(default=None, min_length=1)
    kv_type_v: str | None = Field(default=None, min_length=1)
    flash_attn: bool | None = None
    standard: bool
    offloaded: bool = False
    doubtful: bool = False
    tok_s: PositiveFloat

    @model_validator(mode="after")
    def _consistent(self) -> BenchmarkEntry:
        for key in ("kv_type", "kv_type_v"):
            name = getattr(self, key)
            if name is not None and name.upper() not in GGMLQuantizationType.__members__:
                raise ValueError(f"{key} '{name}' is not a ggml type name (f16, q8_0, q4_0, ...)")
        if self.standard and (
            self.n_tokens is None
            or self.depth
            or self.ubatch not in (None, _DEFAULT_UBATCH)
            or self.kv_type not in (None, "f16")
            or self.kv_type_v not in (None, "f16")
            or self.engine != "llama.cpp"
        ):
            raise ValueError(
                "standard is for plain llama-bench ppN / tgN runs (n_tokens stated, depth 0, "
                f"default ubatch {_DEFAULT_UBATCH}, f16 KV cache, engine llama.cpp)"
            )
        return self


_E = TypeVar("_E", bound=BaseModel)


# -- files ------------------------------------------------------------------------------------


def data_path(name: str) -> Path:
    """Path of a shipped data file: package data in a wheel, `data/` in a source checkout."""
    package = Path(__file__).resolve().parent  # a folder: the package is never run zipped
    packaged = package / "data" / name
    if packaged.is_file():
        return packaged
    source_tree = package.parents[1] / "data" / name
    if source_tree.is_file():
        return source_tree
    raise SpecError(
        f"catalogue file '{name}' not found (looked in the package data and {source_tree})"
    )


def read_yaml(path: Path) -> Any:
    """The YAML document in `path` (safe loader: data only); bad input is a `SpecError`."""
    try:
        return _parse_yaml(path.read_bytes(), path)
    except OSError as exc:
        raise SpecError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _parse_yaml(data: bytes, path: Path, *, libyaml: bool = False) -> Any:
    """`data` parsed by PyYAML's safe loader; with `libyaml`, by its C version where PyYAML has
    it: ten times faster on the shipped catalogues, the same documents, but other messages (and
    limits) on broken or hostile input, so files from users keep the pure-Python loader."""
    import yaml

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SpecError(f"{path}: not a text file (expected YAML)") from None
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader) if libyaml else yaml.SafeLoader
    try:
        return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}:" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError(f"{path}:{where} not valid YAML ({problem})") from None


# -- the compiled catalogues ------------------------------------------------------------------
# Parsing the shipped YAML is most of a command's work; its parsed form is kept in the user
# cache directory, in a file named after the YAML's SHA-256, so an edited or upgraded catalogue
# never meets an old entry. A compiled file starts with the SHA-256 of its body, checked on
# every read: a damaged file is parsed again and rewritten, an unwritable directory only means
# parsing every time.

_COMPILED_MAGIC = b"tokenwalk-catalogue-1\n"
# marshal's format belongs to one Python version: part of each file's name
_COMPILED_TAG = f"py{sys.version_info[0]}{sys.version_info[1]}-m{marshal.version}"


def compiled_dir() -> Path:
    """Where compiled catalogues live: `catalogue/` in `$TOKENWALK_CACHE_DIR` or the platform's
    user cache directory."""
    env = os.environ.get("TOKENWALK_CACHE_DIR")
    if env:
        return Path(env) / "catalogue"
    import platformdirs

    return Path(platformdirs.user_cache_dir("tokenwalk")) / "catalogue"


def read_data(name: str) -> Any:
    """The YAML document of the shipped data file `name` (`data_path`), from its compiled form
    when one matches the file's bytes, else parsed (and compiled for the next call)."""
    path = data_path(name)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SpecError(f"{path}: cannot read ({exc.strerror or exc})") from None
    digest = hashlib.sha256(data).hexdigest()
    stem = f"{Path(name).stem}-{_COMPILED_TAG}-"
    try:
        directory = compiled_dir()
        compiled = directory / f"{stem}{digest[:32]}.bin"
    except Exception:  # no cache directory can be named here: parse
        return _parse_yaml(data, path, libyaml=True)
    found = _read_compiled(compiled)
    if found is not _MISSING:
        return found
    document = _parse_yaml(data, path, libyaml=True)
    _write_compiled(compiled, document, stem)
    return document


_MISSING = object()


def _read_compiled(compiled: Path) -> Any:
    """The document in a compiled file, or `_MISSING` if it is absent or damaged."""
    try:
        blob = compiled.read_bytes()
    except OSError:
        return _MISSING
    head = len(_COMPILED_MAGIC)
    body = blob[head + 32 :]
    if blob[:head] != _COMPILED_MAGIC or blob[head : head + 32] != hashlib.sha256(body).digest():
        return _MISSING
    try:
        return marshal.loads(body)
    except Exception:  # a body that hashes right but does not load: treat as damaged
        return _MISSING


def _write_compiled(compiled: Path, document: Any, stem: str) -> None:
    """Store `document` compiled, atomically, and drop the older compiled forms of the same
    file; any failure (a read-only or full disk, a value marshal cannot hold) is ignored."""
    try:
        body = marshal.dumps(document)
        compiled.parent.mkdir(parents=True, exist_ok=True)
        import tempfile

        fd, tmp = tempfile.mkstemp(dir=compiled.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(_COMPILED_MAGIC + hashlib.sha256(body).digest() + body)
            os.replace(tmp, compiled)
        except BaseException:
            os.unlink(tmp)
            raise
        for old in compiled.parent.glob(f"{stem}*.bin"):
            if old != compiled:
                old.unlink(missing_ok=True)
    except Exception:
        pass


def _read_list(path: Path, raw: Any) -> list[Any]:
    """The YAML list `raw` read from `path`; any other shape is a `SpecError`."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise SpecError(f"{path}: expected a YAML list of entries, got {_kind(raw)}")
    return raw


def _kind(value: Any) -> str:
    names = {dict: "a mapping", list: "a list", str: "a string"}
    return names.get(type(value), type(value).__name__)


def _entry_label(raw: Any, index: int) -> str:
    if isinstance(raw, Mapping) and isinstance(raw.get("slug"), str):
        return f"entry '{raw['slug']}'"
    return f"entry {index + 1}"


def _spec_error(path: Path, label: str, exc: ValidationError) -> SpecError:
    """One line naming the file, the entry, and every key that is wrong with what was
    expected. A wrong value is reported before a missing key: it is the mistake in what the
    user wrote."""
    problems = []
    for err in sorted(exc.errors(), key=lambda e: e["type"] == "missing"):
        key = ".".join(str(p) for p in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        elif err["type"] == "missing":
            msg = "required key is missing"
        given = err.get("input")
        shown = "" if err["type"] in ("missing", "extra_forbidden") else f" (got {given!r})"
        if len(shown) > 60:
            shown = shown[:57] + "...)"
        # a check across keys names them in its message
        problems.append(f"key '{key}': {msg}{shown}" if key else msg)
    if len(problems) == 1 and problems[0].startswith("key '"):
        return SpecError(f"{path}: {label}, {problems[0]}")
    return SpecError(f"{path}: {label}: " + "; ".join(problems))


def _validate(cls: type[_E], raw: Any, path: Path, index: int) -> _E:
    label = _entry_label(raw, index)
    if not isinstance(raw, Mapping):
        raise SpecError(f"{path}: {label}: expected a mapping of keys, got {_kind(raw)}")
    try:
        return cls.model_validate(raw)
    except ValidationError as exc:
        raise _spec_error(path, label, exc) from None


def _load(cls: type[_E], name: str) -> tuple[_E, ...]:
    """The entries of the shipped file `name`, validated."""
    path = data_path(name)
    raw = _read_list(path, read_data(name))
    return tuple(_validate(cls, entry, path, i) for i, entry in enumerate(raw))


def _check_unique(entries: Iterable[ModelEntry | MachineEntry], path: Path) -> None:
    """Slugs and aliases name one entry each, whatever their case."""
    seen: dict[str, str] = {}
    for e in entries:
        for key in dict.fromkeys(n.lower() for n in (e.slug, *e.aliases)):
            if key in seen:
                raise SpecError(
                    f"{path}: entry '{e.slug}': name '{key}' is already used by '{seen[key]}'"
                )
            seen[key] = e.slug


# -- loaders ----------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def load_models() -> tuple[ModelEntry, ...]:
    """Every model of the shipped catalogue, validated."""
    entries = _load(ModelEntry, _MODELS_FILE)
    _check_unique(entries, data_path(_MODELS_FILE))
    return entries


@functools.lru_cache(maxsize=1)
def _catalogue_machines() -> tuple[MachineEntry, ...]:
    entries = _load(MachineEntry, _MACHINES_FILE)
    _check_unique(entries, data_path(_MACHINES_FILE))
    return entries


def _merge_machine_file(
    machines: dict[str, MachineEntry], path: Path, broken: dict[str, SpecError]
) -> None:
    """Add or override machines from a user file, in place.

    A new slug must be a complete entry, except `source:` (the file is the source). A known slug
    (or alias) changes only the fields the user entry gives, and the result is validated again
    as a whole. An entry that is wrong goes to `broken` under its name (lower case; "" for an
    entry without one) instead: only what asks for it fails.
    """
    by_name = {n.lower(): slug for slug, m in machines.items() for n in (slug, *m.aliases)}
    for i, raw in enumerate(_read_list(path, read_yaml(path))):
        label = _entry_label(raw, i)
        slug = raw.get("slug") if isinstance(raw, Mapping) else None
        name = slug.lower() if isinstance(slug, str) else ""
        try:
            if not isinstance(raw, Mapping):
                raise SpecError(f"{path}: {label}: expected a mapping of keys, got {_kind(raw)}")
            if not isinstance(slug, str) or not slug:
                raise SpecError(f"{path}: {label}, key 'slug': required key is missing (a string)")
            known = by_name.get(name)
            if known is None:
                # a machine of one's own needs no provenance: the file itself is its source
                entry = _validate(MachineEntry, {"source": f"machine file {path}", **raw}, path, i)
            else:
                base = machines[known].model_dump(exclude_none=True)
                merged = {**base, **{k: v for k, v in raw.items() if k != "slug"}, "slug": known}
                entry = _validate(MachineEntry, merged, path, i)
        except SpecError as exc:
            broken.setdefault(by_name.get(name, name), exc)
            continue
        broken.pop(entry.slug.lower(), None)  # a later file mends it
        machines[entry.slug] = entry
        for alias in (entry.slug, *entry.aliases):
            by_name[alias.lower()] = entry.slug


def load_machines_checked(
    extra_files: Sequence[Path] = (),
) -> tuple[tuple[MachineEntry, ...], dict[str, SpecError]]:
    """The shipped machines, then each user file in order (later files win); and the user
    entries that are wrong, by name (lower case; "" for an entry without a slug)."""
    if not extra_files:
        return _catalogue_machines(), {}
    machines = {m.slug: m for m in _catalogue_machines()}
    broken: dict[str, SpecError] = {}
    for f in extra_files:
        _merge_machine_file(machines, Path(f), broken)
    return tuple(machines.values()), broken


def load_machines(extra_files: Sequence[Path] = ()) -> tuple[MachineEntry, ...]:
    """The shipped machines, then each user file's correct entries (later files win)."""
    return load_machines_checked(extra_files)[0]


@functools.lru_cache(maxsize=1)
def load_benchmarks() -> tuple[BenchmarkEntry, ...]:
    """Every published measurement; each names a catalogue machine and model."""
    path = data_path(_BENCHMARKS_FILE)
    entries = _load(BenchmarkEntry, _BENCHMARKS_FILE)
    models = {m.slug for m in load_models()}
    machines = {m.slug for m in _catalogue_machines()}
    for i, b in enumerate(entries):
        if b.model not in models:
            raise SpecError(
                f"{path}: entry {i + 1}, key 'model': '{b.model}' is not in {_MODELS_FILE}"
            )
        if b.machine not in machines:
            raise SpecError(
                f"{path}: entry {i + 1}, key 'machine': '{b.machine}' is not in {_MACHINES_FILE}"
            )
    return entries


# -- lookup -----------------------------------------------------------------------------------


class GraphNodes(BaseModel):
    """One catalogue model's llama.cpp compute-graph node count (data/graph_nodes.yaml)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    arch: str
    moe: bool
    layers: int = Field(ge=1)
    nodes: int = Field(ge=1)


@functools.lru_cache(maxsize=1)
def load_graph_nodes() -> dict[str, GraphNodes]:
    """slug -> its measured graph nodes (data/graph_nodes.yaml)."""
    path = data_path("graph_nodes.yaml")
    raw = read_data("graph_nodes.yaml")
    models = raw.get("models") if isinstance(raw, dict) else None
    if not isinstance(models, dict):
        raise SpecError(f"{path}: expected a 'models:' mapping of slug to its graph nodes")
    out = {}
    for slug, entry in models.items():
        try:
            out[str(slug)] = GraphNodes.model_validate(entry)
        except ValidationError as exc:
            raise _spec_error(path, str(slug), exc) from None
    return out


def graph_nodes_per_layer(name: str, arch: str, moe: bool) -> float | None:
    """llama.cpp's compute-graph nodes per decoding layer of a model: its own measurement for a
    catalogue model, else the mean of the measured models of its architecture with the same
    kind of FFN (routed experts or not), else of its architecture; None for an architecture
    never measured."""
    table = load_graph_nodes()
    own = table.get(name)
    if own is not None and own.arch == arch:
        return own.nodes / own.layers
    for same in (
        [g for g in table.values() if g.arch == arch and g.moe == moe],
        [g for g in table.values() if g.arch == arch],
    ):
        if same:
            return sum(g.nodes / g.layers for g in same) / len(same)
    return None


def _find(entries: Sequence[Any], name: str, what: str, command: str) -> Any:
    key = name.strip().lower()
    names: dict[str, Any] = {}
    for e in entries:
        for n in (e.slug, *e.aliases):
            names.setdefault(n.lower(), e)
    if key in names:
        return names[key]
    raise UnknownNameError(f"unknown {what} '{name}'; {suggest(name, entries, command)}")


def _natural(slug: str) -> list[Any]:
    """qwen3-8b before qwen3-32b: digits compare as numbers."""
    return [
        (0, float(p), "") if p.replace(".", "", 1).isdigit() else (1, 0.0, p)
        for p in re.split(r"(\d+(?:\.\d+)?)", slug)
    ]


def suggest(name: str, entries: Sequence[Any], command: str, *, most: int = 6) -> str:
    """What to say after an unknown name: the names it starts, else those containing it
    (several, in natural order), else the closest spellings; and the command that lists
    them. 'qwen3' -> 'did you mean qwen3-0.6b, qwen3-1.7b, ... (14 names start with 'qwen3':
    `tokenwalk models qwen3` lists them)?'."""
    key = name.strip().lower()
    names: dict[str, Any] = {}
    for e in entries:
        for n in (e.slug, *e.aliases):
            names.setdefault(n.lower(), e)
    found = [e.slug for n, e in names.items() if n.startswith(key)] if key else []
    how = f"start with '{key}'"
    if not found and key:
        found, how = [e.slug for n, e in names.items() if key in n], f"contain '{key}'"
    found = sorted(set(found), key=_natural)
    if found:
        shown = ", ".join(found[:most])
        if len(found) > most:
            shown += f", ... ({len(found)} names {how}: `{command} {key}` lists them)"
            return f"did you mean {shown}?"
        return f"did you mean {shown}? `{command}` lists them all"
    close = difflib.get_close_matches(key, list(names), n=3, cutoff=0.6)
    if not close:  # a slip in the first letters ('qwne'): the names that start as it meant
        heads = {n[: len(key)] for n in names}
        near = difflib.get_close_matches(key, list(heads), n=1, cutoff=0.6)
        close = sorted((n for n in names if near and n.startswith(near[0])), key=_natural)[:3]
    slugs = list(dict.fromkeys(names[c].slug for c in close))
    hint = f"did you mean {' or '.join(slugs)}? " if slugs else ""
    return f"{hint}`{command}` lists them"


def find_model(name: str) -> ModelEntry:
    """The catalogue model called `name` (slug or alias, any case)."""
    return _find(load_models(), name, "model", "tokenwalk models")


def find_machine(name: str, extra_files: Sequence[Path] = ()) -> MachineEntry:
    """The machine called `name` (slug or alias, any case), user files included."""
    entries, broken = load_machines_checked(extra_files)
    wrong = broken.get(name.strip().lower())
    if wrong is not None:  # the user's entry of that name: its mistakes, not another machine
        raise wrong
    try:
        return _find(entries, name, "machine", "tokenwalk machines")
    except UnknownNameError as exc:
        if name.strip().lower() != "this":
            raise
        raise UnknownNameError(
            f"{exc}; `this` is the machine `tokenwalk probe --write` stores: run it first"
        ) from None
