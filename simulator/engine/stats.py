"""What a run records: start, arrival and end tick of every transfer, the routes used and the engine's event count.

Trace derives the per-link statistics (bytes, busy time, peak flows) from these times and routes.
"""

from __future__ import annotations

import numpy as np

from .clock import Clock


class Record:
    """Per-transfer instants in ticks (-1 until they happen) and the engine's event count."""

    def __init__(self, transfers: int):
        self.start = np.full(transfers, -1, dtype=np.int64)
        self.arrive = np.full(transfers, -1, dtype=np.int64)
        self.end = np.full(transfers, -1, dtype=np.int64)
        self.events = 0
        self.wall_s = 0.0

    def arrays(self, clock: Clock) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Start, arrival and end of every transfer in seconds (nan: never)."""
        return tuple(np.where(a >= 0, clock.seconds(a), np.nan) for a in (self.start, self.arrive, self.end))
