"""PAT allgather and reduce-scatter built as arrays (multi-piece transfers, written dependencies) equal the
inferred-dependency form.

The inferred form (`pat_inferred`) sends the same messages through ScheduleBuilder, which finds the dependencies from
the data; the array form (`_pat`, what the registry builds) writes them from the trees' structure and merges pieces
with `merged_piece_columns`. Engine times on a few machines are equal too, and the numpy check passes.
"""

import numpy as np
import pytest
from reference_algorithms import pat_inferred
from same_times import MACHINES, assert_same_times, rows

from simulator.algorithms import build_schedule
from simulator.algorithms.forms import lg
from simulator.collective import Collective
from simulator.semantics import check

OPS = [("allgather", False), ("reduce_scatter", True)]


def _counts(p):
    return sorted({0, 1, p - 1, p + 1, 3 * p + 2, 7 * p - 2})


@pytest.mark.slow
@pytest.mark.parametrize("op, rs", OPS)
def test_array_form_is_the_inferred_form_and_correct(op, rs):
    for p in range(1, 34):
        for count in _counts(p):
            for aggregate in (None, 1, 3):
                coll = Collective(op, p, count, "int8")
                fast, slow = build_schedule(coll, "pat", aggregate=aggregate), pat_inferred(coll, aggregate, rs)
                assert rows(fast) == rows(slow), (p, count, aggregate)
                assert fast.scratch_count == slow.scratch_count == 0
                assert fast.params == slow.params
                result = check(fast)
                assert result.ok, (p, count, aggregate, result.message)


@pytest.mark.slow
@pytest.mark.parametrize("op, rs", OPS)
@pytest.mark.parametrize("p", [48, 64, 100, 128])
def test_larger_array_forms_equal_the_inferred_form(op, rs, p):
    for count, aggregate in ((p - 3, None), (7 * p + 5, None), (5 * p + 1, 4)):
        coll = Collective(op, p, count, "int8")
        fast = build_schedule(coll, "pat", aggregate=aggregate)
        assert rows(fast) == rows(pat_inferred(coll, aggregate, rs)), (p, count, aggregate)
        assert check(fast).ok


def test_dependencies_follow_the_trees():
    # p = 256, one message per step: an allgather transfer waits for the one earlier transfer per block it forwards,
    # at most one per earlier step; a reduce-scatter transfer for at most one per earlier step
    p = 256
    for op in ("allgather", "reduce_scatter"):
        a = build_schedule(Collective(op, p, p * p, "int8"), "pat").columns
        per = np.diff(a["dep_ptr"]).reshape(lg(p), p)
        assert a["src"].size == p * lg(p)
        assert per[0].max() == 0  # the first step waits for nothing
        assert (per <= np.arange(lg(p))[:, None]).all(), op
        assert a["count"].sum() == p * (p - 1) * p  # every rank moves p - 1 blocks of p elements


@pytest.mark.parametrize("op, rs", OPS)
@pytest.mark.parametrize("p, spec, ports, gamma", MACHINES)
def test_engine_times_equal_the_inferred_form(op, rs, p, spec, ports, gamma):
    for aggregate in (None, 2):
        coll = Collective(op, p, 4 * (p * 1000 + 3))
        fast, slow = build_schedule(coll, "pat", aggregate=aggregate), pat_inferred(coll, aggregate, rs)
        assert_same_times(fast, slow, spec, ports, gamma)
