"""What a run records: start, arrival and end time of every transfer, the routes used and the engine's event count.

Trace derives the per-link statistics (bytes, busy time, peak flows) from these times and routes.
"""

from __future__ import annotations

import math

import numpy as np


class Record:
    """Per-transfer times (nan until they happen) and the route of every (src, dst) pair that sent over the network."""

    def __init__(self, transfers: int):
        self.start = [math.nan] * transfers
        self.arrive = [math.nan] * transfers
        self.end = [math.nan] * transfers
        self.routes: dict[int, tuple[int, ...]] = {}
        self.events = 0
        self.wall_s = 0.0

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return np.array(self.start), np.array(self.arrive), np.array(self.end)
