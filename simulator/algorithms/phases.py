"""Building blocks that several algorithms share, each over a group of ranks.

A group is a list of ranks; `segs[i]` is the (offset, count) region that the i-th member of the
group owns (the block it ends up reducing, or contributes to a gather). Each phase emits
transfers into a ScheduleBuilder and returns the next free display step.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..collective import split_counts
from ..schedule import ScheduleBuilder, region

Seg = tuple[int, int]


def block_segs(offsets: Sequence[int]) -> list[Seg]:
    """(offset, count) per block from block start offsets (length p + 1)."""
    return [(int(offsets[i]), int(offsets[i + 1] - offsets[i])) for i in range(len(offsets) - 1)]


def chunked(seg: Seg, chunks: int) -> list[Seg]:
    """A region cut into `chunks` near-equal pieces; empty pieces are dropped (one stays if all are)."""
    off, count = seg
    pieces, at = [], off
    for c in split_counts(count, chunks):
        if c:
            pieces.append((at, int(c)))
        at += int(c)
    return pieces or [(off, 0)]


def merge(segs: Sequence[Seg]) -> Seg:
    """The region spanning consecutive segments."""
    return segs[0][0], sum(c for _, c in segs)


def ring_reduce_scatter(b: ScheduleBuilder, group: Sequence[int], segs: Sequence[Seg], chunks: int = 1,
                        buf: str = "out", step: int = 0) -> int:
    """Ring reduce-scatter: after q-1 steps group[i] holds segs[i] reduced over the group."""
    q = len(group)
    for s in range(q - 1):
        for i in range(q):
            blk = (i - s - 1) % q
            for off, count in chunked(segs[blk], chunks):
                b.send(group[i], group[(i + 1) % q], region(buf, off, count), reduce=True, step=step + s)
    return step + max(q - 1, 0)


def ring_allgather(b: ScheduleBuilder, group: Sequence[int], segs: Sequence[Seg], chunks: int = 1,
                   buf: str = "out", step: int = 0) -> int:
    """Ring allgather: group[i] starts with segs[i]; after q-1 steps everyone holds all of them."""
    q = len(group)
    for s in range(q - 1):
        for i in range(q):
            blk = (i - s) % q
            for off, count in chunked(segs[blk], chunks):
                b.send(group[i], group[(i + 1) % q], region(buf, off, count), step=step + s)
    return step + max(q - 1, 0)
