"""Send/receive ports and rank openings, and the matching of ready transfers to free ports, for many transfers at once.

A transfer needs its ranks open (stragglers start late) and, unless local, a free send port on its sender and a free
receive port on its receiver. Ready transfers take free ports in transfer-id order (greedily: the lowest id first);
those that cannot start wait and are looked at again when a port of one of their ranks frees or a rank opens.

Waiting transfers sit in per-rank queues ordered by id: one of sends, one of receives (and one of local transfers,
which wait only for their rank to open). When ports free, the queues of those ranks are merged in id order and each
is read only while its rank still has a free port of that kind: an entry after that could only fail, so with one
port a freed rank costs a look at one or two entries, not at everything waiting on it.

When many ranks free ports at once and few transfers wait per rank (ring phases on thousands of ranks), the per-rank
queues cost a Python step per rank; then the waiting transfers are kept as one array instead (the pool), and every
matching with freed ports looks at the whole pool with the newly ready, on arrays. Both give the same matching: a
waiting transfer whose ranks freed no port since it last failed fails again. The engine switches between the two
(with a margin, so it does not switch back and forth) by how many ranks freed ports against how many transfers wait.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

import numpy as np

from .csr import distinct, occurrence

_SEND, _RECV, _LOCAL, _READY = 0, 1, 2, 3  # a rank's waiting queues (heaps of ids), and newly ready transfers
_SMALL = 24  # below this many candidates the matching is a plain loop (numpy's fixed cost would dominate)
_MANY_DIRTY = 32  # with more ranks that freed ports than this and than a quarter of the waiting: the pool ...
_POOL_RATIO = 16  # ... and back to queues when the pool holds more than this many per rank that freed ports
_LIST_RANKS = 32  # up to this many ranks, free ports and open ranks are Python lists (cheap to read one at a time)


class Ports:
    """Free ports per rank, open ranks, and the transfers waiting for them (on their ranks' lists, as ids)."""

    def __init__(self, src: np.ndarray, dst: np.ndarray, ranks: int, ports: int, closed: Iterable[int] = ()):
        per_rank = ports if ports > 0 else len(src) + 1  # 0: unlimited
        self.src, self.dst = src, dst
        small = len(src) <= 1 << 20  # the one-at-a-time paths read Python lists when they fit
        self._s_src, self._s_dst = (src.tolist(), dst.tolist()) if small else (src, dst)
        # per rank: free send and receive ports, open or not; lists for the one-at-a-time paths when few ranks (the
        # array paths convert them), else arrays
        self._lists = ranks <= _LIST_RANKS
        self.free_send: list[int] | np.ndarray = np.full(ranks, per_rank, dtype=np.int64)
        self.free_recv: list[int] | np.ndarray = np.full(ranks, per_rank, dtype=np.int64)
        self.is_open: list[bool] | np.ndarray = np.ones(ranks, dtype=bool)
        for r in closed:
            self.is_open[r] = False
        if self._lists:
            self.free_send, self.free_recv = self.free_send.tolist(), self.free_recv.tolist()
            self.is_open = self.is_open.tolist()
        # per transfer: started, and waiting on its ranks' queues (until it starts); bool arrays over bytearrays, which
        # the one-at-a-time paths read and write (cheaper than an array's elements)
        self._started = bytearray(len(src))
        self._waits = bytearray(len(src))
        self.started = np.frombuffer(self._started, dtype=bool)
        self._waiting = np.frombuffer(self._waits, dtype=bool)
        # per rank, heaps of waiting ids: [sends, receives, local]; entries that started are dropped when met
        self._heaps: list[list[list[int]]] = [[[], [], []] for _ in range(ranks)]
        self._lists_buf = bytearray(ranks)
        self._listed = np.frombuffer(self._lists_buf, dtype=bool)  # rank has a non-empty queue (and its bytearray)
        self.dirty: set[int] = set()                     # ranks with waiting transfers whose ports freed or that opened
        self._count = 0                                  # transfers waiting in the queues (started ones excluded)
        self._pool: np.ndarray | None = None             # the waiting transfers, when kept as one array (else queues)
        self._fresh: list[int] = []                      # transfers that began to wait since the pool was last read

    def release(self, ids: np.ndarray, send: bool = True) -> None:
        """Messages `ids` (network transfers) have arrived: their send (unless `send` is False: eager sends gave theirs
        back when they started, `detach`) and receive ports are free again."""
        s, d = (self.src[ids] if send else ids[:0]), self.dst[ids]
        if self._lists:
            free_send, free_recv = self.free_send, self.free_recv
            for r in s.tolist():
                free_send[r] += 1
            for r in d.tolist():
                free_recv[r] += 1
        else:
            np.add.at(self.free_send, s, 1)
            np.add.at(self.free_recv, d, 1)
        listed = self._listed
        for ranks in (s, d):
            hit = ranks[listed[ranks]]
            if hit.size:
                self.dirty.update(hit.tolist())

    def release_one(self, s: int, d: int, send: bool = True) -> None:
        """release() for one message from s to d."""
        listed = self._lists_buf
        if send:
            self.free_send[s] += 1
            if listed[s]:
                self.dirty.add(s)
        self.free_recv[d] += 1
        if listed[d]:
            self.dirty.add(d)

    def detach(self, ids: list[int]) -> None:
        """Eager sends `ids` have started: their senders' send ports are free again at once (SMPI's detached sends:
        the sender goes on while the message moves); their receive ports stay taken until they arrive."""
        listed = self._lists_buf
        for t in ids:
            s = self._s_src[t]
            self.free_send[s] += 1
            if listed[s]:
                self.dirty.add(s)

    def open(self, ranks: np.ndarray) -> None:
        """Ranks may start transfers from now on."""
        if self._lists:
            for r in np.asarray(ranks).tolist():
                self.is_open[r] = True
        else:
            self.is_open[ranks] = True
        self.dirty.update(int(r) for r in ranks if self._listed[r])

    def _wait(self, ids: list[int]) -> None:
        """Transfers `ids` (ready, not started) wait: onto their ranks' queues, or into the pool."""
        if self._pool is not None:
            self._fresh.extend(ids)
            if len(ids) > _SMALL:
                arr = np.asarray(ids, dtype=np.int64)
                self._listed[self.src[arr]] = True
                self._listed[self.dst[arr]] = True
            else:
                for t in ids:
                    self._lists_buf[self._s_src[t]] = self._lists_buf[self._s_dst[t]] = True
            return
        src, dst, waiting, queues, listed = self._s_src, self._s_dst, self._waits, self._heaps, self._lists_buf
        push = heapq.heappush
        for t in ids:
            if not waiting[t]:
                waiting[t] = True
                self._count += 1
                s, d = int(src[t]), int(dst[t])
                if d != s:
                    push(queues[s][_SEND], t)
                    push(queues[d][_RECV], t)
                    listed[s] = listed[d] = True
                else:
                    push(queues[s][_LOCAL], t)
                    listed[s] = True

    def match(self, ready: list[int] | np.ndarray) -> list[int] | np.ndarray:
        """The transfers that start now, in id order, with their ports taken: of `ready` (newly ready; a sorted list of
        a handful, or an array) and of those waiting on ranks whose ports freed or that opened. The others wait. A
        list gives a list, an array an array."""
        few = isinstance(ready, list)
        if self.dirty:
            if self._pool is not None or self._to_pool():
                go = self._match_pool(np.array(ready, dtype=np.int64) if few else ready)
                return go.tolist() if few else go
            if few:
                return self._match_queues(ready)
            hopeless: list[int] = []
            if ready.size > _SMALL:  # those whose ports are taken already cannot start: they only join the queues
                s, d = self.src[ready], self.dst[ready]
                free_send, free_recv, is_open = self._arrays()
                ok = is_open[s] & is_open[d] & ((s == d) | ((free_send[s] > 0) & (free_recv[d] > 0)))
                hopeless = ready[~ok].tolist()
                ready = ready[ok]
            go = self._match_queues(ready.tolist())
            if hopeless:
                self._wait(hopeless)
            return np.array(go, dtype=np.int64)
        if few:
            go, wait = self._match_small(ready)
        else:
            if ready.size > 1:
                ready = distinct(ready)
            if ready.size < _SMALL:
                go, wait = self._match_small(ready.tolist())
                go = np.array(go, dtype=np.int64)
            else:
                go, wait = self._match_many(ready)
                wait = wait.tolist()
        if wait:
            self._wait(wait)
        return go

    def _match_queues(self, ready: list[int]) -> list[int]:
        """The greedy id-order matching over `ready` (newly ready) and the queues of the dirty ranks, merged in id order.

        A rank's send (receive) queue is read only while the rank is open and has a free send (receive) port: any later
        entry would fail on that port, as ports only get taken during a matching. Entries met that cannot start stay
        in their queues; newly ready ones that cannot start join the queues."""
        src, dst, is_open, started = self._s_src, self._s_dst, self.is_open, self._started
        free_send, free_recv, heaps = self.free_send, self.free_recv, self._heaps
        pop, push = heapq.heappop, heapq.heappush
        dirty, self.dirty = self.dirty, set()
        merge = self._heads(dirty) + [(t, _READY, 0) for t in ready]  # (id, kind, rank)
        heapq.heapify(merge)
        go: list[int] = []
        wait: list[int] = []
        back: list[tuple[list[int], int]] = []
        while merge:
            t, kind, r = pop(merge)
            if not started[t]:
                s, d = src[t], dst[t]
                if is_open[s] and is_open[d] and (s == d or (free_send[s] > 0 and free_recv[d] > 0)):
                    started[t] = True
                    if s != d:
                        free_send[s] -= 1
                        free_recv[d] -= 1
                    go.append(t)
                    if kind != _READY:
                        self._count -= 1
                elif kind == _READY:
                    wait.append(t)
                else:
                    back.append((heaps[r][kind], t))
            if kind != _READY:
                q = heaps[r][kind]
                if q and (kind == _LOCAL or (free_send if kind == _SEND else free_recv)[r] > 0):
                    push(merge, (pop(q), kind, r))
        for q, t in back:
            push(q, t)
        if wait:
            self._wait(wait)
        listed = self._lists_buf
        for r in dirty:
            listed[r] = any(heaps[r])
        return go

    def _to_pool(self) -> bool:
        """Switch from queues to the pool if many ranks freed ports and few transfers wait per such rank."""
        if len(self.dirty) <= _MANY_DIRTY or 4 * len(self.dirty) < self._count:
            return False
        self._pool = np.flatnonzero(self._waiting & ~self.started)
        self._fresh = []
        for r in np.flatnonzero(self._listed).tolist():
            self._heaps[r] = [[], [], []]
        self._waiting[:] = False
        self._count = 0
        return True

    def _to_queues(self, pool: np.ndarray) -> None:
        """Switch from the pool back to queues (the ranks that freed ports stay dirty)."""
        self._pool, self._fresh = None, []
        self._listed[:] = False
        self._wait(pool.tolist())

    def _match_pool(self, ready: np.ndarray) -> np.ndarray:
        """The matching with ports freed, in pool form: the whole pool and `ready`, greedily in id order."""
        pool = self._pool if not self._fresh else np.concatenate((self._pool, np.array(self._fresh, dtype=np.int64)))
        self._fresh = []
        if pool.size > _POOL_RATIO * len(self.dirty) and pool.size > 2 * _MANY_DIRTY:
            self._to_queues(pool)
            return np.array(self._match_queues(distinct(ready).tolist()), dtype=np.int64)
        self.dirty = set()
        cands = distinct(np.concatenate((pool, ready)) if ready.size else pool)
        if cands.size < _SMALL:
            go, wait = self._match_small(cands.tolist())
            go, wait = np.array(go, dtype=np.int64), np.array(wait, dtype=np.int64)
        else:
            go, wait = self._match_many(cands)
        self._pool = wait
        self._listed[:] = False
        self._listed[self.src[wait]] = True
        self._listed[self.dst[wait]] = True
        return go

    def _heads(self, dirty: set[int]) -> list[tuple[int, int, int]]:
        """The first entry of every readable queue of the open dirty ranks, taken off its queue."""
        heads = []
        pop, heaps, is_open, free_send, free_recv = heapq.heappop, self._heaps, self.is_open, self.free_send, self.free_recv
        for r in dirty:
            if is_open[r]:
                sends, recvs, local = heaps[r]
                if sends and free_send[r] > 0:
                    heads.append((pop(sends), _SEND, r))
                if recvs and free_recv[r] > 0:
                    heads.append((pop(recvs), _RECV, r))
                if local:
                    heads.append((pop(local), _LOCAL, r))
        return heads

    def _match_small(self, cands: list[int]) -> tuple[list[int], list[int]]:
        src, dst, is_open = self._s_src, self._s_dst, self.is_open
        free_send, free_recv, started = self.free_send, self.free_recv, self._started
        go, wait = [], []
        for t in cands:
            s, d = src[t], dst[t]
            if is_open[s] and is_open[d] and (s == d or (free_send[s] > 0 and free_recv[d] > 0)):
                started[t] = True
                if s != d:
                    free_send[s] -= 1
                    free_recv[d] -= 1
                go.append(t)
            else:
                wait.append(t)
        return go, wait

    def _arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Free send ports, free receive ports and open ranks as arrays (copies when kept as lists)."""
        if not self._lists:
            return self.free_send, self.free_recv, self.is_open
        return (np.array(self.free_send, dtype=np.int64), np.array(self.free_recv, dtype=np.int64),
                np.array(self.is_open, dtype=bool))

    def _match_many(self, cands: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The greedy id-order matching in rounds: a candidate whose ranks have more free ports than there are
        earlier eligible candidates wanting them starts for sure (earlier ones only ever give ports back by failing);
        the rest are looked at again after those took their ports."""
        src, dst = self.src, self.dst
        free_send, free_recv, is_open = self._arrays()
        go, wait = [], []
        while cands.size:
            s, d = src[cands], dst[cands]
            local = s == d
            ok = is_open[s] & is_open[d] & (local | ((free_send[s] > 0) & (free_recv[d] > 0)))
            wait.append(cands[~ok])
            cands, s, d, local = cands[ok], s[ok], d[ok], local[ok]
            if not cands.size:
                break
            net = ~local
            ns, nd = s[net], d[net]
            if _once(ns, free_send.size) and _once(nd, free_recv.size):  # no rank wanted twice: every one fits
                take = np.ones(cands.size, dtype=bool)
            else:
                take = local.copy()
                take[net] = (occurrence(ns) < free_send[ns]) & (occurrence(nd) < free_recv[nd])
            now = cands[take]
            go.append(now)
            taken = take & net
            np.subtract.at(free_send, s[taken], 1)
            np.subtract.at(free_recv, d[taken], 1)
            cands = cands[~take]
        if self._lists:
            self.free_send, self.free_recv = free_send.tolist(), free_recv.tolist()
        started = np.concatenate(go) if go else np.zeros(0, dtype=np.int64)
        started.sort()
        self.started[started] = True
        return started, (np.concatenate(wait) if wait else np.zeros(0, dtype=np.int64))


def _once(ranks: np.ndarray, size: int) -> bool:
    """True if no rank appears twice."""
    return ranks.size <= 1 or int(np.bincount(ranks, minlength=size).max()) <= 1
