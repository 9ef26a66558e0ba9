"""The chunk-program lowering (simulator/algorithms/chunks.py), proven once: its inferred dependencies on hand-worked
programs, the same as ScheduleBuilder's on the same messages, its refusals, and the ring it lowers timed by the engine
bit for bit like the builder it replaced (tests/reference_algorithms.py's `ring_transfers`)."""

import pytest
from reference_algorithms import ring_transfers
from same_times import MACHINES, assert_same_times, rows

from simulator.algorithms import build_schedule
from simulator.algorithms.chunks import chunk_schedule
from simulator.algorithms.phases import block_segs
from simulator.collective import Collective
from simulator.schedule import Schedule, ScheduleBuilder


def _program(x, ops):
    for kind, src, dst, chunk in ops:
        x.send(src, dst, chunk, reduce=kind == "reduce")


def _lowered(p, segs, ops, chunks=1):
    coll = Collective("allreduce", p, 4 * sum(c for _, c in segs))
    return chunk_schedule(coll, "test", _program, segs, tuple(ops), chunks=chunks)


def _inferred(sched):
    b = ScheduleBuilder(sched.collective, sched.algorithm)
    for t in sched.transfers:
        b.send(t.src, t.dst, t.pieces, t.reduce, t.step)
    return b.build()


def test_dependencies_worked_by_hand():
    # t0 copies chunk 0 to rank 1; t1 reduces into it (waits for the copy that made the version); t2 reads it from
    # rank 1 (waits for both writes) and overwrites rank 2's, which t1 read; t3 is another chunk; t4 overwrites rank 1's
    # chunk 0: it waits for the writes t0, t1 and for t2, which read it
    ops = (("copy", 0, 1, 0), ("reduce", 2, 1, 0), ("copy", 1, 2, 0), ("copy", 0, 1, 1), ("copy", 0, 1, 0))
    sched = _lowered(3, [(0, 2), (2, 2)], ops)
    assert [t.deps for t in sched.transfers] == [(), (0,), (0, 1), (), (0, 1, 2)]
    assert rows(sched) == rows(_inferred(sched))


def test_pieces_wait_piece_by_piece():
    # chunk 0 cut into two pieces: the copy back of piece c waits only for piece c's copy there
    sched = _lowered(2, [(0, 4)], (("copy", 0, 1, 0), ("copy", 1, 0, 0)), chunks=2)
    assert [(t.pieces[0].dst_off, t.pieces[0].count, t.deps) for t in sched.transfers] == [
        (0, 2, ()), (2, 2, ()), (0, 2, (0,)), (2, 2, (1,))]


def test_empty_chunks_wait_for_nothing():
    sched = _lowered(2, [(0, 0), (0, 3)], (("copy", 0, 1, 0), ("copy", 1, 0, 0), ("copy", 0, 1, 1), ("copy", 1, 0, 1)))
    assert [t.deps for t in sched.transfers] == [(), (), (), (2,)]


def test_reductions_into_one_place_in_one_op_commute():
    sched = _lowered(4, [(0, 1)], (("copy", 3, 1, 0), ("reduce", (0, 2), 1, 0), ("copy", 1, 0, 0)))
    assert [t.deps for t in sched.transfers] == [(), (0,), (0,), (0, 1, 2)]
    assert rows(sched) == rows(_inferred(sched))


@pytest.mark.parametrize("ops", [(("copy", (0, 1), (1, 2), 0),), (("copy", (0, 2), 1, 0),)])
def test_an_op_that_would_need_an_order_inside_it_is_refused(ops):
    with pytest.raises(ValueError, match="split it into two ops"):
        _lowered(3, [(0, 1)], ops)


@pytest.mark.parametrize("op", ["allreduce", "allgather", "reduce_scatter"])
@pytest.mark.parametrize("p, spec, ports, gamma", MACHINES)
def test_ring_engine_times_equal_the_builder_it_replaced(op, p, spec, ports, gamma):
    coll = Collective(op, p, 4 * (p * 1000 + 3))
    rs, ag = op != "allgather", op != "reduce_scatter"
    old = Schedule(coll, "ring", ring_transfers(range(p), block_segs(coll.block_offsets), 2, rs, ag))
    assert_same_times(build_schedule(coll, "ring", chunks=2), old, spec, ports, gamma)
