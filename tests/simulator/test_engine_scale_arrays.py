"""Array-built schedules: the columns are exactly the object-built schedules (same transfers, ids, dependencies)."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.algorithms import build_schedule
from simulator.algorithms.phases import block_segs
from simulator.algorithms.ring import ring_columns, ring_transfers
from simulator.collective import Collective
from simulator.schedule import ArraySchedule, ScheduleBuilder, csr_rows


@pytest.mark.parametrize("p", [1, 2, 3, 4, 5, 8, 13])
@pytest.mark.parametrize("chunks", [1, 2, 3])
@pytest.mark.parametrize("phases", [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize("elems", [0, 1, 7, 1000])
def test_ring_columns_are_ring_transfers(p, chunks, phases, elems):
    coll = Collective("allreduce", p, 4 * elems)
    segs = block_segs(coll.block_offsets)
    group = list(range(p))[::-1]  # any group order, any buffer and first step
    want = ring_transfers(group, segs, chunks, *phases, buf="scratch", step=3)
    got = ArraySchedule(coll, "ring", ring_columns(group, segs, chunks, *phases, buf="scratch", step=3)).transfers
    assert got == want


@pytest.mark.parametrize("op", ["allreduce", "allgather", "reduce_scatter"])
@pytest.mark.parametrize("p", [2, 5, 8])
def test_array_ring_schedule_equals_the_inferred_dependency_form(op, p):
    sched = build_schedule(Collective(op, p, 4 * 60 * p), "ring", chunks=2)
    assert isinstance(sched, ArraySchedule)
    b = ScheduleBuilder(sched.collective, "ring")
    for t in sched.transfers:
        b.send(t.src, t.dst, t.pieces, t.reduce, t.step)
    inferred = b.build()
    assert [t.deps for t in inferred.transfers] == [t.deps for t in sched.transfers]
    for key, col in inferred.arrays.items():
        assert np.array_equal(col, sched.arrays[key]), key
    sched.validate()
    assert len(sched) == len(inferred) and sched.num_steps == inferred.num_steps


def test_csr_rows_sorts_and_drops_repeats_and_blanks():
    ptr, idx = csr_rows(np.array([[3, -1, 1], [-1, -1, -1], [2, 2, 0]]))
    assert ptr.tolist() == [0, 2, 2, 4] and idx.tolist() == [1, 3, 0, 2]


def test_a_sweep_over_sizes_builds_the_ring_structure_once():
    from simulator.algorithms.ring import _ring_structure

    _ring_structure.cache_clear()
    small = build_schedule(Collective("allreduce", 6, 4 * 6 * 10), "ring")
    large = build_schedule(Collective("allreduce", 6, 4 * 6 * 1000 + 8), "ring")  # uneven blocks, same structure
    assert _ring_structure.cache_info().hits == 1 and _ring_structure.cache_info().misses == 1
    assert small.columns["dep_idx"] is large.columns["dep_idx"]  # shared, read-only
    assert not large.columns["dep_idx"].flags.writeable
    for sched in (small, large):  # still exactly the object-built transfers for each size
        segs = block_segs(sched.collective.block_offsets)
        assert sched.transfers == ring_transfers(range(6), segs)
    assert sum(t.count for t in large.transfers) != sum(t.count for t in small.transfers)
