"""Binomial broadcast, reduce and allreduce built as arrays (written dependencies) equal the inferred-dependency form.

The inferred form is what ScheduleBuilder finds from the data for the same messages in the same order
(`binomial_reduce` / `binomial_broadcast`, as the builders were written before the arrays).
"""

import pytest
from test_recursive_columns import _rows, _same_engine_times

from simulator.algorithms import build_schedule
from simulator.algorithms.phases import binomial_broadcast, binomial_reduce, relative_group
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


@pytest.mark.parametrize("op", ["broadcast", "reduce", "allreduce"])
def test_binomial_array_form_is_the_inferred_form_and_correct(op):
    for p in range(1, 40):
        for count in (0, 1, p - 1, 3 * p + 2):
            for root in sorted({0, p // 2, p - 1}) if op != "allreduce" else (0,):
                coll = Collective(op, p, count, "int8", root=root)
                fast, slow = build_schedule(coll, "binomial"), _binomial_inferred(coll)
                result = check(fast)
                assert result.ok, result.message
                assert _rows(fast) == _rows(slow), (p, count, root)


CASES = [("allreduce", 8, "switch:8", 1, 0.0), ("allreduce", 12, "ring:12", 1, 1e-10),
         ("allreduce", 13, "cluster:nodes=4,gpus=4,oversub=2", 0, 2e-11), ("reduce", 13, "ideal:13", 1, 3e-11),
         ("broadcast", 24, "torus:4x6", 2, 0.0), ("reduce", 6, "switch:6", 1, 1e-10)]


@pytest.mark.parametrize("op, p, spec, ports, gamma", CASES)
def test_binomial_engine_times_equal_the_inferred_form(op, p, spec, ports, gamma):
    coll = Collective(op, p, 4 * (p * 1000 + 3), root=p // 3 if op != "allreduce" else 0)
    _same_engine_times(build_schedule(coll, "binomial"), _binomial_inferred(coll), spec, ports, gamma)
