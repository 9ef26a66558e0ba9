"""Closed-form alpha-beta-gamma costs of every registered algorithm, and lower bounds.

Notation (REFERENCE.md): p ranks, n bytes in nccl-tests' meaning (per-rank buffer for
allreduce/broadcast/reduce, total buffer for the others), alpha seconds per message, beta
seconds per byte (1/bandwidth), gamma seconds per reduced byte. Every function is vectorised
over n. The model is the single-port, full-duplex one: a rank sends one message and receives
one message at a time, and a message of m bytes takes alpha + m beta.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .collective import normalize_op
from .errors import CollsimError

CostFn = Callable[..., np.ndarray]
CLOSED_FORMS: dict[tuple[str, str], CostFn] = {}


@dataclass(frozen=True)
class LinkModel:
    """alpha (s per message), beta (s per byte) and gamma (s per reduced byte)."""

    alpha: float
    beta: float
    gamma: float = 0.0

    @classmethod
    def from_bandwidth(cls, alpha: float, bandwidth: float, gamma: float = 0.0) -> LinkModel:
        """From a latency in s and a bandwidth in bytes/s."""
        return cls(alpha, 1.0 / bandwidth, gamma)


def closed_form(op: str, name: str):
    """Decorator: register fn(p, n, m: LinkModel, **params) -> seconds as the cost of (op, name)."""

    def wrap(fn: CostFn) -> CostFn:
        CLOSED_FORMS[(normalize_op(op), name)] = fn
        return fn

    return wrap


def lg(p: int) -> int:
    """ceil(log2 p), 0 for p = 1."""
    return int(math.ceil(math.log2(p))) if p > 1 else 0


def floor_lg(p: int) -> int:
    """floor(log2 p)."""
    return p.bit_length() - 1


def predict(op: str, name: str, p: int, sizes, model: LinkModel, **params) -> np.ndarray:
    """Closed-form seconds of algorithm `name` for each size in `sizes` (bytes)."""
    key = (normalize_op(op), name)
    fn = CLOSED_FORMS.get(key)
    if fn is None:
        known = ", ".join(n for (o, n) in CLOSED_FORMS if o == key[0])
        raise CollsimError(f"algo: no closed form for {key[0]}/{name}; known: {known}")
    n = np.asarray(sizes, dtype=np.float64)
    if p == 1:
        return np.zeros_like(n)
    return np.broadcast_to(np.asarray(fn(p, n, model, **{k: v for k, v in params.items() if v is not None}),
                                      dtype=np.float64), n.shape).copy()


# Bytes that some rank must at least move, as a multiple of n (single port).
_BANDWIDTH_BOUND = {
    "allreduce": lambda p: 2 * (p - 1) / p,
    "allgather": lambda p: (p - 1) / p, "reduce_scatter": lambda p: (p - 1) / p,
    "scatter": lambda p: (p - 1) / p, "gather": lambda p: (p - 1) / p, "alltoall": lambda p: (p - 1) / p,
    "broadcast": lambda p: 1.0, "reduce": lambda p: 1.0,
}


def lower_bound(op: str, p: int, sizes, model: LinkModel) -> np.ndarray:
    """ceil(lg p) alpha + W beta: no single-port algorithm can beat it (REFERENCE.md, Thakur et al. 2005).

    Latency: the number of ranks holding (or contributing to) a datum at most doubles per
    message round. Bandwidth: W n bytes must cross some rank's port (2(p-1)/p n for allreduce,
    (p-1)/p n for allgather, reduce-scatter, scatter, gather and alltoall, n for broadcast and reduce).
    """
    n = np.asarray(sizes, dtype=np.float64)
    if p == 1:
        return np.zeros_like(n)
    return lg(p) * model.alpha + _BANDWIDTH_BOUND[normalize_op(op)](p) * n * model.beta


# ---- ring family (Patarasuk & Yuan 2009; Thakur et al. 2005) ---------------------------------
# With k chunks per block and gamma = 0 the port is never idle: 2(p-1) k messages of n/(pk).
# For k = 1 this is the published 2(p-1) alpha + 2(p-1)/p n beta + (p-1)/p n gamma.

@closed_form("allreduce", "ring")
def _allreduce_ring(p, n, m, chunks=1):
    return 2 * (p - 1) * (chunks * m.alpha + n / p * m.beta) + (p - 1) * n / p * m.gamma / chunks


@closed_form("allgather", "ring")
def _allgather_ring(p, n, m, chunks=1):
    return (p - 1) * (chunks * m.alpha + n / p * m.beta)


@closed_form("reduce_scatter", "ring")
def _reduce_scatter_ring(p, n, m, chunks=1):
    return (p - 1) * (chunks * m.alpha + n / p * m.beta) + (p - 1) * n / p * m.gamma / chunks
