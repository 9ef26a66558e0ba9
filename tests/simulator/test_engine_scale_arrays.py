"""Array-built schedules: the columns are exactly the object-built schedules (same transfers, ids, dependencies)."""

from __future__ import annotations

import numpy as np
import pytest
from reference_algorithms import ring_transfers

from simulator.algorithms import build_schedule
from simulator.algorithms.chunks import chunk_schedule, lower, rings
from simulator.algorithms.phases import block_segs
from simulator.collective import Collective
from simulator.schedule import ArraySchedule, ScheduleBuilder, csr_rows


@pytest.mark.parametrize("p", [1, 2, 3, 4, 5, 8, 13])
@pytest.mark.parametrize("chunks", [1, 2, 3])
@pytest.mark.parametrize("phases", [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize("elems", [0, 1, 7, 1000])
def test_the_ring_chunk_program_is_ring_transfers(p, chunks, phases, elems):
    coll = Collective("allreduce", p + 2, 4 * elems)
    segs = block_segs(coll.block_offsets)[:p]
    group = list(range(1, p + 1))[::-1]  # any group of ranks in any order, any first step; member i owns chunk i
    want = ring_transfers(group, segs, chunks, *phases, step=3)
    got = chunk_schedule(coll, "ring", _ring_over, segs, tuple(group), *phases, chunks=chunks).transfers
    assert got == want


def _ring_over(x, group, reduce_scatter, allgather):
    rings(x, group, range(len(group)), reduce_scatter, allgather, step=3)


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


def test_a_sweep_over_sizes_lowers_the_ring_once():
    lower.cache_clear()
    small = build_schedule(Collective("allreduce", 6, 4 * 6 * 10), "ring")
    large = build_schedule(Collective("allreduce", 6, 4 * 6 * 1000 + 8), "ring")  # uneven blocks, same structure
    assert lower.cache_info().hits == 1 and lower.cache_info().misses == 1
    assert small.columns["dep_idx"] is large.columns["dep_idx"]  # shared, read-only
    assert not large.columns["dep_idx"].flags.writeable
    for sched in (small, large):  # still exactly the object-built transfers for each size
        segs = block_segs(sched.collective.block_offsets)
        assert sched.transfers == ring_transfers(range(6), segs)
    assert sum(t.count for t in large.transfers) != sum(t.count for t in small.transfers)
