"""simulate(): one run of a schedule on a topology, the parts (loop, ports, flows, record) wired together.

Model (docs/model.md): each transfer is a flow along its route. It may start when every transfer
it depends on has ended (dataflow, no step barrier) and its sender has a free send port and its
receiver a free receive port (`ports` each; ready transfers take free ports in transfer-id order).
A flow first waits the sum of its links' latencies (plus its message regime's latency), then moves
its bytes (times the regime's byte factor, plus `header_bytes`) at the rate max-min fair sharing
gives it, recomputed whenever a flow starts or ends moving bytes. Both ports are freed when the
message has arrived. A reducing transfer then costs gamma x bytes on the receiver, which reduces
one message at a time; the transfer ends when its reduction ends. Local transfers (src == dst) use
no network. Stragglers start late or reduce slower; background load takes a fixed share of chosen
links' bandwidth.
"""

from __future__ import annotations

import heapq
import time

import numpy as np

from simulator.engine.deadlock import DeadlockError, deadlock_report, format_deadlock
from simulator.engine.options import EngineOptions
from simulator.schedule import Schedule
from simulator.topology.model import Topology
from simulator.trace import Trace

from .flows import Flows
from .loop import EventLoop
from .ports import Ports
from .stats import Record


def simulate(schedule: Schedule, topology: Topology, options: EngineOptions | None = None, *,
             raise_on_deadlock: bool = True) -> Trace:
    """Run `schedule` on `topology`; return the Trace (raises DeadlockError if transfers can never start)."""
    options = options or EngineOptions()
    p = schedule.collective.ranks
    topology.check_ranks(p)
    options.check(p, topology)
    record = Record(len(schedule.transfers))
    wall = time.perf_counter()
    loop = _Run(schedule, topology, options, record).loop
    loop.run()
    wall = time.perf_counter() - wall
    record.events = loop.events
    start, arrive, end = record.arrays()
    trace = Trace(schedule, topology, options, start, arrive, end, events=record.events, wall_s=wall,
                  routes=record.routes or None)
    if trace.stuck.size:
        report = deadlock_report(schedule, trace)
        trace.deadlock = report
        if raise_on_deadlock:
            raise DeadlockError(format_deadlock(report, trace.stuck.size), trace, report)
    return trace


class _Capacities(dict):
    """Link id -> bandwidth left after background load, computed on first use."""

    def __init__(self, topology: Topology, background: dict):
        super().__init__()
        self._bandwidth = topology.bandwidth
        self._background = background

    def __missing__(self, link: int) -> float:
        cap = self[link] = float(self._bandwidth[link]) * (1.0 - self._background.get(link, 0.0))
        return cap


class _Run:
    """The callbacks of one run: dependencies, reductions, launches; ports, flows and time live in their parts."""

    def __init__(self, schedule: Schedule, topology: Topology, options: EngineOptions, record: Record):
        arrays = schedule.arrays
        n = len(schedule.transfers)
        p = self.p = schedule.collective.ranks
        self.topology, self.record = topology, record
        self.src, self.dst = arrays["src"].tolist(), arrays["dst"].tolist()
        self.payload = arrays["bytes"].tolist()
        self.is_reduce = arrays["reduce"].tolist()
        dep_ptr, dep_idx = arrays["dep_ptr"], arrays["dep_idx"]
        self.indeg = np.diff(dep_ptr).tolist()
        order = np.argsort(dep_idx, kind="stable")
        self.succ_idx = np.repeat(np.arange(n), np.diff(dep_ptr))[order].tolist()
        self.succ_ptr = np.concatenate(([0], np.cumsum(np.bincount(dep_idx, minlength=n)))).tolist()
        self.header = options.header_bytes
        self.gamma = options.gamma
        self.slow = [float(options.slowdown.get(r, 1.0)) for r in range(p)]
        self.extra_latency, self.byte_factor = options.messages.table(self.payload) if options.messages else (None, None)
        wire = arrays["bytes"].astype(np.float64)
        wire = (wire * np.asarray(self.byte_factor) if self.byte_factor is not None else wire) + self.header
        self.wire = wire.tolist()  # bytes each message puts on the network
        self.loop = EventLoop(self._decide)
        late = {r: d for r, d in options.start_delay.items() if d > 0}
        self.ports = Ports(self.src, self.dst, p, options.ports, closed=late)
        self.fast = not options.contention or (topology.ideal and options.ports == 1 and not options.background)
        self.duration = _durations(topology, arrays, wire, self.extra_latency) if self.fast else []
        self.flows = Flows(n, _Capacities(topology, dict(options.background)), self._flow_due)
        self.pair_cost: dict[int, tuple[float, float]] = {}
        self.ready: list[int] = []
        self.reducer_busy = [False] * p
        self.reducer_queue: list[list[tuple[float, int]]] = [[] for _ in range(p)]
        self.reduce_dirty: set[int] = set()
        for r, delay in late.items():
            self.loop.post(delay, self._open_rank, r)
        self.ready.extend(t for t in range(n) if self.indeg[t] == 0)
        if self.ready or n == 0:
            self.loop.request_decision()

    # ---- decisions: reducers take work, ready transfers take free ports --------------------------------------
    def _decide(self) -> None:
        now = self.loop.now
        if self.reduce_dirty:  # reducers that went idle or got work this instant take the earliest arrival
            idle = list(self.reduce_dirty)
            self.reduce_dirty.clear()
            for r in idle:
                if not self.reducer_busy[r] and self.reducer_queue[r]:
                    self._start_reduction(heapq.heappop(self.reducer_queue[r])[1], r)
        ready = self.ready[:]
        self.ready.clear()
        go = self.ports.match(ready)
        start, src, dst = self.record.start, self.src, self.dst
        if self.fast:
            post, duration, arrived = self.loop.post, self.duration, self._arrived_fast
            for t in go:
                start[t] = now
                if src[t] == dst[t]:
                    self._local(t)
                else:
                    post(duration[t], arrived, t)
        else:
            for t in go:
                start[t] = now
                if src[t] == dst[t]:
                    self._local(t)
                else:
                    self._send(t, src[t], dst[t])

    def _local(self, t: int) -> None:
        self.record.arrive[t] = self.loop.now
        self._landed(t)

    def _send(self, t: int, s: int, d: int) -> None:
        """Put t on the network: its route's latency (and its regime's), then a flow, or arrival when it has no bytes."""
        key = s * self.p + d
        links = self.record.routes.get(key)
        if links is None:
            links = self.record.routes[key] = self.topology.route(s, d)
            self.pair_cost[key] = self.topology.path_cost(s, d)
        latency = self.pair_cost[key][0]
        if self.extra_latency is not None:
            latency += self.extra_latency[t]
        if self.wire[t] == 0 or not links:
            self.loop.post(latency, self._arrived, t)
        else:
            self.loop.post(latency, self._flow_begin, t)

    # ---- flows -------------------------------------------------------------------------------------------------
    def _flow_begin(self, t: int) -> None:
        links = self.record.routes[self.src[t] * self.p + self.dst[t]]
        self.flows.begin(t, links, self.wire[t], self.loop.now)

    def _flow_due(self, delay: float, t: int, version: int) -> None:
        self.loop.post(delay, self._flow_done, (t, version))

    def _flow_done(self, due: tuple[int, int]) -> None:
        if self.flows.done(due[0], due[1], self.loop.now):
            self._arrived(due[0])

    # ---- arrivals, reductions, ends ----------------------------------------------------------------------------
    def _arrived(self, t: int) -> None:
        self.record.arrive[t] = self.loop.now
        self.ports.release(self.src[t], self.dst[t])
        self.loop.pending = True
        self._landed(t)

    def _arrived_fast(self, t: int) -> None:
        """_arrived with _landed and _finish inlined: the hot path of contention-free runs."""
        now = self.loop.now
        self.record.arrive[t] = now
        self.ports.release(self.src[t], self.dst[t])
        self.loop.pending = True
        if self.is_reduce[t] and self.gamma > 0:
            self._landed(t)
            return
        self.record.end[t] = now
        indeg, succ_idx, ready = self.indeg, self.succ_idx, self.ready
        for k in range(self.succ_ptr[t], self.succ_ptr[t + 1]):
            x = succ_idx[k]
            indeg[x] -= 1
            if not indeg[x]:
                ready.append(x)

    def _landed(self, t: int) -> None:
        """The message of t is in the receiver's memory: queue its reduction (arrival order, then id) or finish."""
        if self.is_reduce[t] and self.gamma > 0:
            r = self.dst[t]
            heapq.heappush(self.reducer_queue[r], (self.loop.now, t))
            if not self.reducer_busy[r]:
                self.reduce_dirty.add(r)
                self.loop.pending = True
        else:
            self._finish(t)

    def _start_reduction(self, t: int, r: int) -> None:
        self.reducer_busy[r] = True
        self.loop.post(self.gamma * self.payload[t] * self.slow[r], self._reduce_done, t)

    def _reduce_done(self, t: int) -> None:
        r = self.dst[t]
        self.reducer_busy[r] = False
        self._finish(t)
        if self.reducer_queue[r]:
            self.reduce_dirty.add(r)
            self.loop.pending = True

    def _finish(self, t: int) -> None:
        """Transfer t has ended: release its dependents."""
        self.record.end[t] = self.loop.now
        indeg, succ_idx = self.indeg, self.succ_idx
        for k in range(self.succ_ptr[t], self.succ_ptr[t + 1]):
            s = succ_idx[k]
            indeg[s] -= 1
            if indeg[s] == 0:
                self.ready.append(s)
        if self.ready:
            self.loop.pending = True

    def _open_rank(self, r: int) -> None:
        self.ports.open(r)
        self.loop.pending = True


def _durations(topo: Topology, arrays: dict, nbytes: np.ndarray, extra_latency: list[float] | None) -> list[float]:
    """Contention-free time of every network transfer: route (+ regime) latency + wire bytes / bottleneck bandwidth."""
    src, dst = arrays["src"], arrays["dst"]
    out = np.zeros(len(src))
    net = np.flatnonzero(src != dst)
    if topo.ideal:
        out[net] = topo.uniform_latency + nbytes[net] / topo.uniform_bandwidth
    else:
        p = int(max(src.max(initial=0), dst.max(initial=0))) + 1
        keys = src[net] * p + dst[net]
        uniq, inverse = np.unique(keys, return_inverse=True)
        costs = np.array([topo.path_cost(int(k) // p, int(k) % p) for k in uniq]).reshape(-1, 2)
        out[net] = costs[inverse, 0] + nbytes[net] / costs[inverse, 1]
    if extra_latency is not None:
        out[net] += np.asarray(extra_latency)[net]
    return out.tolist()


__all__ = ["DeadlockError", "EngineOptions", "simulate"]
