"""The event loop: callbacks at future instants on simpy, through its public API, one simpy event per instant."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import simpy


class EventLoop:
    """`post(delay, fn, value)` calls fn(value) `delay` seconds from now; the calls of one instant run in the order
    they were posted (calls posted for now, while now is being run, included). When an instant's calls are done and
    a decision was requested, `decide()` runs before time moves on; what it posts for now runs next, then another
    decision if one was requested again.

    All calls of an instant share one simpy Timeout (env.timeout + its callbacks list); `events` counts the calls
    and decisions, the engine's events.
    """

    def __init__(self, decide: Callable[[], None]):
        self.env = simpy.Environment()
        self._decide = decide
        self._agenda: dict[float, list[tuple[Callable[[Any], None], Any]]] = {}
        self.pending = False
        self.events = 0
        self.now = 0.0  # the instant being run (env.now, kept here for the hot paths)

    def post(self, delay: float, fn: Callable[[Any], None], value: Any) -> None:
        """Call fn(value) `delay` (>= 0) seconds from now."""
        when = self.now + delay
        calls = self._agenda.get(when)
        if calls is None:
            calls = self._agenda[when] = []
            self.env.timeout(delay, when).callbacks.append(self._run_instant)
        calls.append((fn, value))
        self.events += 1

    def request_decision(self) -> None:
        """Run decide() once the current instant's calls are done."""
        self.pending = True

    def run(self) -> None:
        """Run until nothing is left to happen."""
        self.now = self.env.now
        if self.pending and self.now not in self._agenda:
            self.env.timeout(0, self.now).callbacks.append(self._run_instant)
            self._agenda[self.now] = []
        self.env.run()

    def _run_instant(self, event: simpy.Event) -> None:
        when = self.now = event.value
        calls = self._agenda[when]
        i = 0
        while i < len(calls):  # grows while it runs when a call posts for now
            fn, value = calls[i]
            fn(value)
            i += 1
        del self._agenda[when]
        while self.pending and when not in self._agenda:
            self.pending = False
            self.events += 1
            self._decide()
