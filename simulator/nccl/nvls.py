"""NVLS (NVLink SHARP) on one NVSwitch node: the switch is a participant that reduces and multicasts.

NCCL's NVLS allreduce (Hopper and later; NVIDIA/nccl src/device/all_reduce.h, its NCCL_ALGO_NVLS kernel) is a
reduce-scatter done by the switch (each GPU d issues multimem.ld_reduce on its shard: the switch
reads shard d from every GPU, reduces it and returns the sum to d) followed by an allgather done
by the switch (GPU d issues multimem.st of its reduced shard: the switch replicates it to every
GPU). Per GPU link that is n + n/p bytes up and n/p + n (p-1)/p bytes down, against 2 n (p-1)/p
each way for a ring: the switch's arithmetic and replication are what saves the traffic.

Here the switch is a *helper* rank p of the schedule (`Schedule.helpers = 1`): it has only a
scratch buffer, holds one slot per GPU for each shard piece (the reads of ld_reduce), reduces the
slots locally (instant: the switch's ALU is not modelled), sends the sum to the owner, receives
the owner's store and copies it to every other GPU. The numpy check proves the data movement; the
engine times it on `switch_view(topology)`, which makes the NVSwitch node a device so the helper's
transfers cross the real GPU <-> switch links. The registry's generic paths (verify's torch
programs, MSCCL export, the `ideal:P` checks) address GPU ranks only, so this schedule is not a
registered algorithm: `collsim predict` uses it where NCCL would pick NVLS.

NVLS allgather and reduce-scatter are the two halves on their own (nvls_allgather, nvls_reduce_scatter):
the stores and multicast, or the loads and reduction. NCCL's tuning model does not pick them on one
node of 8 H100 or B200 (simulator/nccl/tuning.py); they are here to time what NCCL would do if it did.
"""

from __future__ import annotations

import numpy as np

from ..algorithms.columns import Table
from ..collective import Collective
from ..errors import CollsimError
from ..schedule import ArraySchedule, Schedule
from ..topology.model import Topology

MAX_CHUNKS = 64


NVLS_OPS = ("allreduce", "allgather", "reduce_scatter")


def nvls_allreduce(coll: Collective, chunks: int = 1, window: int = 2) -> Schedule:
    """The NVLS allreduce of `coll` with the switch as helper rank p; each shard cut into `chunks` pipelined pieces.

    NCCL's kernel loads-reduces a piece, then stores it, then moves on: piece c's loads wait for the
    owner's store of piece c - window, so the stores and multicasts of one piece overlap the loads
    of the next (at most `window` pieces of a shard in flight).
    """
    if coll.op != "allreduce":
        raise CollsimError(f"op: NVLS allreduce is for allreduce; not {coll.op}")
    return _nvls(coll, chunks, window)


def nvls_allgather(coll: Collective, chunks: int = 1) -> Schedule:
    """NVLS allgather (all_gather.h, NCCL_ALGO_NVLS, one node): each GPU multimem-stores its block to the switch,
    which replicates it to every GPU, its owner included (a multicast reaches every member of the team; NCCL's
    kernel then copies each block out of the GPU's own NVLS buffer). Per GPU link: n/p up, n down. A GPU stores
    its `chunks` pieces one after another, so one piece's multicast overlaps the next piece's store."""
    if coll.op != "allgather":
        raise CollsimError(f"op: NVLS allgather is for allgather; not {coll.op}")
    return _nvls(coll, chunks, 0)


def nvls_reduce_scatter(coll: Collective, chunks: int = 1) -> Schedule:
    """NVLS reduce-scatter (reduce_scatter.h, NCCL_ALGO_NVLS, one node): GPU d multimem.ld_reduce's its block, so
    the switch reads block d from every GPU, reduces it and returns the sum to d. Per GPU link: n up, n/p down.
    The `chunks` pieces of a block are loaded one after another, so one piece's sum overlaps the next one's loads."""
    if coll.op != "reduce_scatter":
        raise CollsimError(f"op: NVLS reduce-scatter is for reduce_scatter; not {coll.op}")
    return _nvls(coll, chunks, 0)


def nvls_schedule(coll: Collective, chunks: int = 1, window: int = 2) -> Schedule:
    """The NVLS schedule of `coll`'s op (allreduce, allgather or reduce-scatter); `window` is the allreduce's."""
    if coll.op == "allreduce":
        return nvls_allreduce(coll, chunks, window)
    if coll.op == "allgather":
        return nvls_allgather(coll, chunks)
    if coll.op == "reduce_scatter":
        return nvls_reduce_scatter(coll, chunks)
    raise CollsimError(f"op: NVLS is modelled for {', '.join(NVLS_OPS)}; not {coll.op}")


def _nvls(coll: Collective, chunks: int, window: int) -> ArraySchedule:
    """The switch's loads and reduction (allreduce, reduce-scatter) and the owners' stores and multicast (allreduce,
    allgather) per piece of each block, in that order; see nvls_allreduce for `window`."""
    if isinstance(chunks, bool) or not isinstance(chunks, int) or not 1 <= chunks <= MAX_CHUNKS:
        raise CollsimError(f"chunks: {chunks!r}; expected an integer in 1..{MAX_CHUNKS}")
    p, count = coll.ranks, coll.count
    build = p > 1 and count > 0
    schedule = ArraySchedule(coll, "nvls", _nvls_columns(coll, chunks, window) if build else Table(0, 0).columns(),
                             {"chunks": chunks}, (p + 1) * count if build else 0)
    schedule.helpers = 1
    return schedule


def _nvls_columns(coll: Collective, chunks: int, window: int) -> dict[str, np.ndarray]:
    """The transfers piece by piece (chunk c of shard d, empty pieces left out), with their dependencies written out
    (tests/nvls_ref.py infers the same ones from the data, through ScheduleBuilder).

    Per piece, with loads (allreduce, reduce-scatter): the switch's p loads (slot r of its scratch), its p - 1
    reductions into slot 0 and the sum to the owner d; with stores (allreduce, allgather): d's store (slot p), then
    the multicast to every other GPU (to every GPU, in an allgather). Pieces touch disjoint elements, so a piece's
    transfers wait only for that piece's: a reduction for its load and load 0; the sum for what it reads and load d
    (which read d's piece); the store for the sum (allreduce); a multicast for the store and, in an allreduce, load r
    (which read GPU r's piece). And for the pipeline: an allreduce's loads for d's store `window` pieces back; the
    loads (reduce-scatter) or the store (allgather) for the same of d's previous piece.
    """
    p, count = coll.ranks, coll.count
    loads, stores = coll.op != "allgather", coll.op != "reduce_scatter"
    offsets = coll.block_offsets
    pieces = []  # (c, d, start, n)
    for c in range(chunks):
        for d in range(p):
            lo, size = int(offsets[d]), int(offsets[d + 1] - offsets[d])
            start, stop = lo + size * c // chunks, lo + size * (c + 1) // chunks
            if stop > start:
                pieces.append((c, d, start, stop - start))
    index = {(c, d): i for i, (c, d, _, _) in enumerate(pieces)}
    last: dict[int, int] = {}
    prev = []  # the piece the pipeline waits on: (d, c - window) in an allreduce, else d's previous piece
    for i, (c, d, _, _) in enumerate(pieces):
        prev.append(index.get((c - window, d), -1) if loads and stores else last.get(d, -1))
        last[d] = i
    earlier = np.array(prev, dtype=np.int64)
    d, start, n = (np.array(col, dtype=np.int64) for col in list(zip(*pieces))[1:])
    size = len(pieces)
    casts = p - 1 if loads else p
    per = (2 * p if loads else 0) + (1 + casts if stores else 0)
    table = Table(size * per, p + 2)
    base = np.arange(size) * per
    r = np.arange(p)
    sw, at = p, start[:, None]

    def before(ids):  # the same ids of the piece the pipeline waits on (-1 where none)
        return np.where((earlier >= 0).reshape((-1,) + (1,) * (ids.ndim - 1)), ids[np.maximum(earlier, 0)], -1)

    load = base[:, None] + r
    store = base + (2 * p if loads else 0)
    if loads:
        reduced = base[:, None] + p + r[:-1]
        summed = base + 2 * p - 1
        wait = before(store)[:, None] if stores else before(load)  # allreduce: d's store; reduce-scatter: its own load
        table.put(load, r, sw, ("out", at), ("scratch", r * count + at), n[:, None], 0, [wait])
        table.put(reduced, sw, sw, ("scratch", r[1:] * count + at), ("scratch", at), n[:, None], 1,
                  [load[:, 1:], load[:, :1]], reduce=True)
        table.put(summed, sw, d, ("scratch", start), ("out", start), n, 2, [load[:, 0], reduced, load[np.arange(size), d]])
    if stores:
        to = np.array([[j for j in range(p) if j != owner or not loads] for owner in range(p)], dtype=np.int64)[d]
        cast = store[:, None] + 1 + np.arange(casts)
        slot = p * count + at
        first = 3 if loads else 0  # steps: after the loads (0-2) in an allreduce
        table.put(store, d, sw, ("out", start), ("scratch", slot[:, 0]), n, first,
                  [summed if loads else before(store)])
        table.put(cast, sw, to, ("scratch", slot), ("out", at), n[:, None], first + 1,
                  [store[:, None], np.take_along_axis(load, to, axis=1)] if loads else [store[:, None]])
    return table.columns()


def switch_view(topology: Topology, ranks: int, efficiency: float = 1.0, group: int | None = None) -> Topology:
    """A copy of a topology whose NVSwitch nodes are devices `ranks`, `ranks` + 1, ...: the helper ranks of a schedule.

    One switch for all `ranks` GPUs (NVLS, simulator/nccl/nvls.py), or with `group` GPUs per node (ranks k*group ..
    on node k) node k's switch as device `ranks` + k (NVLS-tree, simulator/nccl/nvls_tree.py). `efficiency` scales
    the bandwidth of the links into and out of those switches (NCCL's nvlsEfficiency, simulator/nccl/tuning.py
    NVLS_EFFICIENCY: what NVLS reaches of the NVLink bandwidth).
    """
    topology.check_ranks(ranks)
    if not 0 < efficiency <= 1:
        raise CollsimError(f"nvls-efficiency: {efficiency!r} is not a fraction; expected a number in (0, 1]")
    group = ranks if group is None else group
    chosen = [_attached_switch(topology, range(k, min(k + group, ranks))) for k in range(0, ranks, group)]
    clone = topology._copy()
    for sw in chosen:
        touches = (clone.link_src == sw) | (clone.link_dst == sw)
        clone.bandwidth[touches] *= efficiency
    clone.devices = list(topology.devices) + chosen
    clone.placement = list(topology.placement[:ranks]) + list(range(len(topology.devices), len(clone.devices)))
    clone._dist_to = {}
    clone._router = _gpu_router(topology._router, set(chosen))
    return clone


def _gpu_router(router, switches: set[int]):
    """The topology's own router (rail, spine and all) between GPUs; None, the shortest path, where one end is a
    switch made a device (one hop to or from a GPU on it)."""
    if router is None:
        return None

    def route(a: int, b: int):
        return None if a in switches or b in switches else router(a, b)
    return route


def _attached_switch(topology: Topology, ranks: range) -> int:
    """The first switch node every GPU of `ranks` has a direct link to."""
    gpus = {topology.devices[topology.placement[r]] for r in ranks}
    for s in (i for i, kind in enumerate(topology.node_kinds) if kind == "switch"):
        if all(any(topology.link_src[k] == g and topology.link_dst[k] == s for k in range(topology.num_links)) for g in gpus):
            return s
    raise CollsimError(f"topology: {topology.name} has no switch every GPU of ranks {ranks.start}..{ranks.stop - 1} "
                       "links to; NVLS needs one NVSwitch per node")


def timing_view(schedule: Schedule) -> Schedule:
    """The same transfers seen as a collective of p + helpers ranks, which is what the engine counts ranks by."""
    coll = schedule.collective
    wide = Collective(coll.op, schedule.participants, coll.nbytes, coll.dtype)
    if isinstance(schedule, ArraySchedule):  # columns stay columns (no Transfer objects made)
        return ArraySchedule(wide, schedule.algorithm, schedule.columns, schedule.params, schedule.scratch_count)
    return Schedule(wide, schedule.algorithm, schedule.transfers, schedule.params, schedule.scratch_count)
