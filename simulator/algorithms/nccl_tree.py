"""NCCL's tree allreduce across nodes: a chain inside each node, a double binary tree over the nodes, per channel.

As NVIDIA/nccl builds it (src/graph/connect.cc ncclTopoPreset and connectTrees, src/graph/trees.cc ncclGetBtree /
ncclGetDtree) and runs it (src/device/all_reduce.h, runTreeSplit / runTreeUpDown):

- inside a node, channel c's GPUs form a chain intra[0] -> intra[1] -> ... -> intra[G-1] (the tree graph's order);
  here intra[i] is local GPU (h + i) mod G, h the channel's *head*, so the channels' heads, and with them the
  NICs that carry their traffic across nodes, differ;
- across nodes, the nodes form one of NCCL's two binary trees (`dtree_parent_arrays`); a node's intra[0] sends
  up to its parent node, into the parent's intra[1] if it is the parent's first child (ncclGetBtree's
  parentChildType 0) and into its intra[0] if the second (NCCL's default balanced tree pattern:
  treeToParent = intra[0], treeToChild0 = intra[1], treeToChild1 = intra[0]), so two NICs of a node carry a
  channel's traffic;
- NCCL's channel c and c + n/2 share a chain, one on each tree (the first n/2 channels on the first tree); here
  channel c has head c mod G and runs the first tree for c < G, the second for G <= c < 2G (`channel_tree`):
  NCCL's own where n = 2G, as on 8-GPU NVSwitch nodes (16 channels);
- each channel's share of the buffer is cut into `pipeline` chunks; per chunk every rank but the root reduces
  into its parent after its children did (reduce up), then the root's sum comes back down (broadcast down).
  Chunk j+W follows chunk j through every transfer (`window` W: the same transfer of chunk j first; NCCL keeps
  NCCL_STEPS = 8 steps in flight on a connection), so a chunk's way up and down overlaps the next chunks'
  (NCCL's pipeline), and the latency grows with the tree's depth: G - 1 hops in a node and log2(nodes) across
  nodes (plus one hop in each node entered at its second GPU), each way.

Built as columns: a channel's tree is numpy arrays over the ranks; the transfers of every (chunk, channel) piece
are laid out at once (ids piece by piece: the ups deepest rank first, then the downs shallowest first).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..collective import Collective, offsets_of, split_counts
from ..schedule import ArraySchedule
from .channels import CHANNELS, DEFAULT_CHANNELS, PIPELINE
from .columns import NONE, Table
from .forms import LinkModel
from .hierarchical import GROUP, resolve_group
from .registry import Param, register
from .tree import _child_table, _tree_up_down, dtree_parent_arrays, tree_depths

STEPS = 8  # NCCL_STEPS: slots of a connection's FIFO, steps a sender may run ahead of its receiver
WINDOW = Param("window", 1, "chunks of one transfer in flight at once: chunk j+W follows chunk j (NCCL has NCCL_STEPS "
               "= 8 slots)", maximum=256)


def node_tree(nodes: int, tree: int) -> tuple[np.ndarray, np.ndarray]:
    """Parent of every node in NCCL's tree `tree` (0 or 1, ncclGetDtree) and whether it is its parent's first child
    (ncclGetBtree's parentChildType 0: smaller than its parent in the binary tree's own numbering; tree 1 is tree 0
    mirrored, or shifted by one for an odd count, and keeps tree 0's child types)."""
    v = np.arange(nodes, dtype=np.int64)
    binary = dtree_parent_arrays(nodes)[0]
    if tree == 0:
        own, back = v, v
    elif nodes % 2:
        own, back = (v - 1) % nodes, (v + 1) % nodes
    else:
        own, back = nodes - 1 - v, nodes - 1 - v
    up = binary[own]
    parent = np.where(up < 0, NONE, back[np.maximum(up, 0)])
    return parent, own < up


def channel_tree(c: int, group: int) -> tuple[int, int]:
    """Channel c's head (the local GPU its chain starts from) and tree: c mod G and the first tree for the first G
    channels, then the same heads on the second tree (NCCL's channel c + n/2 repeats channel c's chain on the
    other tree; with n = 2G channels, as on 8-GPU NVSwitch nodes, these are NCCL's own)."""
    return c % group, (c // group) % 2


def channel_parents(p: int, group: int, head: int, tree: int) -> np.ndarray:
    """Every rank's parent (-1 at the root) in one channel: the chain from local GPU `head` in each node, the node's
    top (the head) under its parent node's head (second child) or the GPU after it (first child)."""
    g, nodes = group, p // group
    rank = np.arange(p, dtype=np.int64)
    node, at = rank // g, (rank % g - head) % g  # at: the rank's place in its node's chain
    in_chain = node * g + (head + at - 1) % g
    parent_node, first = node_tree(nodes, tree)
    up_node = parent_node[node]
    entry = (head + np.where(first[node] & (g > 1), 1, 0)) % g
    across = np.where(up_node < 0, NONE, np.maximum(up_node, 0) * g + entry)
    return np.where(at > 0, in_chain, across)


class _Channel:
    """One channel's tree as arrays: parents, depths, children (-1 padded), and each rank's place among the
    transfers of a piece going up (deepest first) and coming down (shallowest first); -1 at the root."""

    def __init__(self, parent: np.ndarray, width: int):
        p = parent.size
        self.parent = parent
        self.depth = np.array(tree_depths(parent.tolist()), dtype=np.int64)
        moving = np.flatnonzero(parent >= 0)
        kids = _child_table(parent, moving)[0]
        self.kids = np.full((p, width), NONE, dtype=np.int64)
        self.kids[:, :kids.shape[1]] = kids
        self.up_order = moving[np.argsort(-self.depth[moving], kind="stable")]
        self.down_order = moving[np.argsort(self.depth[moving], kind="stable")]
        self.up_pos, self.down_pos = np.full(p, NONE), np.full(p, NONE)
        self.up_pos[self.up_order] = np.arange(moving.size)
        self.down_pos[self.down_order] = np.arange(moving.size)


def _pieces(count: int, channels: int, pipeline: int) -> np.ndarray:
    """(chunk, channel, offset, count) of every non-empty piece, chunk-major: channel c's share of the buffer, cut
    into `pipeline` chunks."""
    share = split_counts(count, channels)
    starts = offsets_of(share)[:-1]
    rows = [(k, c, int(starts[c] + o), int(n)) for c in range(channels)
            for k, (o, n) in enumerate(zip(offsets_of(split_counts(share[c], pipeline))[:-1],
                                           split_counts(share[c], pipeline))) if n]
    return np.array(sorted(rows), dtype=np.int64).reshape(-1, 4)


def at(table: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """Per piece (first axis), `table`'s rows of `ranks` (a (pieces, ...) array of ranks): table[q, ranks[q, ...]]."""
    q = np.arange(table.shape[0]).reshape((-1,) + (1,) * (ranks.ndim - 1))
    return table[q, ranks]


def tree_columns(coll: Collective, group: int, channels: int, pipeline: int, window: int = 1) -> dict[str, np.ndarray]:
    """The transfers of every piece: the ups (ids piece * (p-1) + place) then the downs (after all ups)."""
    p = coll.ranks
    pieces = _pieces(coll.count, channels, pipeline) if p > 1 else np.zeros((0, 4), np.int64)
    m, moves = len(pieces), p - 1
    table = Table(2 * m * moves, 8)
    if not m:
        return table.columns()
    trees = [_Channel(channel_parents(p, group, *channel_tree(c, group)), 3) for c in range(channels)]
    stack = {key: np.stack([getattr(t, key) for t in trees]) for key in
             ("parent", "depth", "kids", "up_order", "down_order", "up_pos", "down_pos")}
    k, ch, off, n = (pieces[:, i] for i in range(4))
    index = {(a, b): i for i, (a, b) in enumerate(zip(k.tolist(), ch.tolist()))}
    prev = np.array([index.get((a - window, b), NONE) for a, b in zip(k.tolist(), ch.tolist())], dtype=np.int64)
    height = int(stack["depth"].max())
    q = np.arange(m)[:, None]
    first_down = m * moves
    up_id = q * moves + stack["up_pos"][ch]  # (pieces, ranks): each rank's transfer up
    down_id = first_down + q * moves + stack["down_pos"][ch]
    kids = stack["kids"][ch]  # (pieces, ranks, 3)
    kid_up = np.where(kids >= 0, at(up_id, np.maximum(kids, 0)), NONE)
    j = np.arange(moves)[None, :]

    def pipe(first: int) -> np.ndarray:
        return np.where(prev[:, None] >= 0, first + np.maximum(prev, 0)[:, None] * moves + j, NONE)

    ids = q * moves + j  # a piece's transfers in place order
    src = stack["up_order"][ch]
    dst = at(stack["parent"][ch], src)
    start, size = off[:, None], n[:, None]
    table.put(ids, src, dst, ("out", start), ("out", start), size, k[:, None] + height - at(stack["depth"][ch], src),
              [at(kid_up, src), pipe(0)], reduce=True)
    dst = stack["down_order"][ch]
    src = at(stack["parent"][ch], dst)
    above = at(down_id, np.maximum(src, 0))
    holder = np.where((at(stack["parent"][ch], src) < 0)[..., None], at(kid_up, src),  # at the root: what it summed
                      np.concatenate([above[..., None], np.full(above.shape + (2,), NONE)], axis=-1))
    table.put(first_down + ids, src, dst, ("out", start), ("out", start), size,
              k[:, None] + height - 1 + at(stack["depth"][ch], dst),
              [holder, at(up_id, dst), at(kid_up, dst), pipe(first_down)])
    return table.columns()


# Closed form, an estimate (no published one): with one port per rank a tree needs c_up messages up its critical
# path and c_down down (counted on its parents by _tree_up_down, as double_binary_tree's dtree_counts: a node takes
# its children's messages one after the other, then sends), each of n / (C k) bytes: u = alpha + piece (beta +
# gamma) up, d = alpha + piece beta down; the trees run side by side (fill = the longest). Channels on the same
# tree (the same parents, e.g. every tree on one node) queue behind one another on the same ports: r of them add
# P_t (r k - 1) d, P_t the messages its busiest rank sends per chunk. Every further chunk adds the busiest rank's
# messages over all channels, P (k - 1) d, and no schedule beats that rank's P k messages:
# T = max(fill + max_t P_t (r_t k - 1) d, fill + P (k - 1) d, P k d). Within 25% of the schedule at two channels
# (tests/simulator/test_cost.py); with many channels their paths cross on the ports and it is up to 2x off.

@lru_cache(maxsize=1024)
def channel_counts(p: int, group: int, channels: int) -> tuple[tuple[tuple[int, int, int, int], ...], int]:
    """Per distinct tree of the channels: its messages up and down its critical path (one chunk), its busiest rank's
    messages per chunk and its channels; and the busiest rank's messages per chunk over all channels."""
    load = np.zeros(p, dtype=np.int64)
    trees: dict[bytes, list[int]] = {}
    for c in range(channels):
        parent = channel_parents(p, group, *channel_tree(c, group))
        child = np.flatnonzero(parent >= 0)
        mine = np.bincount(child, minlength=p) + np.bincount(parent[child], minlength=p)
        load += mine
        key = parent.tobytes()
        if key not in trees:
            up, down = _tree_up_down(parent, child)
            trees[key] = [int(up[parent < 0][0]), int(down.max()), int(mine.max()), 0]
        trees[key][3] += 1
    return tuple(tuple(t) for t in trees.values()), int(load.max())


def _tree_cost(p, n, m: LinkModel, channels=DEFAULT_CHANNELS, group=None, pipeline=1, window=1):
    if p == 1:
        return np.zeros_like(np.asarray(n, dtype=np.float64))
    trees, busiest = channel_counts(p, resolve_group(p, group), channels)
    piece = np.asarray(n, dtype=np.float64) / (channels * pipeline)
    up, down = m.alpha + piece * (m.beta + m.gamma), m.alpha + piece * m.beta
    fill = np.maximum.reduce([c_up * up + c_down * down for c_up, c_down, _, _ in trees])
    same = max(own * (r * pipeline - 1) for _, _, own, r in trees)
    return np.maximum.reduce([fill + same * down, fill + busiest * (pipeline - 1) * down, busiest * pipeline * down])


def _tree_exact(p: int, model: LinkModel, channels=DEFAULT_CHANNELS, group=None, pipeline=1, window=1) -> bool:
    """Exact for one channel in one piece without reduction cost (tests/simulator/test_engine_closed_forms.py); with
    several channels or pieces the ports interleave them and the form is an estimate."""
    return channels == 1 and pipeline == 1 and model.gamma == 0


@register("allreduce", "nccl_tree",
          "NCCL's tree: a chain in each node, a double binary tree over the nodes, C channels on different heads, "
          "reduce up then broadcast down in K pipelined chunks",
          (CHANNELS, GROUP, PIPELINE, WINDOW), ranks_rule="any p >= 1; group (ranks per node) must divide p",
          cost=_tree_cost, exact=_tree_exact)
def allreduce_nccl_tree(coll: Collective, channels: int = DEFAULT_CHANNELS, group: int | None = None,
                        pipeline: int = 1, window: int = 1) -> ArraySchedule:
    g = resolve_group(coll.ranks, group)
    return ArraySchedule(coll, "nccl_tree", tree_columns(coll, g, channels, pipeline, window),
                         {"channels": channels, "group": g, "pipeline": pipeline, "window": window})
