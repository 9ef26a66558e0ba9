"""Ring algorithms (Patarasuk & Yuan): each rank talks only to its neighbours, p-1 steps per phase.

The whole-ring schedules write their dependencies out instead of having ScheduleBuilder infer
them: the same transfers and the same dependencies (tests compare the two transfer by transfer),
built fast enough for rings of thousands of ranks. Composite algorithms (hierarchical, van de
Geijn broadcast) use the inferring ring phases in phases.py.
"""

from __future__ import annotations

from ..collective import Collective
from ..schedule import Schedule, Transfer, new_transfer, region
from .phases import block_segs, chunked
from .registry import Param, register

CHUNKS = Param("chunks", 1, "pieces each block is cut into, sent as separate pipelined messages")


def ring_schedule(coll: Collective, reduce_scatter: bool, allgather: bool, chunks: int = 1) -> Schedule:
    """Reduce-scatter and/or allgather around ranks 0..p-1 on 'out', with explicit dependencies.

    Transfer (s, i, c) is rank i's message of step s carrying chunk c of the block it forwards. It
    waits for the message that brought it that chunk (from rank i-1, step s-1); an allgather copy
    into rank i+1 also waits for the last reduction into that block there and for rank i+1's own
    send of it (write after read), exactly what ScheduleBuilder would infer.
    """
    q = coll.ranks
    segs = block_segs(coll.block_offsets)
    pieces = [[(region("out", off, count),) for off, count in chunked(seg, chunks)] for seg in segs]
    full = [seg[1] > 0 for seg in segs]
    transfers: list[Transfer] = []
    add = transfers.append
    rs_first: list[list[int]] = []  # rs_first[s][i]: id of rank i's first chunk message in reduce-scatter step s
    if reduce_scatter:
        for s in range(q - 1):
            row = [0] * q
            prev = rs_first[s - 1] if s else None
            for i in range(q):
                blk = (i - s - 1) % q
                row[i] = tid = len(transfers)
                dst = (i + 1) % q
                for c, piece in enumerate(pieces[blk]):
                    deps = (prev[i - 1] + c,) if prev is not None and full[blk] else ()
                    add(new_transfer(tid + c, i, dst, piece, True, deps, s))
            rs_first.append(row)
    if allgather:
        step0 = q - 1 if reduce_scatter else 0
        ag_prev: list[int] | None = None
        for s in range(q - 1):
            row = [0] * q
            for i in range(q):
                blk = (i - s) % q
                row[i] = tid = len(transfers)
                dst = (i + 1) % q
                for c, piece in enumerate(pieces[blk]):
                    deps: tuple[int, ...] = ()
                    if full[blk]:
                        wait = []
                        if ag_prev is not None:
                            wait.append(ag_prev[i - 1] + c)
                        if reduce_scatter:
                            if s == 0:
                                wait.append(rs_first[q - 2][i - 1] + c)
                            else:
                                wait.append(rs_first[s - 1][i] + c)
                            wait.append(rs_first[s][dst] + c)
                        deps = tuple(sorted(set(wait)))
                    add(new_transfer(tid + c, i, dst, piece, False, deps, step0 + s))
            ag_prev = row
    return Schedule(coll, "ring", transfers)


@register("allreduce", "ring", "reduce-scatter ring then allgather ring: 2(p-1) steps of n/p", (CHUNKS,))
def allreduce_ring(coll: Collective, chunks: int = 1) -> Schedule:
    return ring_schedule(coll, reduce_scatter=True, allgather=True, chunks=chunks)


@register("allgather", "ring", "pass blocks around the ring: p-1 steps of n/p", (CHUNKS,))
def allgather_ring(coll: Collective, chunks: int = 1) -> Schedule:
    return ring_schedule(coll, reduce_scatter=False, allgather=True, chunks=chunks)


@register("reduce_scatter", "ring", "reduce blocks around the ring: p-1 steps of n/p", (CHUNKS,))
def reduce_scatter_ring(coll: Collective, chunks: int = 1) -> Schedule:
    return ring_schedule(coll, reduce_scatter=True, allgather=False, chunks=chunks)
