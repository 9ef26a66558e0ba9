"""Tree and chain algorithms: binomial trees (MPICH), NCCL's double binary tree, the pipelined chain,
and van de Geijn's scatter + allgather broadcast. Rooted ops work on ranks relative to the root."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..collective import Collective
from ..errors import CollsimError
from ..schedule import BUFFERS, ArraySchedule, Schedule
from .chunks import Chunks, chunk_schedule
from .columns import NONE, Columns, merged_piece_columns, with_pieces
from .forms import LinkModel, lg, pow2
from .phases import (
    chunked,
)
from .registry import CHUNKS, register

# ---- closed forms (Thakur et al. 2005; MPICH) -------------------------------------------------------
# Broadcast binomial: ceil(lg p) (alpha + n beta): the root sends ceil(lg p) whole messages one after another.
# Reduce binomial: ceil(lg p) (alpha + n (beta + gamma)), published for p a power of two (each child's
# message is reduced before the parent sends on). Other p: the truncated top subtree can collide
# with a sibling on the root's port; the form is then an estimate (tested to stay within 1 round).
# Allreduce binomial = reduce then broadcast (derived: the two phases do not overlap, the
# broadcast starts when the root's last reduction ends).
# Gather and scatter binomial, published: lg(p) alpha + (p-1)/p n beta; the root's port carries
# ceil(lg p) messages totalling (p-1)/p n, back to back.


def _broadcast_binomial_cost(p, n, m: LinkModel):
    return lg(p) * (m.alpha + n * m.beta)


def _reduce_binomial_cost(p, n, m: LinkModel):
    return lg(p) * (m.alpha + n * (m.beta + m.gamma))


def _allreduce_binomial_cost(p, n, m: LinkModel):
    return lg(p) * (2 * m.alpha + n * (2 * m.beta + m.gamma))


def _gather_scatter_binomial_cost(p, n, m: LinkModel):
    return lg(p) * m.alpha + (p - 1) / p * n * m.beta


# Pipelined chain, published: (p + k - 2)(alpha + n beta / k) (REFERENCE.md, pipelining).

def _chain_cost(p, n, m: LinkModel, chunks=1):
    return (p + chunks - 2) * (m.alpha + n / chunks * m.beta)


# Broadcast scatter + ring allgather (van de Geijn), published: (lg(p) + p - 1) alpha + 2 (p-1)/p n beta.
# Derived for the schedule: block 1 reaches rank 1 last, when the root's port has carried the whole
# scatter (ceil(lg p) alpha + (p-1)/p n beta), then needs p-1 ring hops of alpha + n/p beta.

def _scatter_allgather_cost(p, n, m: LinkModel):
    return (lg(p) + p - 1) * m.alpha + 2 * (p - 1) / p * n * m.beta


def _binomial_reduce(x: Chunks, root: int, step: int = 0) -> int:
    """Round k: member v (lowbit 2^k) reduces the whole buffer into v - 2^k (members: ranks relative to the root)."""
    v, rounds = x.rank, max(x.ranks - 1, 0).bit_length()
    for k in range(rounds):
        sender = v[1 << k::2 << k]
        x.reduce((sender + root) % x.ranks, (sender - (1 << k) + root) % x.ranks, 0, step + k)
    return step + rounds


def _binomial_broadcast(x: Chunks, root: int, step: int = 0) -> int:
    """Farthest subtree first: in round k (from the top) member v (a multiple of 2^(k+1)) copies it to v + 2^k."""
    v, rounds = x.rank, max(x.ranks - 1, 0).bit_length()
    for k in reversed(range(rounds)):
        sender = v[:max(x.ranks - (1 << k), 0):2 << k]
        x.copy((sender + root) % x.ranks, (sender + (1 << k) + root) % x.ranks, 0, step + rounds - 1 - k)
    return step + rounds


def _binomial_allreduce(x: Chunks) -> None:
    _binomial_broadcast(x, 0, _binomial_reduce(x, 0))


def _chain(x: Chunks, root: int) -> None:
    """Chunk c goes hop i (member i to i + 1) in step c + i."""
    for c in range(x.npieces.size):
        for i in range(x.ranks - 1):
            x.copy((i + root) % x.ranks, (i + 1 + root) % x.ranks, c, c + i)


def _whole(coll: Collective, name: str, program, *args) -> ArraySchedule:
    return chunk_schedule(coll, name, program, [(0, coll.count)], *args)


@register("broadcast", "binomial", "binomial tree from the root: ceil(lg p) steps of n", cost=_broadcast_binomial_cost)
def broadcast_binomial(coll: Collective) -> ArraySchedule:
    return _whole(coll, "binomial", _binomial_broadcast, coll.root)


@register("reduce", "binomial", "binomial tree reduction to the root: ceil(lg p) steps of n",
          cost=_reduce_binomial_cost, exact=pow2)
def reduce_binomial(coll: Collective) -> ArraySchedule:
    return _whole(coll, "binomial", _binomial_reduce, coll.root)


@register("allreduce", "binomial", "binomial reduce to rank 0 then binomial broadcast: 2 ceil(lg p) steps of n",
          cost=_allreduce_binomial_cost, exact=pow2)
def allreduce_binomial(coll: Collective) -> ArraySchedule:
    return _whole(coll, "binomial", _binomial_allreduce)


def _subtree_pieces(coll: Collective, senders: np.ndarray) -> dict[str, np.ndarray]:
    """Pieces of binomial subtree transfers, one per member u of `senders` (in transfer order): the blocks of members
    u .. min(u + lowbit(u), p) - 1 (ranks relative to the root, so a subtree can wrap past rank p - 1 to rank 0)."""
    p, offs = coll.ranks, np.asarray(coll.block_offsets, dtype=np.int64)
    width = np.minimum(senders + (senders & -senders), p) - senders
    owner = np.repeat(np.arange(senders.size), width)
    start = np.cumsum(width) - width
    rank = (np.repeat(senders - start, width) + np.arange(owner.size) + coll.root) % p
    buf = np.full(owner.size, BUFFERS.index("out"))
    return merged_piece_columns(senders.size, owner, buf, offs[rank], buf, offs[rank], np.diff(offs)[rank], "out")


def _subtree_sizes(coll: Collective, members: np.ndarray) -> np.ndarray:
    """Elements in the blocks of members u .. min(u + lowbit(u), p) - 1, per member u > 0 of `members`."""
    p, offs = coll.ranks, np.asarray(coll.block_offsets, dtype=np.int64)
    total = np.concatenate(([0], np.cumsum(np.diff(offs)[(np.arange(p) + coll.root) % p])))  # member-order prefix
    return total[np.minimum(members + (members & -members), p)] - total[members]


@register("gather", "binomial", "binomial tree to the root, subtrees forwarding their blocks: ceil(lg p) steps",
          cost=_gather_scatter_binomial_cost)
def gather_binomial(coll: Collective) -> Schedule:
    """`gather_binomial_inferred` as arrays. In round k member v (lowbit 2^k) sends its subtree's blocks to v - 2^k,
    after every transfer into v from its children v + 2^j (j < k), which wrote what it forwards; a child whose subtree
    holds no data wrote nothing and gives no dependency. The receiver's blocks there were neither read nor written."""
    p = coll.ranks
    c, into, senders = Columns(), np.full((p, max(p - 1, 0).bit_length()), NONE), []
    for k in range(into.shape[1]):
        v = np.arange(1 << k, p, 2 << k)
        full = _subtree_sizes(coll, v) > 0
        ids = c.send((v + coll.root) % p, (v - (1 << k) + coll.root) % p, 0, 0, step=k,
                     deps=np.where(full[:, None], into[v], NONE))
        into[v - (1 << k), k] = np.where(full, ids, NONE)
        senders.append(v)
    blocks = [_subtree_pieces(coll, np.concatenate(senders))] if senders else []
    return with_pieces(c.schedule(coll, "binomial"), 0, blocks)


@register("scatter", "binomial", "binomial tree from the root, each send carrying a subtree's blocks: ceil(lg p) steps",
          cost=_gather_scatter_binomial_cost)
def scatter_binomial(coll: Collective) -> Schedule:
    """`scatter_binomial_inferred` as arrays. Member u > 0 receives its subtree's blocks from u - lowbit(u), farthest
    subtree first; it waits for the transfer into its sender (which wrote what it forwards) unless the sender is the
    root or the subtree holds no data. The receiver's blocks there were neither read nor written before."""
    p = coll.ranks
    c, into, senders = Columns(), np.full(p, NONE), []
    for k in reversed(range(max(p - 1, 0).bit_length())):
        u = np.arange(1 << k, p, 2 << k)
        deps = np.where(_subtree_sizes(coll, u) > 0, into[u - (1 << k)], NONE)
        into[u] = c.send((u - (1 << k) + coll.root) % p, (u + coll.root) % p, 0, 0, step=len(senders), deps=deps)
        senders.append(u)
    blocks = [_subtree_pieces(coll, np.concatenate(senders))] if senders else []
    return with_pieces(c.schedule(coll, "binomial"), 0, blocks)


@register("broadcast", "pipelined_chain", "chain from the root, data cut into k chunks: p + k - 2 steps of n/k",
          (CHUNKS,), cost=_chain_cost)
def broadcast_pipelined_chain(coll: Collective, chunks: int = 1) -> ArraySchedule:
    return chunk_schedule(coll, "pipelined_chain", _chain, chunked((0, coll.count), chunks), coll.root)


@register("broadcast", "scatter_allgather",
          "van de Geijn: binomial scatter of n/p blocks, then ring allgather: lg p + p - 1 steps, 2n(p-1)/p bytes",
          cost=_scatter_allgather_cost)
def broadcast_scatter_allgather(coll: Collective) -> Schedule:
    """`broadcast_scatter_allgather_inferred` as arrays with written dependencies: the same transfers, pieces and
    dependencies. Members are ranks relative to the root; member u holds block u (segs in member order).

    Scatter: member u > 0 receives blocks u .. hi(u) - 1 (hi(u) = min(u + lowbit(u), p); the root's range is all)
    from u - lowbit(u), in the round of its mask; it waits for the scatter transfer into its sender (which wrote what
    it forwards), unless the sender is the root or it carries nothing. Ring allgather: member i sends block
    b = i - s (mod p) to j = i + 1 in its step s, waiting for (1) the ring transfer that brought b to i (step s - 1,
    from i - 1); (2) in step 0, the scatter transfer into i, which wrote i's own block; and, when j's scatter range
    holds b (j < b < hi(j)), (3) the scatter transfer into j, which wrote b there (write after write), and (4) j's
    scatter transfer to its child j + 2^floor(lg(b - j)), the one whose subtree holds b, which read it (write after
    read). Empty blocks carry no data and give no dependency."""
    p = coll.ranks
    offs = np.asarray(coll.block_offsets, dtype=np.int64)
    size = np.diff(offs)
    group = (np.arange(p, dtype=np.int64) + coll.root) % p
    member = np.arange(p, dtype=np.int64)
    low = member & -member
    hi = np.where(member > 0, np.minimum(member + low, p), p)
    c = Columns()
    into = np.full(p, NONE, dtype=np.int64)  # id of the scatter transfer into each member
    mask, rounds = (1 << (p - 1).bit_length() >> 1 if p > 1 else 0), 0
    while mask:
        u = np.arange(mask, p, 2 * mask, dtype=np.int64)
        count = offs[hi[u]] - offs[u]
        deps = np.where(count > 0, into[u - mask], NONE)
        into[u] = c.send(group[u - mask], group[u], np.where(count > 0, offs[u], 0), count, step=rounds, deps=deps)
        mask >>= 1
        rounds += 1
    first = c.size
    for s in range(p - 1):
        i = member
        b, j = (i - s) % p, (i + 1) % p
        full = size[b] > 0
        held = full & (b > j) & (b < hi[j])
        child = j + (1 << (np.frexp(np.maximum(b - j, 1))[1] - 1))  # j + the highest power of two <= b - j
        chain = first + (s - 1) * p + (i - 1) % p if s else np.full(p, NONE)
        own = into[i] if s == 0 else np.full(p, NONE)
        deps = np.stack([np.where(full, chain, NONE), np.where(full, own, NONE), np.where(held, into[j], NONE),
                         np.where(held, into[np.minimum(child, p - 1)], NONE)], axis=1)
        c.send(group[i], group[j], offs[b], size[b], step=rounds + s, deps=deps)
    return c.schedule(coll, "scatter_allgather")


# ---- NCCL's double binary tree (src/graph/trees.cc: ncclGetBtree, ncclGetDtree) ----------------

def btree_parent(p: int, rank: int) -> int:
    """Parent of `rank` in NCCL's binary tree rooted at 0 (ncclGetBtree), -1 for the root."""
    if rank == 0:
        return -1
    bit = rank & -rank
    up = (rank ^ bit) | (bit << 1)
    return up if up < p else rank ^ bit


def dtree_parents(p: int) -> tuple[list[int], list[int]]:
    """Parents in NCCL's two trees (ncclGetDtree): tree 2 is tree 1 shifted by one rank (p odd) or mirrored (p even)."""
    first, second = dtree_parent_arrays(p)
    return first.tolist(), second.tolist()


def dtree_parent_arrays(p: int) -> tuple[np.ndarray, np.ndarray]:
    """`dtree_parents` as numpy arrays: `btree_parent` for every rank at once."""
    rank = np.arange(p, dtype=np.int64)
    bit = rank & -rank
    up = (rank ^ bit) | (bit << 1)
    first = np.where(up < p, up, rank ^ bit)
    first[:1] = -1
    if p % 2:
        u = first[(rank - 1) % p]
        second = np.where(u < 0, -1, (u + 1) % p)
    else:
        u = first[p - 1 - rank]
        second = np.where(u < 0, -1, p - 1 - u)
    return first, second


def tree_depths(parent: list[int]) -> list[int]:
    """Depth of every node of a tree given by parents."""
    depth = [-1] * len(parent)

    def walk(r: int) -> int:
        if depth[r] < 0:
            depth[r] = 0 if parent[r] < 0 else walk(parent[r]) + 1
        return depth[r]

    for r in range(len(parent)):
        walk(r)
    return depth


# Closed form, derived; no published one. Each tree carries n/2 in k chunks: an up message costs
# u = alpha + n/(2k) (beta + gamma), a down message d = alpha + n/(2k) beta. With k = 1 a node
# takes its children's messages one after the other (single port) and sends to them one after
# the other, so tree t needs c_up(t) u + c_down(t) d, where the integer message counts c come
# from the tree's shape (for a power of two: 2 D - 1 each, D the depth). The trees run side by
# side. With k chunks every rank's ports carry P messages per chunk index (P = children + 1 per
# tree, summed over both trees: 4 for p a power of two >= 4), adding P (k - 1) d.
# T = max_t (c_up(t) u + c_down(t) d) + P (k - 1) d. Exact for p a power of two, k = 1 and
# gamma = 0; otherwise an estimate (within 25% of the schedule in tests/simulator/test_cost.py).
# REFERENCE's "about 2 lg(p) alpha + 2 n beta" is its shape for large k.

@lru_cache(maxsize=4096)
def dtree_counts(p: int) -> tuple[tuple[tuple[int, int], ...], int]:
    """Per tree, the messages on its critical path going up and coming down (k = 1), and the period P.

    Going up, a node takes its children's messages one after the other, earliest-ready first, then
    sends: with children ready at u_(1) <= ... <= u_(c) it sends at max_i (u_(i) + c - i + 1).
    Coming down it sends to its children in rank order, the i-th (from 1) getting it i messages
    after the node itself. Both are computed for all nodes at once, level after level (numpy).
    """
    load = np.zeros(p, dtype=np.int64)
    counts = []
    for par in dtree_parent_arrays(p):
        child = np.flatnonzero(par >= 0)
        load += np.bincount(child, minlength=p) + np.bincount(par[child], minlength=p)
        up, down = _tree_up_down(par, child)
        counts.append((int(up[par < 0][0]), int(down.max())))
    return tuple(counts), int(load.max())


def _tree_up_down(par: np.ndarray, child: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Messages from the leaves up to each node (`up`) and from the root down to it (`down`), for one tree."""
    p = par.size
    table, order = _child_table(par, child)
    width = table.shape[1]
    has, shift = table >= 0, width - np.arange(width)
    none = np.iinfo(np.int64).min // 2
    depth = np.zeros(p, dtype=np.int64)
    for _ in range(p):  # round h settles the nodes at depth h
        new = np.where(par >= 0, depth[par] + 1, 0)
        if np.array_equal(new, depth):
            break
        depth = new
    levels = [np.flatnonzero(depth == h) for h in range(int(depth.max()) + 1)]
    up, down = np.zeros(p, dtype=np.int64), np.zeros(p, dtype=np.int64)
    for nodes in reversed(levels):  # deepest first; leaves stay at 0
        ready = np.where(has[nodes], up[table[nodes]], none)
        if width == 2:  # NCCL's trees: the sort of two is a min and a max
            early, late = np.minimum(ready[:, 0], ready[:, 1]), np.maximum(ready[:, 0], ready[:, 1])
            up[nodes] = np.maximum(np.maximum(early + 2, late + 1), 0)
        else:
            up[nodes] = np.maximum(np.max(np.sort(ready, axis=1) + shift, axis=1), 0)
    for nodes in levels[1:]:
        down[nodes] = down[par[nodes]] + order[nodes]
    return up, down


def _child_table(par: np.ndarray, child: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each node's children (`child`: the nodes with a parent) as a (p, width) table by rank, -1 for none, and each
    node's place among its siblings (from 1; 0 for the root)."""
    by_parent = child[np.argsort(par[child], kind="stable")]  # children grouped by parent, each group by rank
    owner = par[by_parent]
    pos = np.arange(by_parent.size) - np.searchsorted(owner, owner)  # rank order among siblings, from 0
    table = np.full((par.size, int(pos.max()) + 1 if pos.size else 1), -1, dtype=np.int64)
    table[owner, pos] = by_parent
    order = np.zeros(par.size, dtype=np.int64)
    order[by_parent] = pos + 1
    return table, order


def _dbt_exact(p: int, model: LinkModel, chunks: int = 1) -> bool:
    return pow2(p, model) and chunks == 1 and model.gamma == 0


def _dbt_cost(p, n, m: LinkModel, chunks=1):
    counts, period = dtree_counts(p)
    piece = n / (2 * chunks)
    up = m.alpha + piece * (m.beta + m.gamma)
    down = m.alpha + piece * m.beta
    fill = np.maximum.reduce([c_up * up + c_down * down for c_up, c_down in counts])
    return fill + period * (chunks - 1) * down


@register("allreduce", "double_binary_tree",
          "NCCL: two complementary binary trees each reduce then broadcast half the data, pipelined in k chunks",
          (CHUNKS,), cost=_dbt_cost, exact=_dbt_exact)
def allreduce_double_binary_tree(coll: Collective, chunks: int = 1) -> ArraySchedule:
    """Built as arrays, chunk after chunk, with the dependencies the data gives: per tree and chunk, a node reduces
    into its parent (deepest first) after its children did, then gets the result from its parent (root's children
    first) after the parent has it and after its own reduce and its children's (which used its `out`)."""
    c = Columns()
    p = coll.ranks
    if p == 1:
        return c.schedule(coll, "double_binary_tree")
    trees = [_Tree(parent) for parent in dtree_parent_arrays(p)]
    height = max(int(t.depth.max()) for t in trees)
    half = (coll.count + 1) // 2
    pieces = [chunked((0, half), chunks), chunked((half, coll.count - half), chunks)]
    for k in range(chunks):
        live = [(t, chunk[k]) for t, chunk in zip(trees, pieces) if k < len(chunk)]
        ups = [t.reduce_up(c, off, count, k + height) for t, (off, count) in live]
        for (t, (off, count)), up in zip(live, ups):
            t.broadcast_down(c, off, count, k + height - 1, up)
    return c.schedule(coll, "double_binary_tree")


class _Tree:
    """One tree of the double binary tree, its region sent up (reduced) and down as blocks of arrays."""

    def __init__(self, parent: np.ndarray):
        depth = np.array(tree_depths(parent.tolist()), dtype=np.int64)
        if depth.max() >= parent.size:
            raise CollsimError(f"double_binary_tree: tree for p={parent.size} is malformed")
        self.parent, self.depth = parent, depth
        order = np.argsort(depth, kind="stable")
        self.nodes = order[parent[order] >= 0]  # root's children first, each level by rank
        self.kids = _child_table(parent, self.nodes)[0]

    def _children(self, ids: np.ndarray) -> np.ndarray:
        """Per node, `ids` of its children (NONE for none)."""
        return np.where(self.kids >= 0, ids[self.kids], NONE)

    def reduce_up(self, c: Columns, off: int, count: int, at: int) -> np.ndarray:
        """Every node but the root reduces into its parent, deepest first, in step `at` - depth; ids by node."""
        nodes, ids = self.nodes[::-1], np.full(self.parent.size, NONE)
        ids[nodes] = c.size + np.arange(nodes.size)
        c.send(nodes, self.parent[nodes], off, count, reduce=True, step=at - self.depth[nodes],
               deps=self._children(ids)[nodes] if count > 0 else None)
        return ids

    def broadcast_down(self, c: Columns, off: int, count: int, at: int, up: np.ndarray) -> None:
        """The root's result to every node, root's children first, in step `at` + depth (`up`: reduce_up's ids)."""
        nodes, into = self.nodes, self._children(up)
        have = np.full(into.shape, NONE)  # what wrote each node's out: the copy into it, at the root the reductions
        have[nodes, 0] = c.size + np.arange(nodes.size)
        root = self.parent < 0
        have[root] = into[root]
        deps = np.column_stack([have[self.parent[nodes]], up[nodes], into[nodes]])
        c.send(self.parent[nodes], nodes, off, count, step=at + self.depth[nodes], deps=deps if count > 0 else None)
