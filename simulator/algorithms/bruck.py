"""Bruck's algorithms (Bruck et al. 1997): ceil(lg p) steps for any p, at distances 1, 2, 4, ...

Allgather: rank r holds the blocks of ranks r .. r+c-1 (mod p) and in step k sends
min(2^k, p - 2^k) of them to rank r - 2^k, which lands them at their final place (no rotation
is needed because a message may carry two pieces, either side of the wrap-around).

Alltoall: slot i of rank r holds the block travelling i ranks forward (from r to r + i). In
step k every slot whose index has bit k set moves 2^k ranks forward. Slots alternate between two
scratch halves, so a rank never overwrites a slot it is sending in the same step; on its last
hop a block lands straight in the receiver's output.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..collective import Collective
from ..schedule import BUFFERS, Schedule, ScheduleBuilder
from .columns import Columns, merged_piece_columns, with_pieces
from .forms import LinkModel, lg, pow2
from .phases import alltoall_offsets, block_segs, pieces_of
from .registry import register

# ---- closed forms (Bruck et al. 1997; Thakur et al. 2005) ---------------------------------------
# Allgather, published: ceil(lg p) alpha + (p-1)/p n beta (step k carries min(2^k, p - 2^k) blocks).
# Alltoall, published (p a power of two): lg(p) alpha + (n/2) lg(p) beta. Any p (derived): step k
# carries the blocks whose index i in 1..p-1 has bit k set.


def _allgather_cost(p, n, m: LinkModel):
    return lg(p) * m.alpha + (p - 1) / p * n * m.beta


@lru_cache(maxsize=4096)
def alltoall_blocks(p: int) -> tuple[int, ...]:
    """Blocks of n/p sent in each step of Bruck's alltoall: how many i in 1..p-1 have bit k set."""
    out = []
    for k in range(lg(p)):
        period, half = 2 << k, 1 << k
        out.append(p // period * half + max(0, p % period - half))  # among 0..p-1; i = 0 has no bit set
    return tuple(out)


def _alltoall_cost(p, n, m: LinkModel):
    blocks = alltoall_blocks(p)
    return len(blocks) * m.alpha + sum(blocks) * n / p * m.beta


@register("allgather", "bruck", "blocks travel to ranks r - 1, r - 2, r - 4, ...: ceil(lg p) steps, n(p-1)/p bytes",
          cost=_allgather_cost)
def allgather_bruck(coll: Collective) -> Schedule:
    b = ScheduleBuilder(coll, "bruck")
    p, blocks = coll.ranks, block_segs(coll.block_offsets)
    held, dist, step = 1, 1, 0
    while held < p:
        n = min(dist, p - held)
        for r in range(p):
            segs = [blocks[(r + j) % p] for j in range(n)]
            b.send(r, (r - dist) % p, pieces_of(segs), step=step)
        held += n
        dist <<= 1
        step += 1
    return b.build()


def _alltoall_waits(p: int, size: np.ndarray, k: int) -> list[tuple[int, int]]:
    """(step, rank shift) of the transfers rank r's step-k transfer waits for: over the non-empty slots i it moves,
    with k1 > k2 the highest bits of i below k (the slot's previous two hops): the step-k1 transfer that brought it
    (from r - 2^k1); and, unless this is its last hop (i >= 2^(k+1), it lands in scratch) and when it has a hop k2,
    the step-k2 transfer into the receiver that wrote the scratch half it lands in and the receiver's own step-k1
    transfer that read it since."""
    dist, waits = 1 << k, set()
    for i in range(1, p):
        lower = i & (dist - 1)
        if not i & dist or not size[i] or not lower:
            continue
        k1 = lower.bit_length() - 1
        waits.add((k1, -(1 << k1)))
        lower2 = lower ^ (1 << k1)
        if i >= 2 * dist and lower2:  # the scratch half it lands in was written (step k2) and read (step k1) before
            k2 = lower2.bit_length() - 1
            waits.update(((k1, dist), (k2, dist - (1 << k2))))
    return sorted(waits)


@register("alltoall", "bruck", "slots with bit k set move 2^k ranks forward: ceil(lg p) steps of about n/2",
          cost=_alltoall_cost, exact=pow2)
def alltoall_bruck(coll: Collective) -> Schedule:
    """`alltoall_bruck_inferred` as arrays with written dependencies (`_alltoall_waits`), each step's messages built
    for all ranks at once: the same transfers, pieces and dependencies."""
    p, n = coll.ranks, coll.count
    size = np.array([coll.pair_count(0, i) for i in range(p)], dtype=np.int64)
    start = np.cumsum(size) - size
    in_off, out_off = alltoall_offsets(coll)
    r = np.arange(p)
    c = Columns()
    c.send(r, r, out_off[r, r], size[0], src_buf="in", src_off=in_off[r, r])  # the own block never moves
    half = np.full(p, -1)  # where slot i is now: -1 in 'in', else scratch half 0 or 1
    IN, OUT, SCRATCH = (BUFFERS.index(b) for b in ("in", "out", "scratch"))
    blocks = []
    dist, k = 1, 0
    while dist < p:
        i = np.flatnonzero(np.arange(p) & dist)
        after = np.where(half[i] == 0, 1, 0)
        waits = _alltoall_waits(p, size, k)
        deps = np.stack([p + s * p + (r + shift) % p for s, shift in waits], axis=1) if waits else None
        c.send(r, (r + dist) % p, 0, 0, step=k, deps=deps)  # its pieces come from `blocks` (with_pieces)
        src, dst, slot = r[:, None], (r[:, None] + dist) % p, i[None, :]
        from_in, last = half[slot] < 0, slot < 2 * dist
        columns = (src, np.where(from_in, IN, SCRATCH),
                   np.where(from_in, in_off[src, (src + slot) % p], start[slot] + half[slot] * n),
                   np.where(last, OUT, SCRATCH), np.where(last, out_off[dst, (dst - slot) % p], start[slot] + after[None, :] * n),
                   size[slot])
        blocks.append(merged_piece_columns(p, *(np.broadcast_to(v, (p, i.size)) for v in columns)))
        half[i] = after
        dist <<= 1
        k += 1
    return with_pieces(c.schedule(coll, "bruck"), p, blocks, 2 * n)
