"""The engine against the engine it replaced (tests/engine_ref, frozen before issue 9) on a battery of cases.

Makespans must agree everywhere. Per-transfer start, arrival and end times must agree wherever the reference has
no near-ties: a case counts as tie-free when the reference itself gives the same per-transfer times (to 1e-9)
with every bandwidth moved by one float step; where it does not, float near-ties decided its event order and only
the makespan is compared.
"""

from __future__ import annotations

import engine_ref
import numpy as np
import pytest
from scale_cases import CASES, case_id, nudged, shuffled

from simulator.algorithms import build_schedule
from simulator.collective import Collective
from simulator.engine import EngineOptions, simulate
from simulator.topology import parse_topology


def test_the_battery_is_large_and_covers_every_op():
    assert len(CASES) >= 30 and {c[0] for c in CASES} == {"allreduce", "allgather", "reduce_scatter", "broadcast", "reduce",
                                                         "alltoall", "gather", "scatter"}


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.allclose(a, b, rtol=1e-9, atol=1e-15, equal_nan=True))


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_engine_agrees_with_the_previous_engine(case):
    op, algo, p, spec, ports, contention, nbytes, gamma, shuffle = case
    sched = build_schedule(Collective(op, p, nbytes), algo)
    topo = parse_topology(spec)
    if shuffle:
        topo = shuffled(topo, p)
    options = EngineOptions(gamma=gamma, ports=ports, contention=contention)
    plain = sched.without_joins()  # the previous engine knows nothing of joins (it would send them as messages)
    join = sched.arrays.get("join")
    keep = slice(None) if join is None else ~join
    ref = engine_ref.simulate(plain, topo, options)
    new = simulate(sched, topo, options)
    assert new.time == pytest.approx(ref.time, rel=1e-9, abs=1e-15)
    ref_nudged = engine_ref.simulate(plain, nudged(topo), options)
    if all(_close(getattr(ref, k), getattr(ref_nudged, k)) for k in ("start", "arrive", "end")):
        for k in ("start", "arrive", "end"):
            assert _close(getattr(new, k)[keep], getattr(ref, k)), f"{k} differs from the previous engine"


def _as_dict(table) -> dict:
    return {int(k): (float(b), float(s), int(pk)) for k, b, s, pk in zip(table["link"], table["bytes"], table["busy_s"],
                                                                         table["peak_flows"])}


@pytest.mark.parametrize("case", CASES[::3], ids=[case_id(c) for c in CASES[::3]])
def test_the_engines_link_counts_equal_the_table_derived_from_the_times(case):
    # the engine counts bytes, busy time and peak messages per link as it runs; Trace can also derive them afterwards
    # from the per-transfer times and routes (what it did before): the two must agree
    op, algo, p, spec, ports, contention, nbytes, gamma, shuffle = case
    topo = parse_topology(spec)
    if shuffle:
        topo = shuffled(topo, p)
    trace = simulate(build_schedule(Collective(op, p, nbytes), algo), topo, EngineOptions(gamma=gamma, ports=ports,
                                                                                          contention=contention))
    counted = _as_dict(trace.link_table)
    trace.engine_links = None
    del trace.__dict__["link_table"]
    derived = _as_dict(trace.link_table)
    assert counted.keys() == derived.keys()
    for link, (b, s, pk) in counted.items():
        assert b == derived[link][0] and pk == derived[link][2]
        assert s == pytest.approx(derived[link][1], rel=1e-9, abs=1e-15)
        assert s <= trace.time  # busy at most the whole run
