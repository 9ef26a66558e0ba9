"""The NVLS schedule (one node) as simulator/nccl/nvls.py built it through ScheduleBuilder (dependencies inferred from the
data, the pipeline's waits added after), kept as the reference its column build must equal transfer for transfer."""

from __future__ import annotations

from dataclasses import replace

from simulator.collective import Collective
from simulator.errors import CollsimError
from simulator.nccl.nvls import MAX_CHUNKS
from simulator.schedule import Piece, Schedule, ScheduleBuilder


def builder_nvls(coll: Collective, chunks: int, window: int) -> Schedule:
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
