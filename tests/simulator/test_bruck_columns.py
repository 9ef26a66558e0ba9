"""Bruck's alltoall built as arrays (multi-piece transfers, written dependencies) equals the inferred-dependency form.

The inferred form (`alltoall_bruck_inferred`) sends the same messages through ScheduleBuilder, which finds the
dependencies from the data; the array form writes them (`_alltoall_waits`) and merges pieces with
`merged_piece_columns`. Engine times on a few machines are equal too, and the numpy check passes.
"""

import numpy as np
import pytest
from reference_algorithms import alltoall_bruck_inferred
from same_times import MACHINES, assert_same_times, rows

from simulator.algorithms import build_schedule
from simulator.algorithms.bruck import alltoall_blocks
from simulator.algorithms.columns import merged_piece_columns
from simulator.collective import Collective
from simulator.schedule import BUFFERS
from simulator.semantics import check


def _counts(p):
    return sorted({0, 1, p - 1, p + 1, 3 * p + 2, p * p + 3, 5 * p * p - 2})


@pytest.mark.slow
def test_array_form_is_the_inferred_form_and_correct():
    for p in range(1, 34):
        for count in _counts(p):
            coll = Collective("alltoall", p, count, "int8")
            fast, slow = build_schedule(coll, "bruck"), alltoall_bruck_inferred(coll)
            assert rows(fast) == rows(slow), (p, count)
            assert fast.scratch_count == slow.scratch_count == 2 * count
            result = check(fast)
            assert result.ok, (p, count, result.message)


@pytest.mark.slow
@pytest.mark.parametrize("p", [48, 64, 100, 128])
def test_larger_array_forms_equal_the_inferred_form(p):
    for count in (p - 3, 7 * p + 5):
        coll = Collective("alltoall", p, count, "int8")
        fast = build_schedule(coll, "bruck")
        assert rows(fast) == rows(alltoall_bruck_inferred(coll)), (p, count)
        assert check(fast).ok


def test_dependencies_are_few_and_pieces_many():
    # p = 256: each transfer waits for at most 3 per earlier step, not once per slot it carries
    p = 256
    a = build_schedule(Collective("alltoall", p, p * p, "int8"), "bruck").columns
    steps = 8
    assert a["src"].size == p * (steps + 1)
    assert np.diff(a["dep_ptr"]).max() <= 3 * (steps - 1)
    assert a["count"].size > p * steps * (p // 4)  # p/2 slots of p elements per step, some merged
    assert a["count"].sum() == p * p + p * p * sum(alltoall_blocks(p))  # the own block, then the closed form's blocks


def test_merged_piece_columns_merges_contiguous_and_fills_empty_transfers():
    i, o, s = (BUFFERS.index(b) for b in ("in", "out", "scratch"))
    # transfer 0: two contiguous pieces (merged) around an empty one, then a gap; transfer 1: only empty; 2: a buffer change
    got = merged_piece_columns(3, [0, 0, 0, 0, 1, 2, 2], [i, i, i, i, i, i, s], [0, 4, 4, 9, 0, 0, 2],
                               [o, o, o, o, o, o, o], [10, 14, 14, 20, 0, 0, 2], [4, 0, 3, 1, 0, 2, 2])
    assert got["piece_ptr"].tolist() == [0, 2, 3, 5]
    assert got["src_off"].tolist() == [0, 9, 0, 0, 2]
    assert got["dst_off"].tolist() == [10, 20, 0, 0, 2]
    assert got["count"].tolist() == [7, 1, 0, 2, 2]
    assert got["src_buf"].tolist() == [i, i, s, i, s]
    assert got["dst_buf"].tolist() == [o, o, s, o, o]


@pytest.mark.parametrize("p, spec, ports, gamma", MACHINES)
def test_engine_times_equal_the_inferred_form(p, spec, ports, gamma):
    coll = Collective("alltoall", p, 4 * (p * p * 100 + 3))
    assert_same_times(build_schedule(coll, "bruck"), alltoall_bruck_inferred(coll), spec, ports, gamma)
