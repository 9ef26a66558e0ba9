"""Two-level allreduce: ring reduce-scatter inside groups, ring allreduce across groups, ring allgather inside.

Groups are consecutive ranks (as GPUs of a node are): group i is ranks i*g .. i*g + g - 1. Built as arrays with
written dependencies (`hierarchical_columns`); `hierarchical_inferred` sends the same messages through the inferring
builder, and the tests check that the two agree.
"""

from __future__ import annotations

import numpy as np

from ..collective import Collective, offsets_of, split_counts
from ..errors import CollsimError
from ..schedule import Schedule
from .columns import NONE, Columns
from .forms import LinkModel
from .registry import Param, register

MAX_DEFAULT_GROUP = 8
GROUP = Param("group", None, f"ranks per group (a divisor of p; default: the largest divisor <= {MAX_DEFAULT_GROUP})")


def default_group(p: int) -> int:
    """The largest divisor of p that is at most 8 (GPUs per node on most machines)."""
    return max(d for d in range(1, min(p, MAX_DEFAULT_GROUP) + 1) if p % d == 0)


def resolve_group(p: int, group: int | None) -> int:
    """The group size to use, or an error naming the divisors of p."""
    if group is None:
        return default_group(p)
    if group < 1 or p % group:
        divisors = ", ".join(str(d) for d in range(1, p + 1) if p % d == 0)
        raise CollsimError(f"group: {group} ranks per group does not divide {p} ranks; expected one of {divisors}")
    return group


# Closed form (REFERENCE.md, hierarchical allreduce with alpha_in = alpha_out): G ranks per group,
# N = p / G groups: ring reduce-scatter in the group on n, ring allreduce across groups on n/G, ring
# allgather in the group. Each ring step waits for the previous reduction, so (derived, exact)
# 2 (G-1)(alpha + n/G beta) + (G-1)/G n gamma + 2 (N-1)(alpha + n/(G N) beta) + (N-1)/(G N) n gamma.

def _cost(p, n, m: LinkModel, group=None):
    g = resolve_group(p, group)
    groups = p // g
    inner = 2 * (g - 1) * (m.alpha + n / g * m.beta) + (g - 1) / g * n * m.gamma
    outer = 2 * (groups - 1) * (m.alpha + n / p * m.beta) + (groups - 1) / p * n * m.gamma
    return inner + outer


def _pick(ids, a, s, i):
    """ids[a, s, i mod q] (ids of rings' messages, (rings, q-1, q)); NONE where there is no such ring or step."""
    if ids is None:
        return NONE
    s = np.broadcast_to(s, np.broadcast_shapes(np.shape(a), np.shape(s), np.shape(i)))
    q1, q = ids.shape[1:]
    return np.where((s >= 0) & (s < q1), ids[a, np.clip(s, 0, max(q1 - 1, 0)), i % q], NONE)


def _rings(c: Columns, ranks, off, count, step: int, reduce: bool, waits) -> np.ndarray | None:
    """One ring per row of `ranks` (q members): in step s member i sends block (i - s - 1) mod q (reduce-scatter) or
    (i - s) mod q (allgather), off[a, blk] and count[a, blk] of ring a, to member i + 1; numbered ring, step, member
    (the inferring builder's order). `waits(ids, a, s, i)` lists what a message waits for if its block is not empty.
    Returns the ids, (rings, q-1, q), or None for rings of one member."""
    n, q = ranks.shape
    if q < 2:
        return None
    a, s, i = np.ix_(np.arange(n), np.arange(q - 1), np.arange(q))
    blk = (i - s - int(reduce)) % q
    ids = c.size + np.arange(n * (q - 1) * q).reshape(n, q - 1, q)
    full = count[a, blk] > 0
    deps = np.stack([np.where(full, w, NONE) for w in waits(ids, a, s, i)], axis=-1)
    return c.send(ranks[a, i], ranks[a, (i + 1) % q], off[a, blk], count[a, blk], reduce=reduce, step=step + s,
                  deps=deps.reshape(-1, deps.shape[-1]))


def hierarchical_columns(coll: Collective, g: int) -> Schedule:
    """`hierarchical_inferred` as arrays with written dependencies, plus one join per rank before the last phase.

    Rank k*g + j is member j of group k and member k of cross ring j: it owns segment j, and block k of it across.
    Within a phase the rings wait as ring_transfers says. Across phases: a cross message that reads or overwrites
    segment j at a rank as r1 left it also waits for r1, the in-group reduction into it; a rank's first in-group allgather send
    reads its whole segment, written by r1, the last cross reduction and N-1 cross copies: it waits for one join on
    those (N edges per rank, not per message)."""
    p, n_groups = coll.ranks, coll.ranks // g
    seg_off = np.asarray(offsets_of(split_counts(coll.count, g)), dtype=np.int64)
    seg_cnt = np.diff(seg_off)
    sub = np.array([offsets_of(split_counts(int(n), n_groups)) for n in seg_cnt], dtype=np.int64) + seg_off[:-1, None]
    sub_off, sub_cnt = sub[:, :-1], np.diff(sub, axis=1)  # (g, N): ring j's block k
    inner = np.arange(p).reshape(n_groups, g)
    in_off, in_cnt = (np.broadcast_to(x, inner.shape) for x in (seg_off[:-1], seg_cnt))
    c = Columns()
    rs1 = _rings(c, inner, in_off, in_cnt, 0, True, lambda ids, a, s, i: [_pick(ids, a, s - 1, i - 1)])
    j = np.arange(g)
    r1 = np.full(inner.shape, NONE) if rs1 is None else np.where(seg_cnt > 0, rs1[:, -1, (j - 1) % g], NONE)
    r1 = r1.T  # r1[j, k]: the last in-group reduction into rank k*g + j
    step = g - 1
    rs2 = _rings(c, inner.T, sub_off, sub_cnt, step, True, lambda ids, a, s, i: [_pick(ids, a, s - 1, i - 1), r1[a, i]])
    step += n_groups - 1
    ag2 = _rings(c, inner.T, sub_off, sub_cnt, step, False, lambda ids, a, s, i: [
        _pick(ids, a, s - 1, i - 1), np.where(s == 0, _pick(rs2, a, n_groups - 2, i - 1), _pick(rs2, a, s - 1, i)),
        _pick(rs2, a, s, i + 1), r1[a, (i + 1) % n_groups], np.where(s == 0, r1[a, i], NONE)])
    step += n_groups - 1
    own = r1.T
    if ag2 is not None and g > 1:  # join (k, j): what wrote rank k*g + j's segment in the cross phase
        k, jj, s = np.ix_(np.arange(n_groups), j, np.arange(n_groups - 1))
        mine = sub_cnt.T[..., None] > 0
        writes = [r1.T[..., None], rs2[jj, -1, (k - 1) % n_groups]]
        copies = np.where(sub_cnt[jj, (k - 1 - s) % n_groups] > 0, ag2[jj, s, (k - 1) % n_groups], NONE)
        table = np.concatenate([np.where(mine, w, NONE) for w in writes] + [copies], axis=-1)
        own = c.join(inner.ravel(), table.reshape(p, -1), step=step).reshape(inner.shape)
    _rings(c, inner, in_off, in_cnt, step, False, lambda ids, a, s, i: [
        _pick(ids, a, s - 1, i - 1), np.where(s == 0, own[a, i], _pick(rs1, a, s - 1, i)), _pick(rs1, a, s, i + 1)])
    return c.schedule(coll, "hierarchical", {"group": g})


@register("allreduce", "hierarchical",
          "ring reduce-scatter in groups of g, ring allreduce across groups on n/g, ring allgather in groups",
          (GROUP,), ranks_rule="any p >= 1; group must divide p", cost=_cost)
def allreduce_hierarchical(coll: Collective, group: int | None = None) -> Schedule:
    return hierarchical_columns(coll, resolve_group(coll.ranks, group))
