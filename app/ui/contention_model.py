"""Topology and contention: one collective on a machine, then again with a late rank or a loaded link (no Streamlit)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from app.ui.inputs import size_input, topology_input
from simulator.algorithms import build_schedule, get
from simulator.algorithms.registry import check_ranks
from simulator.collective import Collective
from simulator.engine import EngineOptions, simulate
from simulator.errors import CollsimError
from simulator.trace import Trace

MAX_RANKS = 64
MAX_DELAY_US = 10_000


@dataclass
class Contention:
    """The run as chosen (`before`) and with the disturbance (`after`), on one topology."""

    before: Trace
    after: Trace
    disturbance: str


def utilisation(trace: Trace) -> dict[int, float]:
    """Link id -> bytes / bandwidth left to this collective / run time: the share of the run the link was needed for
    (bandwidth left: after the background load the run was given on that link)."""
    table = trace.link_table
    total = trace.time
    if total <= 0:
        return {}
    background = trace.options.background
    return {int(k): float(b / (trace.topology.bandwidth[int(k)] * (1.0 - background.get(int(k), 0.0))) / total)
            for k, b in zip(table["link"], table["bytes"])}


def busiest(trace: Trace, k: int = 10) -> list[dict]:
    """The k links with the highest utilisation: name, bytes, utilisation, busy fraction, peak flows, background share."""
    table = trace.link_table
    util = utilisation(trace)
    background = trace.options.background
    rows = [{"link": trace.topology.link_name(int(lid)), "bytes": int(b), "utilisation": util.get(int(lid), 0.0),
             "busy fraction": float(s / trace.time) if trace.time > 0 else 0.0, "peak flows": int(pk),
             "other traffic": float(background.get(int(lid), 0.0))}
            for lid, b, s, pk in zip(table["link"], table["bytes"], table["busy_s"], table["peak_flows"])]
    return sorted(rows, key=lambda r: -r["utilisation"])[:k]


def run_contention(topology: str, op: str, algo: str, ranks: int, size: str, params: dict, root: int = 0,
                   late_rank: int = -1, delay_us: float = 0.0, load: float = 0.0) -> Contention:
    """Run once as chosen, once with rank `late_rank` starting `delay_us` late and `load` of the busiest link taken."""
    if not 1 <= ranks <= MAX_RANKS:
        raise CollsimError(f"ranks: {ranks} is outside this page's range; expected 1..{MAX_RANKS}")
    if not 0 <= delay_us <= MAX_DELAY_US:
        raise CollsimError(f"delay: {delay_us} us; expected 0..{MAX_DELAY_US} us")
    if not 0 <= load < 1:
        raise CollsimError(f"background load: {load}; expected 0 <= share < 1")
    check_ranks(get(op, algo), ranks)
    topo = topology_input(topology, ranks)
    schedule = build_schedule(Collective(op, ranks, size_input(size, "size", 4), "float32", root), algo, **params)
    before = simulate(schedule, topo, EngineOptions())
    options, said = {}, []
    if 0 <= late_rank < ranks and delay_us > 0:
        options["start_delay"] = {late_rank: delay_us * 1e-6}
        said.append(f"rank {late_rank} starts {delay_us:g} us late")
    link = before.busiest_link()
    if load > 0 and link is not None:
        options["background"] = {link["link"]: load}
        said.append(f"{load:.0%} of {link['name']} taken by other traffic")
    after = simulate(schedule, topo, EngineOptions(**options)) if options else before
    return Contention(before, after, "; ".join(said) or "nothing changed")


def chrome_json(trace: Trace) -> str:
    """The Chrome trace (Perfetto, chrome://tracing) as text."""
    return json.dumps({"traceEvents": trace.chrome_events(), "displayTimeUnit": "ns"},
                      default=lambda v: v.item() if isinstance(v, np.generic) else str(v))
