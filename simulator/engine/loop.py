"""The event loop: future instants on simpy through its public API, one simpy event per distinct instant.

Instants are integer ticks (clock.py). An instant holds, per kind of event, the ids due then (arrays or lists);
when simpy reaches it, the run's handler gets them all at once. What the handler posts for the instant being run
joins it and is handed over in the next round of the same instant (no new simpy event).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import simpy

BEGIN, DONE, ARRIVE, REDUCED, OPEN = range(5)   # latency over: the flow starts; a flow's bytes are through (with its
KINDS = 5                                       # version); the message arrived; a reduction ended; a rank opens
_POSTED, _EVENT = KINDS, KINDS + 1              # a slot's count of ids posted (less those forgotten) and its event


class Agenda:
    """Ids due at future instants, by kind; `run()` hands each instant's ids to `handle(now, due)` in time order.

    `due` is a list of KINDS lists of id chunks; DONE's chunks are (ids, versions) pairs. `events` counts the simpy
    events (distinct instants), `rounds` the handler calls.
    """

    def __init__(self, handle: Callable[[int, list[list]], None]):
        self.env = simpy.Environment()
        self._handle = handle
        self._at: dict[int, list[list]] = {}
        self.now = 0
        self.events = 0
        self.rounds = 0

    def post(self, when: int, kind: int, ids) -> None:
        """`ids` (a list or array, or for DONE an (ids, versions) pair) are due at tick `when` (>= now)."""
        slot = self._at.get(when)
        if slot is None:
            slot = self._at[when] = [[], [], [], [], [], 0, None]  # KINDS lists, ids posted, the simpy event
            if when != self.now or not self._running:
                event = slot[_EVENT] = self.env.timeout(when - self.now, when)
                event.callbacks.append(self._fire)
        slot[kind].append(ids)
        slot[_POSTED] += len(ids[0] if kind == DONE else ids)

    def forget(self, when: int) -> None:
        """One id posted for the future tick `when` is no longer wanted (a superseded completion): once an instant holds
        only such ids it is dropped, and its simpy event fires without calling back. Ticks not after now are left."""
        if when <= self.now:
            return
        slot = self._at.get(when)
        if slot is None:
            return
        slot[_POSTED] -= 1
        if slot[_POSTED] == 0:
            del self._at[when]
            if slot[_EVENT] is not None:
                slot[_EVENT].callbacks.remove(self._fire)

    def post_many(self, when: np.ndarray, kind: int, ids: np.ndarray, versions: np.ndarray | None = None) -> None:
        """Each ids[i] (with versions[i] for DONE) is due at when[i]: one post per distinct instant."""
        if ids.size == 0:
            return
        if ids.size < 8 or when.min() == when.max():
            if when.min() == when.max():
                self.post(int(when[0]), kind, ids if versions is None else (ids, versions))
                return
            for i in range(ids.size):
                one = ids[i:i + 1]
                self.post(int(when[i]), kind, one if versions is None else (one, versions[i:i + 1]))
            return
        order = np.argsort(when, kind="stable")
        when, ids = when[order], ids[order]
        versions = versions[order] if versions is not None else None
        cut = np.flatnonzero(when[1:] != when[:-1]) + 1
        bounds = [0, *cut.tolist(), ids.size]
        for a, b in zip(bounds[:-1], bounds[1:]):
            self.post(int(when[a]), kind, ids[a:b] if versions is None else (ids[a:b], versions[a:b]))

    _running = False

    def has(self, when: int) -> bool:
        """True if something is posted for tick `when` and not handed over yet."""
        return when in self._at

    def run(self) -> None:
        """Run until nothing is left to happen."""
        self._running = False
        self.env.run()

    def _fire(self, event: simpy.Event) -> None:
        when = self.now = event.value
        self.events += 1
        self._running = True
        due = self._at.pop(when, None)
        while due is not None:
            self.rounds += 1
            self._handle(when, due)
            due = self._at.pop(when, None)
        self._running = False
