"""NCCL's PAT (Parallel Aggregated Trees) allgather and reduce-scatter: Bruck's algorithm with the dimensions reversed.

Source: S. Jeaugey, "PAT: a new algorithm for all-gather and reduce-scatter operations at scale",
arXiv:2506.20252 (2025); NCCL 2.23 (release notes: PAT for allgather and reduce-scatter at one GPU
per node), src/include/collectives.h (PatAGAlgorithm, PatRSAlgorithm), src/device/prims_simple.h
(primsModePatAg / primsModePatRs: a rank talks to the ranks at +-2^d) and src/init.cc (PAT is
connected only for communicators with one GPU per node).

What is modelled. Allgather: every rank's block is broadcast down its own binomial tree, the p trees
being rotated copies of one another (the "parallel trees"): the block of rank X reaches rank X - s
(s = 1 .. p-1) from rank X - s', where s' is s with its lowest set bit cleared, so a rank sends
along dimension d to rank r - 2^d and receives from r + 2^d, as NCCL's PatAGAlgorithm does. The
dimensions run farthest first (d = ceil(lg p) - 1 down to 0), which keeps the last, largest step
between neighbours. In the step of dimension d rank r forwards the blocks of ranks r + 2^(d+1) i
for every i with 2^d (2i + 1) < p: c_d = ceil((p - 2^d) / 2^(d+1)) blocks, p - 1 over all steps,
each landing directly in place (no final rotation, unlike Bruck). Aggregation: the blocks of one
step travel in messages of at most `aggregate` blocks (NCCL aggregates several trees' steps into
one network transfer while they fit its fixed intermediate buffer; a small size aggregates whole
steps, giving ceil(lg p) messages, a large one sends a block per message, p - 1 messages). The
default aggregates whole steps. Reduce-scatter is the same trees reversed: nearest dimension
first, rank r reduces the partial blocks of ranks r + 2^d (2i + 1) into rank r + 2^d, as
PatRSAlgorithm does (it sends to r + 2^d and receives from r - 2^d).

Not modelled: the order in which NCCL interleaves the trees inside a step (its `as` sequence and
parallel factor), its bounded number of steps in flight, and the copy through intermediate buffers.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..collective import Collective
from ..schedule import BUFFERS, Schedule
from .columns import NONE, Columns, merged_piece_columns, with_pieces
from .forms import LinkModel, lg, pow2
from .registry import Param, register

AGGREGATE = Param("aggregate", None, "most blocks (trees) one PAT message carries; default: a whole step per message "
                  "(ceil(lg p) messages), 1: a message per block (p - 1 messages)")


def step_blocks(p: int, d: int) -> list[int]:
    """Offsets (in ranks) of the blocks sent along dimension d: 2^(d+1) i for every i with 2^d (2i + 1) < p."""
    return [j for j in range(0, p, 2 << d) if j + (1 << d) < p]


def _messages(p: int, aggregate: int | None) -> list[tuple[int, list[list[int]]]]:
    """Per dimension, farthest first: (d, the block offsets of each message)."""
    out = []
    for d in reversed(range(lg(p))):
        offsets = step_blocks(p, d)
        size = aggregate or len(offsets)
        out.append((d, [offsets[i:i + size] for i in range(0, len(offsets), size)]))
    return out


def _pat(coll: Collective, aggregate: int | None, reduce_scatter: bool) -> Schedule:
    """`pat_inferred` as arrays: each message built for all ranks at once, its dependencies written.

    Allgather: rank r sends the block of X = r + j (j > 0) after receiving it, and it received it once, from
    r + 2^e along dimension e = the lowest set bit of j (an earlier step: farthest dimension first), in the message
    of that step carrying offset j - 2^e. The receiver r - 2^d has neither read nor written that block before (it
    gets each block once), so there is nothing else to wait for; j = 0 (r's own block) waits for nothing.
    Reduce-scatter: rank r sends the partial block of X = r + s (s = 2^d + j) after every reduction into it, one from
    each r - 2^e with e < d and s + 2^e < p, in dimension e's message carrying offset s (all earlier: nearest dimension
    first). The receiver r + 2^d reads block X only later (when it sends it on, in dimension lowbit(j) > d, or never
    when j = 0), so the write waits for no reader. Empty blocks (count < p) carry no data and give no dependency."""
    p = coll.ranks
    offsets_of = np.asarray(coll.block_offsets, dtype=np.int64)
    size = np.diff(offsets_of)
    steps = _messages(p, aggregate)
    if reduce_scatter:
        steps = steps[::-1]
    out = BUFFERS.index("out")
    r = np.arange(p, dtype=np.int64)
    c = Columns()
    carrier: dict[tuple[int, int], int] = {}  # (dimension, block offset) -> id of the first of its message's p transfers
    blocks = []
    step = 0
    for d, messages in steps:
        for offsets in messages:
            j = np.asarray(offsets, dtype=np.int64)
            if reduce_scatter:  # r reduces the partial blocks of r + 2^d + j into r + 2^d
                dst, block = (r + (1 << d)) % p, (r[:, None] + (1 << d) + j[None, :]) % p
                waits = [(k, carrier[e, (1 << d) + jk] + (r - (1 << e)) % p) for k, jk in enumerate(offsets)
                         for e in range(d) if (1 << d) + jk + (1 << e) < p]
            else:  # r forwards the blocks of r + j to r - 2^d
                dst, block = (r - (1 << d)) % p, (r[:, None] + j[None, :]) % p
                waits = [(k, carrier[e, jk - (1 << e)] + (r + (1 << e)) % p) for k, jk in enumerate(offsets) if jk
                         for e in [(jk & -jk).bit_length() - 1]]
            deps = None
            if waits:  # one column per (block, transfer it waits for), NONE where the block is empty
                deps = np.stack([np.where(size[block[:, k]] > 0, ids, NONE) for k, ids in waits], axis=1)
            first = int(c.send(r, dst, 0, 0, reduce=reduce_scatter, step=step, deps=deps)[0])
            carrier.update(((d, jk), first) for jk in offsets)
            at, buf = offsets_of[block], np.full(block.shape, out)
            owner = np.broadcast_to(r[:, None], block.shape)
            blocks.append(merged_piece_columns(p, owner, buf, at, buf, at, size[block], empty_buf="out"))
            step += 1
    return with_pieces(c.schedule(coll, "pat", {"aggregate": aggregate}), 0, blocks)


# ---- closed forms (derived) -----------------------------------------------------------------------
# Every rank sends the same sequence of messages (the schedule is a rotation of itself) and, with one
# port per rank, receives its partner's matching message at the same time, so the port never idles:
# allgather M alpha + (p-1)/p n beta, M = sum_d ceil(c_d / aggregate) messages (ceil(lg p) by
# default: the published Bruck form, REFERENCE.md). Reduce-scatter adds gamma on every byte,
# M alpha + (p-1)/p n (beta + gamma): exact when gamma = 0, or p is a power of two and each step is one
# message (each step's send waits for the previous step's reductions). Otherwise an upper bound: with
# several messages per step a reduction overlaps the next message, and for other p some blocks have
# received nothing when they are sent (the engine is up to 36% below it at gamma = 0.75 beta, p = 24, one block per
# message; tests/simulator/test_pat.py).

@lru_cache(maxsize=4096)
def message_count(p: int, aggregate: int | None = None) -> int:
    """Messages each rank sends: sum over the dimensions of ceil(c_d / aggregate), c_d = ceil((p - 2^d) / 2^(d+1))."""
    counts = [-(-(p - (1 << d)) // (2 << d)) for d in range(lg(p))]
    return sum(-(-c // (aggregate or c)) for c in counts)


def _allgather_cost(p, n, m: LinkModel, aggregate=None):
    return message_count(p, aggregate) * m.alpha + (p - 1) / p * n * m.beta


def _reduce_scatter_cost(p, n, m: LinkModel, aggregate=None):
    return message_count(p, aggregate) * m.alpha + (p - 1) / p * n * (m.beta + m.gamma)


def _rs_exact(p: int, model: LinkModel, aggregate=None) -> bool:
    return model.gamma == 0 or (pow2(p, model) and message_count(p, aggregate) == lg(p))


@register("allgather", "pat", "NCCL PAT: p rotated binomial trees, farthest dimension first; ceil(lg p) steps, "
          "n(p-1)/p bytes, blocks aggregated per message", (AGGREGATE,), cost=_allgather_cost)
def allgather_pat(coll: Collective, aggregate: int | None = None) -> Schedule:
    return _pat(coll, aggregate, reduce_scatter=False)


@register("reduce_scatter", "pat", "NCCL PAT: the allgather's trees reversed, nearest dimension first; "
          "ceil(lg p) steps, n(p-1)/p bytes", (AGGREGATE,), cost=_reduce_scatter_cost, exact=_rs_exact)
def reduce_scatter_pat(coll: Collective, aggregate: int | None = None) -> Schedule:
    return _pat(coll, aggregate, reduce_scatter=True)
