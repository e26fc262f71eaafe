"""Calibration: published runs (or a user's llama-bench JSON) -> fitted efficiencies.

Two uses of one fit (`tokenwalk.timing.fit`):
- `fit_defaults()` refits the shipped defaults from `data/benchmarks.yaml`: the global
  parameters, one offset per group of each level (vendor, peak, backend, kind, kind/backend) and one
  per benchmarked machine, all at once, each pulled towards zero by its level's prior;
  `tokenwalk calibrate --write-defaults` stores them in `data/timing.yaml` of a source
  checkout (`defaults_target`): an installed package is never written into.
- `calibrate_machine()` fits one machine from `llama-bench -o json` (or jsonl) runs, pulled
  towards the machine's current efficiencies, and `write_machine_fit()` stores the result in the
  user's machine file.

Which rows are used: llama-bench pp/tg rows, at any depth and micro-batch, and the other
llama.cpp or Ollama rows whose work is known: decoding without drafting (context assumed 256
tokens when not stated) and prefill of a stated prompt length. Excluded: vLLM rows (another
engine), rows with multi-token-prediction drafting on (a step is not one token), prefill of an
unstated prompt length, and rows on machines without a catalogued bandwidth or, for prefill,
FP16 rate.
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from tokenwalk.costs.weights import weight_bytes_read
from tokenwalk.errors import InputError, SourceError, SpecError, TokenwalkError
from tokenwalk.model.model import Model
from tokenwalk.timing.efficiency import (
    FIT_LEVELS,
    fit_keys,
    machine_segment,
    machine_vendor,
    peak_of,
    timing_defaults,
)
from tokenwalk.timing.fit import (
    HUBER_DELTA,
    LEVELS,
    PARAMS,
    PRIOR_SIGMA,
    Design,
    HierFit,
    Observation,
    Params,
    fit_hierarchy,
    fit_offset,
    predict_tok_s,
)
from tokenwalk.timing.passes import (
    DEFAULT_UBATCH,
    cpu_kernel_time,
    expert_compute,
    expert_tile_flops,
    experts_at_dense_rate,
    matrix_flops,
    matrix_row_flops,
    pass_work,
    prefill_chunks,
    unhidden_share,
)

__all__ = [
    "DECODE_CTX_UNSTATED",
    "VARIANTS",
    "ErrorStats",
    "DefaultsFit",
    "MachineFit",
    "preset_for",
    "observation",
    "benchmark_observations",
    "variant_design",
    "cross_validate",
    "GROUP_LEVELS",
    "source_group",
    "group_of",
    "cross_validate_groups",
    "naive_predictions",
    "error_stats",
    "fit_defaults",
    "defaults_target",
    "timing_yaml",
    "Progress",
    "read_llama_bench",
    "calibrate_machine",
    "write_machine_fit",
]

Progress = Callable[[str, int, int | None], None]
"""Told how far a fit has got: (what it is doing, steps done, steps in all or None)."""

DECODE_CTX_UNSTATED = 256  # context assumed for decode rows that do not state their length
# A user's own runs fit the machine level's offsets, and rows_half too: runs at two prompt
# lengths and a decode on one machine pin it, where the shipped fit keeps it per backend.
# eff_experts too, when the runs include a mixture of experts (else the prior keeps it).
MACHINE_SIGMA = (*PRIOR_SIGMA["machine"][:3], 2.0, 1.0)


# -- models at a quant ------------------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def _catalogue_model(slug: str, preset: str) -> Model:
    from tokenwalk.catalog import find_model
    from tokenwalk.model.resolve import model_from_config

    entry = find_model(slug)
    return model_from_config(entry.config, entry.slug, preset, source="catalogue")


_SIZE_PRESETS = ("Q2_K", "Q3_K_M", "Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0", "F16")


def preset_for(model_slug: str, quant: str, file_gb: float | None) -> str:
    """The quant preset of a row: its label when it names one (Q4_K_M, MXFP4, ...), else the
    preset whose synthesised file is closest to the row's file size, else Q4_K_M."""
    from tokenwalk.model.quant import PRESETS

    label = quant.strip().upper().replace(" ", "")
    if label == "MXFP4_MOE":
        label = "MXFP4"
    if label in PRESETS:
        return label
    if file_gb:
        return min(
            _SIZE_PRESETS,
            key=lambda p: abs(
                math.log(_catalogue_model(model_slug, p).file_bytes / (file_gb * 1e9))
            ),
        )
    return "Q4_K_M"


# -- observations -----------------------------------------------------------------------------


def _pass(
    model: Model, n: int, ctx: int, backend: str, simd: str | None = None, **kw: Any
) -> tuple[tuple[float, float, float, float, float, float, float], float]:
    """(B, F, R, L, F_x, R_x, S) of a pass on a backend (L: the layers its fixed per-layer cost
    counts, `PassWork.overhead_layers`; F_x, R_x: the routed experts' part of F and R, as
    `passes.pass_cost` counts it; U: the share of the compute that does not hide under the
    read, `unhidden_share`), and its F_pad (`expert_tile_flops`). `simd`: the CPU build's
    (`Machine.cpu_simd`)."""
    w = pass_work(model, n, ctx, **kw)
    # where the experts run at the dense rate their part is the dense one's: the row does not
    # inform eff_experts
    fx, rx = (0.0, 0.0) if experts_at_dense_rate(backend) else expert_compute(w)
    terms = (
        w.bytes,
        matrix_flops(w, backend, simd),
        matrix_row_flops(w, backend),
        w.overhead_layers,
        fx,
        rx,
        unhidden_share(w, backend),
    )
    return terms, expert_tile_flops(model, n * w.streams, backend)


def observation(
    model: Model,
    *,
    label: str,
    machine: str,
    kind: str,
    backend: str,
    vendor: str,
    bandwidth_gbs: float,
    tflops: float | None,
    phase: str,
    n_tokens: int | None,
    tok_s: float,
    ubatch: int = DEFAULT_UBATCH,
    depth: int = 0,
    kv_type: str = "f16",
    peak: str | None = None,
    simd: str | None = None,
    meta: dict | None = None,
) -> Observation:
    """The passes behind a measured speed: a decoding step at the run's mean context
    (depth + n/2 for tg n), or the prompt's prefill chunks after `depth` cached tokens."""
    if phase == "decode":
        ctx = depth + (n_tokens // 2 if n_tokens else DECODE_CTX_UNSTATED)
        runs = [_pass(model, 1, ctx, backend, simd, kv_type=kv_type)]
        tokens = 1.0
    else:
        if not n_tokens:
            raise InputError(f"{label}: a prefill measurement needs its prompt length")
        plan = prefill_chunks(depth + n_tokens, depth, ubatch)
        weights = {n: weight_bytes_read(model, n) for n in {n for _, n in plan}}
        kernel = cpu_kernel_time(model)
        runs = [
            _pass(
                model,
                n,
                ctx,
                backend,
                simd,
                kv_type=kv_type,
                n_logits=1 if i == len(plan) - 1 else 0,
                weight_bytes=weights[n],
                kernel_time=kernel,
            )
            for i, (ctx, n) in enumerate(plan)
        ]
        tokens = float(n_tokens)
    return Observation(
        label=label,
        machine=machine,
        phase=phase,
        bandwidth_gbs=bandwidth_gbs,
        tflops=tflops or 0.0,
        tokens=tokens,
        passes=tuple(terms for terms, _ in runs),
        measured_tok_s=tok_s,
        keys=fit_keys(vendor, kind, backend, machine, peak=peak),
        meta={
            "kind": kind,
            "backend": backend,
            "vendor": vendor,
            "moe": bool(model.spec.n_expert),
            "tile_flops": tuple(pad for _, pad in runs),  # F_pad per pass ("tiles" variant)
            **(meta or {}),
        },
    )


def _exclusion(b: Any, machine: Any) -> str | None:
    test = b.test.lower()
    if b.engine == "vllm":
        return "another engine (vLLM)"
    if "mtp on" in test or "draft" in test:
        return "drafting on: a step is not one token"
    if b.phase == "prefill" and not b.n_tokens:
        return "prefill of an unstated prompt length"
    if b.offloaded:
        return "part of the model ran from system RAM"
    if b.doubtful:
        return "the data marks the run doubtful"
    if not machine.bandwidth_gbs:
        return "machine has no catalogued bandwidth"
    if b.phase == "prefill" and not machine.tflops_for(b.backend):
        return "machine has no catalogued compute rate"
    return None


def benchmark_observations(
    progress: Progress | None = None,
) -> tuple[list[Observation], list[str]]:
    """Observations from `data/benchmarks.yaml`, and the rows left out with the reason;
    `progress` is told of each row read."""
    from tokenwalk.catalog import load_benchmarks, load_machines

    machines = {m.slug: m for m in load_machines()}
    used: list[Observation] = []
    excluded: list[str] = []
    rows = load_benchmarks()
    for i, b in enumerate(rows):
        if progress is not None:
            progress("reading published runs", i, len(rows))
        m = machines[b.machine]
        label = f"{b.machine} {b.model} {b.quant} {b.test}"
        why = _exclusion(b, m)
        if why:
            excluded.append(f"{label}: {why}")
            continue
        preset = preset_for(b.model, b.quant, b.model_file_gb)
        model = _catalogue_model(b.model, preset)
        kv_type = getattr(b, "kv_type", None) or "f16"
        vendor = machine_vendor(m.name, b.backend, getattr(m, "vendor", None))
        used.append(
            observation(
                model,
                label=label,
                machine=b.machine,
                kind=m.kind,
                backend=b.backend,
                vendor=vendor,
                bandwidth_gbs=float(m.bandwidth_gbs),
                tflops=m.tflops_for(b.backend),
                phase=b.phase,
                n_tokens=b.n_tokens,
                tok_s=b.tok_s,
                ubatch=getattr(b, "ubatch", None) or DEFAULT_UBATCH,
                depth=getattr(b, "depth", 0) or 0,
                kv_type=kv_type,
                peak=peak_of(b.backend, m.fp16_kind),
                simd=m.cpu_simd,
                meta={
                    "standard": b.standard,
                    "preset": preset,
                    "model": b.model,
                    # the classes leave-one-group-out leaves out (GROUP_LEVELS)
                    "segment": machine_segment(
                        m.kind, vendor, m.name, b.backend, bool(m.unified_memory)
                    ),
                    "source": source_group(b.source),
                },
            )
        )
    return used, excluded


# -- fitting variants and cross-validation -----------------------------------------------------

# The model, a candidate term and the model it replaced, for cross-validation side by side:
# - "rows": the matrix term grows with rows_half x R, groups at every level (shipped);
# - "tiles": the same plus the routed experts' empty tile columns, F_pad
#   (`costs.timing.expert_tile_flops`), in the compute term: kept out of the shipped model
#   because cross-validation does not favour it (docs/timing-model.md);
# - "previous": no row term, memory and compute always overlap, groups by kind/backend only (the
#   first timing model).
VARIANTS = ("rows", "tiles", "previous")
# eff_bw, eff_compute and the overhead only: no rows_half, no eff_experts
_PREVIOUS_SIGMA = {k: (2.0, 2.0, 2.0) + (0.0,) * (len(PARAMS) - 3) for k in PRIOR_SIGMA}


def variant_design(design: Design, variant: str) -> tuple[Design, dict, tuple[str, ...]]:
    """The design, prior widths and levels of a variant of the model (see VARIANTS)."""
    if variant == "rows":
        return design, PRIOR_SIGMA, LEVELS
    if variant == "tiles":
        tiled = Design(design.obs)
        tiled.tile = np.array(
            [f / (o.tflops * 1e12) if o.tflops else 0.0 for o in tiled.obs for f in _tiles(o)]
        )
        return tiled, PRIOR_SIGMA, LEVELS
    if variant == "previous":
        old = Design(design.obs)
        old.rowc = np.zeros_like(old.rowc)
        old.unhidden = np.zeros_like(old.unhidden)
        return old, _PREVIOUS_SIGMA, ("kind/backend", "machine")
    raise InputError(f"unknown model variant '{variant}'; one of {', '.join(VARIANTS)}")


def _tiles(o: Observation) -> tuple[float, ...]:
    """F_pad of each pass of an observation (0 where it was not recorded)."""
    return o.meta.get("tile_flops") or (0.0,) * len(o.passes)


def device_of(slug: str) -> str:
    """The physical device behind a machine entry: entries of one machine measured at several
    thread counts (`xeon-kvm-2c-1t`, `xeon-kvm-2c-2t`) or recorded again on another day, with
    its rates measured anew (`xeon-kvm-2c-r2-1t`), are one device, held out together. The
    suffix counts only after a count of cores (`-2c`): `arc-140t` is a device of its own."""
    return re.sub(r"(-\d+c)(-r\d+)?-\d+t$", r"\1", slug)


def cross_validate(design: Design, variant: str = "rows") -> np.ndarray:
    """Leave-one-device-out predictions: refit without each machine's rows, predict them from
    the groups they belong to."""
    d, sigma, levels = variant_design(design, variant)
    full = fit_hierarchy(d, sigma=sigma, levels=levels)
    slugs = np.array([device_of(o.machine) for o in d.obs])
    pred = np.zeros(d.n)
    for s in sorted(set(slugs)):
        held = slugs == s
        fit = fit_hierarchy(d, ~held, machines=False, sigma=sigma, levels=levels, start=full)
        pred[held] = predict_tok_s(d, fit.x_rows(d, use_machine=False))[held]
    return pred


# What leave-one-group-out leaves out together: every row of a device kind (gpu, igpu, ...), of
# a maker's segment (`machine_segment`: nvidia geforce, nvidia pro, amd apu, apple, intel cpu,
# ...), of a backend, of a source (one publication's rows, often one build and one author's
# machines).
GROUP_LEVELS = ("kind", "segment", "backend", "source")


def source_group(source: str) -> str:
    """The publication a row comes from: its `source:`, but the project's own recordings
    (`tests/data/DIR/FILE ...`, a file per model and thread count) are one per directory."""
    m = re.match(r"(tests/data/[^/]+)/", source)
    return m.group(1) if m else source


def group_of(o: Observation, level: str) -> str:
    """The group of a row at one of GROUP_LEVELS."""
    if level not in GROUP_LEVELS:
        raise InputError(f"unknown group level '{level}'; one of {', '.join(GROUP_LEVELS)}")
    return str(o.meta[level])


def cross_validate_groups(design: Design, level: str, full: HierFit | None = None) -> np.ndarray:
    """Leave-one-group-out predictions: refit without every row of each group of `level` (a
    kind, a segment, a backend, a source), predict them from the groups of the other levels
    they belong to, as `cross_validate` predicts a device: what to expect of a machine whose
    whole class the data has no runs of. `full`: the fit of every row, where the caller has it
    (each refit starts from it)."""
    groups = np.array([group_of(o, level) for o in design.obs])
    full = full or fit_hierarchy(design)
    pred = np.zeros(design.n)
    for g in sorted(set(groups)):
        held = groups == g
        fit = fit_hierarchy(design, ~held, machines=False, start=full)
        pred[held] = predict_tok_s(design, fit.x_rows(design, use_machine=False))[held]
    return pred


def naive_predictions(design: Design) -> np.ndarray:
    """The naive roofline: 100% of bandwidth and of compute, no overhead, no row term."""
    d = Design(design.obs)
    d.rowc = np.zeros_like(d.rowc)
    d.unhidden = np.zeros_like(d.unhidden)  # a roofline: the larger of the two terms
    x = np.zeros(len(PARAMS))  # every share at 100%, rows_half at 1 (its term is gone)
    x[PARAMS.index("overhead_per_layer_s")] = math.log(1e-8)
    return predict_tok_s(d, x)


class ErrorStats(BaseModel):
    n_rows: int
    median_pct: float | None
    p90_pct: float | None
    signed_median_pct: float | None = None


def error_stats(pred: np.ndarray, measured: np.ndarray) -> ErrorStats:
    """Median and 90th percentile of |predicted / measured - 1|, and the median signed error,
    in percent."""
    if len(pred) == 0:
        return ErrorStats(n_rows=0, median_pct=None, p90_pct=None)
    ratio = np.asarray(pred) / np.asarray(measured) - 1.0
    ape = np.abs(ratio) * 100.0
    return ErrorStats(
        n_rows=len(ape),
        median_pct=round(float(np.median(ape)), 1),
        p90_pct=round(float(np.percentile(ape, 90)), 1),
        signed_median_pct=round(float(np.median(ratio)) * 100.0, 1),
    )


# -- shipped defaults -------------------------------------------------------------------------


class DefaultsFit(BaseModel):
    """What `tokenwalk calibrate` fits from data/benchmarks.yaml, and how well it does."""

    fitted: str
    rows_used: int
    rows_excluded: int
    global_fit: dict[str, float | int]
    factors: dict[str, dict[str, dict[str, float | int]]]  # level -> group -> factors
    group_fits: dict[str, dict[str, float | int]]  # composed, per kind/backend benchmarked
    machine_fits: dict[str, dict[str, float | int]]
    errors: dict[str, dict[str, ErrorStats]]  # "in_sample" / "naive" -> phase -> error
    used: list[str]
    excluded: list[str]


def _params_dict(x: np.ndarray, rows: int | None = None) -> dict[str, float | int]:
    p = Params.from_x(x)
    d: dict[str, float | int] = {
        "eff_bw": round(p.eff_bw, 4),
        "eff_compute": round(p.eff_compute, 4),
        "overhead_per_layer_s": float(f"{p.overhead_per_layer_s:.3g}"),
        "rows_half": float(f"{p.rows_half:.3g}"),
        "eff_experts": round(p.eff_experts, 4),
    }
    if rows is not None:
        d["n_rows"] = rows
    return d


def _factor_dict(off: np.ndarray, rows: int, machines: int) -> dict[str, float | int]:
    f = np.exp(off)
    d: dict[str, float | int] = {k: float(f"{v:.4g}") for k, v in zip(PARAMS, f, strict=True)}
    d["n_rows"] = rows
    d["n_machines"] = machines
    return d


def _by_phase(design: Design, pred: np.ndarray) -> dict[str, ErrorStats]:
    out = {}
    for phase in ("decode", "prefill"):
        m = np.array([o.phase == phase for o in design.obs])
        out[phase] = error_stats(pred[m], design.measured[m])
    return out


def fit_defaults(progress: Progress | None = None) -> DefaultsFit:
    """Fit the model on every usable row of data/benchmarks.yaml (a few seconds); `progress`
    is told of each row read, then of the fit."""
    obs, excluded = benchmark_observations(progress)
    if progress is not None:
        progress(f"fitting the timing model to {len(obs):,} runs", 0, None)
    design = Design(obs)
    fit = fit_hierarchy(design)
    in_sample = predict_tok_s(design, fit.x_rows(design))
    factors: dict[str, dict[str, dict[str, float | int]]] = {}
    for (level, group), off in fit.offsets.items():
        if level in FIT_LEVELS:
            factors.setdefault(level, {})[group] = _factor_dict(
                off, fit.rows[(level, group)], fit.machines[(level, group)]
            )
    combos: dict[str, tuple[dict[str, str], int]] = {}
    for o in obs:
        peak = o.keys.get("peak", "")
        kb = o.keys["kind/backend"] + (f" {peak}" if peak and peak != "simd" else "")
        keys, n = combos.get(kb, (o.keys, 0))
        combos[kb] = (keys, n + 1)
    return DefaultsFit(
        fitted=_dt.date.today().isoformat(),
        rows_used=len(obs),
        rows_excluded=len(excluded),
        global_fit=_params_dict(fit.global_x, design.n),
        factors=factors,
        group_fits={
            kb: _params_dict(fit.x_for(keys, use_machine=False), n)
            for kb, (keys, n) in sorted(combos.items())
        },
        machine_fits={
            group: _params_dict(fit.x_for(_machine_keys(obs, group)), fit.rows[(level, group)])
            for (level, group) in fit.offsets
            if level == "machine"
        },
        errors={
            "in_sample": _by_phase(design, in_sample),
            "naive": _by_phase(design, naive_predictions(design)),
        },
        used=[o.label for o in obs],
        excluded=excluded,
    )


def _machine_keys(obs: Sequence[Observation], slug: str) -> dict[str, str]:
    return dict(next(o.keys for o in obs if o.machine == slug))


def _checkout_root() -> Path | None:
    """The source checkout this tokenwalk runs from (an editable install or PYTHONPATH=src), or
    None for an installed package: the directory above src/ holding pyproject.toml and data/."""
    root = Path(__file__).resolve().parents[3]
    if (root / "pyproject.toml").is_file() and (root / "data" / "timing.yaml").is_file():
        return root
    return None


def defaults_target() -> Path:
    """Where `calibrate --write-defaults` writes: data/timing.yaml of the source checkout, the
    file this tokenwalk reads its defaults from. An installed package is never written into (an
    upgrade would undo it, and it may be shared or read-only): that is an `InputError`."""
    from tokenwalk.catalog import data_path

    root = _checkout_root()
    target = root / "data" / "timing.yaml" if root is not None else None
    if target is None or data_path("timing.yaml").resolve() != target.resolve():
        raise InputError(
            "--write-defaults updates data/timing.yaml in a source checkout, and this tokenwalk "
            f"is an installed package ({Path(__file__).resolve().parents[1]}); run it from a clone "
            "of the repository (pip install -e .), or fit your own machine with "
            "`tokenwalk calibrate --machine NAME --from FILE`"
        )
    return target


def timing_yaml(fit: DefaultsFit) -> str:
    """The text of data/timing.yaml for a fit."""
    import yaml

    head = (
        "# Fitted efficiencies of the timing model, written by `tokenwalk calibrate "
        "--write-defaults`\n"
        "# from data/benchmarks.yaml. Do not edit by hand: change the data and refit.\n"
        "# time of a pass = max(bytes / (bandwidth x eff_bw),\n"
        "#                      (dense flops + rows_half x dense row_flops\n"
        "#                       + (expert flops + rows_half x expert row_flops) / eff_experts)\n"
        "#                      / (fp16 rate x eff_compute))\n"
        "#                  + layers x overhead_per_layer_s\n"
        "# A machine's parameters: its own fit (machine files), machines: here, else global x\n"
        "# the factors of its groups (vendor, peak, backend, kind, kind/backend). groups: shows\n"
        "# the composed parameters of every kind/backend (and peak) benchmarked, for reading.\n"
    )
    body = {
        "fitted": fit.fitted,
        "loss": f"huber(ln predicted/measured / {HUBER_DELTA}) + sum over offsets of "
        "(offset / prior width of its level)^2",
        "prior_width": {
            k: {p: w for p, w in zip(PARAMS, v, strict=True)} for k, v in PRIOR_SIGMA.items()
        },
        "rows_used": fit.rows_used,
        "rows_excluded": fit.rows_excluded,
        "global": fit.global_fit,
        "factors": fit.factors,
        "groups": fit.group_fits,
        "machines": fit.machine_fits,
        "error_pct": {
            k: {ph: s.model_dump() for ph, s in v.items()} for k, v in fit.errors.items()
        },
        "used": fit.used,
        "excluded": fit.excluded,
    }
    return head + yaml.safe_dump(body, sort_keys=False, width=100)


# -- a user's llama-bench runs ----------------------------------------------------------------


@dataclass(frozen=True)
class BenchRun:
    """One llama-bench result: a pp or tg test of one model file."""

    model_filename: str
    model_type: str
    model_size: int
    model_n_params: int
    n_prompt: int
    n_gen: int
    n_depth: int
    n_ubatch: int
    avg_ts: float
    backends: str


def _int(v: Any, default: int = 0) -> int:
    try:
        return int(v)
    except (TypeError, ValueError):
        return default


def _float(v: Any) -> float:
    """A finite number, else 0 (which the caller refuses as no measurement)."""
    try:
        x = float(v)
    except (TypeError, ValueError):
        return 0.0
    return x if math.isfinite(x) else 0.0


def read_llama_bench(path: str | Path) -> list[BenchRun]:
    """Runs from `llama-bench -o json` (a list) or `-o jsonl` (one object a line)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise SourceError(f"cannot read '{path}': {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise SpecError(f"{path}: not llama-bench JSON or JSONL (not UTF-8 text)") from None
    text = text.strip()
    try:
        if text.startswith("["):
            raw = json.loads(text)
        else:
            raw = [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError as exc:
        raise SpecError(
            f"{path}: not llama-bench JSON or JSONL (line {exc.lineno}: {exc.msg})"
        ) from None
    runs = []
    for i, r in enumerate(raw):
        if not isinstance(r, dict) or "avg_ts" not in r:
            raise SpecError(f"{path}: entry {i + 1} is not a llama-bench result (no avg_ts)")
        run = BenchRun(
            model_filename=str(r.get("model_filename", "")),
            model_type=str(r.get("model_type", "")),
            model_size=_int(r.get("model_size")),
            model_n_params=_int(r.get("model_n_params")),
            n_prompt=_int(r.get("n_prompt")),
            n_gen=_int(r.get("n_gen")),
            n_depth=_int(r.get("n_depth")),
            n_ubatch=_int(r.get("n_ubatch"), DEFAULT_UBATCH) or DEFAULT_UBATCH,
            avg_ts=_float(r.get("avg_ts")),
            backends=str(r.get("backends", "")),
        )
        if run.avg_ts <= 0 or (run.n_prompt > 0) == (run.n_gen > 0):
            raise SpecError(
                f"{path}: entry {i + 1}: expected a pp or a tg test with a positive avg_ts"
            )
        runs.append(run)
    if not runs:
        raise SpecError(f"{path}: no llama-bench results in the file")
    return runs


def named_preset(model_type: str) -> str | None:
    """The quant preset llama-bench's `model_type` names in its last words, llama.cpp's name of
    the file type (`llama 256M Q4_1`, `gemma3 270M Q4_K - Medium`, `... IQ4_XS - 4.25 bpw`), where
    it is one tokenwalk knows; None otherwise."""
    from tokenwalk.model.quant import PRESETS

    words = model_type.split(" ", 2)
    if len(words) < 3:
        return None
    name, _, size = words[2].partition(" - ")
    name = name.strip() + {"Small": "_S", "Medium": "_M", "Large": "_L"}.get(size.strip(), "")
    return name if name in PRESETS else None


_MATCH_WITHIN = 0.15  # 4 |ln(params ratio)| + |ln(size ratio)| of the closest catalogue model


def _match_catalogue(run: BenchRun) -> Model:
    """The catalogue model and preset a llama-bench run's file matches (name, then size), in
    the file type llama-bench names where it names one (`named_preset`)."""
    from tokenwalk.catalog import load_models

    stem = Path(run.model_filename).name.lower().replace("_", "-")
    cands = [e for e in load_models() if any(n.lower() in stem for n in (e.slug, *e.aliases))]
    if not cands and run.model_n_params:
        cands = list(load_models())
    named = named_preset(run.model_type)  # the file's own type, where llama-bench names it
    presets = (named,) if named else _SIZE_PRESETS + ("Q4_K_S", "MXFP4", "IQ4_XS")
    best: tuple[float, Model] | None = None
    for e in cands:
        for preset in presets:
            try:
                m = _catalogue_model(e.slug, preset)
            except TokenwalkError:
                continue
            err = 0.0
            if run.model_n_params:
                err += abs(math.log(m.params / run.model_n_params)) * 4
                if err > _MATCH_WITHIN:  # a preset does not change the count: none of this model's
                    break
            if run.model_size:
                err += abs(math.log(m.tensor_bytes / run.model_size))
            if best is None or err < best[0]:
                best = (err, m)
    if best is None or best[0] > _MATCH_WITHIN:
        raise InputError(
            f"cannot match '{run.model_filename or run.model_type}' to a catalogue model; "
            "give the GGUF file with --model"
        )
    return best[1]


def _check_model(model: Model, run: BenchRun) -> None:
    """Refuse a --model that is not the model a llama-bench run measured: its parameter count
    or its size off by more than the catalogue match allows."""
    err = 0.0
    if run.model_n_params and model.params:
        err += abs(math.log(model.params / run.model_n_params)) * 4
    if run.model_size and model.tensor_bytes:
        err += abs(math.log(model.tensor_bytes / run.model_size))
    if err > _MATCH_WITHIN:
        raise InputError(
            f"--model {model.name} ({model.params / 1e9:.2f} B parameters, "
            f"{model.tensor_bytes / 1e9:.2f} GB) is not the model of the llama-bench run "
            f"'{run.model_filename or run.model_type}' ({run.model_n_params / 1e9:.2f} B, "
            f"{run.model_size / 1e9:.2f} GB): give the GGUF file the runs were made with"
        )


# A fit that still misses its own runs by this much (median, percent) is not a machine's
# efficiencies but a wrong model or machine: it is refused, never stored.
MAX_FIT_MEDIAN_PCT = 30.0


class MachineFit(BaseModel):
    machine: str
    backend: str = ""  # a cpu backend's experts run at the dense rate: eff_experts is not used
    n_runs: int
    before: dict[str, float]
    after: dict[str, float]
    error_before: ErrorStats
    error_after: ErrorStats
    predictions: list[dict[str, Any]]  # per run: test, measured, predicted before and after
    at_bound: list[str] = []  # efficiencies the fit left at their bound of 100% (`capped`)


def capped(after: dict[str, float | int]) -> list[str]:
    """The efficiencies of a fit at 100% of the machine's rate: the runs ask for more than the
    machine entry's bandwidth or compute rate allows, so that rate understates what llama.cpp's
    kernels reach there (a CPU's GEMM rate measured in f32, where its quantized kernels use
    integer dot products), and runs the fit cannot reach stay too slow."""
    return [k for k in ("eff_bw", "eff_compute") if float(after[k]) >= 0.999]


def calibrate_machine(
    machine: Any,
    runs: Iterable[BenchRun],
    model: Model | None = None,
    progress: Progress | None = None,
) -> MachineFit:
    """Fit one machine's efficiencies to its llama-bench runs, pulled towards its current ones;
    `progress` is told of each run read, then of the fit."""
    runs = list(runs)
    obs = []
    for i, r in enumerate(runs):
        if progress is not None:
            progress("reading your runs", i, len(runs))
        if model is not None:
            _check_model(model, r)
        m = model or _match_catalogue(r)
        phase = "prefill" if r.n_prompt > 0 else "decode"
        n = r.n_prompt if phase == "prefill" else r.n_gen
        test = f"{'pp' if phase == 'prefill' else 'tg'}{n}" + (
            f"@d{r.n_depth}" if r.n_depth else ""
        )
        obs.append(
            observation(
                m,
                label=f"{m.name} {m.quant} {test}",
                machine=machine.slug,
                kind=machine.kind,
                backend=machine.backend,
                vendor=machine.vendor,
                bandwidth_gbs=machine.bandwidth_gbs,
                tflops=machine.tflops,
                phase=phase,
                n_tokens=n,
                tok_s=r.avg_ts,
                ubatch=r.n_ubatch,
                depth=r.n_depth,
                peak=machine.peak,
                simd=machine.cpu_simd,
            )
        )
    if any(o.phase == "prefill" for o in obs) and not machine.tflops:
        raise InputError(f"machine '{machine.slug}' has no FP16 rate; give --tflops to fit prefill")
    if progress is not None:
        progress(f"fitting {machine.slug} to {len(obs):,} runs", 0, None)
    design = Design(obs)
    f = machine.fit
    rows_half = f.rows_half or timing_defaults().global_fit.rows_half
    prior = Params.of(f, rows_half).to_x()
    x = fit_offset(design, prior, sigma=MACHINE_SIGMA)
    before = predict_tok_s(design, prior)
    after = predict_tok_s(design, x)
    error_after = error_stats(after, design.measured)
    if (error_after.median_pct or 0.0) > MAX_FIT_MEDIAN_PCT:
        raise InputError(
            f"the fit still misses {machine.slug}'s runs by a median {error_after.median_pct:.0f}% "
            f"(more than {MAX_FIT_MEDIAN_PCT:.0f}%): not stored. Check that --model is the model "
            "the runs were made with and that the machine is the one they ran on"
        )
    after_params = _params_dict(x)
    return MachineFit(
        machine=machine.slug,
        backend=machine.backend,
        n_runs=len(obs),
        before=_params_dict(prior),
        after=after_params,
        at_bound=capped(after_params),
        error_before=error_stats(before, design.measured),
        error_after=error_after,
        predictions=[
            {
                "test": o.label,
                "measured_tok_s": o.measured_tok_s,
                "before_tok_s": round(float(b), 2),
                "after_tok_s": round(float(a), 2),
            }
            for o, b, a in zip(obs, before, after, strict=True)
        ],
    )


def write_machine_fit(path: Path, slug: str, fit: MachineFit, note: str) -> None:
    """Store `fit.after` as the `fit:` of machine `slug` in the user file `path` (created if
    missing); written to a temporary file and renamed, so a failure leaves the file as it was."""
    import yaml

    from tokenwalk.catalog import read_yaml

    entries: list[Any] = []
    if path.exists():
        entries = read_yaml(path) or []
        if not isinstance(entries, list):
            raise SpecError(f"{path}: expected a YAML list of machines")
    value = {**fit.after, "source": note}
    for e in entries:
        if isinstance(e, dict) and str(e.get("slug", "")).lower() == slug.lower():
            e["fit"] = value
            break
    else:
        entries.append({"slug": slug, "fit": value})
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(
        "# tokenwalk machine file: entries here add machines or override catalogue fields\n"
        + yaml.safe_dump(entries, sort_keys=False, width=100),
        encoding="utf-8",
    )
    tmp.replace(path)
