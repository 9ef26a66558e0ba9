"""What a simulation did: per-transfer times and routes, per-link load, totals, and exports (CSV, JSON, Chrome trace)."""

from __future__ import annotations

import csv
import io
import json
from functools import cached_property

import numpy as np

from .fileio import atomic_write


class Trace:
    """Start, arrival and end time of every transfer of a schedule run on a topology, with derived link statistics."""

    engine_links: dict[str, np.ndarray] | None = None  # the link table as the engine counted it (integer ticks), if any

    def __init__(self, schedule, topology, options, start: np.ndarray, arrive: np.ndarray, end: np.ndarray,
                 events: int = 0, wall_s: float = 0.0, routes: dict | None = None):
        self.schedule = schedule
        self.topology = topology
        self.options = options
        self.start = start
        self.arrive = arrive
        self.end = end
        self.events = events
        self.wall_s = wall_s
        self._pair_routes = routes
        self.deadlock: list[dict] | None = None

    # ---- totals ----------------------------------------------------------------------------
    @cached_property
    def stuck(self) -> np.ndarray:
        """Ids of transfers that never ended (empty unless the run deadlocked)."""
        return np.flatnonzero(np.isnan(self.end))

    @property
    def time(self) -> float:
        """Seconds from the start until the last transfer ended."""
        done = self.end[~np.isnan(self.end)]
        return float(done.max()) if done.size else 0.0

    @property
    def algbw(self) -> float:
        """Algorithm bandwidth, B/s (nccl-tests)."""
        return self.schedule.collective.algbw(self.time)

    @property
    def busbw(self) -> float:
        """Bus bandwidth, B/s (nccl-tests)."""
        return self.schedule.collective.busbw(self.time)

    # ---- routes and links ------------------------------------------------------------------
    @cached_property
    def _network(self) -> np.ndarray:
        a = self.schedule.arrays
        return np.flatnonzero((a["src"] != a["dst"]) & ~np.isnan(self.start))

    @cached_property
    def _route_csr(self) -> tuple[np.ndarray, np.ndarray]:
        """(ptr, link ids) over the network transfers that ran, in the order of `_network`."""
        a = self.schedule.arrays
        ids = self._network
        src, dst = a["src"][ids], a["dst"][ids]
        topo = self.topology
        if topo.ideal:
            return np.arange(len(ids) + 1), topo.route_array(src, dst)
        p = self.schedule.collective.ranks
        keys = src * p + dst
        uniq, inverse = np.unique(keys, return_inverse=True)
        routes = [topo.route(int(k) // p, int(k) % p) for k in uniq]
        lengths = np.array([len(r) for r in routes], dtype=np.int64)
        flat = np.fromiter((link for r in routes for link in r), np.int64, int(lengths.sum()))
        starts = np.concatenate(([0], np.cumsum(lengths)))
        per = lengths[inverse]
        ptr = np.concatenate(([0], np.cumsum(per)))
        gather = np.repeat(starts[inverse], per) + (np.arange(ptr[-1]) - np.repeat(ptr[:-1], per))
        return ptr, flat[gather]

    def route_of(self, tid: int) -> tuple[int, ...]:
        """Link ids transfer `tid` crossed."""
        t = self.schedule.transfers[tid]
        return self.topology.route(t.src, t.dst)

    @cached_property
    def link_table(self) -> dict[str, np.ndarray]:
        """Per used link: id, bytes carried, busy seconds (union of flow intervals), peak concurrent flows."""
        if self.engine_links is not None:
            return self.engine_links
        ptr, links = self._route_csr
        ids = self._network
        if links.size == 0:
            empty = np.zeros(0)
            return {"link": empty.astype(np.int64), "bytes": empty, "busy_s": empty, "peak_flows": empty.astype(np.int64)}
        per = np.diff(ptr)
        nbytes = np.repeat(self.schedule.arrays["bytes"][ids] + self.options.header_bytes, per).astype(np.float64)
        t0 = np.repeat(self.start[ids], per)
        t1 = np.repeat(self.arrive[ids], per)
        used, inv = np.unique(links, return_inverse=True)
        carried = np.bincount(inv, weights=nbytes, minlength=used.size)
        # busy time: union of intervals per link, groups kept apart by a per-link offset
        span = 2 * max(self.time, float(np.nanmax(t1)) if t1.size else 0.0) + 1e-300  # apart, and no coarser than need be
        s = t0 + inv * span
        e = t1 + inv * span
        order = np.argsort(s, kind="stable")
        s, e, g = s[order], e[order], inv[order]
        run_end = np.maximum.accumulate(e)
        new = np.ones(s.size, dtype=bool)
        new[1:] = s[1:] > run_end[:-1]
        seg = np.cumsum(new) - 1
        seg_start = s[new]
        seg_end = np.zeros(seg_start.size)
        np.maximum.at(seg_end, seg, e)
        busy = np.bincount(g[new], weights=seg_end - seg_start, minlength=used.size)
        # peak concurrent flows: +1 at start, -1 at arrival (arrivals first at equal times)
        times = np.concatenate((t0, t1))
        delta = np.concatenate((np.ones(t0.size, np.int64), -np.ones(t1.size, np.int64)))
        group = np.concatenate((inv, inv))
        order = np.lexsort((delta, times, group))
        level = np.cumsum(delta[order])
        grp = group[order]
        base = np.concatenate(([0], level))[np.searchsorted(grp, np.arange(used.size))]
        peak = np.zeros(used.size, dtype=np.int64)
        np.maximum.at(peak, grp, level - base[grp])
        return {"link": used, "bytes": carried, "busy_s": busy, "peak_flows": peak}

    def link_bytes_by(self, label: np.ndarray, labels: int) -> tuple[np.ndarray, np.ndarray]:
        """Bytes each used link carried per label: `label[t]` in 0..labels-1 for transfer t (negative: not counted);
        returns (link ids, bytes[link, label])."""
        ptr, links = self._route_csr
        ids = self._network
        per = np.diff(ptr)
        nbytes = np.repeat(self.schedule.arrays["bytes"][ids] + self.options.header_bytes, per).astype(np.float64)
        lab = np.repeat(np.asarray(label)[ids], per)
        keep = lab >= 0
        used, inv = np.unique(links[keep], return_inverse=True)
        out = np.zeros((used.size, labels))
        np.add.at(out, (inv, lab[keep]), nbytes[keep])
        return used, out

    def link_busy_intervals(self, lid: int) -> list[tuple[float, float]]:
        """Merged [start, end) intervals during which link `lid` carried at least one flow."""
        ptr, links = self._route_csr
        rows = np.searchsorted(ptr, np.flatnonzero(links == lid), side="right") - 1
        ids = self._network[rows]
        spans = sorted(zip(self.start[ids].tolist(), self.arrive[ids].tolist()))
        merged: list[list[float]] = []
        for a, b in spans:
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        return [(a, b) for a, b in merged]

    def busiest_link(self) -> dict | None:
        """The link whose bytes take the longest at its bandwidth, with its utilisation over the run."""
        table = self.link_table
        if table["link"].size == 0:
            return None
        bw = np.array([self.topology.bandwidth[int(k)] for k in table["link"]], dtype=np.float64)
        need = table["bytes"] / bw
        i = int(np.argmax(need))
        lid = int(table["link"][i])
        total = self.time
        return {"link": lid, "name": self.topology.link_name(lid), "bytes": float(table["bytes"][i]),
                "bandwidth_Bps": float(bw[i]), "busy_s": float(table["busy_s"][i]),
                "utilisation": float(need[i] / total) if total > 0 else 0.0,
                "busy_fraction": float(table["busy_s"][i] / total) if total > 0 else 0.0,
                "peak_flows": int(table["peak_flows"][i])}

    # ---- critical path ---------------------------------------------------------------------
    def critical_path(self) -> list[int]:
        """Transfer ids, first to last, each one's start enabled by the previous one's end (or by a freed port)."""
        if self.end.size == 0 or np.all(np.isnan(self.end)):
            return []
        a = self.schedule.arrays
        src, dst, ptr, idx = a["src"], a["dst"], a["dep_ptr"], a["dep_idx"]
        freed = _PortArrivals(src, dst, self.arrive)
        t = int(np.nanargmax(self.end))
        path = [t]
        while len(path) <= len(self.end):
            s = float(self.start[t])
            deps = idx[ptr[t]:ptr[t + 1]]
            prev = None
            if deps.size:
                j = int(deps[np.argmax(self.end[deps])])
                if self.end[j] >= s:
                    prev = j
            if prev is None and s > 0:  # (at 0 nothing came before: the walk ends either way)
                prev = freed.last(int(src[t]), int(dst[t]), s)
                if prev is not None and prev == t:
                    prev = None
            if prev is None or s <= 0:
                break
            path.append(prev)
            t = prev
        return path[::-1]

    # ---- exports ---------------------------------------------------------------------------
    def summary(self) -> dict:
        """Totals as plain data: time, bandwidths, events, the busiest link, deadlock if any."""
        coll = self.schedule.collective
        out = {"op": coll.op, "algorithm": self.schedule.algorithm, "params": dict(self.schedule.params),
               "ranks": coll.ranks, "bytes": coll.nbytes, "topology": self.topology.name,
               "time_s": self.time, "algbw_GBps": self.algbw / 1e9, "busbw_GBps": self.busbw / 1e9,
               "transfers": len(self.schedule), "events": self.events, "wall_s": self.wall_s,
               "options": {"gamma_s_per_byte": self.options.gamma, "ports": self.options.ports,
                           "contention": self.options.contention, "header_bytes": self.options.header_bytes,
                           "eager_bytes": self.options.eager_bytes, "latency_weighted": self.options.latency_weighted,
                           "start_delay": {str(k): v for k, v in self.options.start_delay.items()},
                           "slowdown": {str(k): v for k, v in self.options.slowdown.items()},
                           "background": {str(k): v for k, v in self.options.background.items()}}}
        out["busiest_link"] = self.busiest_link()
        if self.deadlock:
            out["deadlock"] = self.deadlock
        return out

    def transfer_rows(self) -> list[dict]:
        """One row per transfer: ids, ranks, chunk, bytes, route, times."""
        rows = []
        topo = self.topology
        for t in self.schedule.transfers:
            route = topo.route(t.src, t.dst) if not t.local else ()
            rows.append({"id": t.id, "src": t.src, "dst": t.dst, "step": t.step, "reduce": t.reduce,
                         "chunk": "+".join(f"{p.src_buf}[{p.src_off}:{p.src_off + p.count}]" for p in t.pieces),
                         "bytes": self.schedule.nbytes(t), "route": ">".join(topo.link_name(link) for link in route),
                         "start_s": _num(self.start[t.id]), "arrive_s": _num(self.arrive[t.id]), "end_s": _num(self.end[t.id])})
        return rows

    def link_rows(self) -> list[dict]:
        """One row per used link: name, bytes, busy time, peak concurrent flows."""
        table = self.link_table
        return [{"link": int(k), "name": self.topology.link_name(int(k)), "bytes": float(b), "busy_s": float(s),
                 "peak_flows": int(pk)} for k, b, s, pk in zip(table["link"], table["bytes"], table["busy_s"], table["peak_flows"])]

    def to_csv(self, path) -> None:
        """Per-transfer rows as CSV (written atomically)."""
        rows = self.transfer_rows()
        buf = io.StringIO()
        fields = ["id", "src", "dst", "step", "reduce", "chunk", "bytes", "route", "start_s", "arrive_s", "end_s"]
        writer = csv.DictWriter(buf, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
        atomic_write(path, buf.getvalue())

    def to_json(self, path) -> None:
        """Totals, per-link and per-transfer data as JSON (written atomically)."""
        data = {"summary": self.summary(), "critical_path": self.critical_path(), "links": self.link_rows(),
                "transfers": self.transfer_rows()}
        atomic_write(path, json.dumps(data, indent=1, default=_json_default))

    def chrome_events(self) -> list[dict]:
        """Chrome trace events: a track per rank (send, receive, reduce) and one per link; times in us."""
        ev: list[dict] = [{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "ranks"}},
                          {"name": "process_name", "ph": "M", "pid": 2, "args": {"name": "links"}}]
        p = self.schedule.collective.ranks
        for r in range(p):
            for k, what in enumerate(("send", "recv", "reduce")):
                ev.append({"name": "thread_name", "ph": "M", "pid": 1, "tid": 3 * r + k, "args": {"name": f"rank {r} {what}"}})
        us = 1e6
        for t in self.schedule.transfers:
            s, a, e = self.start[t.id], self.arrive[t.id], self.end[t.id]
            if np.isnan(s):
                continue
            nbytes = self.schedule.nbytes(t)
            args = {"id": t.id, "src": t.src, "dst": t.dst, "bytes": nbytes, "step": t.step}
            label = f"#{t.id} {'reduce' if t.reduce else 'copy'} {t.src}->{t.dst}"
            if not t.local:
                ev.append({"name": label, "ph": "X", "pid": 1, "tid": 3 * t.src, "ts": s * us, "dur": (a - s) * us, "args": args})
                ev.append({"name": label, "ph": "X", "pid": 1, "tid": 3 * t.dst + 1, "ts": s * us, "dur": (a - s) * us, "args": args})
            if e > a:
                ev.append({"name": label, "ph": "X", "pid": 1, "tid": 3 * t.dst + 2, "ts": a * us, "dur": (e - a) * us, "args": args})
        ptr, links = self._route_csr
        names = {}
        for row, tid in enumerate(self._network.tolist()):
            for link in links[ptr[row]:ptr[row + 1]].tolist():
                if link not in names:
                    names[link] = self.topology.link_name(link)
                    ev.append({"name": "thread_name", "ph": "M", "pid": 2, "tid": link, "args": {"name": names[link]}})
                ev.append({"name": f"#{tid}", "cat": "flow", "ph": "b", "id": f"{tid}:{link}", "pid": 2, "tid": link,
                           "ts": float(self.start[tid]) * us})
                ev.append({"name": f"#{tid}", "cat": "flow", "ph": "e", "id": f"{tid}:{link}", "pid": 2, "tid": link,
                           "ts": float(self.arrive[tid]) * us})
        return ev

    def to_chrome(self, path) -> None:
        """Chrome trace event JSON (opens in Perfetto and chrome://tracing), written atomically."""
        atomic_write(path, json.dumps({"traceEvents": self.chrome_events(), "displayTimeUnit": "ns",
                                       "otherData": {"collsim": self.summary()}}, default=_json_default))

    def export(self, path) -> str:
        """Write by extension: .csv per-transfer rows, .json full data, .trace.json / chrome Chrome trace; return the kind."""
        name = str(path).lower()
        if name.endswith(".csv"):
            self.to_csv(path)
            return "csv"
        if name.endswith(".trace.json") or name.endswith(".chrome.json"):
            self.to_chrome(path)
            return "chrome"
        self.to_json(path)
        return "json"


def _num(value: float):
    return None if np.isnan(value) else float(value)


def _json_default(value):
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return None if np.isnan(value) else float(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


class _PortArrivals:
    """The network transfer that arrived at a given instant from (or to) a rank, for the critical path's walk: the
    highest id among equals. Network transfers sorted by arrival on first use only (most walks follow dependencies);
    a lookup reads the transfers that arrived at that instant."""

    def __init__(self, src: np.ndarray, dst: np.ndarray, arrive: np.ndarray):
        self._src, self._dst, self._arrive = src, dst, arrive
        self._sorted: tuple[np.ndarray, np.ndarray] | None = None

    def _at(self, at: float) -> np.ndarray:
        """The network transfers that arrived at `at`."""
        if self._sorted is None:
            net = np.flatnonzero(self._src != self._dst)
            order = net[np.argsort(self._arrive[net], kind="stable")]
            self._sorted = (order, self._arrive[order])
        order, times = self._sorted
        return order[np.searchsorted(times, at, side="left"):np.searchsorted(times, at, side="right")]

    def last(self, src: int, dst: int, at: float) -> int | None:
        """A message sent by `src` that arrived at `at`, else one received by `dst` then, else None."""
        ids = self._at(at)
        for ranks, rank in ((self._src, src), (self._dst, dst)):
            hit = ids[ranks[ids] == rank]
            if hit.size:
                return int(hit.max())
        return None
