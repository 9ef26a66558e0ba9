"""Building blocks that several algorithms share, each over a group of ranks.

A group is a list of ranks; `segs[i]` is the (offset, count) region that the i-th member of the
group owns (the block it ends up reducing, or contributes to a gather). Each phase emits
transfers into a ScheduleBuilder and returns the next free display step. The ring phases
live with the one ring builder in ring.py.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..collective import Collective
from ..schedule import Piece, ScheduleBuilder

Seg = tuple[int, int]


def block_segs(offsets: Sequence[int]) -> list[Seg]:
    """(offset, count) per block from block start offsets (length p + 1)."""
    return [(int(offsets[i]), int(offsets[i + 1] - offsets[i])) for i in range(len(offsets) - 1)]


def chunked(seg: Seg, chunks: int) -> list[Seg]:
    """A region cut into `chunks` near-equal pieces; empty pieces are dropped (one stays if all are)."""
    off, count = seg
    if chunks == 1:
        return [(int(off), int(count))]
    base, extra = divmod(int(count), int(chunks))
    pieces, at = [], int(off)
    for i in range(chunks):
        c = base + (1 if i < extra else 0)
        if c:
            pieces.append((at, c))
        at += c
    return pieces or [(int(off), 0)]


def alltoall_offsets(coll: Collective) -> tuple[np.ndarray, np.ndarray]:
    """Alltoall layout as p x p tables: in_off[r, d] where r's block for d starts, out_off[r, s] where s's block lands."""
    p = coll.ranks
    base, extra = divmod(coll.count, p)
    r = np.arange(p)
    counts = base + (((r[None, :] - r[:, None]) % p) < extra)  # counts[src, dst]
    in_off = np.cumsum(counts, axis=1) - counts
    out_off = np.cumsum(counts.T, axis=1) - counts.T
    return in_off, out_off


def merge(segs: Sequence[Seg]) -> Seg:
    """The region spanning consecutive segments."""
    return segs[0][0], sum(c for _, c in segs)


def pieces_of(segs: Sequence[Seg], buf: str = "out", dst_buf: str | None = None) -> list[Piece]:
    """Pieces covering the given regions (same place on both sides), adjacent regions merged."""
    out: list[list[int]] = []
    for off, count in segs:
        if count <= 0:
            continue
        if out and out[-1][0] + out[-1][1] == off:
            out[-1][1] += count
        else:
            out.append([off, count])
    dst = dst_buf or buf
    return [Piece(buf, o, dst, o, c) for o, c in out] or [Piece(buf, 0, dst, 0, 0)]


def relative_group(p: int, root: int) -> list[int]:
    """Ranks ordered by rank relative to the root: member v is rank (v + root) mod p."""
    return [(v + root) % p for v in range(p)]


def fold(q: int) -> tuple[list[int], list[tuple[int, int]]]:
    """MPICH's pre/post step for q not a power of two: (member index of each of the 2^floor(lg q) survivors,
    (extra, survivor) pairs). The first 2r members pair up, r = q - 2^floor(lg q); odd 2i+1 folds into 2i."""
    pof2 = 1 << (q.bit_length() - 1) if q else 0
    r = q - pof2
    survivors = [2 * i for i in range(r)] + list(range(2 * r, q))
    return survivors, [(2 * i + 1, 2 * i) for i in range(r)]


def survivor_spans(q: int) -> list[tuple[int, int]]:
    """Member index range [lo, hi) each survivor of `fold(q)` stands for (contiguous, in order)."""
    survivors, pairs = fold(q)
    r = len(pairs)
    return [(s, s + 2) if s < 2 * r else (s, s + 1) for s in survivors]


def binomial_broadcast(b: ScheduleBuilder, group: Sequence[int], segs: Sequence[Seg], buf: str = "out",
                       step: int = 0) -> int:
    """Binomial tree from group[0]: farthest subtree first; ceil(lg q) rounds of the whole region."""
    q = len(group)
    mask = 1 << max(q - 1, 0).bit_length() >> 1 if q > 1 else 0
    rounds = 0
    while mask:
        for v in range(0, q, 2 * mask):
            if v + mask < q:
                b.send(group[v], group[v + mask], pieces_of(segs, buf), step=step + rounds)
        mask >>= 1
        rounds += 1
    return step + rounds


def binomial_reduce(b: ScheduleBuilder, group: Sequence[int], segs: Sequence[Seg], buf: str = "out",
                    step: int = 0) -> int:
    """Binomial tree reduction to group[0]: children reduce into their parents, nearest first."""
    q, mask, rounds = len(group), 1, 0
    while mask < q:
        for v in range(mask, q, 2 * mask):
            b.send(group[v], group[v - mask], pieces_of(segs, buf), reduce=True, step=step + rounds)
        mask <<= 1
        rounds += 1
    return step + rounds


def binomial_gather(b: ScheduleBuilder, group: Sequence[int], segs: Sequence[Seg], buf: str = "out",
                    step: int = 0) -> int:
    """Binomial gather to group[0]: member v forwards segs[v:v+lowbit(v)] (what its subtree holds) to v - lowbit(v)."""
    q, mask, rounds = len(group), 1, 0
    while mask < q:
        for v in range(mask, q, 2 * mask):
            b.send(group[v], group[v - mask], pieces_of(segs[v:min(v + mask, q)], buf), step=step + rounds)
        mask <<= 1
        rounds += 1
    return step + rounds


def binomial_scatter(b: ScheduleBuilder, group: Sequence[int], segs: Sequence[Seg], buf: str = "out",
                     step: int = 0, dst_buf: str | None = None) -> int:
    """Binomial scatter from group[0]: member v ends with segs[v]; each send carries a whole subtree's regions."""
    q = len(group)
    mask = 1 << max(q - 1, 0).bit_length() >> 1 if q > 1 else 0
    rounds = 0
    while mask:
        for v in range(0, q, 2 * mask):
            if v + mask < q:
                b.send(group[v], group[v + mask], pieces_of(segs[v + mask:min(v + 2 * mask, q)], buf, dst_buf),
                       step=step + rounds)
        mask >>= 1
        rounds += 1
    return step + rounds


def halving_reduce_scatter(b: ScheduleBuilder, group: Sequence[int], segs: Sequence[Seg], buf: str = "out",
                           step: int = 0) -> int:
    """Recursive halving over a power-of-two group: distance q/2 first; member i ends with segs[i] reduced."""
    q = len(group)
    win = [(0, q)] * q
    d = q // 2
    while d >= 1:
        new = list(win)
        for i in range(q):
            lo, hi = win[i]
            mid = (lo + hi) // 2
            keep, give = ((mid, hi), (lo, mid)) if i & d else ((lo, mid), (mid, hi))
            b.send(group[i], group[i ^ d], pieces_of(segs[give[0]:give[1]], buf), reduce=True, step=step)
            new[i] = keep
        win = new
        d //= 2
        step += 1
    return step


def doubling_allgather(b: ScheduleBuilder, group: Sequence[int], segs: Sequence[Seg], buf: str = "out",
                       step: int = 0) -> int:
    """Recursive doubling over a power-of-two group: member i starts with segs[i]; distance 1 first."""
    q, d = len(group), 1
    while d < q:
        for i in range(q):
            lo = i & ~(d - 1)
            b.send(group[i], group[i ^ d], pieces_of(segs[lo:lo + d], buf), step=step)
        d <<= 1
        step += 1
    return step


def doubling_allreduce(b: ScheduleBuilder, group: Sequence[int], seg: Seg, step: int = 0) -> int:
    """Recursive doubling allreduce over a power-of-two group: swap whole vectors via scratch, reduce locally."""
    q, d = len(group), 1
    off, count = seg
    b.use_scratch(off + count)
    while d < q:
        for i in range(q):
            b.send(group[i], group[i ^ d], Piece("out", off, "scratch", off, count), step=step)
        for i in range(q):
            b.send(group[i], group[i], Piece("scratch", off, "out", off, count), reduce=True, step=step)
        d <<= 1
        step += 1
    return step
