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
from ..schedule import Piece, ScheduleBuilder, region

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




def ring_phase(b: ScheduleBuilder, group: Sequence[int], segs: Sequence[Seg], reduce: bool, chunks: int = 1,
               buf: str = "out", step: int = 0) -> int:
    """A ring over `group` through the builder (dependencies inferred), for composites: reduce-scatter (after q-1 steps
    group[i] holds segs[i] reduced over the group) or allgather (group[i] starts with segs[i]; after q-1 steps everyone
    holds all of them). Returns the next free step."""
    q = len(group)
    for s in range(q - 1):
        for i in range(q):
            for off, count in chunked(segs[(i - s - reduce) % q], chunks):
                b.send(group[i], group[(i + 1) % q], region(buf, off, count), reduce, step + s)
    return step + max(q - 1, 0)
