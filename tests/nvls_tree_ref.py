"""The NVLS-tree schedule as simulator/nccl/nvls_tree.py built it through ScheduleBuilder (dependencies inferred from the
data, the pipeline's window added after), kept as the reference its column build must equal transfer for transfer."""

from __future__ import annotations

from dataclasses import replace

from simulator.algorithms.tree import dtree_parents, tree_depths
from simulator.collective import Collective
from simulator.nccl.collnet import node_shards
from simulator.nccl.nvls_tree import Part, _parts
from simulator.schedule import Piece, Schedule, ScheduleBuilder, region


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


def builder_nvls_tree(coll: Collective, group: int, chunks: int = 1, window: int = 1) -> Schedule:
    """NVLS-tree allreduce of `coll` over nodes of `group` GPUs (checked by nvls_tree_allreduce, not here); node k's
    NVSwitch is helper rank p + k; every stage passes the pieces in order, at most `window` ahead."""
    shards = node_shards(coll, group, "NVLS-tree")
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
