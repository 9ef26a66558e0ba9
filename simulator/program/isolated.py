"""Collective times for large programs: each call timed alone on its ranks of the machine, once per shape.

The exact run (lower.py) expands every call into its schedule; at hundreds of ranks a step holds hundreds of
millions of transfers. The isolated mode times each distinct call (op, size, algorithm, and the members'
positions relative to the first, so that the same group shifted across the machine is timed once) with the
engine on the real topology, its ranks placed on the members' devices, and runs the program with each call as
one fixed-duration step. Calls then do not share links with each other: right when one collective runs at a
time on a stretch of links (DDP's one comm stream), optimistic when calls overlap on the same links.
Above `max_engine_ranks` members, the call's closed form (the registry's) is used with the links between the
members (the slowest hop of the ring; for hierarchical, the hop inside a node and the hop between nodes).

With timing 'measured', a call that gives its `time` (an imported trace's, docs/traces.md) takes it; the others are
timed as above. With timing 'nccl', allreduce, allgather and reduce_scatter calls are timed as NCCL runs them (nccl_timing.py:
`collsim predict` on the machine preset) wherever predict covers the call; the rest as above. `methods` counts the
distinct shapes timed each way, `calls` the calls.
"""

from __future__ import annotations

import numpy as np

from ..algorithms import build_schedule, get
from ..algorithms.forms import LinkModel
from ..collective import ROOTED, Collective
from ..engine import EngineOptions, simulate
from ..topology.model import Topology
from .lower import _params, algorithm_for
from .model import Op
from .nccl_timing import MEASURED, TIMINGS, nccl_machine, nccl_time, placement

ENGINE, CLOSED_FORM, NCCL = "engine", "closed form", "nccl"


class IsolatedTimes:
    """(op, members) -> (seconds, algorithm): each call's time alone on the machine, cached by shape."""

    def __init__(self, topology: Topology, options: EngineOptions, algorithms: dict[str, str], gpus_per_node: int,
                 max_engine_ranks: int = 128, timing: str = "links"):
        self.topology, self.options, self.choices = topology, options, dict(algorithms)
        self.gpus_per_node, self.max_engine_ranks = gpus_per_node, max_engine_ranks
        self.nccl, self.measured = timing == TIMINGS[1], timing == MEASURED
        self.machine = nccl_machine(topology) if self.nccl else None  # NCCL's machine, resolved once
        self.cache: dict[tuple, tuple[float, str, str]] = {}
        self.methods: dict[str, int] = {NCCL: 0, ENGINE: 0, CLOSED_FORM: 0}  # distinct shapes timed each way
        self.calls: dict[str, int] = {NCCL: 0, ENGINE: 0, CLOSED_FORM: 0}  # calls timed each way
        if self.measured:
            self.methods[MEASURED] = self.calls[MEASURED] = 0

    def __call__(self, op: Op, members: tuple[int, ...]) -> tuple[float, str]:
        if self.measured and op.seconds is not None:  # the call's own measured time (an imported trace's)
            self.calls[MEASURED] += 1
            return op.seconds, MEASURED
        placed = placement(self.machine, op, members) if self.nccl else None
        key = ("nccl", op.op, op.nbytes, op.dtype, placed) if placed else None
        if key is not None and key not in self.cache:
            timed = nccl_time(self.machine, op, placed)
            self.cache[key] = (*timed, NCCL) if timed else None
            self.methods[NCCL] += timed is not None
        if key is None or self.cache[key] is None:
            key = self._links_key(op, members)
        seconds, name, method = self.cache[key]
        self.calls[method] += 1
        return seconds, name

    def _links_key(self, op: Op, members: tuple[int, ...]) -> tuple:
        """Time the call on the links (engine or closed form) once per shape; its cache key."""
        name = algorithm_for(op, len(members), self.choices)
        params = _params(name, members, self.gpus_per_node)
        root = members.index(op.root) if op.op in ROOTED and op.root is not None else 0
        shape = tuple(m - members[0] for m in members)
        key = (op.op, op.nbytes, op.dtype, root, op.redop, name, tuple(sorted(params.items())), members[0] % self.gpus_per_node,
               shape)
        if key not in self.cache:
            coll = Collective(op.op, len(members), int(op.nbytes or 0), op.dtype, root, op.redop)
            if len(members) <= self.max_engine_ranks:
                self.cache[key] = (self._engine(coll, name, params, members), name, ENGINE)
            else:
                self.cache[key] = (self._closed_form(coll, name, params, members), name, CLOSED_FORM)
            self.methods[self.cache[key][2]] += 1
        return key

    def _placed(self, members: tuple[int, ...]) -> Topology:
        topo = self.topology
        mine = [topo.placement[m] for m in members]
        rest = [d for d in range(topo.num_devices) if d not in set(mine)]
        return topo.with_placement(mine + rest)

    def _engine(self, coll: Collective, name: str, params: dict, members: tuple[int, ...]) -> float:
        schedule = build_schedule(coll, name, **params)
        return simulate(schedule, self._placed(members), self.options).time

    def _hop(self, pairs: list[tuple[int, int]]) -> LinkModel:
        """The slowest hop among these rank pairs: the largest latency and the smallest bottleneck bandwidth."""
        costs = [self.topology.path_cost(a, b) for a, b in pairs if a != b] or [(0.0, float("inf"))]
        return LinkModel.from_bandwidth(max(c[0] for c in costs), min(c[1] for c in costs), self.options.gamma)

    def _closed_form(self, coll: Collective, name: str, params: dict, members: tuple[int, ...]) -> float:
        spec = get(coll.op, name)
        p, n = len(members), np.array([float(coll.nbytes)])
        ring = [(members[k], members[(k + 1) % p]) for k in range(p)]
        if name == "hierarchical":
            g = params.get("group") or 1
            inner = self._hop([(members[k], members[k + 1]) for k in range(g - 1)])
            outer = self._hop([(members[k], members[(k + g) % p]) for k in range(0, p, g)])
            intra = get("allreduce", "hierarchical").cost(g, n, inner, group=g)  # reduce-scatter + allgather in a node
            across = get("allreduce", "ring").cost(p // g, n / g, outer)         # ring across nodes on n / g
            return float(intra[0] + across[0])
        if spec.cost is None:
            raise NotImplementedError(f"{coll.op}/{name} has no closed form for {p} ranks")
        return float(spec.cost(p, n, self._hop(ring), **{k: v for k, v in params.items() if v is not None})[0])
