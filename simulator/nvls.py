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
node of 8 H100 or B200 (simulator/nccl_model.py); they are here to time what NCCL would do if it did.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .collective import Collective
from .errors import CollsimError
from .schedule import ArraySchedule, Piece, Schedule, ScheduleBuilder
from .topology.model import Topology

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


def _nvls(coll: Collective, chunks: int, window: int) -> Schedule:
    """The switch's loads and reduction (allreduce, reduce-scatter) and the owners' stores and multicast (allreduce,
    allgather) per piece of each block, in that order; see nvls_allreduce for `window`."""
    if isinstance(chunks, bool) or not isinstance(chunks, int) or not 1 <= chunks <= MAX_CHUNKS:
        raise CollsimError(f"chunks: {chunks!r}; expected an integer in 1..{MAX_CHUNKS}")
    loads, stores = coll.op != "allgather", coll.op != "reduce_scatter"
    p, count = coll.ranks, coll.count
    b = ScheduleBuilder(coll, "nvls", {"chunks": chunks})
    if p > 1 and count > 0:
        b.use_scratch((p + 1) * count)  # slot r: GPU r's contribution; slot p: the owner's store (multicast)
        offsets = coll.block_offsets
        stored: dict[tuple[int, int], int] = {}  # (shard, piece) -> the owner's store of that piece
        # transfer -> the one it also waits for: allreduce, the owner's store `window` pieces back (at most `window`
        # pieces of a shard in flight); allgather, reduce-scatter, the same GPU's load or store of the previous piece
        after: dict[int, int] = {}
        issued: dict[int, list[int]] = {}  # shard -> its last piece's loads (reduce-scatter) or store (allgather)
        for c in range(chunks):
            for d in range(p):
                lo, size = int(offsets[d]), int(offsets[d + 1] - offsets[d])
                start, stop = lo + size * c // chunks, lo + size * (c + 1) // chunks
                if stop == start:
                    continue
                first = []
                if loads:
                    first = _load_reduce(b, d, start, stop - start)
                    for tid in first if stores else ():
                        if (d, c - window) in stored:
                            after[tid] = stored[(d, c - window)]
                if stores:
                    stored[(d, c)] = _store_multicast(b, d, start, stop - start, to_owner=not loads)
                    first = first or [stored[(d, c)]]
                if not (loads and stores):
                    after.update(zip(first, issued.get(d, ())))
                    issued[d] = first
    schedule = b.build()
    schedule.transfers = [replace(t, deps=tuple(sorted({*t.deps, after[t.id]}))) if t.id in after else t
                          for t in schedule.transfers]
    schedule.helpers = 1
    return schedule


def _load_reduce(b: ScheduleBuilder, d: int, start: int, n: int) -> list[int]:
    """GPU d's multimem.ld_reduce of out[start:start+n]: the switch (rank p) loads it from every GPU, reduces the
    copies and returns the sum to d. Returns the loads' transfer ids."""
    p, count = b.collective.ranks, b.collective.count
    sw = p
    tids = [b.send(r, sw, Piece("out", start, "scratch", r * count + start, n), step=0) for r in range(p)]
    for r in range(1, p):
        b.send(sw, sw, Piece("scratch", r * count + start, "scratch", start, n), reduce=True, step=1)
    b.send(sw, d, Piece("scratch", start, "out", start, n), step=2)
    return tids


def _store_multicast(b: ScheduleBuilder, d: int, start: int, n: int, to_owner: bool) -> int:
    """GPU d's multimem.st of out[start:start+n]: the switch replicates it to every other GPU (and to d if
    `to_owner`). Returns the store's transfer id."""
    p, count = b.collective.ranks, b.collective.count
    sw, first = p, 0 if to_owner else 3  # steps: after the loads (0-2) in an allreduce
    store = b.send(d, sw, Piece("out", start, "scratch", p * count + start, n), step=first)
    for r in range(p):
        if r != d or to_owner:
            b.send(sw, r, Piece("scratch", p * count + start, "out", start, n), step=first + 1)
    return store


def nvls_time(p: int, n, alpha: float, bandwidth: float, op: str = "allreduce"):
    """Closed form, chunks = 1, unlimited ports, every GPU on its own full-duplex link (alpha, bandwidth) to the switch.

    Upload: p pieces of n/p share the uplink (alpha + n/B); the sum back (alpha + n/(pB)); the owner's
    store (alpha + n/(pB)); the p-1 other shards share each downlink (alpha + (p-1) n/(pB)):
    4 alpha + (2 + 1/p) n / B. Allgather: the stores (alpha + n/(pB)), then p blocks share each downlink
    (alpha + n/B); reduce-scatter: the loads (alpha + n/B), then the sum (alpha + n/(pB)): both
    2 alpha + (1 + 1/p) n / B. Exact when p divides n's elements; 0 for p = 1.
    """
    if op not in NVLS_OPS:
        raise CollsimError(f"op: NVLS is modelled for {', '.join(NVLS_OPS)}; not {op}")
    n = np.asarray(n, dtype=np.float64)
    if p == 1:
        return np.zeros_like(n)
    if op == "allreduce":
        return 4 * alpha + (2 + 1 / p) * n / bandwidth
    return 2 * alpha + (1 + 1 / p) * n / bandwidth


def switch_view(topology: Topology, ranks: int, efficiency: float = 1.0, group: int | None = None) -> Topology:
    """A copy of a topology whose NVSwitch nodes are devices `ranks`, `ranks` + 1, ...: the helper ranks of a schedule.

    One switch for all `ranks` GPUs (NVLS, simulator/nvls.py), or with `group` GPUs per node (ranks k*group ..
    on node k) node k's switch as device `ranks` + k (NVLS-tree, simulator/nvls_tree.py). `efficiency` scales
    the bandwidth of the links into and out of those switches (NCCL's nvlsEfficiency, simulator/nccl_model.py
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
    clone._router = None  # the preset's router knows GPUs only; one hop GPU <-> switch is the shortest path
    return clone


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
