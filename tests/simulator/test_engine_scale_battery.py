"""The engine against the engine it replaced (tests/engine_ref, frozen before issue 9) on a battery of cases.

Makespans must agree everywhere. Per-transfer start, arrival and end times must agree wherever the reference has
no near-ties: a case counts as tie-free when the reference itself gives the same per-transfer times (to 1e-9)
with every bandwidth moved by one float step; where it does not, float near-ties decided its event order and only
the makespan is compared.
"""

from __future__ import annotations

import random

import engine_ref
import numpy as np
import pytest

from simulator.algorithms import build_schedule
from simulator.collective import Collective
from simulator.engine import EngineOptions, simulate
from simulator.topology import parse_topology


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


def _ids(case) -> str:
    op, algo, p, spec, ports, contention, nbytes, gamma, shuffle = case
    return f"{op}-{algo}-p{p}-{spec}-ports{ports}-{'c' if contention else 'nc'}-n{nbytes}-g{gamma:g}{'-shuffled' if shuffle else ''}"


def test_the_battery_is_large_and_covers_every_op():
    assert len(CASES) >= 30 and {c[0] for c in CASES} == {"allreduce", "allgather", "reduce_scatter", "broadcast", "reduce",
                                                         "alltoall", "gather", "scatter"}


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.allclose(a, b, rtol=1e-9, atol=1e-15, equal_nan=True))


@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
def test_engine_agrees_with_the_previous_engine(case):
    op, algo, p, spec, ports, contention, nbytes, gamma, shuffle = case
    sched = build_schedule(Collective(op, p, nbytes), algo)
    topo = parse_topology(spec)
    if shuffle:
        topo = shuffled(topo, p)
    options = EngineOptions(gamma=gamma, ports=ports, contention=contention)
    plain = sched.without_joins()  # the previous engine knows nothing of joins (it would send them as messages)
    join = sched.arrays.get("join")
    keep = slice(None) if join is None else ~join
    ref = engine_ref.simulate(plain, topo, options)
    new = simulate(sched, topo, options)
    assert new.time == pytest.approx(ref.time, rel=1e-9, abs=1e-15)
    ref_nudged = engine_ref.simulate(plain, nudged(topo), options)
    if all(_close(getattr(ref, k), getattr(ref_nudged, k)) for k in ("start", "arrive", "end")):
        for k in ("start", "arrive", "end"):
            assert _close(getattr(new, k)[keep], getattr(ref, k)), f"{k} differs from the previous engine"


def _as_dict(table) -> dict:
    return {int(k): (float(b), float(s), int(pk)) for k, b, s, pk in zip(table["link"], table["bytes"], table["busy_s"],
                                                                         table["peak_flows"])}


@pytest.mark.parametrize("case", CASES[::3], ids=[_ids(c) for c in CASES[::3]])
def test_the_engines_link_counts_equal_the_table_derived_from_the_times(case):
    # the engine counts bytes, busy time and peak messages per link as it runs; Trace can also derive them afterwards
    # from the per-transfer times and routes (what it did before): the two must agree
    op, algo, p, spec, ports, contention, nbytes, gamma, shuffle = case
    topo = parse_topology(spec)
    if shuffle:
        topo = shuffled(topo, p)
    trace = simulate(build_schedule(Collective(op, p, nbytes), algo), topo, EngineOptions(gamma=gamma, ports=ports,
                                                                                          contention=contention))
    counted = _as_dict(trace.link_table)
    trace.engine_links = None
    del trace.__dict__["link_table"]
    derived = _as_dict(trace.link_table)
    assert counted.keys() == derived.keys()
    for link, (b, s, pk) in counted.items():
        assert b == derived[link][0] and pk == derived[link][2]
        assert s == pytest.approx(derived[link][1], rel=1e-9, abs=1e-15)
        assert s <= trace.time  # busy at most the whole run
