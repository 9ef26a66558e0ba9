"""The engine's clock: an integer number of ticks, normally femtoseconds (1 fs = 1e-15 s), so instants compare exactly.

Every duration the model computes in seconds (latency, bytes / rate, gamma x bytes, start delays) is rounded once to
the nearest tick and added as an integer. Two events are simultaneous exactly when their integers are equal, so ties
are decided by the model's rules (transfer-id order), never by float rounding, and a run is reproducible bit for
bit. Why femtoseconds (docs/model.md, "Time"): each rounding is at most 0.5 fs, so a duration of 0.5 us or more is
exact to 1e-9 relative. The tick is a power of ten chosen per run from an upper bound on its makespan: 1 fs for
bounds from 0.1 s to 4,611 s (2^62 fs); a finer one for shorter runs, so that the bound spans at least 1e14 ticks
(a picosecond run is not rounded by half a femtosecond); a coarser one for longer runs (fits probe the engine with 1 s
per byte), so that int64 still holds every instant.
"""

from __future__ import annotations

import math

import numpy as np

TICKS_PER_S = 10**15   # the normal tick: one femtosecond
MAX_TICKS = 2**62      # instants stay below this, so sums of two never overflow int64
MIN_SPAN = 10**14      # a run's bound spans at least this many ticks: shorter runs count in finer powers of ten


class Clock:
    """Seconds <-> ticks for one run: `per_s` ticks per second, 10**15 unless `horizon_s` needs a coarser tick."""

    def __init__(self, horizon_s: float = 0.0):
        per_s = TICKS_PER_S
        if math.isfinite(horizon_s) and horizon_s > 0:
            while per_s > 1 and horizon_s * per_s >= MAX_TICKS:
                per_s //= 10
            while horizon_s * per_s < MIN_SPAN and per_s < 10**30:
                per_s *= 10
        self.per_s = per_s
        self.scale = float(per_s)

    def ticks(self, seconds: float) -> int:
        """A duration in seconds as whole ticks (round half to even)."""
        return round(seconds * self.scale)

    def ticks_array(self, seconds) -> np.ndarray:
        """Durations in seconds as int64 ticks."""
        return np.rint(np.asarray(seconds, dtype=np.float64) * self.scale).astype(np.int64)

    def seconds(self, values) -> np.ndarray:
        """Tick counts as float seconds."""
        return np.asarray(values, dtype=np.float64) / self.scale


FEMTOSECONDS = Clock()


def ticks(seconds: float) -> int:
    """A duration in seconds as whole femtoseconds."""
    return FEMTOSECONDS.ticks(seconds)
