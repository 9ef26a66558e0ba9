"""Timed execution of a Program on the engine: step time, compute, communication, exposed communication,
per-operation times, the critical path and a Chrome trace with one track per rank per stream.

`run_program` lowers the program into one schedule (lower.py) and runs it with the engine's public
`simulate`. Mismatched calls are refused with the static checker's words; a program whose order
deadlocks stops with a `ProgramDeadlock` naming the wait-for cycle, found from what the engine ran
(which operations ended, which communication was entered but never started) and worded as
`collsim lint-program` words it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

import numpy as np

from ..engine import EngineOptions, simulate
from ..errors import CollsimError
from ..fileio import atomic_write
from ..topology.model import Topology
from ..trace import Trace
from .graph import labels
from .lower import Lowered, lower
from .matching import Problem, _Checker
from .model import COMPUTE, Program
from .nccl_timing import check_timing
from .symmetry import representative


class ProgramDeadlock(CollsimError):
    """The program cannot finish: `problems` name each wait-for cycle or call never made; `result` is what ran."""

    def __init__(self, problems: list[Problem], result: ProgramResult):
        super().__init__("program: deadlock: " + "; ".join(p.message for p in problems))
        self.problems = problems
        self.result = result


@dataclass
class OpTime:
    """One operation of one rank: when it was reached (deps met), when it started (all parties there), when it ended."""

    rank: int
    index: int
    kind: str
    stream: str
    label: str
    arrive: float
    start: float
    end: float
    group: str | None = None
    algorithm: str | None = None

    def to_dict(self) -> dict:
        return {k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in self.__dict__.items()}


@dataclass
class ProgramResult:
    """What a program run did, per rank and in total."""

    lowered: Lowered
    trace: Trace
    ops: list[OpTime]
    per_rank: list[dict] = field(default_factory=list)
    mode: str = "exact"
    timing: str = "links"
    timed: dict[str, int] = field(default_factory=dict)  # isolated runs: calls timed each way (isolated.py's methods)

    @property
    def program(self) -> Program:
        return self.lowered.program

    @property
    def step_time(self) -> float:
        """Seconds until the last operation of any rank ended."""
        ends = [o.end for o in self.ops if not np.isnan(o.end)]
        return max(ends, default=0.0)

    def totals(self) -> dict:
        """The step: time, and compute / communication / exposed communication of the rank that exposes the most."""
        worst = max(self.per_rank, key=lambda r: (r["exposed_s"], -r["rank"]), default=None)
        return {"step_s": self.step_time, "compute_s": worst["compute_s"] if worst else 0.0,
                "comm_s": worst["comm_s"] if worst else 0.0, "exposed_s": worst["exposed_s"] if worst else 0.0,
                "rank": worst["rank"] if worst else 0,
                "max_compute_s": max((r["compute_s"] for r in self.per_rank), default=0.0),
                "mode": self.mode, "timing": self.timing, "timed": dict(self.timed),
                "transfers": len(self.lowered.schedule.transfers), "events": self.trace.events, "wall_s": self.trace.wall_s}

    def collectives(self) -> list[dict]:
        """Each communication call of rank 0 (or of its lowest rank when rank 0 has none): start and end."""
        return [o.to_dict() for o in self.ops if o.kind not in (COMPUTE, "record", "wait")]

    def critical_path(self) -> list[dict]:
        """Segments from the start to the end of the step: each a compute (rank, name) or a communication (label, link)."""
        return _critical_path(self)

    def summary(self) -> dict:
        """Plain data for JSON."""
        return {"totals": self.totals(), "per_rank": self.per_rank, "critical_path": self.critical_path(),
                "operations": [o.to_dict() for o in self.ops]}

    def chrome_events(self, ranks: int | None = None) -> list[dict]:
        """Chrome trace events: a process per rank, a thread per stream; the machine's links from the engine's trace.

        `ranks` keeps the first that many ranks (and leaves the links out), for traces of large machines."""
        us = 1e6
        ev: list[dict] = []
        world = min(self.program.world, ranks or self.program.world)
        for r in range(world):
            ev.append({"name": "process_name", "ph": "M", "pid": 10 + r, "args": {"name": f"rank {r}"}})
            for k, s in enumerate(self.program.streams(r)):
                ev.append({"name": "thread_name", "ph": "M", "pid": 10 + r, "tid": k, "args": {"name": f"stream {s}"}})
        tids = {r: {s: k for k, s in enumerate(self.program.streams(r))} for r in range(world)}
        for o in self.ops:
            if o.rank >= world or np.isnan(o.end) or o.kind in ("record", "wait"):
                continue
            args = {"op": o.kind, "arrive_us": o.arrive * us}
            if o.group:
                args["group"], args["algorithm"] = o.group, o.algorithm
            if o.start > o.arrive:
                ev.append({"name": f"wait for {o.label}", "ph": "X", "pid": 10 + o.rank, "tid": tids[o.rank][o.stream],
                           "ts": o.arrive * us, "dur": (o.start - o.arrive) * us, "cat": "wait", "args": args})
            ev.append({"name": o.label, "ph": "X", "pid": 10 + o.rank, "tid": tids[o.rank][o.stream], "ts": o.start * us,
                       "dur": (o.end - o.start) * us, "cat": o.kind, "args": args})
        base = self.lowered.topology.base_links
        for e in self.trace.chrome_events() if ranks is None else ():
            if e.get("pid") == 2 and e.get("tid", 0) < base:  # the machine's links (lanes left out)
                ev.append(e)
        return ev

    def to_chrome(self, path) -> None:
        """Chrome trace JSON (Perfetto, chrome://tracing), written atomically."""
        atomic_write(path, json.dumps({"traceEvents": self.chrome_events(), "displayTimeUnit": "ns",
                                       "otherData": {"collsim": self.totals()}}))


MODES = ("auto", "exact", "isolated")
AUTO_LIMIT = 2_000_000  # estimated transfers above which mode 'auto' times calls in isolation


def estimate_transfers(program: Program) -> int:
    """About how many transfers the exact lowering needs: 2 p (p - 1) per collective call (a ring all-reduce)."""
    sizes = {g: len(m) for g, m in program.groups.items()}
    return sum(2 * sizes[op.group] * (sizes[op.group] - 1) for op in program.ops(min(program.ranks, default=0))
               if op.is_collective) * max(1, program.world // max(1, max(sizes.values(), default=1)))


def run_program(program: Program, topology: Topology, options: EngineOptions | None = None,
                algorithms: dict[str, str] | None = None, gpus_per_node: int | None = None,
                raise_on_deadlock: bool = True, mode: str = "auto", timing: str = "links") -> ProgramResult:
    """Run `program` on `topology`; mismatched calls and deadlocks raise CollsimError naming them.

    mode 'exact' expands every call into its schedule (calls share links); 'isolated' times each distinct call alone
    (isolated.py) and runs it as one step; 'auto' is exact up to AUTO_LIMIT estimated transfers.
    timing 'links' times calls with collsim's algorithms on the machine's links; 'nccl' times allreduce, allgather
    and reduce_scatter as NCCL runs them (nccl_timing.py) and implies isolated calls: 'auto' runs isolated and
    'exact' is refused, as are `algorithms` for those three ops (NCCL picks)."""
    if mode not in MODES:
        raise CollsimError(f"mode: {mode!r}; expected one of {', '.join(MODES)}")
    mode = check_timing(timing, mode, algorithms)
    options = replace(options or EngineOptions(), header_bytes=0, messages=None)  # lanes carry exact compute time
    if gpus_per_node is None:
        gpus_per_node = int(program.meta.get("meta", {}).get("scenario", {}).get("gpus_per_node", 8))
    calls, isolated, checker = None, None, None
    if mode == "isolated" or (mode == "auto" and estimate_transfers(program) > AUTO_LIMIT):
        from .isolated import IsolatedTimes

        isolated = calls = IsolatedTimes(topology, options, algorithms or {}, gpus_per_node, timing=timing)
        rep = representative(program, gpus_per_node)
        if rep is not None:  # one rank stands for all (symmetry.py): time calls on the full groups, run rank 0 alone
            topology.check_ranks(program.world)
            full = program.groups
            program = rep
            calls = lambda op, members: isolated(op, full[op.group])  # noqa: E731
    if program.world > 1 or "represents" not in program.meta:
        checker = _Checker(program)
        mismatches = checker.mismatches()
        if mismatches:
            raise CollsimError("program: mismatch: " + "; ".join(p.message for p in mismatches))
    lowered = lower(program, topology, algorithms, gpus_per_node, calls)
    trace = simulate(lowered.schedule, lowered.topology, options, raise_on_deadlock=False)
    mode = "exact" if calls is None else "isolated" if program.world > 1 or "represents" not in program.meta else "symmetric"
    result = ProgramResult(lowered, trace, _op_times(lowered, trace), mode=mode, timing=timing,
                           timed=dict(isolated.calls) if isolated is not None else {})
    by_rank: dict[int, list[OpTime]] = {r: [] for r in range(program.world)}
    for o in result.ops:
        by_rank[o.rank].append(o)
    result.per_rank = [_rank_totals(by_rank[r], r) for r in range(program.world)]
    if trace.stuck.size:
        problems = _deadlocks(checker or _Checker(program), lowered, trace)
        if raise_on_deadlock:
            raise ProgramDeadlock(problems, result)
    return result


def _deadlocks(checker: _Checker, lowered: Lowered, trace: Trace) -> list[Problem]:
    """What the engine left unfinished, named: operations that ended are done; calls reached but never started wait."""
    end = trace.end
    done = {node: True for node, t in lowered.end.items() if not np.isnan(end[t])}
    stuck = {node for node, t in lowered.gate.items() if not np.isnan(end[lowered.arrive[node]]) and np.isnan(end[t])}
    found = checker.deadlocks(done, stuck)
    return found or [Problem("deadlock", f"{int(trace.stuck.size)} transfers can never run")]


def _op_times(lowered: Lowered, trace: Trace) -> list[OpTime]:
    program, end = lowered.program, trace.end
    out = []
    for r in range(program.world):
        names = labels(program.ops(r))
        for i, op in enumerate(program.ops(r)):
            a = lowered.arrive[(r, i)]
            if op.op == COMPUTE:
                arrive, start = float(trace.start[a]), float(trace.start[a])
            else:
                arrive = float(end[a])
                g = lowered.gate.get((r, i))
                start = float(end[g]) if g is not None else arrive
            key = lowered.owner[lowered.gate[(r, i)]][1] if (r, i) in lowered.gate else None
            out.append(OpTime(r, i, op.op, op.stream, names[i], arrive, start, float(end[lowered.end[(r, i)]]),
                              op.group, lowered.algorithms.get(key) if key else None))
    return out


def _union(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[list[float]] = []
    for a, b in sorted(s for s in spans if _valid(s)):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [(a, b) for a, b in merged]


def _valid(span: tuple[float, float]) -> bool:
    return not (np.isnan(span[0]) or np.isnan(span[1])) and span[1] > span[0]


def _length(spans: list[tuple[float, float]]) -> float:
    return sum(b - a for a, b in spans)


def _minus(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    """Length of union a minus union b (both merged and sorted)."""
    total, j = 0.0, 0
    for lo, hi in a:
        cur = lo
        while j < len(b) and b[j][1] <= cur:
            j += 1
        k = j
        while k < len(b) and b[k][0] < hi:
            if b[k][0] > cur:
                total += b[k][0] - cur
            cur = max(cur, b[k][1])
            k += 1
        if cur < hi:
            total += hi - cur
    return total


def _rank_totals(mine: list[OpTime], rank: int) -> dict:
    """One rank's compute time (union over streams), communication time (union of calls from start to end) and the
    part of communication no compute overlaps (exposed)."""
    compute = _union([(o.start, o.end) for o in mine if o.kind == COMPUTE])
    comm = _union([(o.start, o.end) for o in mine if o.kind not in (COMPUTE, "record", "wait")])
    wait = _union([(o.arrive, o.start) for o in mine if o.kind not in (COMPUTE, "record", "wait")])
    return {"rank": rank, "compute_s": _length(compute), "comm_s": _length(comm), "exposed_s": _minus(comm, compute),
            "wait_s": _minus(wait, compute), "end_s": max((o.end for o in mine if not np.isnan(o.end)), default=0.0)}


def _chain(result: ProgramResult) -> list[int]:
    """Transfers from the first to the one that ends last, each enabled by the end of the next one back."""
    ends = result.trace.end
    if not len(ends) or np.all(np.isnan(ends)):
        return []
    arrays = result.lowered.schedule.arrays
    ptr, idx = arrays["dep_ptr"], arrays["dep_idx"]
    t = int(np.nanargmax(ends))
    chain = [t]
    while True:
        deps = idx[ptr[t]:ptr[t + 1]]
        deps = deps[~np.isnan(ends[deps])]
        if not deps.size:
            return chain[::-1]
        t = int(deps[np.argmax(ends[deps])])
        chain.append(t)


def _segment(result: ProgramResult, t: int, names: dict, calls: dict) -> dict | None:
    """What transfer t of the critical path stands for: a compute, or a communication and its slowest link."""
    low = result.lowered
    owner = low.owner[t]
    src, dst = int(low.schedule.transfers[t].src), int(low.schedule.transfers[t].dst)
    if owner[0] == "op":
        _, r, i = owner
        op = result.program.ops(r)[i]
        return {"kind": "compute", "what": f"rank {r} {names[r][i]}", "stream": op.stream} if op.op == COMPUTE else None
    if src == dst:
        return None
    key = owner[1]
    if key[0] == "group":
        r = result.program.groups[key[1]][0]
        i = _call_index(result.program, r, key, calls)
        seg = {"kind": "communication", "what": names[r][i] if i is not None else f"group {key[1]}"}
    else:
        seg = {"kind": "communication", "what": f"rank {key[1]} -> rank {key[2]} message #{key[3]}"}
    topo = low.topology
    route = topo.route(src, dst)
    if route:
        seg["links"] = {topo.link_name(min(route, key=lambda k: (topo.bandwidth[k], k)))}
    return seg


def _critical_path(result: ProgramResult) -> list[dict]:
    trace = result.trace
    names = {r: labels(result.program.ops(r)) for r in range(result.program.world)}
    calls: dict[int, dict[str, list[int]]] = {}  # _call_index's, per rank
    segments: list[dict] = []
    for t in _chain(result):
        seg = _segment(result, t, names, calls)
        if seg is None:
            continue
        if segments and segments[-1]["what"] == seg["what"]:
            segments[-1]["end_s"] = float(trace.end[t])
            segments[-1].setdefault("links", set()).update(seg.get("links", ()))
            continue
        seg.update(start_s=float(trace.start[t]), end_s=float(trace.end[t]))
        segments.append(seg)
    for seg in segments:
        if "links" in seg:
            seg["links"] = sorted(seg["links"])
    return segments


def _call_index(program: Program, rank: int, key: tuple, memo: dict[int, dict[str, list[int]]]) -> int | None:
    """The index of rank `rank`'s key[2]-th call on group key[1]; each rank's calls are indexed once (in `memo`), as
    a critical path names thousands of calls of ranks with thousands of operations (it was quadratic)."""
    calls = memo.get(rank)
    if calls is None:
        calls = memo[rank] = {}
        for i, op in enumerate(program.ops(rank)):
            if op.group is not None:
                calls.setdefault(op.group, []).append(i)
    mine = calls.get(key[1], [])
    return mine[key[2] - 1] if 0 < key[2] <= len(mine) else None
