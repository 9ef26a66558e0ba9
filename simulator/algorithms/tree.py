"""Tree and chain algorithms: binomial trees (MPICH), NCCL's double binary tree, the pipelined chain,
and van de Geijn's scatter + allgather broadcast. Rooted ops work on ranks relative to the root."""

from __future__ import annotations

from ..collective import Collective
from ..errors import CollsimError
from ..schedule import Schedule, ScheduleBuilder
from .phases import (
    binomial_broadcast,
    binomial_gather,
    binomial_reduce,
    binomial_scatter,
    block_segs,
    chunked,
    relative_group,
    ring_allgather,
)
from .registry import Param, register

CHUNKS = Param("chunks", 1, "pieces the data is cut into, pipelined down the tree or chain")


@register("broadcast", "binomial", "binomial tree from the root: ceil(lg p) steps of n")
def broadcast_binomial(coll: Collective) -> Schedule:
    b = ScheduleBuilder(coll, "binomial")
    binomial_broadcast(b, relative_group(coll.ranks, coll.root), [(0, coll.count)])
    return b.build()


@register("reduce", "binomial", "binomial tree reduction to the root: ceil(lg p) steps of n")
def reduce_binomial(coll: Collective) -> Schedule:
    b = ScheduleBuilder(coll, "binomial")
    binomial_reduce(b, relative_group(coll.ranks, coll.root), [(0, coll.count)])
    return b.build()


@register("allreduce", "binomial", "binomial reduce to rank 0 then binomial broadcast: 2 ceil(lg p) steps of n")
def allreduce_binomial(coll: Collective) -> Schedule:
    b = ScheduleBuilder(coll, "binomial")
    group, whole = list(range(coll.ranks)), [(0, coll.count)]
    step = binomial_reduce(b, group, whole)
    binomial_broadcast(b, group, whole, step=step)
    return b.build()


def _member_blocks(coll: Collective) -> tuple[list[int], list]:
    """Ranks relative to the root and, per member, the block of the rank it is."""
    group, blocks = relative_group(coll.ranks, coll.root), block_segs(coll.block_offsets)
    return group, [blocks[r] for r in group]


@register("gather", "binomial", "binomial tree to the root, subtrees forwarding their blocks: ceil(lg p) steps")
def gather_binomial(coll: Collective) -> Schedule:
    b = ScheduleBuilder(coll, "binomial")
    binomial_gather(b, *_member_blocks(coll))
    return b.build()


@register("scatter", "binomial", "binomial tree from the root, each send carrying a subtree's blocks: ceil(lg p) steps")
def scatter_binomial(coll: Collective) -> Schedule:
    b = ScheduleBuilder(coll, "binomial")
    binomial_scatter(b, *_member_blocks(coll))
    return b.build()


@register("broadcast", "pipelined_chain", "chain from the root, data cut into k chunks: p + k - 2 steps of n/k",
          (CHUNKS,))
def broadcast_pipelined_chain(coll: Collective, chunks: int = 1) -> Schedule:
    b = ScheduleBuilder(coll, "pipelined_chain")
    group = relative_group(coll.ranks, coll.root)
    for c, (off, count) in enumerate(chunked((0, coll.count), chunks)):
        for i in range(len(group) - 1):
            b.copy(group[i], group[i + 1], "out", off, count, step=c + i)
    return b.build()


@register("broadcast", "scatter_allgather",
          "van de Geijn: binomial scatter of n/p blocks, then ring allgather: lg p + p - 1 steps, 2n(p-1)/p bytes")
def broadcast_scatter_allgather(coll: Collective) -> Schedule:
    b = ScheduleBuilder(coll, "scatter_allgather")
    group, segs = relative_group(coll.ranks, coll.root), block_segs(coll.block_offsets)
    step = binomial_scatter(b, group, segs)
    ring_allgather(b, group, segs, step=step)
    return b.build()


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
    first = [btree_parent(p, r) for r in range(p)]
    if p % 2:
        second = [-1 if (u := first[(r - 1) % p]) < 0 else (u + 1) % p for r in range(p)]
    else:
        second = [-1 if (u := first[p - 1 - r]) < 0 else p - 1 - u for r in range(p)]
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


@register("allreduce", "double_binary_tree",
          "NCCL: two complementary binary trees each reduce then broadcast half the data, pipelined in k chunks",
          (CHUNKS,))
def allreduce_double_binary_tree(coll: Collective, chunks: int = 1) -> Schedule:
    b = ScheduleBuilder(coll, "double_binary_tree")
    p = coll.ranks
    if p == 1:
        return b.build()
    trees = dtree_parents(p)
    orders = []
    for parent in trees:
        depth = tree_depths(parent)
        if max(depth) >= p:
            raise CollsimError(f"double_binary_tree: tree for p={p} is malformed")
        nodes = sorted((r for r in range(p) if parent[r] >= 0), key=lambda r: depth[r])
        orders.append((parent, nodes, depth))
    height = max(max(depth) for _, _, depth in orders)
    half = (coll.count + 1) // 2
    pieces = [chunked((0, half), chunks), chunked((half, coll.count - half), chunks)]
    for c in range(chunks):
        for (parent, nodes, depth), chunk in zip(orders, pieces):
            if c < len(chunk):
                off, count = chunk[c]
                for r in reversed(nodes):  # leaves first: reduce up
                    b.reduce(r, parent[r], "out", off, count, step=c + height - depth[r])
        for (parent, nodes, depth), chunk in zip(orders, pieces):
            if c < len(chunk):
                off, count = chunk[c]
                for r in nodes:  # root's children first: broadcast down
                    b.copy(parent[r], r, "out", off, count, step=c + height + depth[r] - 1)
    return b.build()
