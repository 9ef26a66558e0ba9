"""NVLS-tree allreduce over several NVSwitch nodes: each node's switch reduces and multicasts, trees join the nodes.

NCCL's NVLS_TREE (NVIDIA/nccl src/device/all_reduce.h, `RunWorkColl<ncclFuncAllReduce, ..., NCCL_ALGO_NVLS_TREE,
NCCL_PROTO_SIMPLE>`; trees wired in src/graph/connect.cc, `connectNvls`) gives every GPU of a node one of the
node's `nHeads` shards: the GPU is the *head* of that shard. Per shard, inside a node the NVSwitch reduces the
shard over the node's GPUs (the head's multimem.ld_reduce, `nvls->down`); the head reduces that with what its
children in the inter-node tree send and sends the sum to its parent (`treeDown` -> `treeUp`); the root's sum
comes back down the tree, and each head hands it to its children and stores it to the switch, which multicasts
it to every GPU of the node (multimem.st). The trees over nodes are NCCL's double binary tree (`ncclGetDtree`,
simulator/algorithms/tree.py `dtree_parents`) with the heads of one shard as its vertices; channel c uses tree
c % 2, so here each shard is halved, one half per tree. Every GPU heads a shard, so every GPU's rail carries
inter-node traffic: per GPU between n/g and 2n/g each way through its NIC (g GPUs per node; n/g on two nodes).

With `group` = g GPUs per node (ranks k*g .. k*g+g-1 on node k) the node's switch is helper rank p + k
(`Schedule.helpers` = nodes), with a scratch buffer of g + 1 slots (one per GPU's contribution, one for the
head's store, each slot as long as the buffer so a piece keeps its offset), as in simulator/nccl/nvls.py; with
one GPU per node there is nothing for a switch to do and the schedule is the double binary tree over nodes.
Each half-shard goes in `chunks` pieces, every stage (switch loads, sum to the head, a tree edge, the store,
the multicast) passing them in order, `window` ahead at most, as NCCL's FIFOs stream its chunks. Not
modelled: the switch's ALU, NCCL's warps split into scatter / gather / reduce / broadcast groups, and its
choice of chunk size (chunks is a parameter here).
The numpy check proves the data movement for any p and g dividing p. The engine times it on
`switch_view(topology, p, group=g)` (simulator/nccl/nvls.py), which makes every node's NVSwitch a device;
`nvls_tree_time` is exact on two nodes. Not a registered algorithm, for the reasons simulator/nccl/nvls.py gives;
`collsim predict` runs it where NCCL's model picks NVLS_TREE (simulator/nccl/predict.py run_nvls_tree).
"""

from __future__ import annotations

import numpy as np

from ..algorithms.columns import Table
from ..algorithms.phases import chunked
from ..algorithms.tree import dtree_parents, tree_depths
from ..collective import Collective
from ..errors import CollsimError
from ..schedule import ArraySchedule
from .collnet import node_shards

MAX_CHUNKS = 64

Part = tuple[int, int, int, int, int]  # (chunk c, shard h, tree t, offset, count)


def _parts(shards: list[tuple[int, int]], chunks: int) -> list[Part]:
    """Each shard cut in two, one half per tree (NCCL's channels alternate the two trees), each half in `chunks`."""
    parts = []
    for h, (off, n) in enumerate(shards):
        half = (n + 1) // 2
        for t, seg in enumerate([(off, half), (off + half, n - half)]):
            parts += [(c, h, t, o, m) for c, (o, m) in enumerate(chunked(seg, chunks)) if m]
    return sorted(parts)


def nvls_tree_allreduce(coll: Collective, group: int, chunks: int = 1, window: int = 1) -> ArraySchedule:
    """NVLS-tree allreduce of `coll` over nodes of `group` GPUs; node k's NVSwitch is helper rank p + k.

    Each half-shard is cut into `chunks` pieces; every stage (switch loads, sum to the head, a tree edge, the
    store, the multicast) passes them in order, at most `window` ahead of its previous piece.
    """
    shards = node_shards(coll, group, "NVLS-tree")
    for name, value in (("chunks", chunks), ("window", window)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_CHUNKS:
            raise CollsimError(f"{name}: {value!r}; expected an integer in 1..{MAX_CHUNKS}")
    p, count = coll.ranks, coll.count
    build = p > 1 and count > 0
    columns = _columns(p, group, count, _parts(shards, chunks) if build else [], window)
    schedule = ArraySchedule(coll, "nvls_tree", columns, {"group": group, "chunks": chunks},
                             (group + 1) * count if build else 0)
    schedule.helpers = p // group
    return schedule


class _Pieces:
    """The pieces as arrays (chunk c, shard h, tree t, offset, count), each with its pipeline predecessor (the same
    stage's piece c - window, or -1) and its tree's shape over the nodes: parent, depth, children (-1 padded)."""

    def __init__(self, parts: list[Part], nodes: int, window: int):
        part = np.asarray(parts, dtype=np.int64).reshape(-1, 5)
        self.size = len(parts)
        self.c, self.h, self.t, self.off, self.n = (part[:, i] for i in range(5))
        index = {(a, b, d): i for i, (a, b, d, _, _) in enumerate(parts)}
        self.prev = np.array([index.get((a - window, b, d), -1) for a, b, d, _, _ in parts], dtype=np.int64)
        self.trees = dtree_parents(nodes) if nodes > 1 else ([-1], [-1])
        self.depths = [tree_depths(parent) for parent in self.trees]
        self.height = max(max(d) for d in self.depths)
        self.parent = np.array(self.trees, dtype=np.int64)[self.t]  # (pieces, nodes)
        self.depth = np.array(self.depths, dtype=np.int64)[self.t]
        kids = max(1, max(tree.count(k) for tree in self.trees for k in range(nodes)))
        children = np.full((2, nodes, kids), -1, dtype=np.int64)
        for i, tree in enumerate(self.trees):
            for k in range(nodes):
                mine = [j for j in range(nodes) if tree[j] == k]
                children[i, k, :len(mine)] = mine
        self.children = children[self.t]  # (pieces, nodes, kids)

    def pipe(self, ids: np.ndarray) -> np.ndarray:
        """For ids indexed by piece first: the same ids of each piece's predecessor (-1 where it has none)."""
        earlier = (self.prev >= 0).reshape((-1,) + (1,) * (ids.ndim - 1))
        return np.where(earlier, ids[np.maximum(self.prev, 0)], -1)

    def positions(self, switch: bool, g: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per piece and node: its edge up among the piece's edges up (deepest nodes first), and its edge down and its
        store among the piece's transfers down (shallowest first: edge down, store, g - 1 multicasts); -1 for none."""
        nodes = len(self.trees[0])
        out = []
        for tree, depth in zip(self.trees, self.depths):
            up, down, store = (np.full(nodes, -1, dtype=np.int64) for _ in range(3))
            ups = [q for q in sorted(range(nodes), key=lambda q: -depth[q]) if tree[q] >= 0]
            up[ups] = np.arange(len(ups))
            at = 0
            for q in sorted(range(nodes), key=lambda q: depth[q]):
                if tree[q] >= 0:
                    down[q], at = at, at + 1
                if switch:
                    store[q], at = at, at + g
            out.append((up, down, store))
        return tuple(np.stack([out[0][i], out[1][i]])[self.t] for i in range(3))


def _columns(p: int, group: int, count: int, parts: list[Part], window: int) -> dict[str, np.ndarray]:
    """The transfers, in the order the stages add them, with their dependencies written out (tests/nvls_tree_ref.py
    infers the same ones from the data, through ScheduleBuilder).

    Ids: first, per piece and node, the g loads, the g - 1 reductions on the switch and the sum to the head (2g);
    then per piece the tree edges up, deepest nodes first; then per piece, nodes shallowest first, the edge down,
    the head's store and the g - 1 multicasts. Pieces touch disjoint elements, so a piece's transfers wait only
    for that piece's (the data) and for the same stage's piece c - window (the pipeline). On GPU h of node k
    the writers of the piece after the sums and the way up, W(k), are k's sum and its children's edges up. So:
    a load waits for nothing; a reduction for its load and load 0; the sum for the loads and reductions
    it reads and load h (which read the head's piece); an edge up for W(k) and the parent's sum; an edge down
    for W(k), k's edge up, and what the parent holds (W(parent) at the root, else the parent's edge down); the
    store for what the head holds (W(k) at the root, else k's edge down); a multicast to GPU j for the store
    and load j (which read GPU j's piece).
    """
    nodes = p // group
    pc = _Pieces(parts, nodes, window)
    switch = group > 1
    per_node = 2 * group if switch else 0
    block = nodes - 1 + (nodes * group if switch else 0)  # per piece, on the way down
    total = pc.size * (nodes * per_node + nodes - 1 + block)
    table = Table(total, 2 * group + 2 * pc.children.shape[-1] + 4)
    if total:
        load, summed = _inside(table, pc, p, group, count) if switch else (None, np.full((pc.size, nodes), -1))
        _across(table, pc, p, group, count, load, summed, pc.size * nodes * per_node, block)
    return table.columns()


def _inside(table: Table, pc: _Pieces, p: int, g: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Per piece and node: the switch loads the piece from every GPU (ids (pieces, nodes, g)), reduces the slots, and
    sends the sum to the head (ids (pieces, nodes))."""
    nodes = p // g
    k = np.arange(nodes)[None, :]
    base = (np.arange(pc.size)[:, None] * nodes + k) * 2 * g
    load = base[..., None] + np.arange(g)
    reduced = base[..., None] + g + np.arange(g - 1)
    summed = base + 2 * g - 1
    j = np.arange(g)
    o, n, c = pc.off[:, None, None], pc.n[:, None, None], pc.c[:, None, None]
    table.put(load, k[..., None] * g + j, p + k[..., None], ("out", o), ("scratch", j * count + o), n, c,
              [pc.pipe(load)[..., None, :]])
    table.put(reduced, p + k[..., None], p + k[..., None], ("scratch", j[1:] * count + o), ("scratch", o), n, c + 1,
              [load[..., 1:], load[..., :1]], reduce=True)
    head = np.take_along_axis(load, np.broadcast_to(pc.h[:, None, None], (pc.size, nodes, 1)), axis=2)[..., 0]
    table.put(summed, p + k, k * g + pc.h[:, None], ("scratch", o[..., 0]), ("out", o[..., 0]), n[..., 0], c[..., 0] + 2,
              [load[..., 0], reduced, head, pc.pipe(summed)])
    return load, summed


def _across(table: Table, pc: _Pieces, p: int, g: int, count: int, load: np.ndarray | None, summed: np.ndarray,
            first_up: int, block: int) -> None:
    """Per piece: the edges up and down its tree from ids `first_up` on, then per node the head's store and the
    switch's multicasts (with a switch: `load` and `summed` are _inside's ids)."""
    nodes = p // g
    edges, ip, k = nodes - 1, np.arange(pc.size)[:, None], np.arange(nodes)[None, :]
    pos_up, pos_down, pos_store = pc.positions(load is not None, g)
    has_parent = pc.parent >= 0
    up = np.where(has_parent, first_up + ip * edges + pos_up, -1)
    first_down = first_up + pc.size * edges
    down = np.where(has_parent, first_down + ip * block + pos_down, -1)
    parent = np.maximum(pc.parent, 0)
    kid_up = np.where(pc.children >= 0, np.take_along_axis(up, np.maximum(pc.children, 0).reshape(pc.size, -1), axis=1)
                      .reshape(pc.children.shape), -1)
    written = np.concatenate([summed[..., None], kid_up], axis=-1)  # W(k)
    pad = np.full_like(kid_up, -1)
    h, off, n, c, depth = pc.h[:, None], pc.off[:, None], pc.n[:, None], pc.c[:, None], pc.depth
    if edges:
        sel = has_parent
        gpu, above = (k * g + h + 0 * ip)[sel], (pc.parent * g + h)[sel]
        piece, size, chunk = np.broadcast_to(off, sel.shape)[sel], np.broadcast_to(n, sel.shape)[sel], (c + 0 * k)[sel]
        table.put(up[sel], gpu, above, ("out", piece), ("out", piece), size, chunk + 3 + pc.height - depth[sel],
                  [written[sel], np.take_along_axis(summed, parent, axis=1)[sel], pc.pipe(up)[sel]], reduce=True)
        at_root = np.take_along_axis(pc.parent, parent, axis=1) < 0
        holds = np.where(at_root[..., None], np.take_along_axis(written, np.broadcast_to(parent[..., None], written.shape),
                                                                axis=1),
                         np.concatenate([np.take_along_axis(down, parent, axis=1)[..., None], pad], axis=-1))
        table.put(down[sel], above, gpu, ("out", piece), ("out", piece), size, chunk + 3 + pc.height + depth[sel],
                  [up[sel], written[sel], holds[sel], pc.pipe(down)[sel]])
    if load is None:
        return
    store = first_down + ip * block + pos_store
    own = np.where(has_parent[..., None], np.concatenate([down[..., None], pad], axis=-1), written)
    table.put(store, k * g + h, p + k, ("out", off), ("scratch", g * count + off), n, c + 4 + pc.height + depth,
              [own, pc.pipe(store)])
    others = np.array([[j for j in range(g) if j != head] for head in range(g)], dtype=np.int64)[pc.h][:, None, :]
    cast = store[..., None] + 1 + np.arange(g - 1)
    load_to = np.take_along_axis(load, np.broadcast_to(others, cast.shape), axis=2)
    table.put(cast, p + k[..., None], k[..., None] * g + others, ("scratch", g * count + off[..., None]),
              ("out", off[..., None]), n[..., None], c[..., None] + 5 + pc.height + depth[..., None],
              [store[..., None], load_to, pc.pipe(cast)[..., None, :]])


def pipelined(engine_s: float, steady_s: float, pieces: int, steps: int) -> float:
    """The engine's time for a pipeline of `steps` pieces per half-shard, from its time with `pieces` (<= steps) of them.

    With k pieces the schedule streams through its stages (switch, heads, the trees' levels) behind its busiest link,
    which carries the same bytes whatever k is: T(k) = A + B / k, A = `steady_s`, that link's bytes over its
    bandwidth (engine/bound.py lower_bound), B / k the pipeline's fill and drain, one piece through every stage. So
    T(steps) = A + (T(pieces) - A) x pieces / steps. NCCL pipelines in its steps (nvls_tree_steps: 2048 per channel
    at 16 GiB on 8-GPU H100 nodes), more than the engine can run on thousands of GPUs; with too few pieces the fill
    of a deep tree dominated (on 256 dgx-h100 nodes, one piece: 16 GiB in 7.6x NCCL's time). Exact where k is past
    the fill's start-up (dgx-h100:nodes=4..32, 16 GiB: A = 85.899 ms on every count, T(8) and T(16) give T(64)
    within 0.6%; tests/simulator/test_nvls_tree.py)."""
    if steps <= pieces or engine_s <= steady_s:
        return engine_s
    return steady_s + (engine_s - steady_s) * pieces / steps


def nvls_tree_time(group: int, n, alpha: float, bandwidth: float):
    """Closed form for two nodes of `group` >= 2 GPUs, every link (alpha, bandwidth), full duplex, unlimited ports.

    m = n / (2 group) is a half-shard. The switch loads n from every GPU (alpha + n/B) and returns the two
    halves to their head (alpha + 2m/B); each head sends one half up its tree to the other node (4 hops: GPU,
    NIC, network switch, NIC, GPU; 4 alpha + m/B). The half whose root is this node is final: stored (alpha +
    m/B) and multicast, every GPU's switch downlink taking g - 1 such halves (alpha + (g-1) m/B); the other half
    comes back down (4 alpha + m/B), is stored and multicast the same way, after the first multicast or
    sharing the downlink with its tail: 6 alpha + n/B + 3m/B + max(6 alpha + (g+1) m/B, 2 alpha + (2g-1) m/B).
    Exact when 2 group divides n's elements. For more nodes the two trees' shapes and how their halves share
    a NIC make the time piecewise in more ways; no closed form is derived (the engine times it).
    """
    if isinstance(group, bool) or not isinstance(group, int) or group < 2:
        raise CollsimError(f"group: {group!r} GPUs per node; the closed form needs an integer >= 2")
    n = np.asarray(n, dtype=np.float64)
    m = n / (2 * group)
    tail = np.maximum(6 * alpha + (group + 1) * m / bandwidth, 2 * alpha + (2 * group - 1) * m / bandwidth)
    return 6 * alpha + n / bandwidth + 3 * m / bandwidth + tail
