"""The discrete-event engine: runs a schedule on a topology with simpy and returns a Trace.

Model (docs/model.md): each transfer is a flow along its route. It may start when every transfer
it depends on has ended (dataflow, no step barrier) and its sender has a free send port and its
receiver a free receive port (`ports` each; ready transfers take free ports in transfer-id order).
A flow first waits the sum of its links' latencies, then moves its bytes (plus `header_bytes`) at
the rate max-min fair sharing gives it, recomputed whenever a flow starts or ends moving bytes.
Both ports are freed when the message has arrived. A reducing transfer then costs gamma x bytes
on the receiver, which reduces one message at a time; the transfer ends when its reduction ends.
Local transfers (src == dst) use no network. Stragglers start late or reduce slower; background
load takes a fixed share of chosen links' bandwidth.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from heapq import heappush

import numpy as np
import simpy

from .errors import CollsimError
from .schedule import Schedule
from .topology.model import Topology
from .trace import Trace

_DECIDE = 2  # simpy priority after NORMAL (1): decisions run once all events of an instant are in


@dataclass(frozen=True)
class EngineOptions:
    """Knobs of a run: reduction cost, ports, contention, per-message header, stragglers and background load."""

    gamma: float = 0.0                      # s per reduced byte
    ports: int = 1                          # sends (and receives) a rank may have in flight; 0 = unlimited
    contention: bool = True                 # share link bandwidth max-min fairly; False = every flow gets its bottleneck
    header_bytes: int = 0                   # bytes added to every network message (SMPI adds 16)
    start_delay: Mapping[int, float] = field(default_factory=dict)   # rank -> s it starts late
    slowdown: Mapping[int, float] = field(default_factory=dict)      # rank -> factor on its reduction time
    background: Mapping[int, float] = field(default_factory=dict)    # link id -> share (0..1) of bandwidth taken

    def check(self, ranks: int, topology: Topology) -> None:
        """Raise CollsimError on values the engine cannot run with."""
        if not (self.gamma >= 0 and math.isfinite(self.gamma)):
            raise CollsimError(f"gamma: {self.gamma!r} must be a number >= 0 (s per byte)")
        if isinstance(self.ports, bool) or not isinstance(self.ports, int) or self.ports < 0:
            raise CollsimError(f"ports: {self.ports!r}; expected an integer >= 1, or 0 for unlimited")
        if isinstance(self.header_bytes, bool) or not isinstance(self.header_bytes, int) or self.header_bytes < 0:
            raise CollsimError(f"header_bytes: {self.header_bytes!r}; expected an integer >= 0")
        for what, table, ok, accepted in (("straggler", self.start_delay, lambda v: v >= 0, "a delay >= 0"),
                                          ("slowdown", self.slowdown, lambda v: v > 0, "a factor > 0")):
            for rank, value in table.items():
                if not 0 <= rank < ranks:
                    raise CollsimError(f"{what}: rank {rank} is not one of 0..{ranks - 1}")
                if not (math.isfinite(value) and ok(value)):
                    raise CollsimError(f"{what}: rank {rank} has {value!r}; expected {accepted}")
        for link, share in self.background.items():
            if not 0 <= link < topology.num_links:
                raise CollsimError(f"congestion: link {link} does not exist; {topology.name} has links 0..{topology.num_links - 1}")
            if not 0 <= share < 1:
                raise CollsimError(f"congestion: share {share!r} on link {link}; expected 0 <= share < 1")


class DeadlockError(CollsimError):
    """A run ended with transfers that can never start; `trace` holds what did run and `report` who waits for what."""

    def __init__(self, message: str, trace: Trace, report: list[dict]):
        super().__init__(message)
        self.trace = trace
        self.report = report


def simulate(schedule: Schedule, topology: Topology, options: EngineOptions | None = None, *,
             raise_on_deadlock: bool = True) -> Trace:
    """Run `schedule` on `topology`; return the Trace (raises DeadlockError if transfers can never start)."""
    options = options or EngineOptions()
    p = schedule.collective.ranks
    topology.check_ranks(p)
    options.check(p, topology)
    run = _Run(schedule, topology, options)
    wall = time.perf_counter()
    run.execute()
    wall = time.perf_counter() - wall
    trace = Trace(schedule, topology, options, np.array(run.start), np.array(run.arrive), np.array(run.end),
                  events=run.events, wall_s=wall, routes=run.routes)
    if trace.stuck.size:
        report = deadlock_report(schedule, trace)
        trace.deadlock = report
        if raise_on_deadlock:
            raise DeadlockError(format_deadlock(report, trace.stuck.size), trace, report)
    return trace


class _Run:
    """State of one simulation; the hot callbacks are closures over local lists for speed."""

    def __init__(self, schedule: Schedule, topology: Topology, options: EngineOptions):
        self.schedule, self.topology, self.options = schedule, topology, options
        n = len(schedule.transfers)
        self.start = [math.nan] * n
        self.arrive = [math.nan] * n
        self.end = [math.nan] * n
        self.events = 0
        self.routes: dict[int, tuple[int, ...]] | None = None

    def execute(self) -> None:
        """Run the schedule to the end (one closure per event kind, over local lists, for speed)."""
        sched, topo, opt = self.schedule, self.topology, self.options
        arrays = sched.arrays
        n = len(sched.transfers)
        p = sched.collective.ranks
        src = arrays["src"].tolist()
        dst = arrays["dst"].tolist()
        payload = arrays["bytes"].tolist()
        is_reduce = arrays["reduce"].tolist()
        dep_ptr = arrays["dep_ptr"]
        dep_idx = arrays["dep_idx"]
        indeg = np.diff(dep_ptr).tolist()
        order = np.argsort(dep_idx, kind="stable")
        succ_idx = np.repeat(np.arange(n), np.diff(dep_ptr))[order].tolist()
        succ_ptr = np.concatenate(([0], np.cumsum(np.bincount(dep_idx, minlength=n)))).tolist()
        header = opt.header_bytes
        gamma = opt.gamma
        slow = [float(opt.slowdown.get(r, 1.0)) for r in range(p)]
        many = n + 1
        ports = opt.ports if opt.ports > 0 else many
        free_send = [ports] * p
        free_recv = [ports] * p
        is_open = [True] * p
        start, arrive, end = self.start, self.arrive, self.end
        started = [False] * n
        waiting = [False] * n
        wait_lists: list[list[int]] = [[] for _ in range(p)]
        new_ready: list[int] = []
        dirty: set[int] = set()
        reducer_busy = [False] * p
        reducer_queue: list[list[tuple[float, int]]] = [[] for _ in range(p)]
        reduce_dirty: set[int] = set()
        env = simpy.Environment()
        pending = [False]
        counter = [0]
        fast = not opt.contention or (topo.ideal and ports == 1 and not opt.background)
        pair_cost: dict[int, tuple[float, float]] = {}
        path_cost = topo.path_cost
        duration = _durations(topo, arrays, header) if fast else []
        queue = env._queue
        next_eid = env._eid.__next__
        dirty_add = dirty.add
        ready_append = new_ready.append

        def post(delay: float, value, callbacks: tuple) -> None:
            """Schedule a bare event `delay` from now on simpy's queue (what env.timeout does, minus its checks)."""
            ev = _Event()
            ev._value = value
            ev.callbacks = callbacks
            heappush(queue, (env._now + delay, 1, next_eid(), ev))
            counter[0] += 1

        def want_decision() -> None:
            if not pending[0]:
                pending[0] = True
                ev = _Event()
                ev._value = None
                ev.callbacks = on_decide
                heappush(queue, (env._now, _DECIDE, next_eid(), ev))
                counter[0] += 1

        def finish(t: int) -> None:
            """Transfer t has ended: release its dependents."""
            end[t] = env._now
            for k in range(succ_ptr[t], succ_ptr[t + 1]):
                s = succ_idx[k]
                indeg[s] -= 1
                if indeg[s] == 0:
                    new_ready.append(s)
            if new_ready:
                want_decision()

        def reduce_done(ev) -> None:
            t = ev._value
            r = dst[t]
            reducer_busy[r] = False
            finish(t)
            if reducer_queue[r]:
                reduce_dirty.add(r)
                want_decision()

        def start_reduction(t: int, r: int) -> None:
            reducer_busy[r] = True
            post(gamma * payload[t] * slow[r], t, on_reduce_done)

        def landed(t: int) -> None:
            """The message of t is in the receiver's memory: queue its reduction (arrival order, then id) or finish."""
            if is_reduce[t] and gamma > 0:
                r = dst[t]
                heappush(reducer_queue[r], (env._now, t))
                if not reducer_busy[r]:
                    reduce_dirty.add(r)
                    want_decision()
            else:
                finish(t)

        def arrived(ev) -> None:
            arrived_t(ev._value)

        def arrived_t(t: int) -> None:
            s, d = src[t], dst[t]
            arrive[t] = env._now
            free_send[s] += 1
            free_recv[d] += 1
            dirty.add(s)
            dirty.add(d)
            want_decision()
            landed(t)

        def arrived_fast(ev) -> None:
            """arrived_t with landed and finish inlined: the hot path of contention-free runs."""
            t = ev._value
            s = src[t]
            d = dst[t]
            now = env._now
            arrive[t] = now
            free_send[s] += 1
            free_recv[d] += 1
            if wait_lists[s]:
                dirty_add(s)
            if wait_lists[d]:
                dirty_add(d)
            if not pending[0]:
                want_decision()
            if is_reduce[t] and gamma > 0:
                landed(t)
                return
            end[t] = now
            for k in range(succ_ptr[t], succ_ptr[t + 1]):
                x = succ_idx[k]
                indeg[x] -= 1
                if not indeg[x]:
                    ready_append(x)

        on_arrival = (arrived_fast,)

        # ---- flows with max-min sharing (used unless the fast path applies) ----
        link_flows: dict[int, set[int]] = {}
        flow_rem = [0.0] * n     # bytes left, as of flow_last
        flow_rate = [0.0] * n
        flow_last = [0.0] * n
        flow_ver = [0] * n       # bumped on every rate change; -1 once done, so stale completions are ignored
        flow_links: dict[int, tuple[int, ...]] = {}
        routes: dict[int, tuple[int, ...]] = {}
        bandwidth = topo.bandwidth
        capacity: dict[int, float] = {}
        route_cap: dict[tuple[int, ...], float] = {}

        def cap_of(link: int) -> float:
            c = capacity.get(link)
            if c is None:
                c = capacity[link] = float(bandwidth[link]) * (1.0 - opt.background.get(link, 0.0))
            return c

        def reshare(seed_links) -> None:
            now = env._now
            comp_links = set(seed_links)
            stack = list(comp_links)
            comp_flows: set[int] = set()
            while stack:
                for f in link_flows.get(stack.pop(), ()):
                    if f not in comp_flows:
                        comp_flows.add(f)
                        for link in flow_links[f]:
                            if link not in comp_links:
                                comp_links.add(link)
                                stack.append(link)
            if not comp_flows:
                return
            for f in comp_flows:
                rem = flow_rem[f] - flow_rate[f] * (now - flow_last[f])
                flow_rem[f] = rem if rem > 0 else 0.0
                flow_last[f] = now
            left = {link: cap_of(link) for link in comp_links}
            count = {link: len(link_flows.get(link, ())) for link in comp_links}
            unfrozen = set(comp_flows)
            new_rate: dict[int, float] = {}
            while unfrozen:
                share = max(min(left[link] / count[link] for link in count if count[link] > 0), 0.0)
                tight = [link for link in count if count[link] > 0 and left[link] / count[link] <= share * (1 + 1e-12)]
                share = share or 1e-300  # rounding can exhaust a link exactly; never a zero or negative rate
                for link in tight:
                    for f in link_flows[link]:
                        if f in unfrozen:
                            unfrozen.discard(f)
                            new_rate[f] = share
                            for l2 in flow_links[f]:
                                left[l2] -= share
                                count[l2] -= 1
            for f, rate in new_rate.items():
                if rate != flow_rate[f]:
                    flow_rate[f] = rate
                    flow_ver[f] += 1
                    post(flow_rem[f] / rate, (f, flow_ver[f]), on_flow_done)

        def flow_begin(ev) -> None:
            t = ev._value
            links = flow_links[t]
            flow_rem[t] = float(payload[t] + header)
            flow_rate[t] = 0.0
            flow_last[t] = env._now
            flow_ver[t] = 0
            alone = True
            for link in links:
                flows = link_flows.get(link)
                if flows is None:
                    flows = link_flows[link] = set()
                flows.add(t)
                if len(flows) > 1:
                    alone = False
            if alone:  # nobody to share with: the bottleneck capacity, no max-min work
                rate = flow_rate[t] = route_cap[links]
                flow_ver[t] = 1
                post(flow_rem[t] / rate, (t, 1), on_flow_done)
            else:
                reshare(links)

        def flow_done(ev) -> None:
            t, ver = ev._value
            if flow_ver[t] != ver:
                return  # superseded by a rate change
            links = flow_links.pop(t)
            others = False
            for link in links:
                flows = link_flows[link]
                flows.discard(t)
                if flows:
                    others = True
            flow_ver[t] = -1
            if others:
                reshare(links)
            arrived_t(t)

        def launch(t: int, s: int, d: int) -> None:
            started[t] = True
            start[t] = env._now
            if s == d:
                arrive[t] = env._now
                landed(t)
                return
            free_send[s] -= 1
            free_recv[d] -= 1
            key = s * p + d
            if fast:
                post(duration[t], t, on_arrival)
                return
            links = routes.get(key)
            if links is None:
                links = routes[key] = topo.route(s, d)
                pair_cost[key] = path_cost(s, d)
                if links not in route_cap:
                    route_cap[links] = min((cap_of(link) for link in links), default=float("inf"))
            if payload[t] + header == 0 or not links:
                post(pair_cost[key][0], t, on_arrived)
            else:
                flow_links[t] = links
                post(pair_cost[key][0], t, on_flow_begin)

        def decide(ev) -> None:
            pending[0] = False
            now = env._now
            launched = 0
            if reduce_dirty:  # reducers that went idle or got work this instant take the earliest arrival
                idle = list(reduce_dirty)
                reduce_dirty.clear()
                for r in idle:
                    if not reducer_busy[r] and reducer_queue[r]:
                        start_reduction(heapq.heappop(reducer_queue[r])[1], r)
            cands = new_ready[:]
            new_ready.clear()
            for r in dirty:
                lst = wait_lists[r]
                if lst:
                    keep = [t for t in lst if not started[t]]
                    wait_lists[r] = keep
                    cands.extend(keep)
            dirty.clear()
            if len(cands) > 1:
                cands = sorted(set(cands))
            for t in cands:
                if started[t]:
                    continue
                s, d = src[t], dst[t]
                if s != d and fast and free_send[s] > 0 and free_recv[d] > 0 and is_open[s] and is_open[d]:
                    started[t] = True
                    start[t] = now
                    free_send[s] -= 1
                    free_recv[d] -= 1
                    ev = _Event()
                    ev._value = t
                    ev.callbacks = on_arrival  # simpy only reads it
                    heappush(queue, (now + duration[t], 1, next_eid(), ev))
                    launched += 1
                elif is_open[s] and is_open[d] and (s == d or (free_send[s] > 0 and free_recv[d] > 0)):
                    launch(t, s, d)
                elif not waiting[t]:
                    waiting[t] = True
                    wait_lists[s].append(t)
                    if d != s:
                        wait_lists[d].append(t)
            counter[0] += launched

        def open_rank(ev) -> None:
            r = ev._value
            is_open[r] = True
            dirty.add(r)
            want_decision()

        on_decide = (decide,)
        on_reduce_done = (reduce_done,)
        on_flow_done = (flow_done,)
        on_flow_begin = (flow_begin,)
        on_arrived = (arrived,)
        for r, delay in opt.start_delay.items():
            if delay > 0:
                is_open[r] = False
                post(delay, r, (open_rank,))
        new_ready.extend(t for t in range(n) if indeg[t] == 0)
        if new_ready or n == 0:
            want_decision()
        env.run()
        self.events = counter[0]
        self.routes = routes if routes else None
        self.started = started


class _Event:
    """A bare event for simpy's queue (what env.timeout makes, without its checks): callbacks, _ok, _value."""

    __slots__ = ("callbacks", "_value")
    _ok = True


def _durations(topo: Topology, arrays: dict, header: int) -> list[float]:
    """Contention-free time of every network transfer: route latency + (bytes + header) / bottleneck bandwidth."""
    src, dst = arrays["src"], arrays["dst"]
    nbytes = arrays["bytes"].astype(np.float64) + header
    out = np.zeros(len(src))
    net = np.flatnonzero(src != dst)
    if topo.ideal:
        out[net] = topo.uniform_latency + nbytes[net] / topo.uniform_bandwidth
        return out.tolist()
    p = int(max(src.max(initial=0), dst.max(initial=0))) + 1
    keys = src[net] * p + dst[net]
    uniq, inverse = np.unique(keys, return_inverse=True)
    costs = np.array([topo.path_cost(int(k) // p, int(k) % p) for k in uniq]).reshape(-1, 2)
    out[net] = costs[inverse, 0] + nbytes[net] / costs[inverse, 1]
    return out.tolist()


def deadlock_report(schedule: Schedule, trace: Trace) -> list[dict]:
    """For each transfer that never ran: its ranks and the unfinished transfers it waits for."""
    ends = trace.end
    arrays = schedule.arrays
    ptr, idx = arrays["dep_ptr"], arrays["dep_idx"]
    report = []
    for t in trace.stuck.tolist():
        deps = idx[ptr[t]:ptr[t + 1]]
        waits = [int(d) for d in deps if np.isnan(ends[d])]
        tr = schedule.transfers[t]
        report.append({"transfer": t, "src": tr.src, "dst": tr.dst, "waits_for": waits,
                       "waits_for_ranks": sorted({schedule.transfers[w].src for w in waits} | {schedule.transfers[w].dst for w in waits})})
    return report


def format_deadlock(report: list[dict], stuck: int) -> str:
    """One paragraph naming the ranks that wait and the transfers they wait for."""
    blocked = [r for r in report if r["waits_for"]]
    ranks = sorted({r["src"] for r in report} | {r["dst"] for r in report})
    lines = [f"deadlock: {stuck} transfers can never start; ranks involved: {', '.join(map(str, ranks[:20]))}"
             + (" ..." if len(ranks) > 20 else "")]
    for r in blocked[:6]:
        waits = ", ".join(f"#{w} ({_ends_of(report, w)})" for w in r["waits_for"][:4])
        lines.append(f"  rank {r['src']} cannot send #{r['transfer']} to rank {r['dst']}: it waits for {waits}")
    if len(blocked) > 6:
        lines.append(f"  ... and {len(blocked) - 6} more")
    return "\n".join(lines)


def _ends_of(report: list[dict], tid: int) -> str:
    for r in report:
        if r["transfer"] == tid:
            return f"rank {r['src']} -> rank {r['dst']}"
    return "never started"
