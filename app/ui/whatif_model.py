"""What-if hardware: machines (presets or builders) on a list of collectives and sizes, each timed by the engine."""

from __future__ import annotations

from collections.abc import Callable

from collsim.predict import PredictRequest
from collsim.step import StepRequest
from collsim.whatif import WhatifRequest
from simulator.algorithms import build_schedule, get, names_for
from simulator.collective import Collective
from simulator.engine import EngineOptions, simulate
from simulator.engine.bound import PairCosts, lower_bound, safe
from simulator.errors import CollsimError
from simulator.program.whatif import StepCase
from simulator.schedule import Schedule
from simulator.topology.model import Topology
from simulator.topology.presets import MACHINE_PRESETS

Builder = Callable[[Collective, str], Schedule]

MAX_MACHINES = 3
MAX_SIZES = 8
MAX_RANKS = 64


def machine_ranks(spec: str) -> int:
    """Ranks a machine runs: all its devices (at most MAX_RANKS)."""
    return _machine(spec).num_devices


def _machine(spec: str) -> Topology:
    """The machine's topology, checked against the app's bounds and this page's MAX_RANKS."""
    from app.ui.inputs import topology_input

    topo = topology_input(spec, 1, "machine")
    if topo.num_devices > MAX_RANKS:
        raise CollsimError(f"machine: {spec!r} has {topo.num_devices} GPUs, over this page's limit of {MAX_RANKS}; "
                           "use fewer nodes")
    return topo


def best_time(spec: str | Topology, op: str, nbytes: int, build: Builder = build_schedule,
              pairs: PairCosts | None = None) -> tuple[float, str]:
    """The engine's time of the fastest algorithm for (op, nbytes) on every GPU of the machine, and its name (the first
    by name on a tie). Algorithms are run in order of a lower bound on their engine time (simulator/engine/bound.py), and one
    whose bound is already above the best time found is not run: it cannot win, so the answer is the same as running
    them all. `build` makes a schedule from (collective, name): pass a cached one to share schedules between machines
    with as many GPUs; `pairs` are the machine's route costs, kept across calls."""
    topo = _machine(spec) if isinstance(spec, str) else spec
    ranks = topo.num_devices
    coll = Collective(op, ranks, nbytes, "int8")
    options = EngineOptions()
    pairs = pairs or PairCosts(topo, options)
    candidates = []
    for name in names_for(op):
        if get(op, name).refusal(ranks):
            continue
        schedule = build(coll, name)
        # safe: less the engine's clock rounding and the last bits of its sums, taken in other orders
        candidates.append((safe(lower_bound(schedule, topo, options, pairs), len(schedule)), name, schedule))
    best = (float("inf"), "")
    for bound, name, schedule in sorted(candidates, key=lambda c: c[:2]):
        if (bound, name) > best:
            continue
        best = min(best, (simulate(schedule, topo, options).time, name))
    return best


def machine_rows(spec: str, ops: list[str], sizes: list[int], build: Builder = build_schedule) -> list[dict]:
    """One row per (op, size) on one machine: ranks, best algorithm, engine time and bus bandwidth."""
    topo = _machine(spec)
    ranks = topo.num_devices
    pairs = PairCosts(topo, EngineOptions())
    rows = []
    for op in ops:
        for n in sizes:
            seconds, name = best_time(topo, op, n, build, pairs)
            coll = Collective(op, ranks, n, "int8")
            rows.append({"machine": spec, "ranks": ranks, "op": op, "bytes": n, "best algorithm": name,
                         "time (us)": seconds * 1e6, "busbw (GB/s)": coll.busbw(seconds) / 1e9 if seconds > 0 else 0.0})
    return rows


LINKS_ONLY_MODE = "best collsim algorithm"  # the other way the page times collectives, named in the errors below


def nccl_rows(spec: str, ops: list[str], sizes: list[int]) -> list[dict]:
    """One row per (op, size) on one preset machine, timed as `collsim predict` times it (simulator.nccl.predict.predict on
    all its GPUs, float32 as nccl-tests): machine_rows' columns, with "best algorithm" the collsim schedule the engine
    ran, plus NCCL's algorithm, protocol and channels."""
    from simulator.nccl import predict as nccl

    wrong = [op for op in ops if op not in nccl.OPS]
    if wrong:
        raise CollsimError(f"collectives: {', '.join(map(repr, wrong))} {'is' if len(wrong) == 1 else 'are'} not timed as NCCL runs "
                           f"it; expected {', '.join(nccl.OPS)}, or choose '{LINKS_ONLY_MODE}'")
    odd = [n for n in sizes if n % 4]
    if odd:
        raise CollsimError(f"sizes: {odd[0]} bytes is not a whole number of float32 elements (NCCL's timing runs "
                           "float32, as nccl-tests); expected multiples of 4 bytes, such as 1MiB")
    topo = _machine(spec)
    if not nccl.knows(topo):
        raise CollsimError(f"machine: {spec.strip()!r} is not a preset NCCL's model knows; expected one of "
                           f"{', '.join(MACHINE_PRESETS)} (add :nodes=N), or choose '{LINKS_ONLY_MODE}'")
    ranks = topo.num_devices
    if ranks > nccl.MAX_GPUS:
        raise CollsimError(f"machine: {spec.strip()!r} has {ranks} GPUs; predict takes at most {nccl.MAX_GPUS}")
    rows = []
    for op in ops:
        for r in PredictRequest(preset=spec.strip(), op=op, sizes=tuple(sizes)).run().rows:
            coll = Collective(op, ranks, r.bytes, "float32")
            rows.append({"machine": spec, "ranks": ranks, "op": op, "bytes": r.bytes, "best algorithm": r.algorithm,
                         "time (us)": r.time_s * 1e6, "busbw (GB/s)": coll.busbw(r.time_s) / 1e9,
                         "NCCL algorithm": r.nccl_algo, "protocol": r.proto, "channels": r.channels})
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
    schedules: dict = {}

    def build(coll: Collective, name: str):
        """Each schedule built once for all the machines with as many GPUs."""
        key = (coll.op, coll.ranks, coll.nbytes, name)
        if key not in schedules:
            schedules[key] = build_schedule(coll, name)
        return schedules[key]

    return [row for spec in machines for row in machine_rows(spec, ops, sizes, build)]


# ---- training steps: the scenarios and the evaluation `collsim whatif` runs ------------------------------------------

STEP_SCENARIOS = ("ddp", "fsdp", "tp", "hybrid")
STEP_MODES = ("isolated", "auto", "exact")  # isolated first: a DDP step on 16 GPUs takes 0.2 s, exact 6 s
MAX_TP = 8
MAX_EXACT_GPUS = 16  # exact (and auto) runs expand every call: a DDP step on 32 GPUs took 15 s


def default_step_timing(machines: list[str]) -> str:
    """The step view's default timing, by `collsim whatif`'s own rule (nccl_timing.default_timing: 'nccl' when NCCL's
    model knows every machine, else 'links'), each machine built within this page's bounds (a spec the page refuses
    counts as unknown; the page reports its error)."""
    from simulator.program.nccl_timing import default_timing

    return default_timing(machines, parse=_machine).timing


def step_whatif(machine: str, scenario: str, model: str, gpu: str = "", tp: int = 0, mfu: float = 0.4,
                mode: str = "isolated", timing: str = "links") -> WhatifRequest:
    """The request `collsim whatif SCENARIO --machines MACHINE --model ... --mode ... --timing ... --no-sensitivity
    --jobs 1` makes, with the request's own defaults for everything the page does not set (tp 0 or gpu '' = the
    scenario's or machine's default), within this page's bounds."""
    gpus = machine_ranks(machine)  # the page's bounds (and its field name, machine) first
    step = StepCase(scenario=scenario, machine="", model=model, gpu=gpu or None, tp=int(tp) or None, mfu=float(mfu),
                    mode=mode, timing=timing)
    request = WhatifRequest(step, (machine.strip(),), sensitivity=False, jobs=1)
    if mode != "isolated" and gpus > MAX_EXACT_GPUS:
        raise CollsimError(f"mode: {mode!r} on the {gpus} GPUs of {machine.strip()!r} is over this page's limit of "
                           f"{MAX_EXACT_GPUS} GPUs for runs that expand every call; expected 'isolated', or "
                           "`collsim whatif` on the command line")
    return request


def step_case_for(machine: str, scenario: str, model: str, gpu: str = "", tp: int = 0, mfu: float = 0.4,
                  mode: str = "isolated", timing: str = "links") -> StepRequest:
    """The machine's training-step request, as step_whatif's request makes it."""
    return step_whatif(machine, scenario, model, gpu, tp, mfu, mode, timing).cases[0]


def step_row(machine: str, scenario: str, model: str, gpu: str = "", tp: int = 0, mfu: float = 0.4,
             mode: str = "isolated", timing: str = "links") -> dict:
    """One machine's training step, as `collsim whatif` evaluates it (collsim/whatif.py WhatifRequest)."""
    return step_whatif(machine, scenario, model, gpu, tp, mfu, mode, timing).run().rows[0]


def step_table_row(row: dict) -> dict:
    """The page's table row: times in ms, tokens/s, efficiency, and how the calls were timed."""
    from simulator.program.whatif import calls_timed

    return {"machine": row["label"], "gpu": row["gpu"], "gpus": row["gpus"], "tp": row["tp"], "dp": row["dp"],
            "step (ms)": row["step_s"] * 1e3, "compute (ms)": row["compute_s"] * 1e3,
            "exposed comm (ms)": row["exposed_s"] * 1e3, "tokens/s": row["tokens_per_s"],
            "efficiency": row["efficiency"], "run": row["mode"], "calls timed": calls_timed(row)}

