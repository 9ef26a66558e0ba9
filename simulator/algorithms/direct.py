"""Direct (all-pairs) algorithms: every rank talks to every other rank once, in p - 1 shifted steps.

In step s rank r sends to (r + s) mod p and receives from (r - s) mod p, so every port is busy
with exactly one message per step (the pairwise-exchange order of MPICH's alltoall).
"""

from __future__ import annotations

import numpy as np

from ..collective import Collective
from ..schedule import Schedule
from .chunks import Chunks, chunk_schedule
from .columns import NONE, Columns
from .forms import LinkModel
from .phases import alltoall_offsets, block_segs
from .registry import register

# ---- closed forms ----------------------------------------------------------------------------------
# Allgather, alltoall, gather, scatter direct: every port carries p-1 messages of n/p back to back:
# (p-1)(alpha + n/p beta), REFERENCE's pairwise (p-1) alpha + (p-1)/p n beta.
# Reduce-scatter direct (derived): p-1 messages of b = n/p arrive back to back at each rank and
# its reducer works through them one at a time, so it ends at
# max((p-1)(alpha + b beta) + b gamma, (alpha + b beta) + (p-1) b gamma).
# Allreduce direct (derived): the direct reduce-scatter, then p-1 allgather messages of n/p.


def _one_port_cost(p, n, m: LinkModel):
    return (p - 1) * (m.alpha + n / p * m.beta)


def _reduce_scatter_cost(p, n, m: LinkModel):
    b = n / p
    msg = m.alpha + b * m.beta
    return np.maximum((p - 1) * msg + b * m.gamma, msg + (p - 1) * b * m.gamma)


def _allreduce_cost(p, n, m: LinkModel):
    return _reduce_scatter_cost(p, n, m) + _one_port_cost(p, n, m)


def direct_columns(coll: Collective, reduce_scatter: bool, allgather: bool) -> Schedule:
    """The direct schedule as arrays with written dependencies: the same transfers, in the same order, as
    _direct_reduce_scatter then _direct_allgather through the inferring builder, plus one join per rank between them.

    Row s-1, column r is step s's message from r to d = (r + s) mod p. Reductions wait for nothing (each writes its
    own rank's block, which nobody reads during the reduce-scatter). Rank r's allgather copies read block r, which
    the p-1 reductions into r write, and overwrite block r on d, which the reduction d -> r read: so they wait for
    exactly the reductions into r, through one join per rank (p(p-1) edges in, p(p-1) out, not p(p-1)^2). Copies
    of an empty block wait for nothing (nothing is read or written)."""
    p = coll.ranks
    off = np.asarray(coll.block_offsets[:-1], dtype=np.int64)
    count = np.diff(np.asarray(coll.block_offsets, dtype=np.int64))
    c = Columns()
    s = np.arange(1, p)[:, None]
    r = np.arange(p)[None, :]
    d = (r + s) % p
    step = 0
    if reduce_scatter:
        reductions = c.send(r, d, off[d], count[d], reduce=True, step=s - 1)  # (p-1, p)
        step = p - 1
    if allgather:
        deps = None
        if reduce_scatter and p > 1:
            into = reductions[s - 1, (r - s) % p]  # into[s-1, r]: the reduction from r-s into r
            joins = c.join(np.arange(p), into.T, step=step)
            deps = np.where(count[r] > 0, joins[r], NONE) + np.zeros_like(d)
        c.send(r, d, off[r], count[r], step=step + s - 1, deps=deps)
    return c.schedule(coll, "direct")


@register("allreduce", "direct", "all-pairs reduce-scatter then all-pairs allgather: 2(p-1) steps of n/p",
          cost=_allreduce_cost)
def allreduce_direct(coll: Collective) -> Schedule:
    return direct_columns(coll, reduce_scatter=True, allgather=True)


@register("allgather", "direct", "every rank sends its block to every other rank: p-1 steps of n/p",
          cost=_one_port_cost)
def allgather_direct(coll: Collective) -> Schedule:
    return direct_columns(coll, reduce_scatter=False, allgather=True)


@register("reduce_scatter", "direct", "every rank reduces block d straight into rank d: p-1 steps of n/p",
          cost=_reduce_scatter_cost)
def reduce_scatter_direct(coll: Collective) -> Schedule:
    return direct_columns(coll, reduce_scatter=True, allgather=False)


@register("alltoall", "direct", "pairwise exchange: in step s rank r sends to r+s and receives from r-s; p-1 steps",
          cost=_one_port_cost)
def alltoall_direct(coll: Collective) -> Schedule:
    """In step s (s = 0: each rank's own block, a local copy) rank r copies its block for d = r+s to d. Every message
    reads and writes its own region, so none waits for another."""
    p = coll.ranks
    in_off, out_off = alltoall_offsets(coll)
    s = np.arange(p)[:, None]
    r = np.arange(p)[None, :]
    d = (r + s) % p
    c = Columns()
    c.send(r, d, out_off[d, r], np.array([coll.pair_count(0, k) for k in range(p)])[s], step=np.maximum(s - 1, 0),
           src_buf="in", src_off=in_off[r, d])
    return c.schedule(coll, "direct")


def _to_root(x: Chunks, root: int, gather: bool) -> None:
    """Rank root + s (s = 1 .. p-1) sends its block straight to the root in step s - 1 (gather), or gets it (scatter)."""
    others = (np.arange(1, x.ranks) + root) % x.ranks
    x.copy(others if gather else root, root if gather else others, others, np.arange(others.size))


@register("gather", "direct", "every rank sends its block straight to the root: p-1 messages into one port",
          cost=_one_port_cost)
def gather_direct(coll: Collective) -> Schedule:
    return chunk_schedule(coll, "direct", _to_root, block_segs(coll.block_offsets), coll.root, True)


@register("scatter", "direct", "the root sends each rank its block straight: p-1 messages out of one port",
          cost=_one_port_cost)
def scatter_direct(coll: Collective) -> Schedule:
    return chunk_schedule(coll, "direct", _to_root, block_segs(coll.block_offsets), coll.root, False)
