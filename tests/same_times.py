"""Array builders against their inferred forms: transfer rows, and engine times compared bit for bit on a few machines."""

import numpy as np

from simulator.engine import EngineOptions, simulate
from simulator.topology import parse_topology

# (ranks, topology, ports, gamma): one port and several, a ring, a torus, oversubscribed clusters, gamma zero or not
MACHINES = [(8, "switch:8", 1, 0.0), (8, "switch:8", 0, 0.0), (12, "ring:12", 1, 1e-10), (13, "torus:2x7", 2, 0.0),
            (16, "cluster:nodes=4,gpus=4,oversub=2", 1, 2e-11), (16, "fat_tree:hosts=16,leaf=4,oversub=2", 1, 0.0),
            (9, "ideal:9", 1, 3e-11)]


def assert_same_times(fast, slow, spec: str, ports: int, gamma: float) -> None:
    """Per-transfer start, arrive and end and the total time of the two schedules equal on `spec`."""
    options = EngineOptions(gamma=gamma, ports=ports)
    a, b = simulate(fast, parse_topology(spec), options), simulate(slow, parse_topology(spec), options)
    for k in ("start", "arrive", "end"):
        assert np.array_equal(getattr(a, k), getattr(b, k)), k
    assert a.time == b.time


def rows(sched) -> list[tuple]:
    """Each transfer of `sched` as (id, src, dst, pieces, reduce, step, deps)."""
    return [(t.id, t.src, t.dst, t.pieces, t.reduce, t.step, t.deps) for t in sched.transfers]


def without_joins(sched):
    """Transfers of the array form with the joins taken out, ids renumbered, each dependency on a join replaced by
    the join's own dependencies (what the inferring builder writes)."""
    ts = sched.transfers
    join = sched.arrays.get("join")
    is_join = np.zeros(len(ts), dtype=bool) if join is None else join
    new_id = np.cumsum(~is_join) - 1
    out = []
    for t in ts:
        if is_join[t.id]:
            continue
        deps = set()
        for d in t.deps:
            deps.update(ts[d].deps if is_join[d] else (d,))
        out.append((int(new_id[t.id]), t.src, t.dst, t.pieces, t.reduce, t.step, tuple(sorted(int(new_id[d]) for d in deps))))
    return out, ~is_join
