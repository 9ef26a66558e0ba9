"""Flows in flight on links: bytes left, max-min fair rates, completion instants, for many flows at once.

A flow alone on every link of its route moves at its route's bottleneck and needs no max-min work; its state is
implicit (began at `began`, rate = bottleneck, one completion posted, version 1) and handled as arrays: link counts
and the sole flow of each link. Links with two or more flows keep the set of their flows; once per instant, max-min
is recomputed over the connected component of the links that changed, and the flows it touches get an explicit state
[bytes left, rate, tick of the last update, version] (the version is bumped on every rate change, -1 once done, so
superseded completions are ignored).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .csr import scalar_filled
from .maxmin import progressive_filling
from .routes import Routes

# post(when, ids, versions): the flows `ids` will be through at ticks `when` unless their version changes first
Post = Callable[[np.ndarray, np.ndarray, np.ndarray], None]
SMALL = 16  # up to this many flows at once, plain loops (numpy's fixed cost per call would dominate)
_REMAINING, _RATE, _LAST, _VERSION, _DUE = range(5)


def _shareable(routes: Routes, alone: np.ndarray | None, capacity: list[float]) -> tuple[Routes, list[float | None]]:
    """The routes without the links that never carry two flows at once (`alone`), and per pair the smallest capacity
    of its links left out (None if none): such a link never shares, so for max-min only that capacity matters."""
    if alone is None or not alone.any():
        return routes, [None] * len(routes.tuples)
    keep = [tuple(link for link in r if not alone[link]) for r in routes.tuples]
    own = [min((capacity[link] for link in r if alone[link]), default=None) for r in routes.tuples]
    return Routes(routes.pair_of, keep), own


class Flows:
    """The flows moving bytes now. Flow ids are transfer ids; `routes` gives each one's links. Links that never carry
    two flows at once (`alone`) are left out of the bookkeeping: max-min reads their smallest capacity per route."""

    def __init__(self, routes: Routes, capacity: np.ndarray, bottleneck: np.ndarray, wire: np.ndarray,
                 ticks_per_s: float, post: Post, post_one: Callable[[int, int, int], None],
                 alone: np.ndarray | None = None, forget: Callable[[int], None] | None = None,
                 weight: np.ndarray | None = None):
        """capacity: B/s of every link; bottleneck: of every flow's route; wire: bytes each flow moves; alone (optional):
        per link, True if it never carries two flows at once (max-min then reads only its capacity); forget(when)
        (optional): a completion posted for tick `when` is superseded; weight (optional): per flow, its weight in
        max-min (shares grow in proportion; None: all equal)."""
        self.weight = weight
        n = len(routes)
        self._capacity_list = capacity.tolist()  # read one link at a time by max-min
        self.routes, self._own = _shareable(routes, alone, self._capacity_list)
        self.route = self.routes.of  # the links of flow f that may carry other flows
        self.capacity = capacity
        self.wire = wire
        self.bottleneck = bottleneck
        self.per_s = ticks_per_s
        self._post, self._post_one = post, post_one
        self._forget = forget or (lambda when: None)
        with np.errstate(divide="ignore", invalid="ignore"):
            self.solo = np.rint(wire / bottleneck * ticks_per_s)  # ticks to move alone
        # numpy views for the array paths; the one-at-a-time paths use the array.arrays (bytearray) behind them
        self._count, self.count = scalar_filled(capacity.size, 0)   # flows on each link now
        self._owner, self.owner = scalar_filled(capacity.size, -1)  # the flow of a link with exactly one
        self.shared: dict[int, set[int]] = {}                     # link -> its flows, for links with two or more
        self._began, self.began = scalar_filled(n, 0)
        self._finished = bytearray(n)
        self.finished = np.frombuffer(self._finished, dtype=bool)
        self.state: dict[int, list] = {}                          # explicit state of flows max-min has touched
        self._seeds: set[int] = set()

    def is_due(self, f: int, version: int) -> bool:
        """True if flow f's completion for `version` is the valid one (version 1 for a flow that was always alone)."""
        if self._finished[f]:
            return False
        st = self.state.get(f)
        return version == (1 if st is None else st[_VERSION])

    def _explicit(self, f: int) -> list:
        st = self.state.get(f)
        if st is None:  # always alone so far: at its bottleneck since it began
            began = self._began[f]
            st = self.state[f] = [float(self.wire[f]), float(self.bottleneck[f]), began, 1, began + int(self.solo[f])]
        return st

    # ---- changes of one instant ------------------------------------------------------------------------------
    def begin(self, ids: list[int] | np.ndarray, now: int) -> None:
        """Flows `ids` start moving their bytes now."""
        if isinstance(ids, list) or ids.size <= SMALL:
            self._begin_each(ids if isinstance(ids, list) else ids.tolist(), now)
            return
        self.began[ids] = now
        links, pos = self.routes.rows(ids)
        count = self.count
        np.add.at(count, links, 1)
        crowded = count[links] > 1
        if crowded.any():
            mixed = np.unique(ids[pos[crowded]])
            alone = ids[~np.isin(ids, mixed)]
            single = ~crowded
            self.owner[links[single]] = ids[pos[single]]
            self._join(links[crowded], ids[pos[crowded]])
            wire = self.wire
            for f in mixed.tolist():
                self.state[f] = [float(wire[f]), 0.0, now, 0, -1]
            self._seeds.update(links[crowded].tolist())
        else:
            alone = ids
            self.owner[links] = ids[pos]
        if alone.size:
            self._post(now + self.solo[alone].astype(np.int64), alone, np.ones(alone.size, dtype=np.int64))

    def _begin_each(self, ids: list[int], now: int) -> None:
        """begin() one flow at a time (numpy's fixed cost would dominate a handful)."""
        count, owner, shared, began = self._count, self._owner, self.shared, self._began
        for t in ids:
            began[t] = now
            alone = True
            for link in self.route(t):
                c = count[link] = count[link] + 1
                if c == 1:
                    owner[link] = t
                    continue
                alone = False
                users = shared.get(link)
                if users is None:
                    users = shared[link] = {int(owner[link])}
                    owner[link] = -1
                users.add(t)
                self._seeds.add(link)
            if alone:
                self._post_one(now + int(self.solo[t]), t, 1)
            else:
                self.state[t] = [float(self.wire[t]), 0.0, now, 0, -1]

    def _join(self, links: np.ndarray, flows: np.ndarray) -> None:
        """Links now crowded get their new flows added to their sets (made from the sole flow if there was one)."""
        shared, owner, count = self.shared, self._owner, self._count
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

    def done(self, ids: list[int] | np.ndarray, versions: list[int] | np.ndarray) -> list[int] | np.ndarray:
        """The flows whose completion for `versions` is due and not superseded: removed, and returned (a list for lists,
        an array for arrays)."""
        if isinstance(ids, list):
            due = []
            for f, v in zip(ids, versions):
                if self.is_due(f, v):
                    self._done_each([f])
                    due.append(f)
            return due
        if self.state:
            keep = [self.is_due(f, v) for f, v in zip(ids.tolist(), versions.tolist())]
            ids = ids[np.array(keep, dtype=bool)]
        else:  # every flow implicit: its one completion is version 1
            ids = ids[~self.finished[ids]]
        if ids.size <= SMALL:
            self._done_each(ids.tolist())
            return ids
        self.finished[ids] = True
        for f in ids.tolist() if self.state else ():
            self.state.pop(f, None)
        links, pos = self.routes.rows(ids)
        np.subtract.at(self.count, links, 1)
        if self.shared:
            was_shared = np.fromiter((link in self.shared for link in links.tolist()), bool, links.size)
            if was_shared.any():
                self._leave(links[was_shared], ids[pos[was_shared]])
        return ids

    def _done_each(self, ids: list[int]) -> None:
        """done() for flows already known to be due, one at a time."""
        count, owner, shared, state, finished = self._count, self._owner, self.shared, self.state, self._finished
        for t in ids:
            state.pop(t, None)
            finished[t] = True
            for link in self.route(t):
                left = count[link] = count[link] - 1
                users = shared.get(link)
                if users is None:
                    continue
                users.discard(t)
                if left > 1:
                    self._seeds.add(link)
                    continue
                del shared[link]
                if left == 1:
                    owner[link] = next(iter(users))
                    self._seeds.add(link)

    def _leave(self, links: np.ndarray, flows: np.ndarray) -> None:
        shared, owner, count = self.shared, self._owner, self._count
        for link, f in zip(links.tolist(), flows.tolist()):
            shared[link].discard(f)
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
        return (self._owner[link],) if self._count[link] == 1 else ()

    def _component(self, stack: list[int]) -> tuple[dict[int, list[int]], dict[int, object], dict[int, float]]:
        """The flows connected to `stack` through crowded links, for max-min: flow -> its crowded links and one
        virtual link -1 - f for the links it has to itself (their smallest capacity: only that one can bind); link ->
        its flows; link -> capacity. The rates are those over the full routes: a link with one flow binds exactly
        when the smallest such link of that flow does, at the same share."""
        shared, cap, pair_of, routes, owns = self.shared, self._capacity_list, self.routes.index, self.routes.tuples, self._own
        links_of: dict[int, list[int]] = {}
        users: dict[int, object] = {}
        capacity: dict[int, float] = {}
        while stack:
            f = stack.pop()
            if f in links_of:
                continue
            mine = links_of[f] = []
            pair = pair_of[f]
            own = owns[pair]
            for link in routes[pair]:
                crowd = shared.get(link)
                if crowd is None:
                    c = cap[link]
                    if own is None or c < own:
                        own = c
                    continue
                mine.append(link)
                if link not in users:
                    users[link] = crowd
                    capacity[link] = cap[link]
                    stack.extend(crowd)
            if own is not None:
                mine.append(-1 - f)
                users[-1 - f] = (f,)
                capacity[-1 - f] = own
        return links_of, users, capacity

    # ---- once per instant -------------------------------------------------------------------------------------
    def reshare(self, now: int) -> None:
        """Bring the bytes left up to `now` and give every flow connected to the links changed this instant its
        max-min rate; post the completions whose rate changed."""
        if not self._seeds:
            return
        seeds = self._seeds
        self._seeds = set()
        comp_flows, users, capacity = self._component([f for link in seeds for f in self.users(link)])
        if not comp_flows:
            return
        per_s, state = self.per_s, self.state
        states = {}
        for f in comp_flows:
            st = states[f] = state.get(f) or self._explicit(f)
            rem = st[_REMAINING] - st[_RATE] * ((now - st[_LAST]) / per_s)
            st[_REMAINING] = rem if rem > 0 else 0.0
            st[_LAST] = now
        if len(comp_flows) == 1:  # alone: its links are all its own, the virtual one holds their smallest capacity
            new_rates = {f: capacity[-1 - f] for f in comp_flows}
        else:
            weight = None if self.weight is None else {f: float(self.weight[f]) for f in comp_flows}
            new_rates = progressive_filling(comp_flows, users, capacity, weight)
        post = self._post_one
        for f, r in new_rates.items():
            st = states[f]
            if r != st[_RATE]:
                st[_RATE] = r
                st[_VERSION] += 1
                if st[_DUE] > now:
                    self._forget(st[_DUE])
                st[_DUE] = when = now + round(st[_REMAINING] / r * per_s)
                post(when, f, st[_VERSION])
