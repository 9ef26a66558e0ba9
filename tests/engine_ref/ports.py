"""Per-rank send and receive ports, and the matching of ready transfers to free ports in transfer-id order."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


class Ports:
    """Who may start now: a transfer needs its ranks open (stragglers start late) and, unless local, a free send port
    on its sender and a free receive port on its receiver. Ready transfers that cannot start wait on their ranks'
    lists and are looked at again when a port of one of those ranks frees or the rank opens."""

    def __init__(self, src: Sequence[int], dst: Sequence[int], ranks: int, ports: int, closed: Iterable[int] = ()):
        per_rank = ports if ports > 0 else len(src) + 1  # 0: unlimited
        self.src, self.dst = src, dst
        self.free_send = [per_rank] * ranks
        self.free_recv = [per_rank] * ranks
        self.is_open = [True] * ranks
        for r in closed:
            self.is_open[r] = False
        self.started = [False] * len(src)
        self._waiting = [False] * len(src)
        self._wait_lists: list[list[int]] = [[] for _ in range(ranks)]
        self._dirty: set[int] = set()

    def release(self, s: int, d: int) -> None:
        """A message from s to d has arrived: its send and receive ports are free again."""
        self.free_send[s] += 1
        self.free_recv[d] += 1
        if self._wait_lists[s]:
            self._dirty.add(s)
        if self._wait_lists[d]:
            self._dirty.add(d)

    def open(self, r: int) -> None:
        """Rank r may start transfers from now on."""
        self.is_open[r] = True
        self._dirty.add(r)

    def match(self, ready: list[int]) -> list[int]:
        """The transfers that start now, in id order, with their ports taken: of `ready` (newly ready) and of those
        waiting on ranks whose ports freed or that opened. The others wait."""
        src, dst, started = self.src, self.dst, self.started
        free_send, free_recv, is_open = self.free_send, self.free_recv, self.is_open
        cands = ready
        for r in self._dirty:
            waits = self._wait_lists[r]
            if waits:
                keep = [t for t in waits if not started[t]]
                self._wait_lists[r] = keep
                cands.extend(keep)
        self._dirty.clear()
        if len(cands) > 1:
            cands = sorted(set(cands))
        go = []
        for t in cands:
            if started[t]:
                continue
            s, d = src[t], dst[t]
            if is_open[s] and is_open[d] and (s == d or (free_send[s] > 0 and free_recv[d] > 0)):
                started[t] = True
                if s != d:
                    free_send[s] -= 1
                    free_recv[d] -= 1
                go.append(t)
            elif not self._waiting[t]:
                self._waiting[t] = True
                self._wait_lists[s].append(t)
                if d != s:
                    self._wait_lists[d].append(t)
        return go
