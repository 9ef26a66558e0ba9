"""The fast whole-ring schedules are the same as the ring phases through the inferring builder."""

import pytest

from simulator.algorithms import build_schedule
from simulator.algorithms.phases import block_segs, ring_allgather, ring_reduce_scatter
from simulator.collective import Collective
from simulator.schedule import ScheduleBuilder


def _inferred(coll, chunks):
    b = ScheduleBuilder(coll, "ring")
    group, segs = list(range(coll.ranks)), block_segs(coll.block_offsets)
    step = 0
    if coll.op in ("allreduce", "reduce_scatter"):
        step = ring_reduce_scatter(b, group, segs, chunks)
    if coll.op in ("allreduce", "allgather"):
        ring_allgather(b, group, segs, chunks, step=step)
    return b.build()


@pytest.mark.parametrize("op", ["allreduce", "allgather", "reduce_scatter"])
def test_explicit_ring_equals_inferred_ring(op):
    for p in range(1, 14):
        for count in (0, 1, p - 1, 3 * p + 2, 40):
            for chunks in (1, 2, 3, 5):
                coll = Collective(op, p, count, "int8")
                fast, slow = build_schedule(coll, "ring", chunks=chunks), _inferred(coll, chunks)
                assert len(fast.transfers) == len(slow.transfers)
                for a, b in zip(fast.transfers, slow.transfers):
                    assert (a.id, a.src, a.dst, a.pieces, a.reduce, a.step, a.deps) == \
                           (b.id, b.src, b.dst, b.pieces, b.reduce, b.step, b.deps), (p, count, chunks)
