"""Bidirectional ring allgather: half of every block travels clockwise, the other half counter-clockwise.

With two ports per rank (`--ports 2`: full-duplex links to both neighbours, as NVLink rings have)
each direction carries half the data, so the bandwidth term halves against the one-way ring;
with one port it takes the ring's time. It declares no closed form, so `collsim cost` and `fit`
time it with the event engine on ideal:P. This file is the whole algorithm (docs/architecture.md).
"""


from ..collective import Collective
from ..schedule import Schedule
from .chunks import Chunks, chunk_schedule, rings
from .phases import block_segs
from .registry import register


def _two_rings(x: Chunks) -> None:
    """Chunk r is the first half of block r, chunk p + r its second half: one ring each way."""
    rings(x, x.rank, x.rank, False, True)
    rings(x, x.rank[::-1], x.ranks + x.rank[::-1], False, True)


@register("allgather", "bidirectional_ring", "half of each block around the ring each way: p-1 steps of n/(2p) per direction")
def allgather_bidirectional_ring(coll: Collective) -> Schedule:
    segs = block_segs(coll.block_offsets)
    halves = [(off, count - count // 2) for off, count in segs] + [(off + count - count // 2, count // 2) for off, count in segs]
    return chunk_schedule(coll, "bidirectional_ring", _two_rings, halves)
