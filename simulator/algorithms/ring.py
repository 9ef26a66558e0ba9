"""Ring algorithms (Patarasuk & Yuan 2009): each rank talks only to its neighbours, p-1 steps per phase.

The ring is one chunk program (simulator/algorithms/chunks.py): rank r owns block r; in reduce-scatter step s it
reduces block r-s-1 into rank r+1, in allgather step s it copies block r-s to rank r+1 (`chunks.rings`). Blocks cut
into `chunks` pieces are pipelined: piece c of a block moves as soon as piece c has arrived.
"""

from __future__ import annotations

import numpy as np

from ..collective import Collective
from ..schedule import Schedule
from .chunks import Chunks, chunk_schedule, rings
from .forms import LinkModel
from .phases import block_segs
from .registry import CHUNKS, register


def _ring(x: Chunks, reduce_scatter: bool, allgather: bool) -> None:
    rings(x, x.rank, x.rank, reduce_scatter, allgather)


def ring_schedule(coll: Collective, reduce_scatter: bool, allgather: bool, chunks: int = 1) -> Schedule:
    """The whole-ring schedule around ranks 0..p-1 on 'out'."""
    return chunk_schedule(coll, "ring", _ring, block_segs(coll.block_offsets), reduce_scatter, allgather, chunks=chunks)


# ---- closed forms (Patarasuk & Yuan 2009; Thakur et al. 2005) -----------------------------------
# Published (k = 1): allreduce 2(p-1) alpha + 2(p-1)/p n beta + (p-1)/p n gamma; reduce-scatter
# (p-1) alpha + (p-1)/p n (beta + gamma); allgather (p-1) alpha + (p-1)/p n beta. With k = 1 each
# step's send waits for the previous step's reduction, so the terms add up exactly.
# Pipelined (derived): blocks cut into k chunks, a = alpha + n/(pk) beta per chunk message and
# g = n/(pk) gamma per chunk reduction. For k >= 2 a chunk is reduced while the next travels, so
# the slower of the two sets the pace: the port (a) or the reducer (g) is never idle.
# reduce-scatter: (p-1) k max(a, g) + min(a, g) (exact in every case tested). Allreduce: 2(p-1) k a
# if g <= a (exact in every case tested); if g > a the allgather can only start as the last
# reductions finish: max((p-1) k g + p a, (p-1) k (a + g) - (k-1) g + a), an estimate (exact for
# p >= 3 in the cases tested, within 25% everywhere in tests/simulator/test_cost.py), and never below
# 2(p-1) k a, the time at g = a: just above g = a the two terms alone are up to (k-2) a too fast.

def _ring_exact(p: int, model: LinkModel, chunks: int = 1) -> bool:
    return chunks == 1 or model.gamma == 0


def _ring_chunk(p, n, m, chunks):
    """(a, g): one chunk message and one chunk reduction."""
    piece = n / (p * chunks)
    return m.alpha + piece * m.beta, piece * m.gamma


def _allreduce_cost(p, n, m, chunks=1):
    a, g = _ring_chunk(p, n, m, chunks)
    if chunks == 1:
        return 2 * (p - 1) * a + (p - 1) * g
    ports = 2 * (p - 1) * chunks * a
    slow_reducer = np.maximum((p - 1) * chunks * g + p * a, (p - 1) * chunks * (a + g) - (chunks - 1) * g + a)
    return np.where(g <= a, ports, np.maximum(slow_reducer, ports))  # a slower reducer never makes it faster


def _allgather_cost(p, n, m, chunks=1):
    return (p - 1) * (chunks * m.alpha + n / p * m.beta)


def _reduce_scatter_cost(p, n, m, chunks=1):
    a, g = _ring_chunk(p, n, m, chunks)
    if chunks == 1:
        return (p - 1) * (a + g)
    return (p - 1) * chunks * np.maximum(a, g) + np.minimum(a, g)


@register("allreduce", "ring", "reduce-scatter ring then allgather ring: 2(p-1) steps of n/p", (CHUNKS,),
          cost=_allreduce_cost, exact=_ring_exact)
def allreduce_ring(coll: Collective, chunks: int = 1) -> Schedule:
    return ring_schedule(coll, reduce_scatter=True, allgather=True, chunks=chunks)


@register("allgather", "ring", "pass blocks around the ring: p-1 steps of n/p", (CHUNKS,), cost=_allgather_cost)
def allgather_ring(coll: Collective, chunks: int = 1) -> Schedule:
    return ring_schedule(coll, reduce_scatter=False, allgather=True, chunks=chunks)


@register("reduce_scatter", "ring", "reduce blocks around the ring: p-1 steps of n/p", (CHUNKS,), cost=_reduce_scatter_cost)
def reduce_scatter_ring(coll: Collective, chunks: int = 1) -> Schedule:
    return ring_schedule(coll, reduce_scatter=True, allgather=False, chunks=chunks)
