"""van de Geijn's broadcast (binomial scatter + ring allgather) built as arrays with written dependencies equals the
inferred-dependency form (`broadcast_scatter_allgather_inferred`, through ScheduleBuilder): transfers, pieces and
dependencies; engine times on a few machines too; the numpy check passes."""

import pytest
from reference_algorithms import broadcast_scatter_allgather_inferred
from same_times import MACHINES, assert_same_times, rows

from simulator.algorithms import build_schedule
from simulator.collective import Collective
from simulator.semantics import check


def _roots(p):
    return sorted({0, min(1, p - 1), p // 2, p - 1})


@pytest.mark.slow
def test_array_form_is_the_inferred_form_and_correct():
    for p in range(1, 34):
        for count in sorted({0, 1, p - 1, p + 1, 3 * p + 2, 7 * p - 2}):
            for root in _roots(p):
                coll = Collective("broadcast", p, count, "int8", root=root)
                fast, slow = build_schedule(coll, "scatter_allgather"), broadcast_scatter_allgather_inferred(coll)
                assert rows(fast) == rows(slow), (p, count, root)
                assert fast.scratch_count == slow.scratch_count == 0
                result = check(fast)
                assert result.ok, (p, count, root, result.message)


@pytest.mark.slow
@pytest.mark.parametrize("p", [48, 64, 100, 128])
def test_larger_array_forms_equal_the_inferred_form(p):
    for count, root in ((p - 3, 0), (7 * p + 5, p // 3)):
        coll = Collective("broadcast", p, count, "int8", root=root)
        fast = build_schedule(coll, "scatter_allgather")
        assert rows(fast) == rows(broadcast_scatter_allgather_inferred(coll)), (p, count, root)
        assert check(fast).ok


def test_ring_waits_on_the_scatter():
    # p = 8, root 0: member 1's first ring send (its own block) waits for the scatter transfer into it; the ring copy
    # of block 6 into member 4 waits for the scatter transfer into 4 (it wrote block 6) and for 4's send to 6 (read it)
    p = 8
    a = build_schedule(Collective("broadcast", p, 8 * p, "int8"), "scatter_allgather")
    t = a.transfers
    into = {x.dst: x.id for x in t[:p - 1]}
    assert [x.dst for x in t[:p - 1]] == [4, 2, 6, 1, 3, 5, 7]
    assert t[p - 1 + 1].deps == (into[1],)  # step 0, member 1 sends block 1 to 2
    # block 6 reaches member 4 in ring step 5 from member 3 (transfer 7 + 5 * 8 + 3), which got it in step 4 from
    # member 2 (transfer 7 + 4 * 8 + 2)
    six = t[7 + 5 * 8 + 3]
    assert (six.src, six.dst, six.pieces[0].dst_off) == (3, 4, 6 * 8)
    assert six.deps == tuple(sorted((7 + 4 * 8 + 2, into[4], into[6])))


@pytest.mark.parametrize("p, spec, ports, gamma", MACHINES)
def test_engine_times_equal_the_inferred_form(p, spec, ports, gamma):
    coll = Collective("broadcast", p, 4 * (p * 1000 + 3), root=p // 2)
    fast, slow = build_schedule(coll, "scatter_allgather"), broadcast_scatter_allgather_inferred(coll)
    assert_same_times(fast, slow, spec, ports, gamma)
