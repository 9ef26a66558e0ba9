"""What a run records: start, arrival and end tick of every transfer, the routes used and the engine's event count.

Trace derives the per-link statistics (bytes, busy time, peak flows) from these times and routes.
"""

from __future__ import annotations

import numpy as np

from .clock import Clock
from .csr import scalar_filled
from .routes import Routes


class Record:
    """Per-transfer instants in ticks (-1 until they happen) and the engine's event count; s_start, s_arrive and s_end
    are the same memory as array.arrays, for the one-at-a-time paths."""

    def __init__(self, transfers: int):
        self.s_start, self.start = scalar_filled(transfers, -1)
        self.s_arrive, self.arrive = scalar_filled(transfers, -1)
        self.s_end, self.end = scalar_filled(transfers, -1)
        self.events = 0
        self.wall_s = 0.0

    def arrays(self, clock: Clock) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Start, arrival and end of every transfer in seconds (nan: never)."""
        return tuple(np.where(a >= 0, clock.seconds(a), np.nan) for a in (self.start, self.arrive, self.end))


class LinkStats:
    """Per link, counted as the run goes: bytes carried, busy ticks (at least one message between its start and its
    arrival on the link's route, as Trace.link_busy_intervals), and the peak number of such messages at once."""

    def __init__(self, num_links: int, routes: Routes, nbytes: np.ndarray):
        self.routes = routes
        self.nbytes = nbytes                                 # bytes each transfer counts on every link it crosses
        # per link, each as an array.array (the one-at-a-time paths) and a numpy view of the same memory
        self._occupied, self.occupied = scalar_filled(num_links, 0)  # messages on each link now
        self._since, self.since = scalar_filled(num_links, 0)        # tick the link last became busy
        self._busy, self.busy = scalar_filled(num_links, 0)          # busy ticks so far
        self._peak, self.peak = scalar_filled(num_links, 0)
        self._carried, self.carried = scalar_filled(num_links, 0.0, np.float64)
        self._mult = np.zeros(num_links, dtype=np.int64)     # scratch: entries per link in one batch

    def enter_one(self, route, nbytes: float, now: int) -> None:
        """A message starts on the links of `route`."""
        occupied, peak, carried = self._occupied, self._peak, self._carried
        for link in route:
            n = occupied[link] = occupied[link] + 1
            if n == 1:
                self._since[link] = now
            if n > peak[link]:
                peak[link] = n
            carried[link] += nbytes

    def leave_one(self, route, now: int) -> None:
        """A message on the links of `route` has arrived."""
        occupied = self._occupied
        for link in route:
            n = occupied[link] = occupied[link] - 1
            if n == 0:
                self._busy[link] += now - self._since[link]

    def _entries(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.routes.rows(ids)

    def start(self, ids: np.ndarray, now: int) -> None:
        """Messages `ids` (network transfers) start now."""
        if ids.size <= 8:
            for t in ids.tolist():
                self.enter_one(self.routes.of(t), self.nbytes[t], now)
            return
        links, pos = self._entries(ids)
        if not links.size:
            return
        mult = self._mult
        np.add.at(mult, links, 1)
        np.add.at(self.occupied, links, 1)
        np.add.at(self.carried, links, self.nbytes[ids[pos]])
        now_on = self.occupied[links]
        self.since[links[now_on == mult[links]]] = now   # was idle before this batch
        np.maximum.at(self.peak, links, now_on)
        mult[links] = 0

    def arrive(self, ids: np.ndarray, now: int) -> None:
        """Messages `ids` (network transfers) have arrived now."""
        if ids.size <= 8:
            for t in ids.tolist():
                self.leave_one(self.routes.of(t), now)
            return
        links, _ = self._entries(ids)
        if not links.size:
            return
        np.subtract.at(self.occupied, links, 1)
        idle = links[self.occupied[links] == 0]
        self.busy[idle] += now - self.since[idle]  # a repeated index adds once, as wanted

    def table(self, per_s: float) -> dict[str, np.ndarray]:
        """Trace.link_table's columns for the links that carried a message."""
        used = np.flatnonzero(self.peak > 0)
        return {"link": used, "bytes": self.carried[used], "busy_s": self.busy[used] / per_s, "peak_flows": self.peak[used]}
