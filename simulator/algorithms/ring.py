"""Ring algorithms (Patarasuk & Yuan): each rank talks only to its neighbours, p-1 steps per phase."""

from __future__ import annotations

from ..collective import Collective
from ..schedule import Schedule, ScheduleBuilder
from .phases import block_segs, ring_allgather, ring_reduce_scatter
from .registry import Param, register

CHUNKS = Param("chunks", 1, "pieces each block is cut into, sent as separate pipelined messages")


@register("allreduce", "ring", "reduce-scatter ring then allgather ring: 2(p-1) steps of n/p", (CHUNKS,))
def allreduce_ring(coll: Collective, chunks: int = 1) -> Schedule:
    b = ScheduleBuilder(coll, "ring")
    group, segs = list(range(coll.ranks)), block_segs(coll.block_offsets)
    step = ring_reduce_scatter(b, group, segs, chunks)
    ring_allgather(b, group, segs, chunks, step=step)
    return b.build()


@register("allgather", "ring", "pass blocks around the ring: p-1 steps of n/p", (CHUNKS,))
def allgather_ring(coll: Collective, chunks: int = 1) -> Schedule:
    b = ScheduleBuilder(coll, "ring")
    ring_allgather(b, list(range(coll.ranks)), block_segs(coll.block_offsets), chunks)
    return b.build()


@register("reduce_scatter", "ring", "reduce blocks around the ring: p-1 steps of n/p", (CHUNKS,))
def reduce_scatter_ring(coll: Collective, chunks: int = 1) -> Schedule:
    b = ScheduleBuilder(coll, "ring")
    ring_reduce_scatter(b, list(range(coll.ranks)), block_segs(coll.block_offsets), chunks)
    return b.build()
