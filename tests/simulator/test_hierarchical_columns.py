"""Hierarchical allreduce built as arrays (written dependencies, one join per rank) equals the inferred-dependency form.

The inferred form (hierarchical_inferred) sends the same ring messages through ScheduleBuilder, which finds the
dependencies from the data; the array form adds one join per rank before the in-group allgather.
"""

import numpy as np
import pytest
from reference_algorithms import hierarchical_inferred
from same_times import without_joins

from simulator.algorithms import build_schedule
from simulator.collective import Collective
from simulator.engine import EngineOptions, simulate
from simulator.semantics import check
from simulator.topology import parse_topology


def _plain(sched):
    return [(t.id, t.src, t.dst, t.pieces, t.reduce, t.step, t.deps) for t in sched.transfers]


@pytest.mark.slow
@pytest.mark.parametrize("p", range(1, 34))
def test_array_form_is_the_inferred_form_and_correct(p):
    for group in (d for d in range(1, p + 1) if p % d == 0):
        for count in (0, 1, p - 1, 3 * p + 2):
            coll = Collective("allreduce", p, count, "int8")
            fast = build_schedule(coll, "hierarchical", group=group)
            result = check(fast)
            assert result.ok, (p, group, count, result.message)
            want = _plain(hierarchical_inferred(coll, group))
            got, _ = without_joins(fast)
            assert got == want, (p, group, count)
            assert _plain(fast.without_joins()) == want


def test_one_join_per_rank_with_n_dependencies():
    # 4 groups of 2: rank k*2 + j's segment is written by its in-group reduction, the last cross reduction into
    # its own block and 3 cross copies, so 5 edges into each join and one out of it per in-group first send
    p, g = 8, 2
    sched = build_schedule(Collective("allreduce", p, 64 * p), "hierarchical", group=g)
    a = sched.arrays
    joins = np.flatnonzero(a["join"])
    assert joins.size == p
    assert all(a["dep_ptr"][t + 1] - a["dep_ptr"][t] == 5 for t in joins)
    assert sorted(a["src"][joins]) == list(range(p))


def test_groups_of_one_or_all_have_no_joins():
    for group in (1, 6):
        sched = build_schedule(Collective("allreduce", 6, 600), "hierarchical", group=group)
        assert not sched.arrays["join"].any()


CASES = [(8, 2, "switch:8", 1, 0.0), (8, 4, "switch:8", 1, 1e-10), (16, 4, "cluster:nodes=4,gpus=4,oversub=2", 1, 2e-11),
         (16, 4, "cluster:nodes=4,gpus=4,oversub=2", 0, 0.0), (12, 3, "ring:12", 1, 1e-10), (9, 3, "ideal:9", 1, 3e-11)]


@pytest.mark.parametrize("p, group, spec, ports, gamma", CASES)
def test_engine_times_equal_the_inferred_form(p, group, spec, ports, gamma):
    coll = Collective("allreduce", p, 4 * (p * 1000 + 3))
    fast, slow = build_schedule(coll, "hierarchical", group=group), hierarchical_inferred(coll, group)
    _, keep = without_joins(fast)
    options = EngineOptions(gamma=gamma, ports=ports)
    a, b = simulate(fast, parse_topology(spec), options), simulate(slow, parse_topology(spec), options)
    for k in ("start", "arrive", "end"):
        assert np.array_equal(getattr(a, k)[keep], getattr(b, k)), k
    assert a.time == b.time
