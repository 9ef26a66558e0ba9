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
head's store, each slot as long as the buffer so a piece keeps its offset), as in simulator/nvls.py; with
one GPU per node there is nothing for a switch to do and the schedule is the double binary tree over nodes.
Each half-shard goes in `chunks` pieces, every stage (switch loads, sum to the head, a tree edge, the store,
the multicast) passing them in order, `window` ahead at most, as NCCL's FIFOs stream its chunks. Not
modelled: the switch's ALU, NCCL's warps split into scatter / gather / reduce / broadcast groups, and its
choice of chunk size (chunks is a parameter here).
The numpy check proves the data movement for any p and g dividing p. The engine times it on
`switch_view(topology, p, group=g)` (simulator/nvls.py), which makes every node's NVSwitch a device;
`nvls_tree_time` is exact on two nodes. Not a registered algorithm, for the reasons simulator/nvls.py gives;
`collsim predict` runs it where NCCL's model picks NVLS_TREE (simulator/predict.py run_nvls_tree).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .algorithms.phases import chunked
from .algorithms.tree import dtree_parents, tree_depths
from .collective import Collective
from .collnet import node_shards
from .errors import CollsimError
from .schedule import Piece, Schedule, ScheduleBuilder, region

MAX_CHUNKS = 64

Part = tuple[int, int, int, int, int]  # (chunk c, shard h, tree t, offset, count)


class _Pipe:
    """Adds transfers stage by stage: chunk c of a stage (a link use of one node, shard and tree) waits for chunk c - window.

    This is what NCCL's per-connection FIFOs do: each stage streams its chunks in order, so with k chunks the
    stages overlap. `after` (transfer -> the transfers it must also wait for) is applied once the schedule is built.
    """

    def __init__(self, b: ScheduleBuilder, window: int):
        self.b, self.window = b, window
        self.done: dict[tuple, list[int]] = {}
        self.after: dict[int, list[int]] = {}

    def send(self, stage: tuple, c: int, src: int, dst: int, piece: Piece, reduce: bool = False, step: int = 0) -> None:
        tid = self.b.send(src, dst, piece, reduce=reduce, step=step)
        self.done.setdefault((stage, c), []).append(tid)
        if (stage, c - self.window) in self.done:
            self.after[tid] = self.done[(stage, c - self.window)]

    def build(self, helpers: int) -> Schedule:
        schedule = self.b.build()
        after = self.after
        schedule.transfers = [replace(t, deps=tuple(sorted({*t.deps, *after[t.id]}))) if t.id in after else t
                              for t in schedule.transfers]
        schedule.helpers = helpers
        return schedule


def _parts(shards: list[tuple[int, int]], chunks: int) -> list[Part]:
    """Each shard cut in two, one half per tree (NCCL's channels alternate the two trees), each half in `chunks`."""
    parts = []
    for h, (off, n) in enumerate(shards):
        half = (n + 1) // 2
        for t, seg in enumerate([(off, half), (off + half, n - half)]):
            parts += [(c, h, t, o, m) for c, (o, m) in enumerate(chunked(seg, chunks)) if m]
    return sorted(parts)


def _node_reduce(pipe: _Pipe, node: int, group: int, part: Part, sw: int) -> None:
    """The node's switch reads the piece from each of its GPUs (one scratch slot each), sums them, returns it to the head."""
    c, h, t, off, n = part
    count = pipe.b.collective.count
    for j in range(group):
        pipe.send(("load", node, h, t), c, node * group + j, sw, Piece("out", off, "scratch", j * count + off, n), step=c)
    for j in range(1, group):
        pipe.b.send(sw, sw, Piece("scratch", j * count + off, "scratch", off, n), reduce=True, step=c + 1)
    pipe.send(("sum", node, h, t), c, sw, node * group + h, Piece("scratch", off, "out", off, n), step=c + 2)


def _node_multicast(pipe: _Pipe, node: int, group: int, part: Part, sw: int, step: int) -> None:
    """The head stores the piece to the switch (slot g), which replicates it to every other GPU of the node."""
    c, h, t, off, n = part
    slot = group * pipe.b.collective.count + off
    pipe.send(("store", node, h, t), c, node * group + h, sw, Piece("out", off, "scratch", slot, n), step=step)
    for j in range(group):
        if j != h:
            pipe.send(("multicast", node, h, t), c, sw, node * group + j, Piece("scratch", slot, "out", off, n), step=step + 1)


def _trees(pipe: _Pipe, nodes: int, group: int, parts: list[Part]) -> None:
    """Each piece (shard h, tree t) up tree t over the heads of shard h, leaves first, back down, multicast per node."""
    p = nodes * group
    trees = dtree_parents(nodes) if nodes > 1 else ([-1], [-1])
    depths = [tree_depths(parent) for parent in trees]
    height = max(max(d) for d in depths)
    for c, h, t, off, n in parts:
        parent, depth = trees[t], depths[t]
        for k in sorted(range(nodes), key=lambda k: -depth[k]):
            if parent[k] >= 0:
                pipe.send(("up", k, h, t), c, k * group + h, parent[k] * group + h, region("out", off, n), reduce=True,
                          step=c + 3 + height - depth[k])
    for part in parts:
        c, h, t, off, n = part
        parent, depth = trees[t], depths[t]
        for k in sorted(range(nodes), key=lambda k: depth[k]):
            if parent[k] >= 0:
                pipe.send(("down", k, h, t), c, parent[k] * group + h, k * group + h, region("out", off, n),
                          step=c + 3 + height + depth[k])
            if group > 1:
                _node_multicast(pipe, k, group, part, p + k, step=c + 4 + height + depth[k])


def nvls_tree_allreduce(coll: Collective, group: int, chunks: int = 1, window: int = 1) -> Schedule:
    """NVLS-tree allreduce of `coll` over nodes of `group` GPUs; node k's NVSwitch is helper rank p + k.

    Each half-shard is cut into `chunks` pieces; every stage (switch loads, sum to the head, a tree edge, the
    store, the multicast) passes them in order, at most `window` ahead of its previous piece.
    """
    shards = node_shards(coll, group, "NVLS-tree")
    for name, value in (("chunks", chunks), ("window", window)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_CHUNKS:
            raise CollsimError(f"{name}: {value!r}; expected an integer in 1..{MAX_CHUNKS}")
    p, count = coll.ranks, coll.count
    nodes = p // group
    pipe = _Pipe(ScheduleBuilder(coll, "nvls_tree", {"group": group, "chunks": chunks}), window)
    if p > 1 and count > 0:
        pipe.b.use_scratch((group + 1) * count)
        parts = _parts(shards, chunks)
        for part in parts:  # inside every node the switch reduces the piece to its head
            for k in range(nodes if group > 1 else 0):
                _node_reduce(pipe, k, group, part, p + k)
        _trees(pipe, nodes, group, parts)
    return pipe.build(nodes)


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
