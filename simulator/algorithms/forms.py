"""The math that closed forms share: the link model, logarithms, MPICH's fold, exactness rules.

Notation (REFERENCE.md): p ranks, n bytes in nccl-tests' meaning (per-rank buffer for
allreduce/broadcast/reduce, total buffer for the others), alpha seconds per message, beta
seconds per byte (1/bandwidth), gamma seconds per reduced byte. A closed form is
`cost(p, n, model, **params) -> seconds`, vectorised over the numpy array n, declared with
`register(..., cost=..., exact=...)` next to its builder. The model is the single-port,
full-duplex one: a rank sends one message and receives one message at a time, and a message
of m bytes takes alpha + m beta. Per-p helpers are cached (functools.lru_cache): a sweep
evaluates the same p for many sizes and algorithms.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np


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


CostFn = Callable[..., np.ndarray]   # cost(p, n, model, **params) -> seconds per size
ExactFn = Callable[..., bool]        # exact(p, model, **params): the form is the schedule's time (even splits)


def always(p: int, model: LinkModel, **params) -> bool:
    """Exact for every p."""
    return True


def pow2(p: int, model: LinkModel, **params) -> bool:
    """Exact for p a power of two."""
    return p & (p - 1) == 0


def lg(p: int) -> int:
    """ceil(log2 p), 0 for p = 1."""
    return int(math.ceil(math.log2(p))) if p > 1 else 0


def floor_lg(p: int) -> int:
    """floor(log2 p)."""
    return p.bit_length() - 1


# p not a power of two: r = p - p2 extra ranks (p2 = 2^floor(lg p)) first hand their data to a
# partner and get the result back at the end (MPICH; Thakur et al. 2005, section 4).

def pof2(p: int) -> int:
    """2^floor(lg p)."""
    return 1 << floor_lg(p)


def fold_extra(p: int) -> int:
    """1 when p needs MPICH's pre/post step, else 0."""
    return 0 if p == pof2(p) else 1


@lru_cache(maxsize=4096)
def window_blocks(p: int) -> tuple[int, ...]:
    """Largest window (in blocks of n/p) exchanged per round by the p2 survivors of the pre step.

    Survivor j < r stands for two blocks, the others for one; a round at distance d moves d
    survivors' blocks, at most d + min(d, r) blocks (derived; d + 0 = d when p is a power of two).
    """
    p2 = pof2(p)
    r = p - p2
    return tuple(d + min(d, r) for d in (1 << i for i in range(floor_lg(p2))))
