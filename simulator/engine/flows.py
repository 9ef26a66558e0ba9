"""Flows in flight on links: bytes left, max-min fair rates, completion instants, for many flows at once.

A flow alone on every link of its route moves at its route's bottleneck and needs no max-min work: those are
handled as arrays (link counts, the sole flow of each link). Links with two or more flows keep the set of their
flows; once per instant, max-min is recomputed over the connected component of the links that changed.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .csr import gather
from .maxmin import progressive_filling

# post(when, ids, versions): the flows `ids` will be through at ticks `when` unless their version changes first
Post = Callable[[np.ndarray, np.ndarray, np.ndarray], None]


class Flows:
    """The flows moving bytes now. Flow ids are transfer ids; route_ptr/route_links give each one's links (CSR)."""

    def __init__(self, route_ptr: np.ndarray, route_links: np.ndarray, capacity: np.ndarray, bottleneck: np.ndarray,
                 wire: np.ndarray, ticks_per_s: float, post: Post):
        """capacity: B/s of every link; bottleneck: of every flow's route; wire: bytes each flow moves."""
        n = route_ptr.size - 1
        self.ptr, self.links_of = route_ptr, route_links
        self.capacity = capacity                      # B/s of every link
        self.wire = wire                              # bytes each flow moves
        self._post = post
        self.bottleneck = bottleneck
        self.per_s = ticks_per_s
        with np.errstate(divide="ignore", invalid="ignore"):
            self.solo = np.rint(wire / bottleneck * ticks_per_s)   # ticks to move alone (as float; cast when posted)
        self.count = np.zeros(capacity.size, dtype=np.int64)  # flows on each link now
        self.owner = np.full(capacity.size, -1, dtype=np.int64)  # the flow of a link with exactly one
        self.shared: dict[int, set[int]] = {}                 # link -> its flows, for links with two or more
        self.remaining = np.zeros(n)                          # bytes left as of `last`
        self.rate = np.zeros(n)
        self.last = np.zeros(n, dtype=np.int64)
        self.version = np.zeros(n, dtype=np.int64)  # bumped on every rate change; -1 once done
        self._seeds: set[int] = set()

    def route(self, f: int) -> list[int]:
        return self.links_of[self.ptr[f]:self.ptr[f + 1]].tolist()

    # ---- changes of one instant ------------------------------------------------------------------------------
    def begin(self, ids: np.ndarray, now: int) -> None:
        """Flows `ids` start moving their bytes now."""
        links, pos = gather(self.ptr, self.links_of, ids)
        count = self.count
        np.add.at(count, links, 1)
        after = count[links]
        crowded = after > 1
        self.remaining[ids] = self.wire[ids]
        self.last[ids] = now
        if crowded.any():
            mixed = np.unique(ids[pos[crowded]])
            alone = ids[~np.isin(ids, mixed)]
            single = ~crowded
            self.owner[links[single]] = ids[pos[single]]
            self._join(links[crowded], ids[pos[crowded]])
            self.rate[mixed] = 0.0
            self.version[mixed] = 0
            self._seeds.update(links[crowded].tolist())
        else:
            alone = ids
            self.owner[links] = ids[pos]
        if alone.size:
            self.rate[alone] = self.bottleneck[alone]
            self.version[alone] = 1
            self._post(now + self.solo[alone].astype(np.int64), alone, np.ones(alone.size, dtype=np.int64))

    def _join(self, links: np.ndarray, flows: np.ndarray) -> None:
        """Links now crowded get their new flows added to their sets (made from the sole flow if there was one)."""
        shared, owner, count = self.shared, self.owner, self.count
        new: dict[int, list[int]] = {}
        for link, f in zip(links.tolist(), flows.tolist()):
            new.setdefault(link, []).append(f)
        for link, fs in new.items():
            users = shared.get(link)
            if users is None:
                users = shared[link] = set()
                if count[link] - len(fs) == 1:
                    users.add(int(owner[link]))
                owner[link] = -1
            users.update(fs)

    def done(self, ids: np.ndarray, versions: np.ndarray) -> np.ndarray:
        """The flows whose completion for `versions` is due and not superseded: removed, and returned."""
        ids = ids[self.version[ids] == versions]
        if not ids.size:
            return ids
        self.version[ids] = -1
        links, pos = gather(self.ptr, self.links_of, ids)
        count = self.count
        np.subtract.at(count, links, 1)
        if self.shared:
            was_shared = np.fromiter((link in self.shared for link in links.tolist()), bool, links.size)
            if was_shared.any():
                self._leave(links[was_shared], ids[pos[was_shared]])
        return ids

    def _leave(self, links: np.ndarray, flows: np.ndarray) -> None:
        shared, owner, count = self.shared, self.owner, self.count
        for link, f in zip(links.tolist(), flows.tolist()):
            users = shared[link]
            users.discard(f)
        for link in set(links.tolist()):
            left = int(count[link])
            if left <= 1:
                users = shared.pop(link)
                if left == 1:
                    owner[link] = next(iter(users))
                    self._seeds.add(link)
            else:
                self._seeds.add(link)

    def users(self, link: int):
        users = self.shared.get(link)
        if users is not None:
            return users
        return (int(self.owner[link]),) if self.count[link] == 1 else ()

    # ---- once per instant -------------------------------------------------------------------------------------
    def reshare(self, now: int) -> None:
        """Bring the bytes left up to `now` and give every flow connected to the links changed this instant its
        max-min rate; post the completions whose rate changed."""
        if not self._seeds:
            return
        comp_links = self._seeds
        self._seeds = set()
        stack = list(comp_links)
        comp_flows: dict[int, list[int]] = {}
        while stack:
            for f in self.users(stack.pop()):
                if f not in comp_flows:
                    route = comp_flows[f] = self.route(f)
                    for link in route:
                        if link not in comp_links:
                            comp_links.add(link)
                            stack.append(link)
        if not comp_flows:
            return
        flows = np.fromiter(comp_flows, np.int64, len(comp_flows))
        rem = self.remaining[flows] - self.rate[flows] * ((now - self.last[flows]) / self.per_s)
        self.remaining[flows] = np.maximum(rem, 0.0)
        self.last[flows] = now
        users = {link: self.users(link) for link in comp_links if self.count[link]}
        new_rates = progressive_filling(comp_flows, users, self.capacity)
        changed = [(f, r) for f, r in new_rates.items() if r != self.rate[f]]
        if changed:
            ids = np.fromiter((f for f, _ in changed), np.int64, len(changed))
            rates = np.fromiter((r for _, r in changed), np.float64, len(changed))
            self.rate[ids] = rates
            self.version[ids] += 1
            self._post(now + np.rint(self.remaining[ids] / rates * self.per_s).astype(np.int64), ids, self.version[ids])
