"""The engine's clock: an integer number of femtoseconds (1 fs = 1e-15 s), so instants compare exactly.

Every duration the model computes in seconds (latency, bytes / rate, gamma x bytes, start delays) is rounded once to
the nearest femtosecond and added as an integer. Two events are simultaneous exactly when their integers are equal,
so ties are decided by the model's rules (transfer-id order), never by float rounding, and a run is reproducible
bit for bit. Why femtoseconds (docs/model.md, "Time"): each rounding is at most 0.5 fs, so a duration of 0.5 us or
more is exact to 1e-9 relative, and int64 still covers 9,223 s of simulated time (Python ints, used by the scalar
paths, are unbounded; the numpy paths check the range).
"""

from __future__ import annotations

import numpy as np

from ..errors import CollsimError

TICKS_PER_S = 10**15
_SCALE = float(TICKS_PER_S)
MAX_TICKS = 2**62  # numpy paths stay well inside int64


def ticks(seconds: float) -> int:
    """A duration in seconds as whole femtoseconds (round half to even)."""
    return round(seconds * _SCALE)


def ticks_array(seconds: np.ndarray) -> np.ndarray:
    """Durations in seconds as int64 femtoseconds; refuses durations int64 cannot hold."""
    scaled = np.rint(np.asarray(seconds, dtype=np.float64) * _SCALE)
    if scaled.size and not np.all(np.abs(scaled) < MAX_TICKS):
        worst = float(np.nanmax(np.abs(seconds))) if np.isfinite(scaled).any() else float("inf")
        raise CollsimError(f"duration: {worst!r} s; expected under {MAX_TICKS / _SCALE:.0f} s of simulated time per message")
    return scaled.astype(np.int64)


def seconds(values) -> np.ndarray:
    """Tick counts (nan where an instant never came) as float seconds."""
    return np.asarray(values, dtype=np.float64) / _SCALE
