"""Recursive doubling and halving (Thakur, Rabenseifner & Gropp 2005; MPICH).

Rank counts that are not powers of two use MPICH's pre/post step: with r = p - 2^floor(lg p),
the first 2r ranks pair up, the odd one of each pair hands its data to the even one, the
2^floor(lg p) survivors run the power-of-two algorithm, and the results are handed back.
"""

from __future__ import annotations

from ..collective import Collective, offsets_of, split_counts
from ..schedule import Schedule, ScheduleBuilder, region
from .phases import (
    binomial_gather,
    block_segs,
    doubling_allgather,
    doubling_allreduce,
    fold,
    halving_reduce_scatter,
    merge,
    pieces_of,
    relative_group,
    survivor_spans,
)
from .registry import register


def _fold_in(b: ScheduleBuilder, group: list[int], seg, reduce: bool, step: int) -> int:
    """Pre step: each extra member hands `seg` to its survivor (reducing it there if `reduce`)."""
    _, pairs = fold(len(group))
    for extra, keep in pairs:
        b.send(group[extra], group[keep], region("out", *seg), reduce=reduce, step=step)
    return step + (1 if pairs else 0)


def _fold_out(b: ScheduleBuilder, group: list[int], segs_of_extra, step: int) -> int:
    """Post step: each survivor hands the extra member its result (the regions `segs_of_extra(extra)`)."""
    _, pairs = fold(len(group))
    for extra, keep in pairs:
        b.send(group[keep], group[extra], pieces_of(segs_of_extra(extra)), step=step)
    return step + (1 if pairs else 0)


def _split_segs(seg, parts: int) -> list:
    """A region cut into `parts` near-equal consecutive regions."""
    off, count = seg
    return block_segs(offsets_of(split_counts(count, parts)) + off)


@register("allreduce", "recursive_doubling",
          "swap and reduce whole vectors with partners at distance 1, 2, 4, ...: lg p steps of n")
def allreduce_recursive_doubling(coll: Collective) -> Schedule:
    b = ScheduleBuilder(coll, "recursive_doubling")
    group, whole = list(range(coll.ranks)), (0, coll.count)
    survivors, _ = fold(coll.ranks)
    step = _fold_in(b, group, whole, True, 0)
    step = doubling_allreduce(b, [group[s] for s in survivors], whole, step)
    _fold_out(b, group, lambda extra: [whole], step)
    return b.build()


@register("allreduce", "rabenseifner",
          "recursive-halving reduce-scatter then recursive-doubling allgather: 2 lg p steps, 2n(p-1)/p bytes")
def allreduce_rabenseifner(coll: Collective) -> Schedule:
    b = ScheduleBuilder(coll, "rabenseifner")
    group, whole = list(range(coll.ranks)), (0, coll.count)
    survivors, _ = fold(coll.ranks)
    members = [group[s] for s in survivors]
    segs = _split_segs(whole, len(members))
    step = _fold_in(b, group, whole, True, 0)
    step = halving_reduce_scatter(b, members, segs, step=step)
    step = doubling_allgather(b, members, segs, step=step)
    _fold_out(b, group, lambda extra: [whole], step)
    return b.build()


def _survivor_segs(coll: Collective, p: int) -> list:
    """Per survivor of fold(p), the blocks of the ranks it stands for, as one region."""
    blocks = block_segs(coll.block_offsets)
    return [merge(blocks[lo:hi]) for lo, hi in survivor_spans(p)]


@register("allgather", "recursive_doubling",
          "exchange ever larger halves with partners at distance 1, 2, 4, ...: lg p steps, n(p-1)/p bytes")
def allgather_recursive_doubling(coll: Collective) -> Schedule:
    b = ScheduleBuilder(coll, "recursive_doubling")
    p = coll.ranks
    group, blocks = list(range(p)), block_segs(coll.block_offsets)
    survivors, pairs = fold(p)
    for extra, keep in pairs:
        b.send(extra, keep, region("out", *blocks[extra]), step=0)
    step = 1 if pairs else 0
    step = doubling_allgather(b, [group[s] for s in survivors], _survivor_segs(coll, p), step=step)
    _fold_out(b, group, lambda extra: blocks[:extra] + blocks[extra + 1:], step)
    return b.build()


@register("reduce_scatter", "recursive_halving",
          "reduce ever smaller halves with partners at distance p/2, p/4, ...: lg p steps, n(p-1)/p bytes")
def reduce_scatter_recursive_halving(coll: Collective) -> Schedule:
    b = ScheduleBuilder(coll, "recursive_halving")
    p = coll.ranks
    group, blocks = list(range(p)), block_segs(coll.block_offsets)
    survivors, _ = fold(p)
    step = _fold_in(b, group, (0, coll.count), True, 0)
    step = halving_reduce_scatter(b, [group[s] for s in survivors], _survivor_segs(coll, p), step=step)
    _fold_out(b, group, lambda extra: [blocks[extra]], step)
    return b.build()


@register("reduce", "rabenseifner",
          "recursive-halving reduce-scatter then binomial gather to the root: 2 lg p steps, 2n(p-1)/p bytes")
def reduce_rabenseifner(coll: Collective) -> Schedule:
    b = ScheduleBuilder(coll, "rabenseifner")
    group, whole = relative_group(coll.ranks, coll.root), (0, coll.count)
    survivors, _ = fold(coll.ranks)  # member 0 (the root) always survives
    members = [group[s] for s in survivors]
    segs = _split_segs(whole, len(members))
    step = _fold_in(b, group, whole, True, 0)
    step = halving_reduce_scatter(b, members, segs, step=step)
    binomial_gather(b, members, segs, step=step)
    return b.build()

