"""Lower bounds on the engine's time for a schedule, cheap enough to skip runs that cannot be the fastest.

From the engine's model (run.py, docs/model.md): a network message holds a send port on its sender and a
receive port on its receiver from its start until it arrives; it starts once every transfer it depends on has
ended; it takes at least its route's latency (plus its message regime's) plus its wire bytes (payload x the
regime's byte factor + header_bytes) at the route's bottleneck bandwidth, since max-min sharing never gives a
flow more than its bottleneck; a link never carries more than its bandwidth (less any background share); a
local transfer takes no time at least. So the run takes at least
- `lower_bound`: per link, the wire bytes routed over it divided by its bandwidth; per rank, the contention-free
  durations of its sends (and of its receives) divided by its ports (its receives alone with eager sends, which
  free their send port at once);
- `critical_path`: the longest chain of dependencies, each network transfer at its contention-free duration
  (by induction over the chain, no transfer starts before the chain ending at it could end); and per link l,
  head + W/B + tail: no byte crosses l before head, the earliest any transfer on l can start (its chain) plus its
  latency; l's W wire bytes take W/B at its bandwidth B once the first has started; the transfer that carries
  the last of them ends no earlier, and what depends on it takes at least tail, the shortest over l's transfers
  of the longest chain after one ends.
Reductions (gamma), late starts and waiting for ports only add time.

The engine rounds every duration it adds to its clock's tick (clock.py; a femtosecond or finer for runs under
an hour): a transfer's latency once and its completion once (at most a tick in all), so a chain of n transfers,
or n flows sharing a link, may end up to n ticks early; a transfer plays at most three parts in a bound (in
the head, the link's bytes, the tail), so 3 ticks a transfer cover every bound here. Float sums may differ in
the last bits from the bound's own sums. `safe` takes both off, giving a value the engine's time cannot fall below.
"""

from __future__ import annotations

import numpy as np

from ..schedule import Schedule
from ..topology.model import Topology
from .options import EngineOptions

TICK_S = 1e-15  # the engine's clock tick for any run under an hour (clock.py): femtoseconds or finer
MAX_SAFE_S = 3600.0  # beyond this the tick may be coarser: `safe` claims nothing
FLOAT_SLACK = 1e-9  # relative: the bound's sums and the engine's, in other orders


class PairCosts:
    """Per (sender, receiver) pair of one topology: route, latency and bottleneck bandwidth, looked up once."""

    def __init__(self, topology: Topology, options: EngineOptions):
        self.topology = topology
        background = dict(options.background)
        self.capacity = _Capacity(topology, background)
        self._pairs: dict[tuple[int, int], tuple[tuple[int, ...], float, float]] = {}

    def __call__(self, s: int, d: int) -> tuple[tuple[int, ...], float, float]:
        hit = self._pairs.get((s, d))
        if hit is None:
            links = self.topology.route(s, d)
            slowest = min((self.capacity[link] for link in links), default=float("inf"))
            hit = self._pairs[(s, d)] = (links, self.topology.path_cost(s, d)[0], slowest)
        return hit


class _Capacity(dict):
    """Link id -> bandwidth left after background load (as the engine computes it)."""

    def __init__(self, topology: Topology, background: dict):
        super().__init__()
        self._topology, self._background = topology, background

    def __missing__(self, link: int) -> float:
        cap = self[link] = float(self._topology.bandwidth[link]) * (1.0 - self._background.get(link, 0.0))
        return cap


def _wire(schedule: Schedule, options: EngineOptions) -> tuple[np.ndarray, np.ndarray]:
    """Per transfer: the bytes the engine moves on the wire and its message regime's extra latency (as run.py sets them)."""
    payload = schedule.arrays["bytes"]
    wire = payload.astype(np.float64)
    extra = np.zeros(wire.size)
    if options.messages is not None:
        latency, factor = options.messages.table(payload.tolist())
        wire, extra = wire * np.asarray(factor, dtype=np.float64), np.asarray(latency, dtype=np.float64)
    return wire + options.header_bytes, extra


def lower_bound(schedule: Schedule, topology: Topology, options: EngineOptions | None = None,
                pairs: PairCosts | None = None) -> float:
    """Seconds the engine needs at least to run `schedule` on `topology` with `options`, by links and ports (see the
    module); `pairs` (for this topology and options) saves the route look-ups across schedules."""
    options = options or EngineOptions()
    pairs = pairs or PairCosts(topology, options)
    arrays = schedule.arrays
    src, dst = arrays["src"].astype(np.int64), arrays["dst"].astype(np.int64)
    net = src != dst
    if not net.any():
        return 0.0
    wire, extra = _wire(schedule, options)
    p = int(max(src.max(), dst.max())) + 1
    keys = src[net] * p + dst[net]
    used, inverse = np.unique(keys, return_inverse=True)
    pair_bytes = np.bincount(inverse, weights=wire[net], minlength=len(used)).tolist()
    pair_count = np.bincount(inverse, minlength=len(used)).tolist()
    pair_extra = np.bincount(inverse, weights=extra[net], minlength=len(used)).tolist()
    pair_time = []
    link_bytes: dict[int, float] = {}
    for k, key in enumerate(used.tolist()):
        links, latency, slowest = pairs(*divmod(key, p))
        for link in links:
            link_bytes[link] = link_bytes.get(link, 0.0) + pair_bytes[k]
        pair_time.append(pair_count[k] * latency + pair_extra[k] + pair_bytes[k] / slowest)
    capacity = pairs.capacity
    bound = max((b / capacity[link] for link, b in link_bytes.items()), default=0.0)
    if options.ports > 0:
        sends = np.bincount(used // p, weights=pair_time, minlength=p)
        receives = np.bincount(used % p, weights=pair_time, minlength=p)
        bound = max(bound, float(receives.max()) / options.ports)
        if not options.eager_bytes:  # eager sends do not hold their sender's port
            bound = max(bound, float(sends.max()) / options.ports)
    return bound


def critical_path(schedule: Schedule, topology: Topology, options: EngineOptions | None = None,
                  pairs: PairCosts | None = None) -> float:
    """Seconds of the longest dependency chain, every network transfer at latency + wire bytes / bottleneck, local
    transfers at none; and per link, at least the earliest its first byte can move (the longest chain before a
    transfer on it, and that transfer's latency), its wire bytes at its bandwidth, and the shortest of the longest
    chains after a transfer on it (see the module): the larger of the two."""
    options = options or EngineOptions()
    pairs = pairs or PairCosts(topology, options)
    arrays = schedule.arrays
    src, dst = arrays["src"].astype(np.int64), arrays["dst"].astype(np.int64)
    n = src.size
    if not n:
        return 0.0
    wire, extra = _wire(schedule, options)
    net = np.flatnonzero(src != dst)
    p = int(max(src.max(), dst.max())) + 1
    used, inverse = np.unique(src[net] * p + dst[net], return_inverse=True)
    costs = np.array([pairs(*divmod(key, p))[1:] for key in used.tolist()], dtype=np.float64).reshape(-1, 2)
    latency = np.zeros(n)
    latency[net] = costs[inverse, 0] + extra[net]
    duration = latency.copy()
    duration[net] += wire[net] / costs[inverse, 1]
    chain = duration
    if options.eager_bytes:  # an eager send may release its dependents when it starts: nothing of it in the chains
        chain = np.where((arrays["bytes"] < options.eager_bytes) & (src != dst), 0.0, duration)
    start, after = _chains(schedule, chain)
    bound = float(max((start + chain + after).max(), (start + duration).max()))
    if net.size:  # per pair: the earliest first byte and the shortest chain after; per link, the smallest over its pairs
        first = np.full(used.size, np.inf)
        np.minimum.at(first, inverse, start[net] + latency[net])
        last = np.full(used.size, np.inf)
        np.minimum.at(last, inverse, after[net])
        pair_bytes = np.bincount(inverse, weights=wire[net], minlength=used.size)
        links: dict[int, list[float]] = {}
        for key, head, tail, nbytes in zip(used.tolist(), first.tolist(), last.tolist(), pair_bytes.tolist()):
            for link in pairs(*divmod(key, p))[0]:
                acc = links.get(link)
                if acc is None:
                    links[link] = [head, tail, nbytes]
                else:
                    acc[0], acc[1], acc[2] = min(acc[0], head), min(acc[1], tail), acc[2] + nbytes
        capacity = pairs.capacity
        bound = max(bound, max(head + nbytes / capacity[link] + tail for link, (head, tail, nbytes) in links.items()))
    return bound


def _chains(schedule: Schedule, duration: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per transfer: the longest chain of durations before it starts, and the longest after it ends."""
    arrays = schedule.arrays
    n = duration.size
    ptr, idx = arrays["dep_ptr"], arrays["dep_idx"]
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr))
    order = list(range(n)) if bool((idx < rows).all()) else schedule.topological_order()
    ptr_l, idx_l, dur = ptr.tolist(), idx.tolist(), duration.tolist()
    end = [0.0] * n
    for t in order:
        deps = idx_l[ptr_l[t]:ptr_l[t + 1]]
        end[t] = (max([end[d] for d in deps]) if deps else 0.0) + dur[t]
    after = [0.0] * n
    for t in reversed(order):
        tail = after[t] + dur[t]
        for d in idx_l[ptr_l[t]:ptr_l[t + 1]]:
            if tail > after[d]:
                after[d] = tail
    return np.array(end) - duration, np.array(after)


def safe(bound: float, transfers: int) -> float:
    """A value the engine's reported time cannot fall below, given a bound on it for a schedule of `transfers` transfers
    (see the module: 3 ticks a transfer for the clock's rounding, FLOAT_SLACK for the sums); 0 past MAX_SAFE_S."""
    if not bound < MAX_SAFE_S:
        return 0.0
    return bound * (1.0 - FLOAT_SLACK) - 3 * transfers * TICK_S
