"""Checks that a schedule is well formed: known ranks and buffers, a DAG, data held before it is sent."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from .collective import Collective
from .errors import CollsimError


class Schedule(Protocol):
    """What these checks read of a schedule. simulator.schedule.Schedule fits it; that module imports this one, never the reverse."""

    @property
    def collective(self) -> Collective: ...

    @property
    def transfers(self) -> Sequence[Any]: ...

    def buffer_size(self, rank: int, buf: str) -> int: ...


# Above this many transfers, the "writer is an ancestor" check (bitsets) is skipped and only
# the definedness of data in dependency order is checked.
ANCESTOR_CHECK_LIMIT = 20000


def initially_defined(schedule: Schedule, rank: int, buf: str) -> list[tuple[int, int]]:
    """Half-open element ranges of a buffer that hold valid data before the schedule runs (the op's spec)."""
    coll = schedule.collective
    if rank >= coll.ranks:  # a helper (a switch that reduces) starts with nothing
        return []
    return [(part.off, part.off + part.count) for part in coll.spec.start(coll, rank, buf)]


def topological_order(schedule: Schedule) -> list[int]:
    """Transfer ids in dependency order; a cycle is an error naming the transfers in it."""
    ts = schedule.transfers
    n = len(ts)
    indegree = np.zeros(n, dtype=np.int64)
    children: list[list[int]] = [[] for _ in range(n)]
    for t in ts:
        for d in t.deps:
            if not 0 <= d < n:
                raise CollsimError(f"schedule: transfer {t.id} ({t.src}->{t.dst}) waits for transfer {d}, which does not exist")
            if d == t.id:
                raise CollsimError(f"schedule: transfer {t.id} ({t.src}->{t.dst}) waits for itself")
            children[d].append(t.id)
            indegree[t.id] += 1
    ready = deque(i for i in range(n) if indegree[i] == 0)
    order: list[int] = []
    while ready:
        i = ready.popleft()
        order.append(i)
        for c in children[i]:
            indegree[c] -= 1
            if indegree[c] == 0:
                ready.append(c)
    if len(order) < n:
        stuck = [t for t in ts if indegree[t.id] > 0][:6]
        listing = ", ".join(f"#{t.id} {t.src}->{t.dst} waits for {list(t.deps)}" for t in stuck)
        raise CollsimError(f"schedule: dependency cycle among {n - len(order)} transfers, e.g. {listing}")
    return order


def validate(schedule: Schedule) -> None:
    """Raise CollsimError naming the first problem found."""
    coll = schedule.collective
    p = coll.ranks + getattr(schedule, "helpers", 0)
    for t in schedule.transfers:
        for who, rank in (("sender", t.src), ("receiver", t.dst)):
            if not 0 <= rank < p:
                raise CollsimError(f"schedule: transfer {t.id} has {who} rank {rank}; expected 0..{p - 1}")
        for piece in t.pieces:
            if piece.count < 0:
                raise CollsimError(f"schedule: transfer {t.id} has a piece of negative count {piece.count}")
            for rank, buf, off in ((t.src, piece.src_buf, piece.src_off), (t.dst, piece.dst_buf, piece.dst_off)):
                size = schedule.buffer_size(rank, buf)
                if off < 0 or off + piece.count > size:
                    raise CollsimError(
                        f"schedule: transfer {t.id} ({t.src}->{t.dst}) touches {buf}[{off}:{off + piece.count}] "
                        f"on rank {rank}, outside its {size} elements")
    order = topological_order(schedule)
    _check_dataflow(schedule, order)


def _check_dataflow(schedule: Schedule, order: list[int]) -> None:
    """Walk transfers in dependency order: data must be held before it is sent, and no two transfers may race."""
    ts = schedule.transfers
    exact = len(ts) <= ANCESTOR_CHECK_LIMIT
    ancestors: list[int] = [0] * len(ts)  # bitsets of ancestor ids, only when exact
    last: dict[tuple[int, str], np.ndarray] = {}  # per element: last copy-writer, -1 initial data, -2 undefined
    events: dict[tuple[int, str], list[tuple[int, int, int, bool]]] = {}  # (lo, hi, tid, is_reduce) since writes

    def writers(rank: int, buf: str) -> np.ndarray:
        key = (rank, buf)
        if key not in last:
            arr = np.full(schedule.buffer_size(rank, buf), -2, dtype=np.int64)
            for lo, hi in initially_defined(schedule, rank, buf):
                arr[lo:hi] = -1
            last[key] = arr
        return last[key]

    def must_precede(earlier: int, t, what: str) -> None:
        if earlier >= 0 and earlier != t.id and not (ancestors[t.id] >> earlier) & 1:
            e = ts[earlier]
            raise CollsimError(
                f"schedule: transfer {t.id} ({t.src}->{t.dst}, step {t.step}) {what} transfer {earlier} "
                f"({e.src}->{e.dst}, step {e.step}) but does not wait for it")

    def overlapping(key, lo, hi):
        return [ev for ev in events.get(key, ()) if ev[0] < hi and lo < ev[1]]

    for i in order:
        t = ts[i]
        if exact:
            bits = 0
            for d in t.deps:
                bits |= ancestors[d] | (1 << d)
            ancestors[i] = bits
        for piece in t.pieces:
            if piece.count == 0:
                continue
            lo, hi = piece.src_off, piece.src_off + piece.count
            src_w = writers(t.src, piece.src_buf)[lo:hi]
            if (src_w == -2).any():
                bad = lo + int(np.argmax(src_w == -2))
                raise CollsimError(
                    f"schedule: transfer {t.id} ({t.src}->{t.dst}, step {t.step}) sends {piece.src_buf}[{bad}] "
                    f"which rank {t.src} does not hold yet")
            if exact:
                for w in np.unique(src_w):
                    must_precede(int(w), t, "reads data written by")
                for _, _, other, is_reduce in overlapping((t.src, piece.src_buf), lo, hi):
                    if is_reduce:
                        must_precede(other, t, "reads data reduced by")
                events.setdefault((t.src, piece.src_buf), []).append((lo, hi, i, False))
        for piece in t.pieces:
            if piece.count == 0:
                continue
            key = (t.dst, piece.dst_buf)
            lo, hi = piece.dst_off, piece.dst_off + piece.count
            dst_w = writers(*key)[lo:hi]
            if t.reduce and (dst_w == -2).any():
                bad = lo + int(np.argmax(dst_w == -2))
                raise CollsimError(
                    f"schedule: transfer {t.id} ({t.src}->{t.dst}, step {t.step}) reduces into {piece.dst_buf}[{bad}] "
                    f"on rank {t.dst}, which holds no data there yet")
            if exact:
                for w in np.unique(dst_w):
                    must_precede(int(w), t, "writes over data written by")
                for _, _, other, is_reduce in overlapping(key, lo, hi):
                    if not (is_reduce and t.reduce):
                        must_precede(other, t, "writes where data is still used by")
                if t.reduce:
                    events.setdefault(key, []).append((lo, hi, i, True))
                else:
                    events[key] = [ev for ev in events.get(key, ()) if not (lo <= ev[0] and ev[1] <= hi)]
            if not t.reduce:
                dst_w[:] = i
