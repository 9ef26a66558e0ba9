"""What-if hardware: machines (presets or builders) on a list of collectives and sizes, each timed by the engine."""

from __future__ import annotations

from simulator.algorithms import build_schedule, get, names_for
from simulator.collective import Collective
from simulator.engine import EngineOptions, simulate
from simulator.errors import CollsimError
from simulator.topology import parse_topology

MAX_MACHINES = 3
MAX_SIZES = 8
MAX_RANKS = 64


def machine_ranks(spec: str) -> int:
    """Ranks a machine runs: all its devices (at most MAX_RANKS)."""
    from app.ui.inputs import topology_input

    devices = topology_input(spec, 1, "machine").num_devices
    if devices > MAX_RANKS:
        raise CollsimError(f"machine: {spec!r} has {devices} GPUs, over this page's limit of {MAX_RANKS}; use fewer nodes")
    return devices


def best_time(spec: str, op: str, nbytes: int) -> tuple[float, str]:
    """The engine's time of the fastest algorithm for (op, nbytes) on every GPU of the machine, and its name."""
    topo = parse_topology(spec)
    ranks = machine_ranks(spec)
    coll = Collective(op, ranks, nbytes, "int8")
    best = (float("inf"), "")
    for name in names_for(op):
        if get(op, name).refusal(ranks):
            continue
        seconds = simulate(build_schedule(coll, name), topo, EngineOptions()).time
        best = min(best, (seconds, name))
    return best


def machine_rows(spec: str, ops: list[str], sizes: list[int]) -> list[dict]:
    """One row per (op, size) on one machine: ranks, best algorithm, engine time and bus bandwidth."""
    ranks = machine_ranks(spec)
    rows = []
    for op in ops:
        for n in sizes:
            seconds, name = best_time(spec, op, n)
            coll = Collective(op, ranks, n, "int8")
            rows.append({"machine": spec, "ranks": ranks, "op": op, "bytes": n, "best algorithm": name,
                         "time (us)": seconds * 1e6, "busbw (GB/s)": coll.busbw(seconds) / 1e9 if seconds > 0 else 0.0})
    return rows


def check_choice(machines: list[str], sizes: list[int]) -> None:
    """Bounds of the page: 1..MAX_MACHINES machines, 1..MAX_SIZES sizes."""
    if not machines or len(machines) > MAX_MACHINES:
        raise CollsimError(f"machines: {len(machines)} given; expected 1..{MAX_MACHINES}")
    if not sizes or len(sizes) > MAX_SIZES:
        raise CollsimError(f"sizes: {len(sizes)} sizes; expected 1..{MAX_SIZES} on this page (the engine runs each)")


def whatif_rows(machines: list[str], ops: list[str], sizes: list[int]) -> list[dict]:
    """machine_rows for every machine (checked against the page's bounds first)."""
    check_choice(machines, sizes)
    return [row for spec in machines for row in machine_rows(spec, ops, sizes)]
