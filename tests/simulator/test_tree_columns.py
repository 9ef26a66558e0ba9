"""Binomial broadcast, reduce, allreduce, gather, scatter and the double binary tree built as arrays equal the
inferred-dependency form.

The inferred form is what ScheduleBuilder finds from the data for the same messages in the same order
(`binomial_reduce` / `binomial_broadcast`, and the double binary tree loop as it was written before the arrays).
"""

import pytest
from reference_algorithms import binomial_broadcast, binomial_reduce, gather_binomial_inferred, scatter_binomial_inferred
from same_times import MACHINES, assert_same_times, rows

from simulator.algorithms import build_schedule
from simulator.algorithms.phases import chunked, relative_group
from simulator.algorithms.tree import dtree_parents, tree_depths
from simulator.collective import Collective
from simulator.schedule import ScheduleBuilder
from simulator.semantics import check


def _binomial_inferred(coll):
    b = ScheduleBuilder(coll, "binomial")
    whole = [(0, coll.count)]
    if coll.op == "allreduce":
        group = list(range(coll.ranks))
        binomial_broadcast(b, group, whole, step=binomial_reduce(b, group, whole))
    else:
        phase = binomial_broadcast if coll.op == "broadcast" else binomial_reduce
        phase(b, relative_group(coll.ranks, coll.root), whole)
    return b.build()


@pytest.mark.slow
@pytest.mark.parametrize("op", ["broadcast", "reduce", "allreduce"])
def test_binomial_array_form_is_the_inferred_form_and_correct(op):
    for p in range(1, 40):
        for count in (0, 1, p - 1, 3 * p + 2):
            for root in sorted({0, p // 2, p - 1}) if op != "allreduce" else (0,):
                coll = Collective(op, p, count, "int8", root=root)
                fast, slow = build_schedule(coll, "binomial"), _binomial_inferred(coll)
                result = check(fast)
                assert result.ok, result.message
                assert rows(fast) == rows(slow), (p, count, root)


CASES = [("allreduce", 8, "switch:8", 1, 0.0), ("allreduce", 12, "ring:12", 1, 1e-10),
         ("allreduce", 13, "cluster:nodes=4,gpus=4,oversub=2", 0, 2e-11), ("reduce", 13, "ideal:13", 1, 3e-11),
         ("broadcast", 24, "torus:4x6", 2, 0.0), ("reduce", 6, "switch:6", 1, 1e-10)]


@pytest.mark.parametrize("op, p, spec, ports, gamma", CASES)
def test_binomial_engine_times_equal_the_inferred_form(op, p, spec, ports, gamma):
    coll = Collective(op, p, 4 * (p * 1000 + 3), root=p // 3 if op != "allreduce" else 0)
    assert_same_times(build_schedule(coll, "binomial"), _binomial_inferred(coll), spec, ports, gamma)


def _dbt_inferred(coll, chunks):
    """The double binary tree as it was built before the arrays: the same messages through the inferring builder."""
    b = ScheduleBuilder(coll, "double_binary_tree")
    p = coll.ranks
    if p == 1:
        return b.build()
    orders = []
    for parent in dtree_parents(p):
        depth = tree_depths(parent)
        orders.append((parent, sorted((r for r in range(p) if parent[r] >= 0), key=lambda r: depth[r]), depth))
    height = max(max(depth) for _, _, depth in orders)
    half = (coll.count + 1) // 2
    pieces = [chunked((0, half), chunks), chunked((half, coll.count - half), chunks)]
    for c in range(chunks):
        for (parent, nodes, depth), chunk in zip(orders, pieces):
            if c < len(chunk):
                for r in reversed(nodes):
                    b.reduce(r, parent[r], "out", *chunk[c], step=c + height - depth[r])
        for (parent, nodes, depth), chunk in zip(orders, pieces):
            if c < len(chunk):
                for r in nodes:
                    b.copy(parent[r], r, "out", *chunk[c], step=c + height + depth[r] - 1)
    return b.build()


@pytest.mark.parametrize("chunks", [1, 2, 5])
def test_double_binary_tree_array_form_is_the_inferred_form_and_correct(chunks):
    for p in range(1, 40):
        for count in (0, 1, p - 1, 3 * p + 2):
            coll = Collective("allreduce", p, count, "int8")
            fast = build_schedule(coll, "double_binary_tree", chunks=chunks)
            result = check(fast)
            assert result.ok, result.message
            assert rows(fast) == rows(_dbt_inferred(coll, chunks)), (p, count)


@pytest.mark.parametrize("p, spec, ports, gamma, chunks", [
    (8, "switch:8", 1, 0.0, 1), (12, "ring:12", 1, 1e-10, 3), (13, "cluster:nodes=4,gpus=4,oversub=2", 0, 2e-11, 2),
    (16, "fat_tree:hosts=16,leaf=4,oversub=2", 1, 1e-10, 4), (7, "ideal:7", 2, 3e-11, 1)])
def test_double_binary_tree_engine_times_equal_the_inferred_form(p, spec, ports, gamma, chunks):
    coll = Collective("allreduce", p, 4 * (p * 1000 + 3))
    fast = build_schedule(coll, "double_binary_tree", chunks=chunks)
    assert_same_times(fast, _dbt_inferred(coll, chunks), spec, ports, gamma)


def _chain_inferred(coll, chunks):
    """The pipelined chain as it was built before the arrays, through the inferring builder."""
    b = ScheduleBuilder(coll, "pipelined_chain")
    group = relative_group(coll.ranks, coll.root)
    for c, (off, count) in enumerate(chunked((0, coll.count), chunks)):
        for i in range(len(group) - 1):
            b.copy(group[i], group[i + 1], "out", off, count, step=c + i)
    return b.build()


@pytest.mark.parametrize("chunks", [1, 3])
def test_pipelined_chain_array_form_is_the_inferred_form(chunks):
    for p in range(1, 20):
        for count in (0, 1, p + 2):
            for root in sorted({0, p - 1}):
                coll = Collective("broadcast", p, count, "int8", root=root)
                fast = build_schedule(coll, "pipelined_chain", chunks=chunks)
                assert check(fast).ok
                assert rows(fast) == rows(_chain_inferred(coll, chunks)), (p, count, root)
    coll = Collective("broadcast", 12, 4 * 12003, root=5)
    fast = build_schedule(coll, "pipelined_chain", chunks=chunks)
    assert_same_times(fast, _chain_inferred(coll, chunks), "ring:12", 1, 0.0)


SUBTREE = [("scatter", scatter_binomial_inferred), ("gather", gather_binomial_inferred)]


def _roots(p):
    return sorted({0, min(1, p - 1), p // 2, p - 1})


@pytest.mark.slow
@pytest.mark.parametrize("op, inferred", SUBTREE)
def test_binomial_subtree_array_form_is_the_inferred_form_and_correct(op, inferred):
    # subtrees wrap past rank p - 1 when the root is not 0: a transfer then carries two pieces
    for p in list(range(1, 34)) + [48, 64, 100]:
        for count in sorted({0, 1, p - 1, p + 1, 3 * p + 2, 7 * p - 2}):
            for root in _roots(p):
                coll = Collective(op, p, count, "int8", root=root)
                fast, slow = build_schedule(coll, "binomial"), inferred(coll)
                assert rows(fast) == rows(slow), (p, count, root)
                assert fast.scratch_count == slow.scratch_count == 0
                result = check(fast)
                assert result.ok, (p, count, root, result.message)


def test_binomial_subtree_pieces_wrap_around_the_root():
    # p = 6, root 3: member 2 (rank 5) sends members 2, 3 (ranks 5, 0) to the root: two pieces, blocks 5 then 0
    coll = Collective("gather", 6, 12, "int8", root=3)
    t = next(t for t in build_schedule(coll, "binomial").transfers if t.src == 5)
    assert (t.dst, [(q.src_off, q.count) for q in t.pieces]) == (3, [(10, 2), (0, 2)])


@pytest.mark.parametrize("op, inferred", SUBTREE)
@pytest.mark.parametrize("p, spec, ports, gamma", MACHINES)
def test_binomial_subtree_engine_times_equal_the_inferred_form(op, inferred, p, spec, ports, gamma):
    for root in (0, p // 3):
        coll = Collective(op, p, 4 * (p * 1000 + 3), root=root)
        assert_same_times(build_schedule(coll, "binomial"), inferred(coll), spec, ports, gamma)
