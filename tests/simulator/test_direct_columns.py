"""Direct algorithms built as arrays (written dependencies, one join per rank) equal the inferred-dependency form.

The inferred form is what ScheduleBuilder finds from the data for the same messages in the same order
(direct_reduce_scatter / direct_allgather); the array form adds one join node per rank between the phases.
"""

import numpy as np
import pytest
from reference_algorithms import direct_allgather, direct_reduce_scatter
from same_times import without_joins

from simulator.algorithms import build_schedule
from simulator.algorithms.columns import NONE, Columns
from simulator.algorithms.phases import block_segs
from simulator.collective import Collective
from simulator.engine import EngineOptions, simulate
from simulator.engine.run import _Run
from simulator.schedule import Piece, ScheduleBuilder
from simulator.semantics import check
from simulator.topology import parse_topology

PHASES = {"allreduce": (True, True), "reduce_scatter": (True, False), "allgather": (False, True)}


def _inferred(coll):
    b = ScheduleBuilder(coll, "direct")
    blocks = block_segs(coll.block_offsets)
    reduce_scatter, allgather = PHASES[coll.op]
    step = direct_reduce_scatter(b, coll.ranks, blocks) if reduce_scatter else 0
    if allgather:
        direct_allgather(b, coll.ranks, blocks, step)
    return b.build()


@pytest.mark.slow
@pytest.mark.parametrize("op", sorted(PHASES))
def test_array_form_is_the_inferred_form_and_correct(op):
    for p in range(1, 34):
        for count in (0, 1, p - 1, 3 * p + 2):
            coll = Collective(op, p, count, "int8")
            fast = build_schedule(coll, "direct")
            result = check(fast)
            assert result.ok, result.message
            slow = _inferred(coll)
            got, _ = without_joins(fast)
            want = [(t.id, t.src, t.dst, t.pieces, t.reduce, t.step, t.deps) for t in slow.transfers]
            assert got == want, (op, p, count)
            plain = fast.without_joins()
            assert [(t.id, t.src, t.dst, t.pieces, t.reduce, t.step, t.deps) for t in plain.transfers] == want


def test_allreduce_has_one_join_per_rank_and_quadratic_edges():
    p = 64
    sched = build_schedule(Collective("allreduce", p, 4 * p * 10), "direct")
    a = sched.arrays
    assert int(a["join"].sum()) == p
    assert a["dep_idx"].size == 2 * p * (p - 1)  # p(p-1) into the joins, p(p-1) out of them (not p(p-1)^2)


CASES = [("allreduce", 8, "switch:8", 1, 0.0), ("allreduce", 8, "switch:8", 1, 1e-10), ("allreduce", 12, "ring:12", 1, 1e-10),
         ("allreduce", 16, "cluster:nodes=4,gpus=4,oversub=2", 0, 0.0), ("allreduce", 16, "cluster:nodes=4,gpus=4,oversub=2", 1, 2e-11),
         ("allreduce", 9, "ideal:9", 1, 3e-11), ("reduce_scatter", 8, "switch:8", 1, 1e-10), ("allgather", 8, "torus:2x4", 2, 0.0)]


@pytest.mark.parametrize("op, p, spec, ports, gamma", CASES)
def test_engine_times_equal_the_inferred_form(op, p, spec, ports, gamma):
    coll = Collective(op, p, 4 * (p * 1000 + 3))
    fast, slow = build_schedule(coll, "direct"), _inferred(coll)
    _, keep = without_joins(fast)
    options = EngineOptions(gamma=gamma, ports=ports)
    a, b = simulate(fast, parse_topology(spec), options), simulate(slow, parse_topology(spec), options)
    for k in ("start", "arrive", "end"):
        assert np.array_equal(getattr(a, k)[keep], getattr(b, k)), k
    assert a.time == b.time


def test_a_join_ends_the_instant_its_last_dependency_does():
    # two messages into rank 1 of different lengths, a join on both, a copy after the join
    coll = Collective("allgather", 3, 3 * 1000)
    c = Columns()
    first = c.send([0, 2], [1, 1], 0, [100, 200])
    join = c.join(1, first[None, :])
    c.send(1, 0, 0, 10, deps=join[:, None])
    c.send(2, 0, 0, 10, deps=[[NONE]])
    sched = c.schedule(coll, "test")
    trace = simulate(sched, parse_topology("switch:3"), EngineOptions(ports=0))
    assert trace.start[2] == trace.end[2] == max(trace.end[0], trace.end[1])
    assert trace.start[3] == trace.end[2]


@pytest.mark.parametrize("spec", ["switch:16", "cluster:nodes=4,gpus=4,oversub=2", "fat_tree:hosts=16,leaf=4,oversub=2",
                                  "torus:4x4"])
def test_route_latencies_equal_path_cost(spec):
    topo = parse_topology(spec)
    run = _Run(build_schedule(Collective("alltoall", 16, 16 * 16 * 4), "direct"), topo, EngineOptions())
    pair_latency = run._pair_latency(topo)
    for k, pair in enumerate(sorted({(s, d) for s in range(16) for d in range(16) if s != d})):
        assert pair_latency[k] == topo.path_cost(*pair)[0]


def _alltoall_inferred(coll):
    """Alltoall direct as it was built before the arrays: the same messages through the inferring builder."""
    b = ScheduleBuilder(coll, "direct")
    p = coll.ranks
    for s in range(p):
        for r in range(p):
            d = (r + s) % p
            piece = Piece("in", coll.pair_offset(r, d, "in"), "out", coll.pair_offset(d, r, "out"), coll.pair_count(r, d))
            b.send(r, d, piece, step=max(s - 1, 0))
    return b.build()


def test_alltoall_array_form_is_the_inferred_form_and_correct():
    for p in range(1, 20):
        for count in (0, 1, p - 1, p * p + 3, 5 * p * p - 2):
            coll = Collective("alltoall", p, count, "int8")
            fast = build_schedule(coll, "direct")
            result = check(fast)
            assert result.ok, result.message
            want = [(t.id, t.src, t.dst, t.pieces, t.reduce, t.step, t.deps) for t in _alltoall_inferred(coll).transfers]
            assert [(t.id, t.src, t.dst, t.pieces, t.reduce, t.step, t.deps) for t in fast.transfers] == want, (p, count)
