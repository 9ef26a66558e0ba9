"""The ring chunk program (simulator/algorithms/ring.py, lowered by chunks.py) makes exactly the transfers and
dependencies that ScheduleBuilder infers from the same messages (`phases.ring_phase`, which composites use), and the
ring's previous builder with written dependencies (`ring_transfers`, kept in tests/reference_algorithms.py as the
reference the chunk program replaced) agrees with both.
"""

import pytest
from reference_algorithms import ring_transfers

from simulator.algorithms import build_schedule
from simulator.algorithms.phases import block_segs, ring_phase
from simulator.collective import Collective
from simulator.schedule import ScheduleBuilder


def _inferred(coll, chunks):
    b = ScheduleBuilder(coll, "ring")
    group, segs = list(range(coll.ranks)), block_segs(coll.block_offsets)
    step = 0
    if coll.op in ("allreduce", "reduce_scatter"):
        step = ring_phase(b, group, segs, True, chunks)
    if coll.op in ("allreduce", "allgather"):
        ring_phase(b, group, segs, False, chunks, step=step)
    return b.build()


def _same(fast, slow, where):
    assert len(fast) == len(slow), where
    for a, b in zip(fast, slow):
        assert (a.id, a.src, a.dst, a.pieces, a.reduce, a.step, a.deps) == \
               (b.id, b.src, b.dst, b.pieces, b.reduce, b.step, b.deps), where


@pytest.mark.parametrize("op", ["allreduce", "allgather", "reduce_scatter"])
def test_explicit_ring_equals_inferred_ring(op):
    for p in range(1, 14):
        for count in (0, 1, p - 1, 3 * p + 2, 40):
            for chunks in (1, 2, 3, 5):
                coll = Collective(op, p, count, "int8")
                fast, slow = build_schedule(coll, "ring", chunks=chunks), _inferred(coll, chunks)
                _same(fast.transfers, slow.transfers, (p, count, chunks))
                rs, ag = coll.op != "allgather", coll.op != "reduce_scatter"
                _same(fast.transfers, ring_transfers(range(p), block_segs(coll.block_offsets), chunks, rs, ag),
                      (p, count, chunks))


@pytest.mark.parametrize("phases", [(True, False), (False, True), (True, True)])
def test_explicit_deps_over_any_group_buffer_and_step(phases):
    """A ring over a shuffled subset of ranks, on scratch, starting at step 7: written deps = inferred deps."""
    reduce_scatter, allgather = phases
    coll = Collective("allreduce", 12, 0, "int8")
    for group in ([3, 9, 1, 7, 11], [5, 2], [0, 4, 8, 10, 6, 2, 1]):
        for counts in ([4] * len(group), list(range(len(group)))):
            offsets = [sum(counts[:i]) for i in range(len(counts) + 1)]
            segs = block_segs(offsets)
            for chunks in (1, 3):
                fast = ring_transfers(group, segs, chunks, reduce_scatter, allgather, buf="scratch", step=7)
                b = ScheduleBuilder(coll, "ring")
                for t in fast:
                    b.send(t.src, t.dst, t.pieces, t.reduce, t.step)
                _same(fast, b.build().transfers, (group, counts, chunks))
                assert {t.step for t in fast} == set(range(7, 7 + (reduce_scatter + allgather) * (len(group) - 1)))
