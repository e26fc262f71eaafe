"""Fitting the timing model's efficiencies to measured speeds (numpy only).

An observation is a measured tok/s and the passes that produced it (bytes, FLOPs and layers of
each, from `tokenwalk.costs.timing.pass_work`). For parameters x = (ln eff_bw, ln eff_compute,
ln overhead_s) the prediction is

    tok/s = tokens / sum over passes of [max(B / (BW e_bw), F / (FLOPS e_c)) + L o]

and the fit minimises a robust loss of the log error plus a pull towards a prior:

    sum_rows huber_delta(ln(predicted / measured)) + lambda x |x - x_prior|^2

with a small Nelder-Mead simplex (three parameters, so no gradient is needed). The prior is
the parent fit (global -> group -> machine), so a group or a machine with few rows moves only
along the directions its rows pin down. Nothing is tuned per row.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "Observation",
    "Params",
    "Design",
    "HUBER_DELTA",
    "PRIOR_WEIGHT",
    "START",
    "predict_tok_s",
    "fit_params",
    "nelder_mead",
]

HUBER_DELTA = 0.15  # log error beyond which a row counts linearly (about 16%)
PRIOR_WEIGHT = 0.003  # lambda = sigma_r^2 / (2 sigma_p^2): residuals ~0.15, prior ~2 log units
# Bounds, in natural units: efficiencies in [1%, 100%], overhead in [10 ns, 20 ms] per layer.
_LO = np.array([math.log(0.01), math.log(0.005), math.log(1e-8)])
_HI = np.array([0.0, 0.0, math.log(2e-2)])
START = np.array([math.log(0.7), math.log(0.5), math.log(3e-5)])
_GRID = [
    np.log([eb, ec, o])
    for eb in (0.05, 0.1, 0.2, 0.4, 0.7, 1.0)
    for ec in (0.01, 0.03, 0.1, 0.3, 0.6, 1.0)
    for o in (1e-7, 1e-5, 5e-5, 2e-4, 1e-3, 4e-3)
]


@dataclass(frozen=True)
class Observation:
    """One measured speed and the passes behind it."""

    label: str
    machine: str
    group: str
    phase: str  # "decode" or "prefill"
    bandwidth_gbs: float
    tflops: float
    tokens: float  # tokens the passes produce (1 for a decoding step, n for a prompt)
    passes: tuple[tuple[float, float, int], ...]  # (bytes, flops, layers) of each pass
    measured_tok_s: float
    meta: dict = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Params:
    eff_bw: float
    eff_compute: float
    overhead_s: float

    @classmethod
    def from_x(cls, x: np.ndarray) -> Params:
        x = np.clip(x, _LO, _HI)
        return cls(float(np.exp(x[0])), float(np.exp(x[1])), float(np.exp(x[2])))

    def to_x(self) -> np.ndarray:
        return np.log([self.eff_bw, self.eff_compute, max(self.overhead_s, 1e-8)])


class Design:
    """Observations flattened into per-pass arrays, so a prediction is a few numpy operations."""

    def __init__(self, observations: Sequence[Observation]) -> None:
        self.obs = list(observations)
        rows, b, f, lay, bw, fl = [], [], [], [], [], []
        for i, o in enumerate(self.obs):
            for by, fp, nl in o.passes:
                rows.append(i)
                b.append(by)
                f.append(fp)
                lay.append(nl)
                bw.append(o.bandwidth_gbs * 1e9)
                fl.append(o.tflops * 1e12)
        self.row = np.array(rows, dtype=np.int64)
        self.mem = np.array(b) / np.array(bw)  # seconds at 100% bandwidth
        fl_arr = np.array(fl)
        # an unknown compute rate (0) leaves the compute term out (decode rows only)
        self.comp = np.divide(np.array(f), fl_arr, out=np.zeros(len(fl)), where=fl_arr > 0)
        self.layers = np.array(lay, dtype=float)
        self.tokens = np.array([o.tokens for o in self.obs])
        self.measured = np.array([o.measured_tok_s for o in self.obs])
        self.n = len(self.obs)

    def subset_mask(self, keep: Callable[[Observation], bool]) -> np.ndarray:
        return np.array([keep(o) for o in self.obs], dtype=bool)


def _predict(design: Design, x_per_row: np.ndarray) -> np.ndarray:
    """tok/s for every observation, with parameters x (rows x 3, log units) per observation."""
    x = np.clip(x_per_row, _LO, _HI)[design.row]
    t = np.maximum(design.mem / np.exp(x[:, 0]), design.comp / np.exp(x[:, 1]))
    t = t + design.layers * np.exp(x[:, 2])
    total = np.bincount(design.row, weights=t, minlength=design.n)
    return design.tokens / total


def predict_tok_s(design: Design, x_per_row: np.ndarray) -> np.ndarray:
    """Predicted tok/s per observation; `x_per_row` is (n, 3) in log units or one (3,) vector."""
    x = np.asarray(x_per_row, dtype=float)
    if x.ndim == 1:
        x = np.broadcast_to(x, (design.n, 3))
    return _predict(design, x)


def _huber(r: np.ndarray, delta: float) -> np.ndarray:
    a = np.abs(r)
    return np.where(a <= delta, 0.5 * r * r, delta * (a - 0.5 * delta))


def nelder_mead(
    f: Callable[[np.ndarray], float], x0: np.ndarray, step: float = 0.5, iters: int = 400
) -> np.ndarray:
    """Minimise f from x0 with the Nelder-Mead simplex (standard coefficients)."""
    n = len(x0)
    simplex = [np.array(x0, dtype=float)]
    for i in range(n):
        v = np.array(x0, dtype=float)
        v[i] += step
        simplex.append(v)
    values = [f(v) for v in simplex]
    for _ in range(iters):
        order = np.argsort(values)
        simplex = [simplex[i] for i in order]
        values = [values[i] for i in order]
        if abs(values[-1] - values[0]) < 1e-10 and np.max(np.abs(simplex[-1] - simplex[0])) < 1e-6:
            break
        centroid = np.mean(simplex[:-1], axis=0)
        worst = simplex[-1]
        xr = centroid + (centroid - worst)
        fr = f(xr)
        if fr < values[0]:
            xe = centroid + 2.0 * (centroid - worst)
            fe = f(xe)
            simplex[-1], values[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = xr, fr
        else:
            xc = centroid + 0.5 * (worst - centroid)
            fc = f(xc)
            if fc < values[-1]:
                simplex[-1], values[-1] = xc, fc
            else:
                best = simplex[0]
                simplex = [best + 0.5 * (v - best) for v in simplex]
                values = [f(v) for v in simplex]
    return simplex[int(np.argmin(values))]


def fit_params(
    design: Design,
    mask: np.ndarray,
    prior: np.ndarray | None = None,
    *,
    prior_weight: float = PRIOR_WEIGHT,
    delta: float = HUBER_DELTA,
) -> np.ndarray:
    """Fit x = (ln eff_bw, ln eff_compute, ln overhead_s) to the observations in `mask`."""
    if prior is None:
        prior = START
        prior_weight = 1e-4  # the global fit: a whisper of a prior, only to break ties
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return np.array(prior, dtype=float)
    sub = _SubDesign(design, idx)

    def loss(x: np.ndarray) -> float:
        xc = np.clip(x, _LO, _HI)
        r = np.log(sub.predict(xc) / sub.measured)
        out = float(np.sum(_huber(r, delta)) + prior_weight * np.sum((xc - prior) ** 2))
        return out + 10.0 * float(np.sum((x - xc) ** 2))  # keep the simplex inside the bounds

    # max() makes the loss flat along a term that does not bind, so a simplex started at the
    # prior can miss a far better region: start it from the best point of a coarse grid too.
    starts = [np.array(prior, dtype=float), min(_GRID, key=loss)]
    results = []
    for x0 in starts:
        x = nelder_mead(loss, x0)
        x = nelder_mead(loss, x, step=0.2)  # a restart escapes a collapsed simplex
        results.append(x)
    return np.clip(min(results, key=loss), _LO, _HI)


class _SubDesign:
    """The passes of a subset of observations, for a fast loss."""

    def __init__(self, design: Design, idx: np.ndarray) -> None:
        keep = np.isin(design.row, idx)
        remap = np.full(design.n, -1, dtype=np.int64)
        remap[idx] = np.arange(idx.size)
        self.row = remap[design.row[keep]]
        self.mem = design.mem[keep]
        self.comp = design.comp[keep]
        self.layers = design.layers[keep]
        self.tokens = design.tokens[idx]
        self.measured = design.measured[idx]
        self.n = idx.size

    def predict(self, x: np.ndarray) -> np.ndarray:
        t = np.maximum(self.mem / math.exp(x[0]), self.comp / math.exp(x[1]))
        t = t + self.layers * math.exp(x[2])
        return self.tokens / np.bincount(self.row, weights=t, minlength=self.n)
