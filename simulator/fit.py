"""Fit an algorithm's alpha-beta closed form to measured times, piecewise by size, with cross-validation.

The closed form of an algorithm (simulator.cost) maps a per-message latency alpha and a link
bandwidth to a time per size; an algorithm registered without one is timed by the event engine on
ideal:P instead (`method` in the result's meta says which). Every closed form is linear in
(alpha, beta = 1/bandwidth) (an engine time is checked to be, per size), so the
fit that minimises the squared *relative* error is a two-column non-negative least squares,
solved exactly. The piecewise fit cuts the sizes into up to K contiguous ranges (NCCL's protocol
regimes LL -> LL128 -> Simple) and fits each range on its own; the cut points are chosen by
dynamic programming to minimise the total squared relative error. Cross-validation fits on every
other size and predicts the sizes in between (and the other way round), so every size gets an
out-of-sample error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .algorithms import REGISTRY, names_for
from .cost import CLOSED_FORM, ENGINE, LinkModel, has_closed_form, predict
from .errors import CollsimError
from .profile import LinkProfile, Segment

CV_MIN_BYTES = 64 * 1024
MIN_POINTS = 3  # fewest sizes one segment is fitted on


@dataclass(frozen=True)
class Piece:
    """One fitted size range: sizes in [lo, hi) get alpha and bandwidth (inf: no size dependence seen)."""

    lo: int
    hi: int | None
    alpha_s: float
    bandwidth_Bps: float


@dataclass(frozen=True)
class FitResult:
    """A fitted model and how well it predicts the measurements it was not fitted on."""

    op: str
    algo: str
    ranks: int
    params: dict
    alpha_s: float                  # single-segment fit over all sizes
    bandwidth_Bps: float
    pieces: tuple[Piece, ...]       # the model that was cross-validated (one piece unless piecewise)
    sizes: np.ndarray
    times: np.ndarray
    fitted: np.ndarray              # the model fitted on all sizes, at each size
    cv_predicted: np.ndarray        # out-of-fold prediction at each size
    meta: dict = field(default_factory=dict)

    @property
    def cv_errors_pct(self) -> np.ndarray:
        """Signed percentage error of the out-of-fold prediction at each size."""
        return (self.cv_predicted - self.times) / self.times * 100.0

    def cv_median_abs_pct_error(self, min_bytes: int = CV_MIN_BYTES) -> float | None:
        """Median absolute percentage error of the cross-validated prediction for sizes >= min_bytes."""
        mask = self.sizes >= min_bytes
        return float(np.median(np.abs(self.cv_errors_pct[mask]))) if mask.any() else None


def basis(op: str, algo: str, p: int, sizes, params: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Seconds per unit alpha and per unit beta at each size: time = alpha a + beta b."""
    params = params or {}
    sizes = np.asarray(sizes, dtype=np.float64)
    a = predict(op, algo, p, sizes, LinkModel(1.0, 0.0), **params)
    b = predict(op, algo, p, sizes, LinkModel(0.0, 1.0), **params)
    probe = predict(op, algo, p, sizes, LinkModel(2.0, 3.0), **params)
    if not np.allclose(probe, 2 * a + 3 * b, rtol=1e-9, atol=0):
        what = "closed form" if has_closed_form(op, algo) else "engine time on ideal:P"
        raise CollsimError(f"algo: the {what} of {op}/{algo} is not linear in alpha and beta, so it cannot be fitted")
    return a, b


def fit_linear(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> tuple[float, float, float]:
    """(alpha, beta, sum of squared relative errors) minimising sum(((alpha a + beta b) - t) / t)^2, alpha, beta >= 0."""
    x = np.column_stack([a / t, b / t])
    y = np.ones_like(t)
    best = None
    candidates = []
    sol, *_ = np.linalg.lstsq(x, y, rcond=None)
    if sol[0] >= 0 and sol[1] >= 0:
        candidates.append((float(sol[0]), float(sol[1])))
    for col in (0, 1):  # one parameter pinned at zero
        v = x[:, col]
        denom = float(v @ v)
        coef = float(v @ y) / denom if denom > 0 else 0.0
        candidates.append((max(coef, 0.0), 0.0) if col == 0 else (0.0, max(coef, 0.0)))
    for alpha, beta in candidates:
        # a parameter whose share of every time is below 1e-9 is rounding noise of the solver: zero
        alpha = alpha if alpha * float(np.max(x[:, 0], initial=0.0)) > 1e-9 else 0.0
        beta = beta if beta * float(np.max(x[:, 1], initial=0.0)) > 1e-9 else 0.0
        sse = float(np.sum((x @ np.array([alpha, beta]) - y) ** 2))
        if best is None or sse < best[2] - 1e-15:
            best = (alpha, beta, sse)
    return best


def fit_pieces(a: np.ndarray, b: np.ndarray, sizes: np.ndarray, t: np.ndarray, segments: int,
               min_points: int | None = None) -> tuple[Piece, ...]:
    """The best cut of the (sorted) sizes into at most `segments` ranges, each with its own alpha and beta.

    Each range covers at least `min_points` sizes (default: a sixth of them, at least 3), so that a
    range describes a regime rather than one noisy point.
    """
    n = len(sizes)
    min_points = min_points or max(MIN_POINTS, n // 6)
    k_max = max(1, min(segments, n // min_points))
    cost = {}
    for i in range(n):
        for j in range(i + min_points, n + 1):
            cost[(i, j)] = fit_linear(a[i:j], b[i:j], t[i:j])
    # best[k][j]: least error covering points [0, j) with k pieces; back[k][j]: where the last piece starts
    inf = float("inf")
    best = [[inf] * (n + 1) for _ in range(k_max + 1)]
    back = [[0] * (n + 1) for _ in range(k_max + 1)]
    best[0][0] = 0.0
    for k in range(1, k_max + 1):
        for j in range(min_points, n + 1):
            for i in range(0, j - min_points + 1):
                if best[k - 1][i] < inf and (i, j) in cost:
                    value = best[k - 1][i] + cost[(i, j)][2]
                    if value < best[k][j] - 1e-15:
                        best[k][j], back[k][j] = value, i
    k = min(range(1, k_max + 1), key=lambda kk: best[kk][n] - 1e-12 * kk)
    cuts, j = [], n
    while k > 0:
        i = back[k][j]
        cuts.append((i, j))
        j, k = i, k - 1
    cuts.reverse()
    pieces = []
    for idx, (i, j) in enumerate(cuts):
        alpha, beta, _ = cost[(i, j)]
        lo = 0 if idx == 0 else _boundary(sizes[i - 1], sizes[i])
        hi = None if idx == len(cuts) - 1 else _boundary(sizes[j - 1], sizes[j])
        pieces.append(Piece(lo, hi, alpha, 1.0 / beta if beta > 0 else float("inf")))
    return tuple(pieces)


def _boundary(left: float, right: float) -> int:
    """The cut between two measured sizes: their geometric mean."""
    return int(round(float(np.sqrt(left * right))))


def predict_pieces(op: str, algo: str, p: int, pieces: Sequence[Piece], sizes, params: dict | None = None) -> np.ndarray:
    """Seconds at each size under a piecewise model."""
    sizes = np.asarray(sizes, dtype=np.float64)
    a, b = basis(op, algo, p, sizes, params)
    out = np.empty_like(sizes)
    for i, size in enumerate(sizes):
        piece = next((pc for pc in pieces if pc.hi is None or size < pc.hi), pieces[-1])
        beta = 0.0 if np.isinf(piece.bandwidth_Bps) else 1.0 / piece.bandwidth_Bps
        out[i] = piece.alpha_s * a[i] + beta * b[i]
    return out


def fit_measurements(op: str, algo: str, p: int, measurements: Sequence[tuple[int, float]], segments: int = 1,
                     params: dict | None = None) -> FitResult:
    """Fit (bytes, seconds) pairs; sizes measured more than once use their median time."""
    if (op, algo) not in REGISTRY:
        known = ", ".join(names_for(op)) or "none"
        raise CollsimError(f"algo: no closed form for {op}/{algo} and no such algorithm to simulate; algorithms: {known}")
    if isinstance(segments, bool) or not isinstance(segments, int) or segments < 1:
        raise CollsimError(f"segments: {segments!r} is not a count of size ranges; expected an integer >= 1")
    if p < 2:
        raise CollsimError(f"ranks: {p} rank(s) communicate nothing; a fit needs at least 2 ranks")
    sizes, times = _unique(measurements)
    if len(sizes) < 4:
        raise CollsimError(f"fit: {len(sizes)} distinct sizes with a time > 0; a cross-validated fit needs at least 4")
    params = params or {}
    a, b = basis(op, algo, p, sizes, params)
    alpha, beta, _ = fit_linear(a, b, times)
    if beta <= 0:
        raise CollsimError("fit: the times do not grow with the size, so no bandwidth can be fitted "
                           "(only latency-bound sizes in the log?)")
    pieces = fit_pieces(a, b, sizes, times, segments) if segments > 1 else (Piece(0, None, alpha, 1.0 / beta),)
    fitted = predict_pieces(op, algo, p, pieces, sizes, params)
    cv = np.empty_like(times)
    for start in (0, 1):
        train = np.arange(start, len(sizes), 2)
        test = np.arange(1 - start, len(sizes), 2)
        at, bt = a[train], b[train]
        if segments > 1:
            fold = fit_pieces(at, bt, sizes[train], times[train], segments)
        else:
            fa, fb, _ = fit_linear(at, bt, times[train])
            fold = (Piece(0, None, fa, 1.0 / fb if fb > 0 else float("inf")),)
        cv[test] = predict_pieces(op, algo, p, fold, sizes[test], params)
    return FitResult(op, algo, p, params, alpha, 1.0 / beta, pieces, sizes, times, fitted, cv,
                     {"segments_asked": segments, "method": CLOSED_FORM if has_closed_form(op, algo) else ENGINE})


def _unique(measurements: Sequence[tuple[int, float]]) -> tuple[np.ndarray, np.ndarray]:
    by_size: dict[int, list[float]] = {}
    for size, seconds in measurements:
        if size > 0 and seconds > 0 and np.isfinite(seconds):
            by_size.setdefault(int(size), []).append(float(seconds))
    sizes = np.array(sorted(by_size), dtype=np.float64)
    times = np.array([float(np.median(by_size[int(s)])) for s in sizes], dtype=np.float64)
    return sizes, times


def to_profile(result: FitResult, source: str) -> LinkProfile:
    """The fitted parameters as a LinkProfile the simulator loads (segments when the fit was piecewise)."""
    segments = ()
    if len(result.pieces) > 1:
        segments = tuple(Segment(pc.lo, pc.hi, pc.alpha_s, pc.bandwidth_Bps) for pc in result.pieces)
    meta = {"fitted_to": source, "op": result.op, "algorithm": result.algo, "ranks": result.ranks,
            "params": dict(result.params),
            "cv_median_abs_pct_error_ge_64KiB": result.cv_median_abs_pct_error(),
            "cv_median_abs_pct_error_all": result.cv_median_abs_pct_error(0)}
    return LinkProfile(result.alpha_s, result.bandwidth_Bps, 0.0,
                       f"collsim fit of {result.op}/{result.algo} (p={result.ranks}) to {source}", segments, meta)


