"""simulate(): one run of a schedule on a topology, the parts (loop, ports, flows, record) wired together.

Model (docs/model.md): each transfer is a flow along its route. It may start when every transfer
it depends on has ended (dataflow, no step barrier) and its sender has a free send port and its
receiver a free receive port (`ports` each; ready transfers take free ports in transfer-id order).
A flow first waits the sum of its links' latencies (plus its message regime's latency), then moves
its bytes (times the regime's byte factor, plus `header_bytes`) at the rate max-min fair sharing
gives it, recomputed whenever a flow starts or ends moving bytes. Both ports are freed when the
message has arrived; an eager send (fewer payload bytes than `eager_bytes`, SMPI's detached sends) frees its
sender's port as soon as it starts. A reducing transfer then costs gamma x bytes on the receiver, which reduces
one message at a time; the transfer ends when its reduction ends. Local transfers (src == dst) use
no network. Stragglers start late or reduce slower; background load takes a fixed share of chosen
links' bandwidth.
"""

from __future__ import annotations

import heapq
import time

import numpy as np

from ..schedule import Schedule
from ..topology.model import Topology
from ..trace import Trace
from .clock import Clock
from .csr import distinct, gather, scalar_backed
from .deadlock import DeadlockError, deadlock_report, format_deadlock
from .flows import Flows
from .loop import ARRIVE, BEGIN, DONE, OPEN, REDUCED, Agenda
from .options import EngineOptions
from .ports import Ports
from .routes import Routes
from .stats import LinkStats, Record

_EMPTY = np.zeros(0, dtype=np.int64)
_SMALL = 16  # up to this many transfers at once, plain loops instead of numpy
_MIRROR = 1 << 20  # up to this many transfers, the plain loops read Python lists


def simulate(schedule: Schedule, topology: Topology, options: EngineOptions | None = None, *,
             raise_on_deadlock: bool = True) -> Trace:
    """Run `schedule` on `topology`; return the Trace (raises DeadlockError if transfers can never start)."""
    options = options or EngineOptions()
    p = schedule.collective.ranks
    topology.check_ranks(p)
    options.check(p, topology)
    wall = time.perf_counter()
    run = _Run(schedule, topology, options)
    run.agenda.run()
    wall = time.perf_counter() - wall
    record = run.record
    record.events = run.agenda.events
    start, arrive, end = record.arrays(run.clock)
    trace = Trace(schedule, topology, options, start, arrive, end, events=record.events, wall_s=wall)
    trace.engine_links = run.links.table(run.clock.scale)
    if trace.stuck.size:
        report = deadlock_report(schedule, trace)
        trace.deadlock = report
        if raise_on_deadlock:
            raise DeadlockError(format_deadlock(report, trace.stuck.size), trace, report)
    return trace


def _few(due: list[list]) -> bool:
    """True if the flows that begin, the completions and the arrivals due at an instant are at most _SMALL."""
    size = 0
    for c in due[BEGIN]:
        size += len(c)
    for c in due[ARRIVE]:
        size += len(c)
    for c in due[DONE]:
        size += len(c[0])
    for c in due[REDUCED]:
        size += len(c)
    return size <= _SMALL


def _ready(chunks: list) -> list[int] | np.ndarray:
    """The ready transfers of `chunks`: sorted in a list if at most _SMALL, else as one array."""
    size = 0
    for c in chunks:
        size += len(c)
    if size > _SMALL:
        return _chunks(chunks)
    if len(chunks) == 1 and isinstance(chunks[0], list):
        return chunks[0]  # one chunk from _finish_each: sorted and distinct already
    return sorted([int(t) for c in chunks for t in c])


def _chunks(parts: list) -> np.ndarray:
    """One int64 array of the id chunks (arrays or lists) posted for an instant."""
    if len(parts) == 1:
        return np.asarray(parts[0], dtype=np.int64)
    return np.concatenate([np.asarray(c, dtype=np.int64) for c in parts])


def _listed(parts: list) -> list[int]:
    """One list of the id chunks (arrays or lists) posted for an instant."""
    return [t for c in parts for t in (c if isinstance(c, list) else c.tolist())]


def _done_chunks(parts: list, few: bool) -> tuple[list[int], list[int]] | tuple[np.ndarray, np.ndarray]:
    """The (ids, versions) chunks of completions posted for an instant, as two lists if `few`, else two arrays."""
    if few:
        return _listed([c[0] for c in parts]), _listed([c[1] for c in parts])
    return np.concatenate([c[0] for c in parts]), np.concatenate([c[1] for c in parts])


def _joined(chunks: list) -> list[int] | np.ndarray:
    """Id chunks, all lists or all arrays, as one."""
    return [t for c in chunks for t in c] if isinstance(chunks[0], list) else np.concatenate(chunks)


class _Run:
    """One run: the instant handler (flows, arrivals, reductions, decisions); ports, flows and time live in their parts.

    Everything that happens at one instant is handled together: flows that start and end, then one max-min reshare,
    arrivals (ports freed), reductions, ends (dependents released), then the decision: reducers take work and ready
    transfers take free ports in id order. Each kind of event has one handler; it takes the ids as a list when the
    instant holds a handful (handled one at a time: numpy's fixed cost would dominate) and as an array otherwise.
    """

    def __init__(self, schedule: Schedule, topology: Topology, options: EngineOptions):
        arrays = schedule.arrays
        n = len(schedule)
        p = self.p = schedule.collective.ranks
        self.topology = topology
        self.record = Record(n)
        self.src, self.dst = arrays["src"], arrays["dst"]
        self.local = self.src == self.dst
        self.payload = arrays["bytes"]
        self.is_reduce = arrays["reduce"]
        self.gamma = options.gamma
        self.slow = [float(options.slowdown.get(r, 1.0)) for r in range(p)]
        self.agenda = Agenda(self._instant)
        late = {r: d for r, d in options.start_delay.items() if d > 0}
        self.ports = Ports(self.src, self.dst, p, options.ports, closed=late)
        eager = (self.payload < options.eager_bytes) & ~self.local
        self.eager = eager if eager.any() else None  # network sends whose sender's port frees when they start
        self._dependencies(arrays, n)
        self.fast = not options.contention or (topology.ideal and options.ports == 1 and not options.background
                                               and self.eager is None)  # one flow per link at a time
        self._route_table(topology)
        self.links = LinkStats(topology.num_links, self.routes, self.payload.astype(np.float64) + options.header_bytes)
        self._timing(topology, options, max(late.values(), default=0.0))
        self._mirrors(n)
        self.ready: list = []
        self.pending = False
        self.reducer_busy = [False] * p
        self.reducer_queue: list[list[tuple[int, int]]] = [[] for _ in range(p)]
        self.reduce_dirty: set[int] = set()
        for r, delay in late.items():
            self.agenda.post(self.clock.ticks(delay), OPEN, [r])
        first = np.flatnonzero(self.indeg == 0)
        if self.join is not None:
            first = self._through_joins(first, 0)
        if first.size:
            self.ready.append(first)
        self.pending = True
        self.agenda.post(0, OPEN, [])

    def _dependencies(self, arrays: dict, n: int) -> None:
        """Each transfer's count of dependencies not ended yet, and its dependents (CSR; with eager sends, split into
        those released when it ends and those released when it starts: `_early_edges`); the join nodes."""
        dep_ptr, dep_idx = arrays["dep_ptr"], arrays["dep_idx"]
        self.s_indeg, self.indeg = scalar_backed(np.diff(dep_ptr).astype(np.int64, copy=False))  # array.array and its numpy view
        join = arrays.get("join")
        self.join = join if join is not None and join.any() else None  # join nodes: end the instant they are released
        order = np.argsort(dep_idx, kind="stable")
        self.succ_idx = np.repeat(np.arange(n, dtype=np.int64), np.diff(dep_ptr))[order]
        self.succ_ptr = np.concatenate(([0], np.cumsum(np.bincount(dep_idx, minlength=n)))).astype(np.int64)
        if self.eager is not None:
            self.succ_ptr, self.succ_idx, self.early_ptr, self.early_idx = _early_edges(
                self.succ_ptr, self.succ_idx, self.src, self.dst, self.eager)

    def _timing(self, topology: Topology, options: EngineOptions, late_s: float) -> None:
        """The clock and each transfer's ticks: its whole duration without contention, else its latency and the flows."""
        extra, factor = options.messages.table(self.payload.tolist()) if options.messages else (None, None)
        wire = self.payload.astype(np.float64)
        wire = (wire * np.asarray(factor) if factor is not None else wire) + options.header_bytes
        reducing = float(self.payload[self.is_reduce].sum()) * self.gamma * max(self.slow, default=1.0)
        if self.fast:
            duration = self._durations(topology, wire, extra)
            self.clock = Clock(2 * (float(duration.sum()) + reducing + late_s))  # the makespan is below half of this
            self.duration = self.clock.ticks_array(duration)
        else:
            self._routes(topology, options, wire, extra, reducing + late_s)

    def _mirrors(self, n: int) -> None:
        """Read-only columns for the one-at-a-time paths: Python lists when they fit (indexing a list is several times
        cheaper than indexing an array), else the arrays themselves."""
        mirror = (lambda a: a.tolist()) if n <= _MIRROR else (lambda a: a)
        self.s_src, self.s_dst, self.s_local = mirror(self.src), mirror(self.dst), mirror(self.local)
        self.s_succ_ptr, self.s_succ_idx = mirror(self.succ_ptr), mirror(self.succ_idx)
        self.s_delay = mirror(self.duration if self.fast else self.latency)
        self.s_nbytes = mirror(self.links.nbytes)
        if self.gamma > 0:  # read by reductions only
            self.s_reduce, self.s_payload = mirror(self.is_reduce), mirror(self.payload)
        self.s_kind = [ARRIVE] * n if self.fast else np.where(self.flowing, BEGIN, ARRIVE).tolist()

    def _route_table(self, topology: Topology) -> None:
        """Every transfer's route, once per distinct (src, dst) pair (Routes; local transfers: the last pair, no links)."""
        src, dst, p = self.src, self.dst, self.p
        net = np.flatnonzero(~self.local)
        uniq, inverse = _pairs(src[net] * p + dst[net], p * p)
        routes = [topology.route(int(k) // p, int(k) % p) for k in uniq.tolist()]
        pair_of = np.full(src.size, uniq.size, dtype=np.int64)
        pair_of[net] = inverse
        self.routes = Routes(pair_of, [*routes, ()])
        self.pair_of = pair_of
        self.pair_src, self.pair_dst = uniq // p, uniq % p

    def _pair_latency(self, topology: Topology) -> np.ndarray:
        """Each pair's route latency (topology.path_cost's sums, in the same order), and 0 for local transfers."""
        lengths = self.routes.pair_lengths[:-1]
        latency = getattr(topology, "latency", None)
        if (lengths.size and not topology.ideal and isinstance(latency, np.ndarray) and 0 < lengths.min()
                and lengths.max() < 8):  # the sums in one call
            return np.append(self.routes.per_pair(latency, np.add)[:-1], 0.0)
        pairs = zip(self.pair_src.tolist(), self.pair_dst.tolist())
        return np.array([topology.path_cost(s, d)[0] for s, d in pairs] + [0.0])

    def _durations(self, topology: Topology, wire: np.ndarray, extra: list[float] | None) -> np.ndarray:
        """Contention-free time of every network transfer: route (+ regime) latency + wire bytes / bottleneck bandwidth."""
        out = np.zeros(self.src.size)
        net = np.flatnonzero(~self.local)
        if topology.ideal:
            out[net] = topology.uniform_latency + wire[net] / topology.uniform_bandwidth
        else:
            pairs = zip(self.pair_src.tolist(), self.pair_dst.tolist())
            cost = np.array([topology.path_cost(s, d) for s, d in pairs]).reshape(-1, 2)[self.pair_of[net]]
            out[net] = cost[:, 0] + wire[net] / cost[:, 1]
        if extra is not None:
            out[net] += np.asarray(extra)[net]
        return out

    def _routes(self, topology: Topology, options: EngineOptions, wire: np.ndarray, extra, other_s: float) -> None:
        """The clock, latency ticks and the flows' state, for runs with contention.

        The clock's horizon bounds the makespan: while any flow moves, some saturated link carries flows whose
        sum of rate / own bottleneck is at least 1, so sum(latency) + sum(wire / bottleneck) + reductions + the
        latest start covers every run."""
        routes = self.routes
        pair_latency = self._pair_latency(topology)
        lat = pair_latency[self.pair_of]
        net = np.flatnonzero(~self.local)
        if extra is not None:
            lat[net] += np.asarray(extra)[net]
        capacity = np.asarray(topology.bandwidth[np.arange(topology.num_links)], dtype=np.float64).copy()
        for link, share in options.background.items():
            capacity[link] *= 1.0 - share
        self.flowing = (wire > 0) & (routes.lengths() > 0)
        pair_bottleneck = routes.per_pair(capacity, np.minimum)
        bottleneck = np.where(routes.lengths() > 0, pair_bottleneck[self.pair_of], np.inf)
        moving = float((wire[self.flowing] / bottleneck[self.flowing]).sum())
        self.clock = Clock(2 * (float(lat.sum()) + moving + other_s))
        self.latency = self.clock.ticks_array(lat)
        alone = None
        if options.ports == 1 and self.pair_src.size and self.eager is None:  # a link only one rank sends (or
            # receives) on: one flow at a time (eager sends of one rank overlap)
            alone = routes.one_sided(np.append(self.pair_src, -1), np.append(self.pair_dst, -1), capacity.size)
        weight = None
        if options.latency_weighted:  # SimGrid CM02: a flow's share grows as 1 / its route latency (1 for none)
            route = pair_latency[self.pair_of]
            weight = np.where(route > 0, 1 / np.maximum(route, 1e-300), 1.0)
        self.flows = Flows(routes, capacity, bottleneck, wire, self.clock.scale, self._post_done, self.agenda.post_done,
                           alone, self.agenda.forget, weight)

    def _post_done(self, when: np.ndarray, ids: np.ndarray, versions: np.ndarray) -> None:
        self.agenda.post_many(when, DONE, ids, versions)

    # ---- one instant: each kind of event has one handler, which takes a list of ids (a handful: one at a time) or an
    # int64 array (many: as arrays) --------------------------------------------------------------------------------
    def _instant(self, now: int, due: list[list]) -> None:
        """Everything due at `now`: openings, flows through and flows starting (then one reshare), arrivals, reductions
        ended; then the decisions, until nothing more is due now."""
        ids = _listed if not due[OPEN] and _few(due) else _chunks
        arrived = []
        if due[OPEN]:
            self.ports.open(_chunks(due[OPEN]))
            self.pending = True
        if due[DONE]:
            arrived.append(self.flows.done(*_done_chunks(due[DONE], ids is _listed)))
        if due[BEGIN]:
            self.flows.begin(ids(due[BEGIN]), now)
        if not self.fast:
            self.flows.reshare(now)
        if due[ARRIVE]:
            arrived.append(ids(due[ARRIVE]))
        if arrived:
            self._arrived(arrived[0] if len(arrived) == 1 else _joined(arrived), now)
        if due[REDUCED]:
            self._reduced(ids(due[REDUCED]), now)
        while self.pending and not self.agenda.has(now):
            self.pending = False
            self._decide(now)

    def _decide(self, now: int) -> None:
        """Idle reducers take their earliest arrival; ready transfers take free ports in id order and start."""
        if self.reduce_dirty:  # reducers that went idle or got work this instant take the earliest arrival
            idle = sorted(self.reduce_dirty)
            self.reduce_dirty.clear()
            for r in idle:
                if not self.reducer_busy[r] and self.reducer_queue[r]:
                    self._start_reduction(heapq.heappop(self.reducer_queue[r])[1], r, now)
        chunks, self.ready = self.ready, []
        go = self.ports.match(_ready(chunks))
        if len(go):
            self._go(go, now)

    def _go(self, go: list[int] | np.ndarray, now: int) -> None:
        """Transfers `go` start now: local ones land at once, network ones wait their latency (then flow or arrive)."""
        self._detach(go, now)
        if isinstance(go, list) or go.size <= _SMALL:
            self._go_each(go if isinstance(go, list) else go.tolist(), now)
            return
        self.record.start[go] = now
        local = self.local[go]
        net = go[~local]
        self.links.start(net, now)
        if self.fast:
            self.agenda.post_many(now + self.duration[net], ARRIVE, net)
        elif net.size:
            flowing = self.flowing[net]
            when = now + self.latency[net]
            self.agenda.post_many(when[flowing], BEGIN, net[flowing])
            self.agenda.post_many(when[~flowing], ARRIVE, net[~flowing])
        if local.any():
            loc = go[local]
            self.record.arrive[loc] = now
            self._landed(loc, now)

    def _go_each(self, go: list[int], now: int) -> None:
        """_go one transfer at a time."""
        start, local, post, delay, kind = self.record.s_start, self.s_local, self.agenda.post, self.s_delay, self.s_kind
        routes, pair, enter, nbytes = self.routes.tuples, self.routes.index, self.links.enter_one, self.s_nbytes
        landed = []
        for t in go:
            start[t] = now
            if local[t]:
                landed.append(t)
            else:
                enter(routes[pair[t]], nbytes[t], now)
                post(now + delay[t], kind[t], [t])
        if landed:
            self.record.arrive[landed] = now
            self._landed(landed, now)

    def _detach(self, go: list[int] | np.ndarray, now: int) -> None:
        """Eager sends among the transfers that start now give their send ports back and release the dependents that
        waited only for their sender to go on (`_early_edges`); the decision runs again."""
        if self.eager is None:
            return
        eager = [t for t in go if self.eager[t]] if isinstance(go, list) else go[self.eager[go]].tolist()
        if not eager:
            return
        self.ports.detach(eager)
        self.pending = True
        succ, _ = gather(self.early_ptr, self.early_idx, np.array(eager, dtype=np.int64))
        if succ.size:
            np.subtract.at(self.indeg, succ, 1)
            free = distinct(succ[self.indeg[succ] == 0])
            if free.size and self.join is not None:
                free = self._through_joins(free, now)
            if free.size:
                self.ready.append(np.sort(free))

    # ---- arrivals, reductions, ends ----------------------------------------------------------------------------
    def _arrived(self, ids: list[int] | np.ndarray, now: int) -> None:
        """Messages `ids` have arrived: their links are left and their ports free (an eager send's send port was
        already, `_detach`); then they land."""
        if isinstance(ids, list):
            if not ids:
                return
            arrive, src, dst, release = self.record.s_arrive, self.s_src, self.s_dst, self.ports.release_one
            routes, pair, leave = self.routes.tuples, self.routes.index, self.links.leave_one  # routes.of, inlined
            eager = self.eager
            for t in ids:
                arrive[t] = now
                release(src[t], dst[t], eager is None or not eager[t])
                leave(routes[pair[t]], now)
        elif not ids.size:
            return
        else:
            self.record.arrive[ids] = now
            self.links.arrive(ids, now)
            if self.eager is None:
                self.ports.release(ids)
            else:
                self.ports.release(ids[~self.eager[ids]])
                self.ports.release(ids[self.eager[ids]], send=False)
        self.pending = True
        self._landed(ids, now)

    def _landed(self, ids: list[int] | np.ndarray, now: int) -> None:
        """Messages in the receivers' memory: reductions queue (arrival order, then id), the rest end."""
        if self.gamma > 0:
            is_list = isinstance(ids, list)
            red = [t for t in ids if self.s_reduce[t]] if is_list else ids[self.is_reduce[ids]].tolist()
            if red:
                dst, queues, busy = self.s_dst, self.reducer_queue, self.reducer_busy
                for t in red:
                    r = int(dst[t])
                    heapq.heappush(queues[r], (now, t))
                    if not busy[r]:
                        self.reduce_dirty.add(r)
                        self.pending = True
                ids = [t for t in ids if not self.s_reduce[t]] if is_list else ids[~self.is_reduce[ids]]
        if len(ids):
            self._finish(ids, now)

    def _start_reduction(self, t: int, r: int, now: int) -> None:
        self.reducer_busy[r] = True
        self.agenda.post(now + self.clock.ticks(self.gamma * int(self.s_payload[t]) * self.slow[r]), REDUCED, [t])

    def _reduced(self, ids: list[int] | np.ndarray, now: int) -> None:
        """Reductions of `ids` have ended: their reducers are free, the transfers end."""
        dst, busy, queues = self.s_dst, self.reducer_busy, self.reducer_queue
        for t in ids if isinstance(ids, list) else ids.tolist():
            r = int(dst[t])
            busy[r] = False
            if queues[r]:
                self.reduce_dirty.add(r)
                self.pending = True
        self._finish(ids, now)

    def _finish(self, ids: list[int] | np.ndarray, now: int) -> None:
        """Transfers `ids` have ended: release their dependents."""
        if isinstance(ids, list) or ids.size <= _SMALL:
            self._finish_each(ids if isinstance(ids, list) else ids.tolist(), now)
            return
        self.record.end[ids] = now
        succ, _ = gather(self.succ_ptr, self.succ_idx, ids)
        if succ.size:
            indeg = self.indeg
            if succ.size == 1:
                indeg[succ[0]] -= 1
            else:
                np.subtract.at(indeg, succ, 1)
            free = succ[indeg[succ] == 0]
            if free.size and self.join is not None:
                free = self._through_joins(distinct(free), now)
            if free.size:
                self.ready.append(distinct(free))
                self.pending = True

    def _finish_each(self, ids: list[int], now: int) -> None:
        """_finish one transfer at a time."""
        end, indeg, ptr, succ = self.record.s_end, self.s_indeg, self.s_succ_ptr, self.s_succ_idx
        free = []
        for t in ids:
            end[t] = now
            for x in succ[ptr[t]:ptr[t + 1]]:
                left = indeg[x] = indeg[x] - 1
                if not left:
                    free.append(x)
        if free:
            if self.join is not None:
                free = self._through_joins(np.array(free, dtype=np.int64), now).tolist()
            free.sort()
            self.ready.append(free)
            self.pending = True

    def _through_joins(self, free: np.ndarray, now: int) -> np.ndarray:
        """Released transfers with the join nodes among them passed through: a join starts and ends now (no port, no
        time) and releases its dependents at once, in the same decision as the transfers released with it."""
        out = []
        while free.size:
            is_join = self.join[free]
            if not is_join.any():
                out.append(free)
                break
            out.append(free[~is_join])
            joins = free[is_join]
            self.ports.started[joins] = True
            self.record.start[joins] = now
            self.record.arrive[joins] = now
            self.record.end[joins] = now
            succ, _ = gather(self.succ_ptr, self.succ_idx, joins)
            if not succ.size:
                break
            np.subtract.at(self.indeg, succ, 1)
            free = distinct(succ[self.indeg[succ] == 0])
        return np.concatenate(out) if len(out) > 1 else (out[0] if out else _EMPTY)


def _early_edges(ptr: np.ndarray, idx: np.ndarray, src: np.ndarray, dst: np.ndarray,
                 eager: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The successor lists (CSR) split in two: those released when their transfer ends, and those an eager send e
    releases when it starts: its sender's own later transfers and those writing into its sender (t.src or t.dst is
    e.src), unless they read what e delivered (t.src is e.dst). An eager send's data is copied out when it is posted
    (SMPI's detached sends), so its sender goes on, and may overwrite what it sent, at once."""
    owner = np.repeat(np.arange(ptr.size - 1, dtype=np.int64), np.diff(ptr))
    early = eager[owner] & ((src[idx] == src[owner]) | (dst[idx] == src[owner])) & (src[idx] != dst[owner])
    out = []
    for keep in (~early, early):
        out += [np.concatenate(([0], np.cumsum(np.bincount(owner[keep], minlength=ptr.size - 1)))).astype(np.int64),
                idx[keep]]
    return out[0], out[1], out[2], out[3]


def _pairs(keys: np.ndarray, space: int) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(keys, return_inverse=True) for keys in [0, space): by marking a table and ranking the keys in it when
    it is small enough (int32 ranks for large tables: 8192 ranks make 67 M keys, 268 MB while it lasts)."""
    if space > 1 << 27 or space > max(64 * keys.size, 1 << 16):
        return np.unique(keys, return_inverse=True)
    seen = np.zeros(space, dtype=bool)
    seen[keys] = True
    uniq = np.flatnonzero(seen)
    del seen
    rank = np.zeros(space, dtype=np.int32 if uniq.size < 1 << 31 else np.int64)
    rank[uniq] = np.arange(uniq.size)
    return uniq, rank[keys].astype(np.int64)


__all__ = ["DeadlockError", "EngineOptions", "simulate"]
