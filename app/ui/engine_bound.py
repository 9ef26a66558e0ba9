"""A lower bound on the engine's time for a schedule, cheap enough to skip algorithms that cannot win.

From the engine's model (simulator/engine/run.py, docs/model.md): a network message holds a send port
on its sender and a receive port on its receiver from its start until it arrives, and it takes at least
its route's latency plus its bytes at the route's bottleneck bandwidth (max-min sharing only slows it);
a link never carries more than its bandwidth (less any background share). So the run takes at least
- per rank, the contention-free durations of its sends (and of its receives) divided by its ports;
- per link, the bytes routed over it divided by its bandwidth.
Reductions (gamma), headers and late starts only add time. With a message model (per-size regimes that
may change the bytes on the wire) no bound is claimed (0).
"""

from __future__ import annotations

import numpy as np

from simulator.engine import EngineOptions
from simulator.schedule import Schedule
from simulator.topology.model import Topology


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


def lower_bound(schedule: Schedule, topology: Topology, options: EngineOptions | None = None,
                pairs: PairCosts | None = None) -> float:
    """Seconds the engine needs at least to run `schedule` on `topology` with `options` (see the module); `pairs`
    (for this topology and options) saves the route look-ups across schedules."""
    options = options or EngineOptions()
    if options.messages is not None:
        return 0.0
    pairs = pairs or PairCosts(topology, options)
    arrays = schedule.arrays
    src, dst = arrays["src"].astype(np.int64), arrays["dst"].astype(np.int64)
    net = src != dst
    if not net.any():
        return 0.0
    p = schedule.collective.ranks
    keys = src[net] * p + dst[net]
    nbytes = arrays["bytes"][net].astype(np.float64)
    used, inverse = np.unique(keys, return_inverse=True)
    pair_bytes = np.bincount(inverse, weights=nbytes, minlength=len(used)).tolist()
    pair_count = np.bincount(inverse, minlength=len(used)).tolist()
    pair_time = []
    link_bytes: dict[int, float] = {}
    for k, key in enumerate(used.tolist()):
        links, latency, slowest = pairs(*divmod(key, p))
        for link in links:
            link_bytes[link] = link_bytes.get(link, 0.0) + pair_bytes[k]
        pair_time.append(pair_count[k] * latency + pair_bytes[k] / slowest)
    capacity = pairs.capacity
    bound = max((b / capacity[link] for link, b in link_bytes.items()), default=0.0)
    if options.ports > 0:
        sends = np.bincount(used // p, weights=pair_time, minlength=p)
        receives = np.bincount(used % p, weights=pair_time, minlength=p)
        bound = max(bound, float(sends.max()) / options.ports, float(receives.max()) / options.ports)
    return bound
