"""Bidirectional ring allgather: half of every block travels clockwise, the other half counter-clockwise.

With two ports per rank (`--ports 2`: full-duplex links to both neighbours, as NVLink rings have)
each direction carries half the data, so the bandwidth term halves against the one-way ring;
with one port it takes the ring's time. It declares no closed form, so `collsim cost` and `fit`
time it with the event engine on ideal:P. This file is the whole algorithm (docs/architecture.md).
"""

from ..collective import Collective
from ..schedule import ArraySchedule, Schedule
from .columns import concat_columns
from .phases import block_segs
from .registry import register
from .ring import ring_columns


@register("allgather", "bidirectional_ring", "half of each block around the ring each way: p-1 steps of n/(2p) per direction")
def allgather_bidirectional_ring(coll: Collective) -> Schedule:
    segs = block_segs(coll.block_offsets)
    first = [(off, count - count // 2) for off, count in segs]
    second = [(off + count - count // 2, count // 2) for off, count in segs]
    ranks = list(range(coll.ranks))
    rings = [ring_columns(ranks, first, reduce_scatter=False), ring_columns(ranks[::-1], second[::-1], reduce_scatter=False)]
    return ArraySchedule(coll, "bidirectional_ring", concat_columns(rings))
