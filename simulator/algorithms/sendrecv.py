"""MPI program order for algorithms written as rounds of MPI_Sendrecv (MPICH and SMPI's collectives).

A rank posts the send and the receive of its next round only when its previous round has completed, and
a rendezvous message moves only once both of its ranks have posted it. So, beyond the data dependencies,
a transfer waits for the previous round of both its ranks: what each of them sent and received there.
Without this, a rank that finished early would start its next round's message into a rank still busy
with an earlier one, which MPI's matching never lets happen (SMPI's ring-platform times show it).
"""

from __future__ import annotations

import numpy as np

from ..collective import Collective
from ..schedule import ArraySchedule
from .columns import NONE, Columns


class Rounds:
    """Transfers added round by round, each waiting for the previous round of its sender and of its receiver."""

    def __init__(self, ranks: int) -> None:
        self.columns = Columns()
        self.last = np.full((ranks, 2), NONE)  # per rank: what it sent, what it received, in its last round

    def add(self, src, dst, off, count, *, step: int, reduce: bool = False, src_buf: str = "out",
            src_off=None) -> np.ndarray:
        """One round: transfers src[k] -> dst[k] (arrays; each rank sends at most once and receives at most once) of
        `count` elements written at `off` of `out` (read at `src_off` of `src_buf`, default the same place)."""
        src, dst = np.atleast_1d(np.asarray(src, dtype=np.int64)), np.atleast_1d(np.asarray(dst, dtype=np.int64))
        deps = np.concatenate((self.last[src], self.last[dst]), axis=1)
        ids = self.columns.send(src, dst, off, count, reduce=reduce, step=step, deps=deps, src_buf=src_buf,
                                src_off=src_off)
        self.last[np.union1d(src, dst)] = NONE
        self.last[src, 0] = ids
        self.last[dst, 1] = ids
        return ids

    def schedule(self, coll: Collective, algorithm: str) -> ArraySchedule:
        return self.columns.schedule(coll, algorithm)
