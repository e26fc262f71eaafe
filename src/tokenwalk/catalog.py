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
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from gguf.constants import GGMLQuantizationType
from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, ValidationError, model_validator

from tokenwalk.errors import SpecError, UnknownNameError

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
    "load_models",
    "load_machines",
    "load_benchmarks",
    "find_model",
    "find_machine",
]

MachineKind = Literal["igpu", "apple", "gpu", "datacenter", "cpu", "sbc"]
Backend = Literal["metal", "cuda", "rocm", "vulkan", "cpu", "sycl", "opencl"]
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
    memory_gb: PositiveFloat | None = None
    memory_unit: MemoryUnit | None = None
    gpu_limit_gb: PositiveFloat | None = None
    bandwidth_gbs: PositiveFloat | None = None
    fp16_tflops: PositiveFloat | None = None
    fp16_kind: Literal["matrix", "vector"] | None = None
    fp16_vector_tflops: PositiveFloat | None = None
    int8_tops: PositiveFloat | None = None
    fp4_tflops: PositiveFloat | None = None
    int8_source: str | None = None  # where int8_tops and fp4_tflops come from
    cpu_tflops: PositiveFloat | None = None
    disk_read_gbs: PositiveFloat | None = None
    load_gbs: PositiveFloat | None = None
    load_source: str | None = None
    cpu_bandwidth_gbs: PositiveFloat | None = None
    benchmark_names: tuple[str, ...] = ()
    fit: dict[str, float | str] | None = None
    # the PCIe link: a card's own interface, or a host's slot for the card (generation, lanes)
    pcie_gen: int | None = Field(default=None, ge=1, le=7)
    pcie_lanes: int | None = Field(default=None, ge=1, le=32)
    unified_memory: bool | None = None  # true: a GPU sharing one memory with its CPU (GB10)
    power_w: PositiveFloat | None = Field(default=None, le=1e6)
    power_source: str | None = None

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
    packaged = resources.files("tokenwalk").joinpath("data").joinpath(name)
    if packaged.is_file():
        return Path(str(packaged))
    source_tree = Path(__file__).resolve().parents[2] / "data" / name
    if source_tree.is_file():
        return source_tree
    raise SpecError(
        f"catalogue file '{name}' not found (looked in the package data and {source_tree})"
    )


def read_yaml(path: Path) -> Any:
    """The YAML document in `path` (safe loader: data only); bad input is a `SpecError`."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SpecError(f"{path}: not a text file (expected YAML)") from None
    except OSError as exc:
        raise SpecError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}:" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError(f"{path}:{where} not valid YAML ({problem})") from None


def _read_list(path: Path) -> list[Any]:
    """The YAML list in `path`; any other shape or a syntax error is a `SpecError`."""
    raw = read_yaml(path)
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
    """One line naming the file, the entry, the key and what was expected. A wrong value is
    reported before a missing key: it is the mistake in what the user wrote."""
    errors = sorted(exc.errors(), key=lambda e: e["type"] == "missing")
    err = errors[0]
    key = ".".join(str(p) for p in err["loc"])
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        msg = "unknown key"
    elif err["type"] == "missing":
        msg = "required key is missing"
    given = err.get("input")
    shown = "" if err["type"] in ("missing", "extra_forbidden") else f" (got {given!r})"
    more = len(errors) - 1
    tail = f"; and {more} more error{'s' if more > 1 else ''}" if more else ""
    if len(shown) > 60:
        shown = shown[:57] + "...)"
    if not key:  # a check across keys; its message names them
        return SpecError(f"{path}: {label}: {msg}{tail}")
    return SpecError(f"{path}: {label}, key '{key}': {msg}{shown}{tail}")


def _validate(cls: type[_E], raw: Any, path: Path, index: int) -> _E:
    label = _entry_label(raw, index)
    if not isinstance(raw, Mapping):
        raise SpecError(f"{path}: {label}: expected a mapping of keys, got {_kind(raw)}")
    try:
        return cls.model_validate(raw)
    except ValidationError as exc:
        raise _spec_error(path, label, exc) from None


def _load(cls: type[_E], path: Path) -> tuple[_E, ...]:
    return tuple(_validate(cls, raw, path, i) for i, raw in enumerate(_read_list(path)))


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
    path = data_path(_MODELS_FILE)
    entries = _load(ModelEntry, path)
    _check_unique(entries, path)
    return entries


@functools.lru_cache(maxsize=1)
def _catalogue_machines() -> tuple[MachineEntry, ...]:
    path = data_path(_MACHINES_FILE)
    entries = _load(MachineEntry, path)
    _check_unique(entries, path)
    return entries


def _merge_machine_file(machines: dict[str, MachineEntry], path: Path) -> None:
    """Add or override machines from a user file, in place.

    A new slug must be a complete entry, except `source:` (the file is the source). A known slug
    (or alias) changes only the fields the user entry gives, and the result is validated again
    as a whole.
    """
    by_name = {n.lower(): slug for slug, m in machines.items() for n in (slug, *m.aliases)}
    for i, raw in enumerate(_read_list(path)):
        label = _entry_label(raw, i)
        if not isinstance(raw, Mapping):
            raise SpecError(f"{path}: {label}: expected a mapping of keys, got {_kind(raw)}")
        slug = raw.get("slug")
        if not isinstance(slug, str) or not slug:
            raise SpecError(f"{path}: {label}, key 'slug': required key is missing (a string)")
        known = by_name.get(slug.lower())
        if known is None:
            # a machine of one's own needs no provenance: the file itself is its source
            entry = _validate(MachineEntry, {"source": f"machine file {path}", **raw}, path, i)
        else:
            base = machines[known].model_dump(exclude_none=True)
            merged = {**base, **{k: v for k, v in raw.items() if k != "slug"}, "slug": known}
            entry = _validate(MachineEntry, merged, path, i)
        machines[entry.slug] = entry
        for name in (entry.slug, *entry.aliases):
            by_name[name.lower()] = entry.slug


def load_machines(extra_files: Sequence[Path] = ()) -> tuple[MachineEntry, ...]:
    """The shipped machines, then each user file in order (later files win)."""
    if not extra_files:
        return _catalogue_machines()
    machines = {m.slug: m for m in _catalogue_machines()}
    for f in extra_files:
        _merge_machine_file(machines, Path(f))
    return tuple(machines.values())


@functools.lru_cache(maxsize=1)
def load_benchmarks() -> tuple[BenchmarkEntry, ...]:
    """Every published measurement; each names a catalogue machine and model."""
    path = data_path(_BENCHMARKS_FILE)
    entries = _load(BenchmarkEntry, path)
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
    raw = read_yaml(path)
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
    close = difflib.get_close_matches(key, list(names), n=1, cutoff=0.6)
    hint = f"did you mean {names[close[0]].slug}? " if close else ""
    raise UnknownNameError(f"unknown {what} '{name}'; {hint}`{command}` lists them")


def find_model(name: str) -> ModelEntry:
    """The catalogue model called `name` (slug or alias, any case)."""
    return _find(load_models(), name, "model", "tokenwalk models")


def find_machine(name: str, extra_files: Sequence[Path] = ()) -> MachineEntry:
    """The machine called `name` (slug or alias, any case), user files included."""
    try:
        return _find(load_machines(extra_files), name, "machine", "tokenwalk machines")
    except UnknownNameError as exc:
        if name.strip().lower() != "this":
            raise
        raise UnknownNameError(
            f"{exc}; `this` is the machine `tokenwalk probe --write` stores: run it first"
        ) from None
