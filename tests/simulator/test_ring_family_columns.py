"""Multi-ring chunk programs (nccl_ring's channels, the bidirectional ring) equal the builders they replaced.

Each array form is compared with (a) the builder it replaced, written with ScheduleBuilder / Transfer objects, and
(b) the inferred-dependency form: ScheduleBuilder given the same messages in the same order finds the same
dependencies from the data. Engine times on a few machines are equal too.
"""

import numpy as np
import pytest
from reference_algorithms import ring_transfers
from same_times import rows

from simulator.algorithms import build_schedule
from simulator.algorithms.channels import rail_orders, split_seg
from simulator.algorithms.phases import block_segs, ring_phase
from simulator.collective import Collective
from simulator.engine import EngineOptions, simulate
from simulator.schedule import ScheduleBuilder
from simulator.topology import parse_topology

PHASES = {"allreduce": (True, True), "allgather": (False, True), "reduce_scatter": (True, False)}


def _inferred(sched):
    """The same messages, in the same order, through the builder that infers dependencies from the data."""
    b = ScheduleBuilder(sched.collective, sched.algorithm, sched.params)
    for t in sched.transfers:
        b.send(t.src, t.dst, t.pieces, t.reduce, t.step)
    return b.build()


def _channels_objects(coll, orders, chunks, reduce_scatter, allgather):
    """nccl_ring as it was built before the arrays: one ring_transfers per channel, merged by (step, channel, id)."""
    pieces = [split_seg(seg, len(orders)) for seg in block_segs(coll.block_offsets)]
    rings = [ring_transfers(order, [pieces[r][c] for r in order], chunks, reduce_scatter, allgather)
             for c, order in enumerate(orders)]
    keys = sorted((t.step, c, t.id) for c, ring in enumerate(rings) for t in ring)
    new_id = {(c, i): k for k, (_, c, i) in enumerate(keys)}
    return [(k, rings[c][i].src, rings[c][i].dst, rings[c][i].pieces, rings[c][i].reduce, rings[c][i].step,
             tuple(sorted(new_id[(c, d)] for d in rings[c][i].deps))) for k, (_, c, i) in enumerate(keys)]


def _bidirectional_objects(coll):
    """The bidirectional ring as it was built before the arrays (two ring allgathers through ScheduleBuilder)."""
    b = ScheduleBuilder(coll, "bidirectional_ring")
    segs = block_segs(coll.block_offsets)
    ranks = list(range(coll.ranks))
    ring_phase(b, ranks, [(off, count - count // 2) for off, count in segs], False)
    ring_phase(b, ranks[::-1], [(off + count - count // 2, count // 2) for off, count in segs][::-1], False)
    return b.build()


@pytest.mark.slow
@pytest.mark.parametrize("op", sorted(PHASES))
def test_nccl_ring_arrays_equal_the_object_and_inferred_forms(op):
    for p in (1, 2, 3, 5, 8, 12, 17):
        for channels, node, chunks in ((1, None, 1), (2, None, 1), (3, None, 2), (4, 3, 1), (8, 4, 2)):
            for count in (0, 5, 7 * p + 3):
                coll = Collective(op, p, count, "int8")
                fast = build_schedule(coll, "nccl_ring", chunks=chunks, channels=channels, node=node)
                want = _channels_objects(coll, rail_orders(p, node, channels), chunks, *PHASES[op])
                assert rows(fast) == want, (op, p, channels, node, chunks, count)
                assert rows(_inferred(fast)) == want, (op, p, channels, node, chunks, count)


def test_bidirectional_ring_arrays_equal_the_object_and_inferred_forms():
    for p in range(1, 20):
        for count in (0, 1, p - 1, p, 2 * p + 1, 9 * p + 5):
            coll = Collective("allgather", p, count, "int8")
            fast = build_schedule(coll, "bidirectional_ring")
            want = rows(_bidirectional_objects(coll))
            assert rows(fast) == want, (p, count)
            assert rows(_inferred(fast)) == want, (p, count)


CASES = [("allreduce", "nccl_ring", 8, "switch:8", 1, {"channels": 2}), ("allgather", "nccl_ring", 16,
         "cluster:nodes=4,gpus=4,oversub=2", 0, {"channels": 4, "node": 4}),
         ("reduce_scatter", "nccl_ring", 12, "ring:12", 2, {"channels": 3, "chunks": 2}),
         ("allgather", "bidirectional_ring", 8, "ring:8", 2, {}), ("allgather", "bidirectional_ring", 9, "switch:9", 1, {})]


@pytest.mark.parametrize("op, name, p, spec, ports, params", CASES)
def test_engine_times_equal_the_object_form(op, name, p, spec, ports, params):
    coll = Collective(op, p, 4 * (p * 1000 + 3))
    fast = build_schedule(coll, name, **params)
    slow = _inferred(fast)
    topo, options = parse_topology(spec), EngineOptions(gamma=1e-11, ports=ports)
    a, b = simulate(fast, topo, options), simulate(slow, topo, options)
    for k in ("start", "arrive", "end"):
        assert np.array_equal(getattr(a, k), getattr(b, k)), k
    assert a.time == b.time


def test_one_channel_reference_is_the_ring():
    # guard for _channels_objects: one channel in rank order is exactly ring_transfers
    coll = Collective("allreduce", 6, 6 * 7, "int8")
    ring = ring_transfers(list(range(6)), block_segs(coll.block_offsets))
    assert _channels_objects(coll, rail_orders(6, None, 1), 1, True, True) == [
        (t.id, t.src, t.dst, t.pieces, t.reduce, t.step, t.deps) for t in ring]
