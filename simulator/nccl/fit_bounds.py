"""Physical limits for the alpha-beta fit, read off a preset machine: the fitted bandwidth may not exceed what the
machine's links allow, alpha may not go below NCCL's latency floor, and the size regimes break where NCCL switches
protocol (LL -> LL128 -> Simple) on that machine.

- ceiling: the bandwidth parameter of the algorithm's closed form that `collsim predict` reaches at 8 GiB
  (Simple, every channel, every rail): time = alpha A(p) + n B(p) / bandwidth, so bandwidth <= B(p) n / t(8 GiB);
- floor: `predict` at the smallest size (NCCL's lowest-latency pick), as alpha: alpha >= t(tiny) / A(p);
- cuts: the sizes where NCCL's pick of protocol changes (simulator/nccl/predict.py `candidates`), on a grid of powers of 2.

A regime the training sizes do not reach is predicted with the links' ceiling and the alpha of the regime below it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..fit import Piece, basis
from .machine import resolve
from .predict import candidates, predict

BIG = 8 << 30
MIN_POINTS = 2  # fewest training sizes a regime is fitted on


@dataclass(frozen=True)
class Limits:
    """Bounds on the fit and NCCL's regime boundaries (sizes where a new protocol starts)."""

    min_alpha_s: float
    max_bandwidth_Bps: float
    cuts: tuple[int, ...]
    protocols: tuple[str, ...]  # one per regime
    source: str


def preset_limits(topology, op: str, ranks: int, algo: str = "ring", params: dict | None = None) -> Limits:
    """The limits of a preset machine (see the module docstring)."""
    machine = resolve(topology)
    system, _ = machine.system(ranks)
    tiny = 4 * ranks
    t_tiny = predict(machine, op, [tiny], ranks=ranks)[0].time_s
    t_big = predict(machine, op, [BIG], ranks=ranks, proto="Simple")[0].time_s
    a_tiny, _ = basis(op, algo, ranks, [tiny], params)
    _, b_big = basis(op, algo, ranks, [BIG], params)
    cuts, protos = [], []
    for lo in (1 << k for k in range(2, 37)):
        proto = candidates(system, op, lo)[0][1]
        if not protos:
            protos.append(proto)
        elif proto != protos[-1]:
            cuts.append(int(round(np.sqrt(lo * lo / 2))))  # between the previous power of two and this one
            protos.append(proto)
    return Limits(float(t_tiny / a_tiny[0]), float(b_big[0] / t_big), tuple(cuts), tuple(protos), topology.name)


def fit_bounded(a: np.ndarray, b: np.ndarray, t: np.ndarray, min_alpha: float, max_bw: float) -> tuple[float, float]:
    """(alpha, beta) minimising the squared relative error with alpha >= min_alpha and beta >= 1 / max_bw (exact)."""
    x = np.column_stack([a / t, b / t])
    y = np.ones_like(t)
    lo = np.array([min_alpha, 1.0 / max_bw])
    best, best_v = None, np.inf
    for free in ((0, 1), (0,), (1,), ()):
        v = lo.copy()
        fixed = [i for i in (0, 1) if i not in free]
        if free:
            sol, *_ = np.linalg.lstsq(x[:, list(free)], y - x[:, fixed] @ v[fixed], rcond=None)
            if np.any(sol < lo[list(free)]):
                continue
            v[list(free)] = sol
        sse = float(np.sum((x @ v - y) ** 2))
        if sse < best_v - 1e-15:
            best, best_v = v, sse
    return float(best[0]), float(best[1])


def fit_limited(op: str, algo: str, p: int, sizes, times, limits: Limits, params: dict | None = None) -> tuple[Piece, ...]:
    """One bounded alpha-beta fit per NCCL regime; regimes without MIN_POINTS training sizes get the ceiling."""
    sizes = np.asarray(sizes, dtype=np.float64)
    times = np.asarray(times, dtype=np.float64)
    a, b = basis(op, algo, p, sizes, params)
    edges = [0, *limits.cuts, None]
    pieces: list[Piece] = []
    alpha = limits.min_alpha_s
    for lo, hi in zip(edges[:-1], edges[1:]):
        mask = (sizes >= lo) & (sizes < hi if hi is not None else True)
        if mask.sum() >= MIN_POINTS:
            alpha, beta = fit_bounded(a[mask], b[mask], times[mask], limits.min_alpha_s, limits.max_bandwidth_Bps)
            pieces.append(Piece(lo, hi, alpha, 1.0 / beta))
        else:
            pieces.append(Piece(lo, hi, alpha, limits.max_bandwidth_Bps))
    return tuple(pieces)
