"""XOR pairwise exchange (MPICH, SMPI allgather and alltoall `pair`): in step s rank r swaps with r XOR s.

Each step pairs ranks two by two (both directions at once), where `direct` shifts (r sends to r+s and
receives from r-s). Every step is one MPI_Sendrecv: it waits for both ranks' previous step (sendrecv.Rounds:
program order, not data, as the blocks are all distinct). On a switch this takes (p-1)(alpha + n/p beta),
as `direct`; on a ring the XOR partners sit at other distances.
SMPI refuses p that are not powers of two; here partners r XOR s >= p are skipped, so every rank still
meets every other once, in steps 1 .. 2^ceil(lg p) - 1.
"""

from __future__ import annotations

import numpy as np

from ..collective import Collective
from ..schedule import ArraySchedule
from .forms import LinkModel, pow2
from .phases import alltoall_offsets
from .registry import register
from .sendrecv import Rounds


def _exchanges(rounds: Rounds, p: int, place, src_buf: str) -> None:
    """Add every step's swaps: `place(r, d)` gives the (dst_off, src_off, count) arrays of r's blocks for d."""
    for s in range(1, 1 << max(p - 1, 0).bit_length()):
        r = np.flatnonzero(np.arange(p) ^ s < p)
        dst_off, src_off, count = place(r, r ^ s)
        rounds.add(r, r ^ s, dst_off, count, step=s - 1, src_buf=src_buf, src_off=src_off)


# Closed form (p a power of two, exact): p-1 rounds of one message of n/p each way, (p-1)(alpha + n/p beta), as
# `direct` and REFERENCE's pairwise exchange. Other p: 2^ceil(lg p) - 1 rounds, some ranks idle in each (declared an
# estimate; it equals the schedule's time on ideal:P for every p of tests/simulator/test_cost.py, 2..32).

def _pair_cost(p, n, m: LinkModel):
    return ((1 << max(p - 1, 0).bit_length()) - 1) * (m.alpha + n / p * m.beta)


@register("allgather", "pair", "XOR pairwise exchange (SMPI pair): in step s rank r swaps blocks with r XOR s; "
          "p-1 steps of n/p", cost=_pair_cost, exact=pow2)
def allgather_pair(coll: Collective) -> ArraySchedule:
    offs = np.asarray(coll.block_offsets, dtype=np.int64)
    rounds = Rounds(coll.ranks)
    _exchanges(rounds, coll.ranks, lambda r, d: (offs[r], offs[r], offs[r + 1] - offs[r]), "out")
    return rounds.schedule(coll, "pair")


@register("alltoall", "pair", "XOR pairwise exchange (SMPI pair): in step s rank r swaps blocks with r XOR s; "
          "p-1 steps of n/p", cost=_pair_cost, exact=pow2)
def alltoall_pair(coll: Collective) -> ArraySchedule:
    """Step 0 is each rank's own block (a local copy), as SMPI's loop from i = 0."""
    in_off, out_off = alltoall_offsets(coll)
    count = np.array([coll.pair_count(0, k) for k in range(coll.ranks)])
    p, rounds = coll.ranks, Rounds(coll.ranks)

    def place(r, d):
        return out_off[d, r], in_off[r, d], count[(d - r) % p]

    r = np.arange(p)
    rounds.add(r, r, out_off[r, r], count[0], step=0, src_buf="in", src_off=in_off[r, r])
    _exchanges(rounds, p, place, "in")
    return rounds.schedule(coll, "pair")
