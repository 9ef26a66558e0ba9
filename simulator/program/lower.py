"""Lowering a Program into ONE schedule on an augmented topology, so that the unchanged engine runs a whole step.

- Every collective expands to its algorithm's schedule (the registry), mapped onto its group's global ranks;
  all collectives share the machine's links and ports.
- Compute is a transfer on a private link per rank and stream (a *lane*, between two extra devices), whose
  bytes at COMPUTE_BW take exactly the compute time: a stream is a serial resource and computes in parallel
  with the network.
- Program order, `after`, events, group order and group gating are dependencies through *joins*: local
  transfers with no bytes, which the engine ends the instant they are ready. A collective's transfers start
  only after a join that waits for every member's arrival at its call (NCCL/gloo semantics); a send and its
  recv meet the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..algorithms import build_schedule, get, names_for
from ..collective import ROOTED, Collective
from ..errors import CollsimError
from ..ops import lookup
from ..schedule import Piece, Schedule, new_transfer
from ..topology.model import Topology
from .graph import meetings, program_dependencies
from .model import COMPUTE, Op, Program

COMPUTE_BW = 1e12  # bytes per second on a compute lane: one byte is one picosecond
MAX_TRANSFERS = 20_000_000  # a lowering larger than this is refused up front (memory)


class _Values:
    """Per-link values of the augmented topology: the base's for its links, the lane value for the lanes."""

    def __init__(self, base, lane: float, count: int):
        self.base, self.lane, self.count, self.n = base, lane, count, len(base)

    def __len__(self) -> int:
        return self.n + self.count

    def __getitem__(self, lid):
        if isinstance(lid, (list, np.ndarray)):
            return np.array([self[int(k)] for k in lid], dtype=np.float64)
        return self.base[lid] if lid < self.n else self.lane


class Augmented(Topology):
    """A machine plus private lanes (one per rank and compute stream, and in isolated mode one per process group):
    lane k is one link from device world + 2k to world + 2k + 1."""

    __slots__ = ("base", "world", "lanes", "base_links")
    ideal = False

    def __init__(self, base: Topology, world: int, lanes: list[str]):
        base.check_ranks(world)
        self.base, self.world, self.lanes = base, world, lanes
        self.name = base.name
        self.description = f"{base.name} with {len(lanes)} compute lanes"
        self.node_names = [base.device_name(r) for r in range(world)]
        for name in lanes:
            self.node_names += [name, f"{name}.done"]
        self.node_kinds = ["gpu"] * world + ["cpu"] * (2 * len(lanes))
        self.devices = list(range(world + 2 * len(lanes)))
        self.placement = list(self.devices)
        self.ecmp = False
        self.multipath = False
        self.origin = None
        self._routes = {}
        self.base_links = base.num_links

    @property
    def num_links(self) -> int:
        return self.base_links + len(self.lanes)

    @property
    def latency(self) -> _Values:  # type: ignore[override]
        return _Values(self.base.latency, 0.0, len(self.lanes))

    @property
    def bandwidth(self) -> _Values:  # type: ignore[override]
        return _Values(self.base.bandwidth, COMPUTE_BW, len(self.lanes))

    def lane_of(self, device: int) -> int | None:
        """The lane a device belongs to, or None for a rank."""
        return None if device < self.world else (device - self.world) // 2

    def route(self, src: int, dst: int) -> tuple[int, ...]:
        if src < self.world and dst < self.world:
            return self.base.route(src, dst)
        if src == dst:
            return ()
        return (self.base_links + (src - self.world) // 2,)

    def path_cost(self, src: int, dst: int) -> tuple[float, float]:
        if src < self.world and dst < self.world:
            return self.base.path_cost(src, dst)
        return (0.0, COMPUTE_BW) if src != dst else (0.0, float("inf"))

    def link_name(self, lid: int) -> str:
        if lid < self.base_links:
            return self.base.link_name(lid)
        return f"lane {self.lanes[lid - self.base_links]}"


@dataclass
class Lowered:
    """The one schedule of a program, its augmented topology and which transfers stand for which operation."""

    program: Program
    schedule: Schedule
    topology: Augmented
    arrive: dict[tuple[int, int], int]  # (rank, op index) -> transfer whose end is the op's arrival (deps met)
    gate: dict[tuple[int, int], int]    # communication ops: transfer whose end is the meeting's start (all arrived)
    end: dict[tuple[int, int], int]     # (rank, op index) -> transfer whose end is the op's end
    owner: list[tuple]                  # per transfer: ('op', rank, index) or ('meet', key)
    algorithms: dict[tuple, str] = field(default_factory=dict)  # meeting key -> algorithm used


class _Builder:
    def __init__(self):
        self.src: list[int] = []
        self.dst: list[int] = []
        self.count: list[int] = []
        self.reduce: list[bool] = []
        self.deps: list[list[int]] = []
        self.owner: list[tuple] = []

    def add(self, src: int, dst: int, nbytes: int, owner: tuple, reduce: bool = False, deps: list[int] | None = None) -> int:
        self.src.append(src)
        self.dst.append(dst)
        self.count.append(int(nbytes))
        self.reduce.append(reduce)
        self.deps.append(deps if deps is not None else [])
        self.owner.append(owner)
        return len(self.src) - 1

    def join(self, device: int, owner: tuple, deps: list[int] | None = None) -> int:
        return self.add(device, device, 0, owner, False, deps)


def algorithm_for(op: Op, size: int, choices: dict[str, str]) -> str:
    """The algorithm a collective runs: its own, else the run's choice for the op, else the op's program default
    (simulator/ops.py), else one that can."""
    name = op.algorithm or choices.get(op.op) or lookup(op.op).program_default
    spec = get(op.op, name)
    if spec.refusal(size):
        name = next(n for n in names_for(op.op) if not get(op.op, n).refusal(size))
    return name


def _params(name: str, members: tuple[int, ...], gpus_per_node: int) -> dict:
    """Hierarchical all-reduce groups the members that share a node (when they split evenly)."""
    if name != "hierarchical":
        return {}
    node = members[0] // gpus_per_node
    local = sum(1 for m in members if m // gpus_per_node == node)
    return {"group": local} if len(members) % local == 0 else {}


def lower(program: Program, topology: Topology, algorithms: dict[str, str] | None = None,
          gpus_per_node: int | None = None, isolated: Callable[[Op, tuple[int, ...]], tuple[float, str]] | None = None
          ) -> Lowered:
    """The one schedule that runs `program` on `topology` (the program must have no mismatched calls).

    With `isolated` (op, members) -> (seconds, algorithm), each collective is one transfer of that duration on its
    group's private lane instead of its schedule: collectives then share no links (an approximation for large runs).
    """
    if gpus_per_node is None:
        gpus_per_node = int(program.meta.get("meta", {}).get("scenario", {}).get("gpus_per_node", 8))
    world = program.world
    lane_of: dict[tuple[int, str], int] = {}
    for r in range(world):
        for op in program.ops(r):
            if op.op == COMPUTE:
                lane_of.setdefault((r, op.stream), len(lane_of))
    if isolated:
        for g in program.groups:
            lane_of.setdefault((-1, g), len(lane_of))
    topo = Augmented(topology, world, [f"rank{r}.{s}" if r >= 0 else f"group.{s}" for r, s in lane_of])
    low = Lowered(program, Schedule(Collective("allreduce", len(topo.devices), 0, "uint8"), "program", []), topo, {}, {}, {}, [])
    b = _Builder()
    _arrivals(low, b, lane_of)
    cache: dict[tuple, dict] = {}
    for key, calls in meetings(program).items():
        if isolated and key[0] == "group":
            _isolated(low, b, key, calls, lane_of, isolated)
        else:
            _meet(low, b, key, calls, dict(algorithms or {}), gpus_per_node, cache)
    for r in range(world):  # arrivals wait for the ends of what each operation depends on
        for i, ds in enumerate(program_dependencies(program, r)):
            b.deps[low.arrive[(r, i)]].extend(low.end[(r, j)] for j in ds)
    low.schedule.transfers = [new_transfer(t, b.src[t], b.dst[t], (Piece("scratch", 0, "scratch", 0, b.count[t]),)
                                           if b.count[t] else (), b.reduce[t], tuple(dict.fromkeys(b.deps[t])), 0)
                              for t in range(len(b.src))]
    low.owner = b.owner
    return low


def _arrivals(low: Lowered, b: _Builder, lane_of: dict[tuple[int, str], int]) -> None:
    """A node for every operation's arrival; compute is its own lane transfer (arrival = start), record/wait a join."""
    world = low.program.world
    for r in range(world):
        for i, op in enumerate(low.program.ops(r)):
            if op.op == COMPUTE:
                dev = world + 2 * lane_of[(r, op.stream)]
                tid = b.add(dev, dev + 1, round((op.seconds or 0.0) * COMPUTE_BW), ("op", r, i))
                low.arrive[(r, i)] = low.end[(r, i)] = tid
            elif op.is_collective or op.is_p2p:
                low.arrive[(r, i)] = b.join(r, ("op", r, i))
            else:
                low.arrive[(r, i)] = low.end[(r, i)] = b.join(r, ("op", r, i))


def _isolated(low: Lowered, b: _Builder, key: tuple, calls: dict[int, int], lane_of: dict, timing: Callable) -> None:
    """A collective as one fixed-duration transfer on its group's lane, after every member arrived."""
    parties = low.program.groups[key[1]]
    first = low.program.ops(next(iter(calls)))[next(iter(calls.values()))]
    start = b.join(parties[0], ("meet", key), [low.arrive[(r, i)] for r, i in calls.items()])
    if any(p not in calls for p in parties):
        b.deps[start].append(start)
    seconds, name = timing(first, parties)
    dev = low.program.world + 2 * lane_of[(-1, key[1])]
    tid = b.add(dev, dev + 1, round(seconds * COMPUTE_BW), ("meet", key), False, [start])
    low.algorithms[key] = name
    for r, i in calls.items():
        low.gate[(r, i)] = start
        low.end[(r, i)] = tid


def _meet(low: Lowered, b: _Builder, key: tuple, calls: dict[int, int], choices: dict, gpus_per_node: int,
          cache: dict) -> None:
    """One meeting (a collective call or a message): a start join after every party arrived, its transfers, the ends."""
    program = low.program
    first = program.ops(next(iter(calls)))[next(iter(calls.values()))]
    parties = program.groups[key[1]] if key[0] == "group" else (key[1], key[2])
    start = b.join(parties[0], ("meet", key), [low.arrive[(r, i)] for r, i in calls.items()])
    if any(p not in calls for p in parties):  # a party never makes the call: the meeting waits for ever
        b.deps[start].append(start)
    for r, i in calls.items():
        low.gate[(r, i)] = start
    if key[0] == "p2p":
        tid = b.add(key[1], key[2], first.nbytes or 0, ("meet", key), False, [start])
        for r, i in calls.items():
            low.end[(r, i)] = tid
        return
    arrays, name = _collective(first, parties, choices, gpus_per_node, cache)
    low.algorithms[key] = name
    base, n = len(b.src), len(arrays["src"])
    if base + n > MAX_TRANSFERS:
        raise CollsimError(f"program: lowering needs more than {MAX_TRANSFERS:,} transfers; expected a smaller program "
                           "(fewer ranks, buckets or layers), or the isolated mode (--isolated)")
    members = np.asarray(parties, dtype=np.int64)
    srcs, dsts = members[arrays["src"]].tolist(), members[arrays["dst"]].tolist()
    ptr, idx = arrays["dep_ptr"].tolist(), (arrays["dep_idx"] + base).tolist()
    counts, reduces = arrays["bytes"].tolist(), arrays["reduce"].tolist()
    touching: dict[int, list[int]] = {r: [] for r in parties}
    for k in range(n):
        tid = b.add(srcs[k], dsts[k], counts[k], ("meet", key), reduces[k], idx[ptr[k]:ptr[k + 1]] or [start])
        touching[srcs[k]].append(tid)
        if dsts[k] != srcs[k]:
            touching[dsts[k]].append(tid)
    for r, i in calls.items():
        low.end[(r, i)] = b.join(r, ("meet", key), touching[r] or [start])


def _collective(op: Op, members: tuple[int, ...], choices: dict, gpus_per_node: int, cache: dict) -> tuple[dict, str]:
    """The schedule arrays (src, dst in group ranks, bytes, reduce, deps) of one call, cached by shape."""
    name = algorithm_for(op, len(members), choices)
    params = _params(name, members, gpus_per_node)
    root = members.index(op.root) if op.op in ROOTED and op.root is not None else 0
    key = (op.op, len(members), op.nbytes, op.dtype, root, op.redop, name, tuple(sorted(params.items())))
    if key not in cache:
        coll = Collective(op.op, len(members), int(op.nbytes or 0), op.dtype, root, op.redop)
        cache[key] = build_schedule(coll, name, **params).arrays
    return cache[key], name
