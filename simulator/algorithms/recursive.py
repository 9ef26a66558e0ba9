"""Recursive doubling and halving (Thakur, Rabenseifner & Gropp 2005; MPICH).

Rank counts that are not powers of two use MPICH's pre/post step: with r = p - 2^floor(lg p),
the first 2r ranks pair up, the odd one of each pair hands its data to the even one, the
2^floor(lg p) survivors run the power-of-two algorithm, and the results are handed back.
"""

from __future__ import annotations

import numpy as np

from ..collective import Collective, offsets_of, split_counts
from ..schedule import BUFFERS, ArraySchedule, Schedule
from .columns import NONE, Columns, merged_piece_columns, with_pieces
from .forms import LinkModel, floor_lg, fold_extra, pof2, pow2, window_blocks
from .phases import (
    block_segs,
    fold,
    merge,
    relative_group,
    survivor_spans,
)
from .registry import register

# ---- closed forms (Thakur, Rabenseifner & Gropp 2005; REFERENCE.md) -------------------------------
# Allreduce recursive doubling, published: lg(p) alpha + n lg(p) (beta + gamma). Each round swaps
# whole vectors (both directions at once) and reduces: alpha + n beta + n gamma. For p not a power
# of two (derived): one pre round alpha + n (beta + gamma) and one post round alpha + n beta.

def _allreduce_doubling_cost(p, n, m: LinkModel):
    x = fold_extra(p)
    return (floor_lg(p) + x) * (m.alpha + n * (m.beta + m.gamma)) + x * (m.alpha + n * m.beta)


@register("allreduce", "recursive_doubling",
          "swap and reduce whole vectors with partners at distance 1, 2, 4, ...: lg p steps of n",
          cost=_allreduce_doubling_cost)
def allreduce_recursive_doubling(coll: Collective) -> ArraySchedule:
    """Built as arrays, with the dependencies `doubling_allreduce` and the fold steps would infer: member i sends its
    whole `out` into partner i^d's scratch (after everything that wrote that `out` and what last used that scratch),
    then reduces its scratch into its `out` (after that copy and every send that read its `out`)."""
    p, n = coll.ranks, coll.count
    c = Columns()
    survivors, pairs = fold(p)
    extra, keep = np.array(pairs, dtype=np.int64).reshape(-1, 2).T  # keep k is member k
    folded = c.send(extra, keep, 0, n, reduce=True)
    members, i = np.array(survivors, dtype=np.int64), np.arange(len(survivors))
    none = np.full(i.size, NONE)
    wrote_out = [none.copy()]  # what wrote each member's out
    wrote_out[0][:keep.size] = folded
    read_out, copied, reduced = [], none, none  # sends that read each out; last copy into, last reduce from, scratch
    step, d = (1 if pairs else 0), 1
    while d < i.size:
        deps = wrote_out + [reduced[i ^ d], copied[i ^ d]]
        sent = c.send(members, members[i ^ d], 0, n, buf="scratch", src_buf="out", step=step, deps=_moving(deps, n))
        read_out.append(sent)
        copied = sent[i ^ d]
        reduced = c.send(members, members, 0, n, reduce=True, src_buf="scratch", step=step,
                         deps=_moving([copied] + read_out, n))
        wrote_out.append(reduced)
        d, step = 2 * d, step + 1
    back = [w[:keep.size] for w in wrote_out] + [folded]
    c.send(keep, extra, 0, n, step=step, deps=_moving(back, n))
    return c.schedule(coll, "recursive_doubling", scratch=n)


# Rabenseifner, published (p a power of two): 2 lg(p) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma:
# halving rounds of n/2, n/4, ... each reduced before the next is sent, then doubling rounds.
# p not a power of two (derived, the published form uses p where the schedule has p2 survivors):
# (2 floor(lg p) + 2) alpha + (2 (p2-1)/p2 + 2) n beta + (1 + (p2-1)/p2) n gamma.

def _allreduce_rabenseifner_cost(p, n, m: LinkModel):
    p2, x = pof2(p), fold_extra(p)
    f = (p2 - 1) / p2
    return (2 * floor_lg(p) + 2 * x) * m.alpha + (2 * f + 2 * x) * n * m.beta + (f + x) * n * m.gamma


@register("allreduce", "rabenseifner",
          "recursive-halving reduce-scatter then recursive-doubling allgather: 2 lg p steps, 2n(p-1)/p bytes",
          cost=_allreduce_rabenseifner_cost, exact=pow2)
def allreduce_rabenseifner(coll: Collective) -> ArraySchedule:
    """Built as arrays, with the dependencies the fold steps, `halving_reduce_scatter` and `doubling_allgather` would
    infer (the survivors split the vector evenly)."""
    p, n = coll.ranks, coll.count
    c = Columns()
    survivors, pairs = fold(p)
    extra, keep = np.array(pairs, dtype=np.int64).reshape(-1, 2).T  # keep k is member k
    folded = c.send(extra, keep, 0, n, reduce=True)
    members = np.array(survivors, dtype=np.int64)
    starts = offsets_of(split_counts(n, members.size))
    into, step = _halving(c, members, starts, folded, 1 if pairs else 0)
    wrote, step = _doubling_allgather(c, members, starts, into, step)
    c.send(keep, extra, 0, n, step=step, deps=_moving([folded] + [w[:keep.size] for w in wrote], n))
    return c.schedule(coll, "rabenseifner")


def _doubling_allgather(c: Columns, members: np.ndarray, starts: np.ndarray, into: list[np.ndarray], step: int,
                        gather: bool = False) -> tuple[list[np.ndarray], int]:
    """`doubling_allgather` (or with `gather`, `binomial_gather`: only the members v with lowest bit d send) as arrays
    after `_halving` (whose `into` it takes): member i copies its window of d segments to partner j = i^d after what
    wrote them at i and what used them at j (j's halving send of exactly that window, and what reduced into j before
    it). Returns what last wrote each member's `out` (per list: one id per member, NONE for none) and the next step."""
    q, rounds = members.size, len(into) - 1
    i = np.arange(q)
    own = starts[i + 1] > starts[i]
    wrote = [np.where(own, w, NONE) for w in into]  # own segment: the fold and the halving reductions
    d, u = 1, 0
    while d < q:
        who = np.arange(d, q, 2 * d) if gather else i
        lo, j = who & ~(d - 1), who ^ d
        count = starts[lo + d] - starts[lo]
        waits = [w[who] for w in wrote] + [into[rounds - u][who]] + [w[j] for w in into[:rounds - u]]
        sent = c.send(members[who], members[j], np.where(count > 0, starts[lo], 0), count, step=step,
                      deps=_moving(waits, count))
        wrote.append(np.full(q, NONE))
        wrote[-1][j] = np.where(count > 0, sent, NONE)
        d, u, step = 2 * d, u + 1, step + 1
    return wrote, step


def _survivor_segs(coll: Collective, p: int) -> list:
    """Per survivor of fold(p), the blocks of the ranks it stands for, as one region."""
    blocks = block_segs(coll.block_offsets)
    return [merge(blocks[lo:hi]) for lo, hi in survivor_spans(p)]


# Allgather recursive doubling, published (p a power of two): lg(p) alpha + (p-1)/p n beta.
# Other p (derived, an upper bound): pre round of n/p, doubling rounds carrying at most
# d + min(d, r) blocks, post round of (p-1)/p n.

def _allgather_doubling_cost(p, n, m: LinkModel):
    x, windows = fold_extra(p), window_blocks(p)
    rounds = len(windows) * m.alpha + sum(windows) * n / p * m.beta
    return rounds + x * (2 * m.alpha + n / p * m.beta + (p - 1) / p * n * m.beta)


@register("allgather", "recursive_doubling",
          "exchange ever larger halves with partners at distance 1, 2, 4, ...: lg p steps, n(p-1)/p bytes",
          cost=_allgather_doubling_cost, exact=pow2)
def allgather_recursive_doubling(coll: Collective) -> Schedule:
    """`allgather_recursive_doubling_inferred` as arrays. The fold sends extra 2k+1's block to survivor k (rank 2k),
    waiting for nothing. In the round of distance d survivor i copies its window (survivors lo .. lo + d - 1, lo =
    i & ~(d - 1): one contiguous region) to i ^ d, after what wrote that window at i: the fold into i and each earlier
    round's transfer into i. The window was neither read nor written at i ^ d before. Survivor k then sends extra 2k+1
    every block but its own (two pieces, merged when that block is empty) after each round's transfer into k.
    Transfers that carry no data wait for nothing, and give no dependency."""
    p = coll.ranks
    offs = np.asarray(coll.block_offsets, dtype=np.int64)
    survivors, pairs = fold(p)
    extra, keep = np.array(pairs, dtype=np.int64).reshape(-1, 2).T  # rank 2k, survivor k
    members = np.array(survivors, dtype=np.int64)
    starts = offs[[lo for lo, _ in survivor_spans(p)] + [p]]
    c, i = Columns(), np.arange(members.size)
    size = np.diff(offs)[extra]
    wrote = [np.full(i.size, NONE)]  # per list, what wrote part of each survivor's out (NONE for none)
    wrote[0][:keep.size] = np.where(size > 0, c.send(extra, keep, offs[extra], size), NONE)
    d, step = 1, (1 if pairs else 0)
    while d < i.size:
        lo = i & ~(d - 1)
        count = starts[lo + d] - starts[lo]
        sent = c.send(members, members[i ^ d], np.where(count > 0, starts[lo], 0), count, step=step,
                      deps=_moving(wrote, count))
        wrote.append(np.where(count > 0, sent, NONE)[i ^ d])
        d, step = 2 * d, step + 1
    first, at = c.size, np.stack([np.zeros_like(extra) + offs[0], offs[extra + 1]], axis=1)  # blocks < e, > e
    counts = np.stack([offs[extra] - offs[0], offs[p] - offs[extra + 1]], axis=1)
    c.send(keep, extra, 0, 0, step=step, deps=_moving([w[:keep.size] for w in wrote[1:]], counts.sum(axis=1))
           if len(wrote) > 1 else None)
    buf, owner = np.full(at.shape, BUFFERS.index("out")), np.repeat(np.arange(extra.size), 2)
    blocks = [merged_piece_columns(extra.size, owner, buf, at, buf, at, counts, "out")]
    return with_pieces(c.schedule(coll, "recursive_doubling"), first, blocks)


# Reduce-scatter recursive halving, published (commutative, p a power of two):
# lg(p) alpha + (p-1)/p n (beta + gamma). Other p (derived, an upper bound): pre round of n with
# its reduction, halving rounds of at most d + min(d, r) blocks, post round of n/p.

def _reduce_scatter_halving_cost(p, n, m: LinkModel):
    x, windows = fold_extra(p), window_blocks(p)
    rounds = len(windows) * m.alpha + sum(windows) * n / p * (m.beta + m.gamma)
    return rounds + x * (m.alpha + n * (m.beta + m.gamma) + m.alpha + n / p * m.beta)


@register("reduce_scatter", "recursive_halving",
          "reduce ever smaller halves with partners at distance p/2, p/4, ...: lg p steps, n(p-1)/p bytes",
          cost=_reduce_scatter_halving_cost, exact=pow2)
def reduce_scatter_recursive_halving(coll: Collective) -> ArraySchedule:
    """Built as arrays, with the dependencies the fold steps and `halving_reduce_scatter` would infer."""
    p, n = coll.ranks, coll.count
    c = Columns()
    survivors, pairs = fold(p)
    extra, keep = np.array(pairs, dtype=np.int64).reshape(-1, 2).T  # keep k is member k
    folded = c.send(extra, keep, 0, n, reduce=True)
    starts = np.array([off for off, _ in _survivor_segs(coll, p)] + [n], dtype=np.int64)
    into, step = _halving(c, np.array(survivors, dtype=np.int64), starts, folded, 1 if pairs else 0)
    block_start = np.asarray(coll.block_offsets, dtype=np.int64)
    count = np.diff(block_start)[extra]
    off = np.where(count > 0, block_start[extra], 0)
    c.send(keep, extra, off, count, step=step, deps=_moving([w[:keep.size] for w in into], count))
    return c.schedule(coll, "recursive_halving")


def _halving(c: Columns, members: np.ndarray, starts: np.ndarray, folded: np.ndarray,
             step: int) -> tuple[list[np.ndarray], int]:
    """`halving_reduce_scatter` as arrays (member i's segment is starts[i]:starts[i + 1]; members 0.. got `folded`
    before): member i reduces the half of its window it gives up into partner i^d after everything that reduced into
    its own `out`. Returns, per round (the fold first), what reduced into each member (NONE where nothing moved), and
    the next free step."""
    q = members.size
    i, lo, hi = np.arange(q), np.zeros(q, dtype=np.int64), np.full(q, q)
    into = [np.full(q, NONE)]
    into[0][:folded.size] = folded
    d = q // 2
    while d >= 1:
        mid, up = (lo + hi) // 2, (i & d) > 0
        give_lo, give_hi = np.where(up, lo, mid), np.where(up, mid, hi)
        count = starts[give_hi] - starts[give_lo]
        sent = c.send(members, members[i ^ d], np.where(count > 0, starts[give_lo], 0), count, reduce=True, step=step,
                      deps=_moving(into, count))
        into.append(np.where(count[i ^ d] > 0, sent[i ^ d], NONE))
        lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
        d, step = d // 2, step + 1
    return into, step


def _moving(waits: list[np.ndarray], count) -> np.ndarray:
    """Dependency lists (each one id per transfer) as a table, emptied for transfers that move nothing (`count` 0):
    such a transfer touches no data, so the inferring builder gives it no dependencies."""
    return np.where(np.reshape(count, (-1, 1)) > 0, np.stack(waits, axis=1), NONE)


# Reduce Rabenseifner (reduce-scatter + binomial gather), published (p a power of two):
# 2 lg(p) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma. Other p (derived): the p2 survivors split n
# evenly, after one pre round alpha + n (beta + gamma).

def _reduce_rabenseifner_cost(p, n, m: LinkModel):
    p2, x = pof2(p), fold_extra(p)
    f = (p2 - 1) / p2
    return 2 * floor_lg(p) * m.alpha + 2 * f * n * m.beta + f * n * m.gamma + x * (m.alpha + n * (m.beta + m.gamma))


@register("reduce", "rabenseifner",
          "recursive-halving reduce-scatter then binomial gather to the root: 2 lg p steps, 2n(p-1)/p bytes",
          cost=_reduce_rabenseifner_cost, exact=pow2)
def reduce_rabenseifner(coll: Collective) -> ArraySchedule:
    """Built as arrays on ranks relative to the root (member 0, a survivor), with the dependencies the fold step,
    `halving_reduce_scatter` and `binomial_gather` would infer."""
    p, n = coll.ranks, coll.count
    c = Columns()
    group = np.array(relative_group(p, coll.root), dtype=np.int64)
    survivors, pairs = fold(p)
    extra, keep = np.array(pairs, dtype=np.int64).reshape(-1, 2).T  # keep k is member k
    folded = c.send(group[extra], group[keep], 0, n, reduce=True)
    members = group[np.array(survivors, dtype=np.int64)]
    starts = offsets_of(split_counts(n, members.size))
    into, step = _halving(c, members, starts, folded, 1 if pairs else 0)
    _doubling_allgather(c, members, starts, into, step, gather=True)
    return c.schedule(coll, "rabenseifner")
