"""Fitting measured times to the model: t(n) = alpha + n beta for messages, t(n) = n gamma for reductions.

Times across 1 B .. 64 MiB span five orders of magnitude, so an ordinary least-squares fit would
be decided by the largest sizes alone and alpha would come out as noise (often negative). The
fit therefore minimises *relative* residuals, sum(((alpha + n beta - t) / t)^2) (weighted least
squares with weights 1/t), with alpha and beta constrained to be >= 0. R^2 is reported both on
the raw times and on log(t), the latter being what a log-log plot shows.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from simulator.errors import CollsimError


@dataclass(frozen=True)
class LineFit:
    """alpha (s) + n beta (s/B), fitted to (n, t) points, with its quality."""

    alpha_s: float
    beta_s_per_byte: float
    r2: float
    r2_log: float
    rel_residuals: tuple[float, ...]
    sizes: tuple[int, ...]
    times_s: tuple[float, ...]

    @property
    def bandwidth_Bps(self) -> float:
        """1 / beta."""
        return 1.0 / self.beta_s_per_byte if self.beta_s_per_byte > 0 else float("inf")

    @property
    def crossover_bytes(self) -> float:
        """The size where the latency term equals the bandwidth term (alpha / beta)."""
        return self.alpha_s / self.beta_s_per_byte if self.beta_s_per_byte > 0 else float("inf")

    @property
    def max_rel_residual(self) -> float:
        """Largest |relative residual|."""
        return max((abs(r) for r in self.rel_residuals), default=0.0)

    def predict(self, sizes) -> np.ndarray:
        """Fitted times for sizes in bytes."""
        return self.alpha_s + np.asarray(sizes, dtype=np.float64) * self.beta_s_per_byte

    def to_dict(self) -> dict:
        """Plain data, with the derived bandwidth and crossover."""
        d = asdict(self)
        d.update(bandwidth_Bps=self.bandwidth_Bps, crossover_bytes=self.crossover_bytes, max_rel_residual=self.max_rel_residual)
        return d


def _check_points(sizes, times, need: int) -> tuple[np.ndarray, np.ndarray]:
    n = np.asarray(sizes, dtype=np.float64)
    t = np.asarray(times, dtype=np.float64)
    if n.shape != t.shape or n.ndim != 1:
        raise CollsimError(f"fit: sizes and times must be two lists of the same length (got {n.shape} and {t.shape})")
    if len(np.unique(n)) < need:
        raise CollsimError(f"fit: need at least {need} distinct sizes to fit, got {len(np.unique(n))}")
    if not np.all(np.isfinite(t)) or np.any(t <= 0):
        raise CollsimError("fit: every time must be a finite number > 0 seconds")
    return n, t


def fit_alpha_beta(sizes, times) -> LineFit:
    """Fit t = alpha + n beta (alpha, beta >= 0) minimising relative residuals."""
    n, t = _check_points(sizes, times, 2)
    w = 1.0 / t
    a = np.column_stack([w, n * w])  # rows: (1/t, n/t) . (alpha, beta) ~ 1
    ones = np.ones_like(t)
    (alpha, beta), *_ = np.linalg.lstsq(a, ones, rcond=None)
    if alpha < 0 or beta < 0:  # the constrained optimum lies on an edge: fit the one remaining term
        cands = []
        for keep in (0, 1):
            col = a[:, keep]
            coef = max(float(col @ ones / (col @ col)), 0.0)
            cands.append((float(np.sum((col * coef - ones) ** 2)), keep, coef))
        _, keep, coef = min(cands)
        alpha, beta = (coef, 0.0) if keep == 0 else (0.0, coef)
    pred = alpha + n * beta
    return LineFit(float(alpha), float(beta), _r2(t, pred), _r2(np.log(t), np.log(np.maximum(pred, 1e-300))),
                   tuple(float(x) for x in (pred - t) / t), tuple(int(x) for x in n), tuple(float(x) for x in t))


def fit_rate(sizes, times, differences: bool = False) -> float:
    """Seconds per byte from (bytes, seconds) points of a bulk operation: least-squares slope through a free intercept, >= 0.

    With `differences` the times are differences of two measurements (an extra cost), which noise can make <= 0.
    """
    if differences:
        n, t = np.asarray(sizes, dtype=np.float64), np.asarray(times, dtype=np.float64)
        if n.shape != t.shape or len(np.unique(n)) < 2 or not np.all(np.isfinite(t)):
            raise CollsimError("fit: need finite extra times at 2 or more distinct sizes")
    else:
        n, t = _check_points(sizes, times, 2)
    slope, _ = np.polyfit(n, t, 1)
    return max(float(slope), 0.0)


def _r2(y: np.ndarray, pred: np.ndarray) -> float:
    ss_tot = float(np.sum((y - y.mean()) ** 2))
    return 1.0 - float(np.sum((y - pred) ** 2)) / ss_tot if ss_tot > 0 else 1.0
