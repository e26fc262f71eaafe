"""Fitting the timing model's efficiencies to measured speeds.

An observation is a measured tok/s and the passes that produced it (bytes B, matrix FLOPs F,
row FLOPs R = sum F_i / rows_i, and the layers L its fixed cost counts, of each, from
`tokenwalk.timing.passes.pass_work`: `PassWork.overhead_layers`).
For parameters x = (ln eff_bw, ln eff_compute, ln overhead_per_layer_s, ln rows_half,
ln eff_experts) the prediction is

    tok/s = tokens / sum over passes of
            [max(B / (BW e_bw), C) + L x overhead]
    C = [(F - F_x) + rows_half x (R - R_x) + (F_x + rows_half x R_x) / e_x] / (FLOPS e_c)

with F_x and R_x the routed experts' part of F and R (0 on a cpu backend, whose experts run
the dense kernels), plus min(B / (BW e_bw), U x C) where a share U of the compute does not
hide under the read (U = 1 in a CPU's decoding step, where the two add;
`passes.unhidden_share`).

The parameters of a row are a sum of offsets along a hierarchy of groups (log units):

    x(row) = x_global + x_vendor + x_peak + x_backend + x_kind + x_kind/backend + x_machine

so a machine never benchmarked borrows from every group it belongs to (an AMD iGPU on Vulkan
gets AMD's, Vulkan's, the iGPUs' and the igpu/vulkan offsets). The peak level (what the
spec-sheet compute rate is the peak of: matrix units, vector ALUs, a CPU's SIMD) moves
eff_compute and rows_half. A parameter whose prior width is 0 at a level has no offsets there:
rows_half has offsets only per backend and peak (a property of a backend's matrix kernels and
of the units they run on: a tensor core's tile needs more rows than a vector ALU; cross-
validation predicts unseen devices worse when vendors, kinds or machines move it too), and
eff_experts only per backend (the routed-expert kernels: CUDA and ROCm MMQ with expert ids,
Metal `mul_mm_id`, Vulkan `mul_mat_id`). All
offsets are fitted at once by robust non-linear least squares (`scipy.optimize.least_squares`,
trust region, analytic Jacobian):

    minimise  sum_rows huber(ln(predicted / measured) / delta)
              + sum_offsets (offset / sigma_level)^2

The Gaussian prior on each offset pulls a group or a machine towards its parents by how little
its rows pin it: a machine with four runs of one model moves only along what those runs
measure. A group needs rows from two machines; a lone machine's rows are that machine, not a
group. Nothing is tuned per row.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from tokenwalk.timing.efficiency import FIT_LEVELS, Efficiency

__all__ = [
    "PARAMS",
    "LEVELS",
    "PRIOR_SIGMA",
    "HUBER_DELTA",
    "START",
    "Observation",
    "Params",
    "Design",
    "HierFit",
    "predict_tok_s",
    "fit_hierarchy",
    "fit_offset",
]

PARAMS = ("eff_bw", "eff_compute", "overhead_per_layer_s", "rows_half", "eff_experts")
# "engine": a wrapper the runs went through (Ollama, llamafile), absent for llama.cpp itself; a
# machine priced from its groups runs llama.cpp, so no composed fit reads it
LEVELS = (*FIT_LEVELS, "engine", "machine")
HUBER_DELTA = 0.15  # log error beyond which a row counts linearly (about 16%)
# Prior width of each level's offset, log units, per parameter (eff_bw, eff_compute, overhead,
# rows_half, eff_experts); 0: no offset at that level. Chosen by leave-one-device-out
# cross-validation (benchmarks/accuracy.py).
PRIOR_SIGMA: dict[str, tuple[float, ...]] = {
    "global": (3.0, 3.0, 3.0, 3.0, 3.0),
    "vendor": (0.3, 1.0, 1.0, 0.0, 0.0),
    "peak": (0.0, 0.5, 0.0, 1.0, 0.0),
    "backend": (0.3, 1.0, 1.0, 3.0, 1.0),
    "kind": (0.3, 1.0, 1.0, 0.0, 0.0),
    "kind/backend": (0.3, 0.7, 0.7, 0.0, 0.0),
    "engine": (0.5, 0.7, 1.0, 0.0, 0.0),
    "machine": (0.5, 0.7, 1.0, 0.0, 0.0),
}
GROUP_MIN_MACHINES = 2
# Bounds, in natural units: efficiencies in [1%, 100%] (compute down to 0.2%), overhead in
# [10 ns, 20 ms] per layer, rows_half in [0.5, 4096] rows, eff_experts in [2%, 200%] of a
# dense product's rate.
_LO = np.log([0.01, 0.002, 1e-8, 0.5, 0.02])
_HI = np.log([1.0, 1.0, 2e-2, 4096.0, 2.0])
START = np.log([0.7, 0.5, 3e-5, 16.0, 1.0])


@dataclass(frozen=True)
class Observation:
    """One measured speed and the passes behind it."""

    label: str
    machine: str
    phase: str  # "decode" or "prefill"
    bandwidth_gbs: float
    tflops: float
    tokens: float  # tokens the passes produce (1 for a decoding step, n for a prompt)
    # (bytes, flops, row_flops, layers the per-layer cost counts, the routed experts' part
    # of flops and of row_flops: 0 on a cpu backend, and the share U of the compute that does
    # not hide under the read) of each pass
    passes: tuple[tuple[float, float, float, float, float, float, float], ...]
    measured_tok_s: float
    keys: Mapping[str, str] = field(default_factory=dict)  # level -> group, machine included
    meta: dict = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Params:
    eff_bw: float
    eff_compute: float
    overhead_per_layer_s: float
    rows_half: float
    eff_experts: float = 1.0

    @classmethod
    def of(cls, fit: Efficiency, rows_half: float | None = None) -> Params:
        """The parameters of a machine's `Efficiency` (`rows_half`: instead of the fit's)."""
        h = fit.rows_half if rows_half is None else rows_half
        return cls(fit.eff_bw, fit.eff_compute, fit.overhead_per_layer_s, h, fit.eff_experts)

    @classmethod
    def from_x(cls, x: np.ndarray) -> Params:
        x = np.clip(x, _LO, _HI)
        return cls(*(float(v) for v in np.exp(x)))

    def to_x(self) -> np.ndarray:
        return np.log(
            [
                self.eff_bw,
                self.eff_compute,
                max(self.overhead_per_layer_s, 1e-8),
                max(self.rows_half, 0.5),
                self.eff_experts,
            ]
        )


class Design:
    """Observations flattened into per-pass arrays, so a prediction is a few numpy operations."""

    def __init__(self, observations: Sequence[Observation]) -> None:
        self.obs = list(observations)
        rows, cols = [], []
        for i, o in enumerate(self.obs):
            for by, fp, rf, nl, fx, rx, unhidden in o.passes:
                rows.append(i)
                fl = o.tflops * 1e12
                # an unknown compute rate (0) leaves the compute term out (decode rows only)
                c = (fp / fl, rf / fl, fx / fl, rx / fl) if fl else (0.0,) * 4
                cols.append((by / (o.bandwidth_gbs * 1e9), c[0], c[1], nl, c[2], c[3], unhidden))
        self.row = np.array(rows, dtype=np.int64)
        arr = np.array(cols, dtype=float).reshape(-1, 7)
        self.mem = arr[:, 0]  # seconds at 100% bandwidth
        self.comp = arr[:, 1]  # seconds at 100% of the compute rate
        self.rowc = arr[:, 2]  # seconds per row of rows_half at 100% of the compute rate
        self.layers = arr[:, 3]
        self.compx = arr[:, 4]  # the routed experts' part of comp
        self.rowcx = arr[:, 5]  # and of rowc
        self.unhidden = arr[:, 6]  # share of the compute that does not hide under the read
        # seconds at 100% of the compute rate of the routed experts' empty tile columns,
        # F_pad / FLOPS: 0 in the shipped model, set by the "tiles" variant of calibrate
        self.tile = np.zeros(len(self.row))
        self.tokens = np.array([o.tokens for o in self.obs], dtype=float)
        self.measured = np.array([o.measured_tok_s for o in self.obs], dtype=float)
        self.n = len(self.obs)

    def pass_terms(self, x_rows: np.ndarray) -> tuple[np.ndarray, ...]:
        """(memory, compute, overhead, total per row) times for (n, len(PARAMS)) parameters per
        row."""
        x = np.clip(x_rows, _LO, _HI)[self.row]
        e = np.exp(x)
        mem = self.mem / e[:, 0]
        comp = (self._dense(e) + self._experts(e)) / e[:, 1]
        over = self.layers * e[:, 2]
        t = np.maximum(mem, comp) + np.minimum(mem, self.unhidden * comp) + over
        total = np.bincount(self.row, weights=t, minlength=self.n)
        return mem, comp, over, total

    def _dense(self, e: np.ndarray) -> np.ndarray:
        """Seconds at 100% of the compute rate of the products other than routed experts."""
        return self.comp - self.compx + self.tile + e[:, 3] * (self.rowc - self.rowcx)

    def _experts(self, e: np.ndarray) -> np.ndarray:
        """Seconds at 100% of the compute rate of the routed-expert products."""
        return (self.compx + e[:, 3] * self.rowcx) / e[:, 4]


def predict_tok_s(design: Design, x_rows: np.ndarray) -> np.ndarray:
    """Predicted tok/s per observation; `x_rows` is (n, len(PARAMS)) in log units, or one
    vector of len(PARAMS) for every row."""
    x = np.asarray(x_rows, dtype=float)
    if x.ndim == 1:
        x = np.broadcast_to(x, (design.n, len(PARAMS)))
    return design.tokens / design.pass_terms(x)[3]


def _dlog_pred(design: Design, x_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ln predicted tok/s, d ln predicted / d x) per row: (n,) and (n, len(PARAMS))."""
    mem, comp, over, total = design.pass_terms(x_rows)
    xr = x_rows[design.row]
    inside = ((xr > _LO) & (xr < _HI)).astype(float)
    e = np.exp(np.clip(xr, _LO, _HI))
    # how much each term counts in a pass's time: max(mem, comp) + min(mem, U comp)
    u = design.unhidden
    comp_binds = comp > mem
    read_waits = (u > 0) & (u * comp >= mem)  # the unhidden compute outlasts the read
    wm = np.where(comp_binds, 0.0, 1.0) + np.where(read_waits, 1.0, 0.0)
    wc = np.where(comp_binds, 1.0, 0.0) + np.where(read_waits, 0.0, u)
    d = np.zeros((len(mem), len(PARAMS)))
    d[:, 0] = -mem * wm
    d[:, 1] = -comp * wc
    d[:, 2] = over
    row_s = e[:, 3] * (design.rowc - design.rowcx + design.rowcx / e[:, 4])
    d[:, 3] = wc * row_s / e[:, 1]
    d[:, 4] = -wc * design._experts(e) / e[:, 1]
    d *= inside
    dt = np.zeros((design.n, len(PARAMS)))
    for k in range(len(PARAMS)):
        dt[:, k] = np.bincount(design.row, weights=d[:, k], minlength=design.n)
    return np.log(design.tokens / total), -dt / total[:, None]


@contextmanager
def _svd_that_converges() -> Iterator[None]:
    """scipy's exact trust-region step decomposes the Jacobian with LAPACK's divide-and-conquer
    SVD (gesdd), which on rare matrices does not converge ("SVD did not converge": one
    published row nudged by 0.1% did it); for the length of a fit, a failed gesdd is redone
    with gesvd, slower and sturdier, and every step that converged is what it was."""
    import scipy.linalg

    try:
        import scipy.optimize._lsq.trf as trf
    except ImportError:  # a scipy that keeps its trust-region step elsewhere: as it is
        yield
        return

    def svd(a: np.ndarray, full_matrices: bool = True, **kw: object) -> tuple:
        try:
            return scipy.linalg.svd(a, full_matrices=full_matrices, **kw)
        except np.linalg.LinAlgError:
            return scipy.linalg.svd(a, full_matrices=full_matrices, lapack_driver="gesvd", **kw)

    before = trf.svd
    trf.svd = svd
    try:
        yield
    finally:
        trf.svd = before


def _huber_rho(z: np.ndarray, n_data: int) -> np.ndarray:
    """scipy's loss protocol for z = f^2: Huber on the first n_data residuals (already divided
    by delta), plain squares on the prior residuals after them."""
    rho = np.empty((3, z.size))
    rho[0], rho[1], rho[2] = z, 1.0, 0.0
    zd = z[:n_data]
    big = zd > 1.0
    sq = np.sqrt(np.where(big, zd, 1.0))
    rho[0, :n_data] = np.where(big, 2.0 * sq - 1.0, zd)
    rho[1, :n_data] = np.where(big, 1.0 / sq, 1.0)
    rho[2, :n_data] = np.where(big, -0.5 / (sq * zd), 0.0)
    return rho


@dataclass(frozen=True)
class HierFit:
    """Fitted offsets: the global x and one offset per (level, group) seen in training."""

    global_x: np.ndarray
    offsets: dict[tuple[str, str], np.ndarray]
    rows: dict[tuple[str, str], int]
    machines: dict[tuple[str, str], int]  # machines behind each group

    def x_for(self, keys: Mapping[str, str], *, use_machine: bool = True) -> np.ndarray:
        """The composed parameters of a machine with these group keys (log units)."""
        x = np.array(self.global_x, dtype=float)
        for level in LEVELS:
            if level == "machine" and not use_machine:
                continue
            off = self.offsets.get((level, keys.get(level, "")))
            if off is not None:
                x = x + off
        return np.clip(x, _LO, _HI)

    def x_rows(self, design: Design, *, use_machine: bool = True) -> np.ndarray:
        return np.array([self.x_for(o.keys, use_machine=use_machine) for o in design.obs])


def _columns(design: Design, train: np.ndarray) -> tuple[list[tuple[str, str]], dict, dict]:
    """The (level, group) offsets the training rows can fit: a group needs two machines."""
    members: dict[tuple[str, str], set[str]] = {}
    counts: dict[tuple[str, str], int] = {}
    for i in np.flatnonzero(train):
        o = design.obs[i]
        for level in LEVELS:
            key = (level, o.keys.get(level, ""))
            if not key[1]:
                continue
            members.setdefault(key, set()).add(o.machine)
            counts[key] = counts.get(key, 0) + 1
    cols = [
        k for k in members if k[0] in ("engine", "machine") or len(members[k]) >= GROUP_MIN_MACHINES
    ]
    cols.sort(key=lambda k: (LEVELS.index(k[0]), k[1]))
    return cols, counts, {k: len(v) for k, v in members.items()}


def fit_hierarchy(
    design: Design,
    train: np.ndarray | None = None,
    *,
    machines: bool = True,
    sigma: Mapping[str, Sequence[float]] | None = None,
    levels: Sequence[str] = LEVELS,
    start: HierFit | None = None,
    delta: float = HUBER_DELTA,
) -> HierFit:
    """Fit the global parameters and every group's and machine's offsets at once (the groups
    of `levels`; `machines=False` leaves the machine level out)."""
    from scipy.optimize import least_squares

    sigma = sigma or PRIOR_SIGMA
    train = np.ones(design.n, dtype=bool) if train is None else np.asarray(train, bool)
    cols, counts, n_machines = _columns(design, train)
    cols = [c for c in cols if c[0] in levels and (machines or c[0] != "machine")]
    idx = np.flatnonzero(train)
    npar = len(PARAMS)
    member = np.zeros((idx.size, len(cols)), dtype=bool)
    col_of = {c: j for j, c in enumerate(cols)}
    for r, i in enumerate(idx):
        for level in LEVELS:
            j = col_of.get((level, design.obs[i].keys.get(level, "")))
            if j is not None:
                member[r, j] = True
    sub = _Subset(design, idx)
    widths = np.concatenate(
        [np.asarray(sigma["global"], float)] + [np.asarray(sigma[c[0]], float) for c in cols]
    )
    free = widths > 0  # a width of 0: no offset for that parameter at that level
    inv_sigma = 1.0 / widths[free]
    center = np.zeros(widths.size)
    center[:npar] = START
    theta0 = center.copy()
    if start is not None:
        theta0[:npar] = start.global_x
        for j, c in enumerate(cols):
            if c in start.offsets:
                theta0[npar * (1 + j) : npar * (2 + j)] = start.offsets[c]
    ln_meas = np.log(sub.measured)
    weights = np.hstack([np.ones((idx.size, 1)), member.astype(float)])  # global + groups

    def expand(phi: np.ndarray) -> np.ndarray:
        theta = np.zeros(widths.size)
        theta[free] = phi
        return theta

    def rows_x(theta: np.ndarray) -> np.ndarray:
        return weights @ theta.reshape(1 + len(cols), npar)

    def residuals(phi: np.ndarray) -> np.ndarray:
        theta = expand(phi)
        lp, _ = _dlog_pred(sub, rows_x(theta))
        return np.concatenate([(lp - ln_meas) / delta, (phi - center[free]) * inv_sigma])

    def jacobian(phi: np.ndarray) -> np.ndarray:
        _, d = _dlog_pred(sub, rows_x(expand(phi)))
        jd = (weights[:, :, None] * (d / delta)[:, None, :]).reshape(idx.size, -1)
        return np.vstack([jd[:, free], np.diag(inv_sigma)])

    n_data = idx.size
    with _svd_that_converges():
        result = least_squares(
            residuals,
            theta0[free],
            jac=jacobian,
            loss=lambda z: _huber_rho(z, n_data),
            method="trf",
            # the exact trust-region step (SVD of a few hundred columns): the iterative LSMR step
            # stopped at points that moved with the data's last digits (one row changed by 0.1%
            # moved the cross-validated prefill median by a point); this one does not
            tr_solver="exact",
            x_scale=1.0,
            ftol=1e-10,
            xtol=1e-10,
            gtol=1e-10,
            max_nfev=500,
        )
    theta = expand(result.x)
    offsets = {c: theta[npar * (1 + j) : npar * (2 + j)].copy() for j, c in enumerate(cols)}
    return HierFit(
        global_x=theta[:npar].copy(),
        offsets=offsets,
        rows={c: counts[c] for c in cols},
        machines={c: n_machines[c] for c in cols},
    )


def fit_offset(
    design: Design,
    prior_x: np.ndarray,
    *,
    sigma: Sequence[float] | None = None,
    delta: float = HUBER_DELTA,
) -> np.ndarray:
    """One machine's parameters from its own rows, pulled towards `prior_x` (its group's
    composed parameters) with the machine level's prior width."""
    from scipy.optimize import least_squares

    widths = np.asarray(sigma or PRIOR_SIGMA["machine"], float)
    free = widths > 0
    inv_sigma = 1.0 / widths[free]
    prior_x = np.asarray(prior_x, float)
    ln_meas = np.log(design.measured)
    n = design.n

    def x_of(phi: np.ndarray) -> np.ndarray:
        off = np.zeros(len(PARAMS))
        off[free] = phi
        return np.broadcast_to(prior_x + off, (n, len(PARAMS)))

    def residuals(phi: np.ndarray) -> np.ndarray:
        lp, _ = _dlog_pred(design, x_of(phi))
        return np.concatenate([(lp - ln_meas) / delta, phi * inv_sigma])

    def jacobian(phi: np.ndarray) -> np.ndarray:
        _, d = _dlog_pred(design, x_of(phi))
        return np.vstack([d[:, free] / delta, np.diag(inv_sigma)])

    with _svd_that_converges():
        result = least_squares(
            residuals,
            np.zeros(int(free.sum())),
            jac=jacobian,
            loss=lambda z: _huber_rho(z, n),
            method="trf",
            max_nfev=200,
        )
    off = np.zeros(len(PARAMS))
    off[free] = result.x
    return np.clip(prior_x + off, _LO, _HI)


class _Subset(Design):
    """The passes of a subset of observations, for a fast loss."""

    def __init__(self, design: Design, idx: np.ndarray) -> None:
        keep = np.isin(design.row, idx)
        remap = np.full(design.n, -1, dtype=np.int64)
        remap[idx] = np.arange(idx.size)
        self.obs = [design.obs[i] for i in idx]
        self.row = remap[design.row[keep]]
        self.mem = design.mem[keep]
        self.comp = design.comp[keep]
        self.rowc = design.rowc[keep]
        self.layers = design.layers[keep]
        self.compx = design.compx[keep]
        self.rowcx = design.rowcx[keep]
        self.unhidden = design.unhidden[keep]
        self.tile = design.tile[keep]
        self.tokens = design.tokens[idx]
        self.measured = design.measured[idx]
        self.n = idx.size
