"""Statistics from the run: the critical path walked on sorted arrays equals the walk on dictionaries it replaced."""

from __future__ import annotations

import numpy as np
import pytest
from scale_cases import CASES, case_id, shuffled

from simulator.algorithms import build_schedule
from simulator.collective import Collective
from simulator.engine import EngineOptions, simulate
from simulator.topology import parse_topology


def dict_walk(trace) -> list[int]:
    """The previous Trace.critical_path, verbatim: (rank, arrival) -> transfer dictionaries, the last id winning."""
    a = trace.schedule.arrays
    src, dst, ptr, idx = a["src"], a["dst"], a["dep_ptr"], a["dep_idx"]
    net = np.flatnonzero(src != dst)
    by_src = {(int(src[u]), float(trace.arrive[u])): int(u) for u in net}
    by_dst = {(int(dst[u]), float(trace.arrive[u])): int(u) for u in net}
    t = int(np.nanargmax(trace.end))
    path = [t]
    while len(path) <= len(trace.end):
        s = float(trace.start[t])
        deps = idx[ptr[t]:ptr[t + 1]]
        prev = None
        if deps.size:
            j = int(deps[np.argmax(trace.end[deps])])
            if trace.end[j] >= s:
                prev = j
        if prev is None:
            prev = by_src.get((int(src[t]), s), by_dst.get((int(dst[t]), s)))
            if prev is not None and prev == t:
                prev = None
        if prev is None or s <= 0:
            break
        path.append(prev)
        t = prev
    return path[::-1]


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_critical_path_equals_the_dictionary_walk(case):
    op, algo, p, spec, ports, contention, nbytes, gamma, shuffle = case
    topo = parse_topology(spec)
    if shuffle:
        topo = shuffled(topo, p)
    trace = simulate(build_schedule(Collective(op, p, nbytes), algo), topo,
                     EngineOptions(gamma=gamma, ports=ports, contention=contention))
    assert trace.critical_path() == dict_walk(trace)


def test_busy_fractions_never_exceed_one_on_a_long_ring():
    # the table derived afterwards offset each link's times by a whole second and lost the low digits (fractions
    # above 1.0 on microsecond runs); the engine counts busy time in integer ticks
    trace = simulate(build_schedule(Collective("allreduce", 64, 1 << 16), "ring"), parse_topology("switch:64"))
    table = trace.link_table
    assert table["busy_s"].max() <= trace.time and trace.busiest_link()["busy_fraction"] <= 1.0
