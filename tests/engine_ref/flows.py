"""Flows in flight on links: bytes left, max-min fair rates recomputed when a flow starts or ends, completion times."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .maxmin import progressive_filling

# schedule(delay, flow, version): ask for flow_done(flow, version) `delay` seconds from now
Schedule = Callable[[float, int, int], None]


class Flows:
    """The flows moving bytes now. Only the connected component of links touched by a change is reshared."""

    def __init__(self, flows: int, capacity: Mapping[int, float], schedule: Schedule):
        """Flow ids are 0..flows-1 (a run's transfer ids); capacity[link] is B/s."""
        self._capacity = capacity
        self._schedule = schedule
        self.link_flows: dict[int, set[int]] = {}
        self.links: dict[int, tuple[int, ...]] = {}   # the flows moving now, and their links
        self.remaining = [0.0] * flows                  # bytes left, as of `last`
        self.rate = [0.0] * flows
        self.last = [0.0] * flows
        self.version = [0] * flows  # bumped on every rate change; -1 once done, so superseded completions are ignored
        self._route_cap: dict[tuple[int, ...], float] = {}

    def begin(self, t: int, links: tuple[int, ...], nbytes: float, now: float) -> None:
        """Flow t starts moving `nbytes` over `links` (non-empty)."""
        self.links[t] = links
        self.remaining[t] = nbytes
        self.rate[t] = 0.0
        self.last[t] = now
        self.version[t] = 0
        alone = True
        link_flows = self.link_flows
        for link in links:
            flows = link_flows.get(link)
            if flows is None:
                flows = link_flows[link] = set()
            flows.add(t)
            if len(flows) > 1:
                alone = False
        if alone:  # nobody to share with: the bottleneck capacity, no max-min work
            cap = self._route_cap.get(links)
            if cap is None:
                cap = self._route_cap[links] = min(self._capacity[link] for link in links)
            self.rate[t] = cap
            self.version[t] = 1
            self._schedule(nbytes / cap, t, 1)
        else:
            self.reshare(links, now)

    def done(self, t: int, version: int, now: float) -> bool:
        """Flow t's completion for `version` is due: False if a rate change superseded it, else remove t and reshare."""
        if self.version[t] != version:
            return False
        links = self.links.pop(t)
        others = False
        for link in links:
            flows = self.link_flows[link]
            flows.discard(t)
            if flows:
                others = True
        self.version[t] = -1
        if others:
            self.reshare(links, now)
        return True

    def reshare(self, seed_links, now: float) -> None:
        """Bring the bytes left up to `now` and give every flow connected to `seed_links` its max-min rate."""
        link_flows, flow_links = self.link_flows, self.links
        comp_links = set(seed_links)
        stack = list(comp_links)
        comp_flows: set[int] = set()
        while stack:
            for f in link_flows.get(stack.pop(), ()):
                if f not in comp_flows:
                    comp_flows.add(f)
                    for link in flow_links[f]:
                        if link not in comp_links:
                            comp_links.add(link)
                            stack.append(link)
        if not comp_flows:
            return
        remaining, rate, last = self.remaining, self.rate, self.last
        for f in comp_flows:
            rem = remaining[f] - rate[f] * (now - last[f])
            remaining[f] = rem if rem > 0 else 0.0
            last[f] = now
        users = {link: link_flows[link] for link in comp_links if link in link_flows}
        new_rates = progressive_filling({f: flow_links[f] for f in comp_flows}, users, self._capacity)
        for f, new in new_rates.items():
            if new != rate[f]:
                rate[f] = new
                self.version[f] += 1
                self._schedule(remaining[f] / new, f, self.version[f])
