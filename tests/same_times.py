"""Engine times of two schedules compared bit for bit on a few machines (array builders against inferred forms)."""

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
