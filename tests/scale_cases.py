"""The engine-scale battery's cases and topology helpers.

Shared by tests/simulator/test_engine_scale_battery.py, test_engine_scale_repro.py and test_engine_scale_stats.py.
"""

from __future__ import annotations

import random

import numpy as np


def nudged(topology):
    """A copy of `topology` with every bandwidth moved up by one float step."""
    clone = topology._copy()
    if hasattr(clone, "uniform_bandwidth"):
        clone.uniform_bandwidth = float(np.nextafter(clone.uniform_bandwidth, np.inf))
    else:
        clone.bandwidth = np.nextafter(clone.bandwidth, np.inf)
    return clone


def shuffled(topology, p: int, seed: int = 7):
    """`topology` with the ranks placed on its devices in a random order (desynchronised traffic)."""
    order = list(range(p))
    random.Random(seed).shuffle(order)
    return topology.with_placement(order)


# (op, algorithm, p, topology SPEC, ports, contention, bytes, gamma, shuffle)
CASES = [
    ("allreduce", "ring", 8, "ideal:8", 1, True, 1 << 20, 0.0, False),
    ("allreduce", "ring", 16, "switch:16", 1, True, 1 << 20, 0.0, False),
    ("allreduce", "ring", 16, "switch:16", 1, False, 1 << 20, 0.0, False),
    ("allreduce", "ring", 16, "switch:16", 0, True, 3 << 18, 0.0, False),
    ("allreduce", "ring", 16, "cluster:nodes=4,gpus=4,oversub=2", 1, True, 1 << 20, 0.0, True),
    ("allreduce", "ring", 32, "fat_tree:hosts=32,leaf=8,oversub=4", 1, True, 1 << 20, 0.0, True),
    ("allreduce", "ring", 12, "ring:12", 1, True, 12 * 4096, 1e-10, False),
    ("allreduce", "direct", 8, "switch:8", 1, True, 1 << 16, 0.0, False),
    ("allreduce", "direct", 8, "switch:8", 0, True, 1 << 16, 0.0, False),
    ("allreduce", "direct", 16, "cluster:nodes=4,gpus=4,oversub=2", 0, True, 1 << 16, 0.0, False),
    ("allreduce", "hierarchical", 16, "cluster:nodes=4,gpus=4", 1, True, 1 << 20, 0.0, False),
    ("allreduce", "hierarchical", 32, "cluster:nodes=8,gpus=4", 1, False, 1 << 20, 0.0, False),
    ("allreduce", "double_binary_tree", 16, "switch:16", 1, True, 1 << 20, 0.0, False),
    ("allreduce", "double_binary_tree", 13, "torus:4x4", 2, True, 13 * 1000, 3e-11, False),
    ("allreduce", "rabenseifner", 16, "fat_tree:hosts=16,leaf=4,oversub=2", 1, True, 1 << 20, 0.0, False),
    ("allreduce", "recursive_doubling", 8, "ring:8,uni", 1, True, 1 << 16, 0.0, False),
    ("allreduce", "binomial", 9, "switch:9", 1, True, 9 * 4000, 1e-10, False),
    ("allgather", "ring", 16, "torus:4x4", 1, True, 16 * 8192, 0.0, False),
    ("allgather", "bruck", 10, "switch:10", 1, True, 10 * 4096, 0.0, False),
    ("allgather", "recursive_doubling", 16, "cluster:nodes=4,gpus=4", 0, True, 16 * 4096, 0.0, False),
    ("allgather", "direct", 8, "ring:8", 0, True, 8 * 4096, 0.0, False),
    ("allgather", "bidirectional_ring", 8, "ring:8", 2, True, 8 * 8192, 0.0, False),
    ("reduce_scatter", "ring", 16, "switch:16", 1, True, 16 * 4096, 2e-11, False),
    ("reduce_scatter", "recursive_halving", 16, "fat_tree:hosts=16,leaf=4,oversub=2", 1, True, 16 * 4096, 0.0, False),
    ("reduce_scatter", "direct", 8, "switch:8", 0, True, 8 * 4096, 1e-10, False),
    ("broadcast", "binomial", 16, "switch:16", 1, True, 1 << 20, 0.0, False),
    ("broadcast", "pipelined_chain", 8, "ring:8", 1, True, 1 << 20, 0.0, False),
    ("broadcast", "scatter_allgather", 16, "torus:4x4", 1, True, 1 << 20, 0.0, False),
    ("reduce", "binomial", 16, "cluster:nodes=4,gpus=4", 1, True, 1 << 18, 1e-10, False),
    ("reduce", "rabenseifner", 8, "switch:8", 1, True, 1 << 18, 0.0, False),
    ("alltoall", "direct", 16, "switch:16", 1, True, 16 * 16 * 1024, 0.0, False),
    ("alltoall", "direct", 16, "cluster:nodes=4,gpus=4,oversub=4", 0, True, 16 * 16 * 1024, 0.0, False),
    ("alltoall", "bruck", 16, "fat_tree:hosts=16,leaf=4,oversub=2", 1, True, 16 * 16 * 1024, 0.0, False),
    ("gather", "binomial", 8, "switch:8", 1, True, 8 * 4096, 0.0, False),
    ("gather", "direct", 8, "switch:8", 0, True, 8 * 4096, 0.0, False),
    ("scatter", "binomial", 8, "ring:8", 1, True, 8 * 4096, 0.0, False),
    ("scatter", "direct", 16, "cluster:nodes=4,gpus=4,oversub=2", 0, True, 16 * 4096, 0.0, True),
]


def case_id(case) -> str:
    """A readable pytest id for one battery case."""
    op, algo, p, spec, ports, contention, nbytes, gamma, shuffle = case
    return f"{op}-{algo}-p{p}-{spec}-ports{ports}-{'c' if contention else 'nc'}-n{nbytes}-g{gamma:g}{'-shuffled' if shuffle else ''}"
