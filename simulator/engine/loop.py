"""The event loop: future instants on simpy through its public API, one simpy event per distinct instant.

Instants are integer ticks (clock.py). An instant holds, per kind of event, the ids due then (arrays or lists);
when simpy reaches it, the run's handler gets them all at once. What the handler posts for the instant being run
joins it and is handed over in the next round of the same instant (no new simpy event).

Simpy holds only the next instant (and any that were next when armed): the future ticks wait in a heap, and after
each instant the earliest one still wanted gets its simpy timeout. So an instant that is given up before it is next
(every completion posted for it superseded) costs a heap entry, never a simpy event.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

import numpy as np
import simpy

BEGIN, DONE, ARRIVE, REDUCED, OPEN = range(5)   # latency over: the flow starts; a flow's bytes are through (with its
KINDS = 5                                       # version); the message arrived; a reduction ended; a rank opens
_POSTED = KINDS                                 # a slot's count of ids posted (less those forgotten)


class Agenda:
    """Ids due at future instants, by kind; `run()` hands each instant's ids to `handle(now, due)` in time order.

    `due` is a list of KINDS lists of id chunks; DONE's chunks are (ids, versions) pairs. `events` counts the simpy
    events (distinct instants), `rounds` the handler calls.
    """

    def __init__(self, handle: Callable[[int, list[list]], None]):
        self.env = simpy.Environment()
        self._handle = handle
        self._at: dict[int, list[list]] = {}
        self._ticks: list[int] = []      # heap of future ticks (some may be given up or done: skipped when met)
        self._armed: set[int] = set()    # ticks with a simpy timeout pending
        self.now = 0
        self.events = 0
        self.rounds = 0

    def post(self, when: int, kind: int, ids) -> None:
        """`ids` (a list or array, or for DONE an (ids, versions) pair) are due at tick `when` (>= now)."""
        slot = self._at.get(when)
        if slot is None:
            slot = self._at[when] = [[], [], [], [], [], 0]  # KINDS lists, ids posted
            if when != self.now or not self._running:
                heapq.heappush(self._ticks, when)
        slot[kind].append(ids)
        slot[_POSTED] += len(ids[0] if kind == DONE else ids)

    def post_done(self, when: int, t: int, version: int) -> None:
        """post(when, DONE, ([t], [version])) for one flow: appended to the tick's last DONE chunk when that one was made
        here too (a list pair), so a burst of completions for one tick makes one chunk, in the same order."""
        slot = self._at.get(when)
        if slot is not None:
            done = slot[DONE]
            if done and type(done[-1]) is list:
                last = done[-1]
                last[0].append(t)
                last[1].append(version)
                slot[_POSTED] += 1
                return
        self.post(when, DONE, [[t], [version]])

    def forget(self, when: int) -> None:
        """One id posted for the future tick `when` is no longer wanted (a superseded completion): once an instant holds
        only such ids it is dropped. Ticks not after now are left as they are."""
        if when <= self.now:
            return
        slot = self._at.get(when)
        if slot is None:
            return
        slot[_POSTED] -= 1
        if slot[_POSTED] == 0:
            del self._at[when]

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
        self._arm()
        self.env.run()

    def _arm(self) -> None:
        """Give the earliest tick still wanted a simpy timeout, unless it has one."""
        ticks, at = self._ticks, self._at
        while ticks and ticks[0] not in at:
            heapq.heappop(ticks)
        if ticks and ticks[0] not in self._armed:
            when = ticks[0]
            self._armed.add(when)
            self.env.timeout(when - self.now, when).callbacks.append(self._fire)

    def _fire(self, event: simpy.Event) -> None:
        when = self.now = event.value
        self._armed.discard(when)
        due = self._at.pop(when, None)
        if due is not None:
            self.events += 1
            self._running = True
            while due is not None:
                self.rounds += 1
                self._handle(when, due)
                due = self._at.pop(when, None)
            self._running = False
        self._arm()
