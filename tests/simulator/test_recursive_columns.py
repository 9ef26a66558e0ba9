"""Recursive doubling and halving (allreduce, allgather, reduce-scatter, Rabenseifner) built as arrays equal the
inferred form.

The inferred form is what ScheduleBuilder finds from the data for the same messages in the same order (the fold
steps and the phases of phases.py, as the builders were written before the arrays).
"""

import pytest
from reference_algorithms import (
    allgather_recursive_doubling_inferred,
    binomial_gather,
    doubling_allgather,
    doubling_allreduce,
    halving_reduce_scatter,
)
from same_times import MACHINES, assert_same_times, rows

from simulator.algorithms import build_schedule
from simulator.algorithms.phases import block_segs, fold, merge, pieces_of, relative_group, survivor_spans
from simulator.collective import Collective, offsets_of, split_counts
from simulator.schedule import ScheduleBuilder, region
from simulator.semantics import check


def _doubling_inferred(coll):
    b = ScheduleBuilder(coll, "recursive_doubling")
    survivors, pairs = fold(coll.ranks)
    for extra, keep in pairs:
        b.send(extra, keep, region("out", 0, coll.count), reduce=True, step=0)
    step = doubling_allreduce(b, survivors, (0, coll.count), 1 if pairs else 0)
    for extra, keep in pairs:
        b.send(keep, extra, region("out", 0, coll.count), step=step)
    return b.build()


def test_doubling_array_form_is_the_inferred_form_and_correct():
    for p in range(1, 40):
        for count in (0, 1, p - 1, 3 * p + 2):
            coll = Collective("allreduce", p, count, "int8")
            fast, slow = build_schedule(coll, "recursive_doubling"), _doubling_inferred(coll)
            result = check(fast)
            assert result.ok, result.message
            assert rows(fast) == rows(slow), (p, count)
            assert fast.scratch_count == slow.scratch_count


CASES = [(8, "switch:8", 1, 0.0), (12, "ring:12", 1, 1e-10), (16, "cluster:nodes=4,gpus=4,oversub=2", 0, 2e-11),
         (13, "ideal:13", 1, 3e-11), (24, "torus:4x6", 2, 0.0), (6, "switch:6", 1, 1e-10)]


@pytest.mark.parametrize("p, spec, ports, gamma", CASES)
def test_doubling_engine_times_equal_the_inferred_form(p, spec, ports, gamma):
    coll = Collective("allreduce", p, 4 * (p * 1000 + 3))
    assert_same_times(build_schedule(coll, "recursive_doubling"), _doubling_inferred(coll), spec, ports, gamma)


def _halving_inferred(coll):
    """Reduce-scatter recursive halving as it was built before the arrays, through the inferring builder."""
    b = ScheduleBuilder(coll, "recursive_halving")
    p, blocks = coll.ranks, block_segs(coll.block_offsets)
    survivors, pairs = fold(p)
    for extra, keep in pairs:
        b.send(extra, keep, region("out", 0, coll.count), reduce=True, step=0)
    segs = [merge(blocks[lo:hi]) for lo, hi in survivor_spans(p)]
    step = halving_reduce_scatter(b, survivors, segs, step=1 if pairs else 0)
    for extra, keep in pairs:
        b.send(keep, extra, pieces_of([blocks[extra]]), step=step)
    return b.build()


def _rabenseifner_inferred(coll):
    """Allreduce Rabenseifner as it was built before the arrays, through the inferring builder."""
    b = ScheduleBuilder(coll, "rabenseifner")
    survivors, pairs = fold(coll.ranks)
    whole = region("out", 0, coll.count)
    for extra, keep in pairs:
        b.send(extra, keep, whole, reduce=True, step=0)
    segs = block_segs(offsets_of(split_counts(coll.count, len(survivors))))
    step = halving_reduce_scatter(b, survivors, segs, step=1 if pairs else 0)
    step = doubling_allgather(b, survivors, segs, step=step)
    for extra, keep in pairs:
        b.send(keep, extra, whole, step=step)
    return b.build()


def _reduce_rabenseifner_inferred(coll):
    """Reduce Rabenseifner as it was built before the arrays (ranks relative to the root), through the inferring
    builder."""
    b = ScheduleBuilder(coll, "rabenseifner")
    group = relative_group(coll.ranks, coll.root)
    survivors, pairs = fold(coll.ranks)
    for extra, keep in pairs:
        b.send(group[extra], group[keep], region("out", 0, coll.count), reduce=True, step=0)
    members = [group[s] for s in survivors]
    segs = block_segs(offsets_of(split_counts(coll.count, len(members))))
    binomial_gather(b, members, segs, step=halving_reduce_scatter(b, members, segs, step=1 if pairs else 0))
    return b.build()


HALVING = [("reduce_scatter", "recursive_halving", _halving_inferred), ("allreduce", "rabenseifner", _rabenseifner_inferred),
           ("reduce", "rabenseifner", _reduce_rabenseifner_inferred)]


@pytest.mark.slow
@pytest.mark.parametrize("op, name, inferred", HALVING)
def test_halving_array_form_is_the_inferred_form_and_correct(op, name, inferred):
    for p in range(1, 40):
        for count in (0, 1, 2, p - 1, p + 1, 3 * p + 2):
            for root in sorted({0, p // 2, p - 1}) if op == "reduce" else (0,):
                coll = Collective(op, p, count, "int8", root=root)
                fast = build_schedule(coll, name)
                result = check(fast)
                assert result.ok, result.message
                assert rows(fast) == rows(inferred(coll)), (p, count, root)


@pytest.mark.parametrize("op, name, inferred", HALVING)
@pytest.mark.parametrize("p, spec, ports, gamma", CASES)
def test_halving_engine_times_equal_the_inferred_form(op, name, inferred, p, spec, ports, gamma):
    coll = Collective(op, p, 4 * (p * 1000 + 3), root=p // 3 if op == "reduce" else 0)
    assert_same_times(build_schedule(coll, name), inferred(coll), spec, ports, gamma)


@pytest.mark.slow
def test_allgather_doubling_array_form_is_the_inferred_form_and_correct():
    # the fold-out carries every block but the extra's own: two pieces, one when that block is empty
    for p in list(range(1, 34)) + [48, 100, 127]:
        for count in sorted({0, 1, 2, p - 1, p + 1, 3 * p + 2, 7 * p - 2}):
            coll = Collective("allgather", p, count, "int8")
            fast, slow = build_schedule(coll, "recursive_doubling"), allgather_recursive_doubling_inferred(coll)
            assert rows(fast) == rows(slow), (p, count)
            assert fast.scratch_count == slow.scratch_count == 0
            result = check(fast)
            assert result.ok, (p, count, result.message)


def test_allgather_doubling_fold_out_has_two_pieces():
    # p = 6, 12 elements (2 per rank): rank 2 hands rank 3 blocks 0-2 and 4-5 (elements 0..5 and 8..11)
    t = build_schedule(Collective("allgather", 6, 12, "int8"), "recursive_doubling").transfers[-1]
    assert (t.src, t.dst, [(q.src_off, q.count) for q in t.pieces]) == (2, 3, [(0, 6), (8, 4)])


@pytest.mark.parametrize("p, spec, ports, gamma", MACHINES)
def test_allgather_doubling_engine_times_equal_the_inferred_form(p, spec, ports, gamma):
    coll = Collective("allgather", p, 4 * (p * 1000 + 3))
    fast, slow = build_schedule(coll, "recursive_doubling"), allgather_recursive_doubling_inferred(coll)
    assert_same_times(fast, slow, spec, ports, gamma)
