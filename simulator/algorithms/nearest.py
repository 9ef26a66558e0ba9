"""Rabenseifner in MPICH's order, as SimGrid's SMPI runs it: halving with the nearest partner first.

collsim's `rabenseifner` halves with the farthest partner first (distance p/2, p/4, ..., 1) and gathers
back nearest first. MPICH's allreduce (SMPI `rab_rdb`, `smp_rsag_rab`) and Rabenseifner's own reduce
(SMPI `rab`) do the mirror: distances 1, 2, 4, ... while halving, then p/2, ..., 1 while gathering, so
member i ends the halving with segment bitreverse(i). On a switch both orders take the same time (the
allreduce's closed form is `rabenseifner`'s); on a ring the n/2 messages of the first round go to neighbours.

Every round waits for its ranks' previous one (sendrecv.Rounds: MPI program order). Rank counts that are
not powers of two fold first: `rab_rdb` folds even rank 2i into 2i+1 (the odd one survives); the reduce
`rab` keeps the even one, the pair swapping halves and the odd one handing its reduced half back.
"""

from __future__ import annotations

import numpy as np

from ..collective import Collective, offsets_of, split_counts
from ..schedule import ArraySchedule
from .forms import LinkModel, floor_lg, fold_extra, pof2
from .phases import fold, relative_group
from .registry import get, register
from .sendrecv import Rounds


def mpich_fold(q: int, odd_survives: bool) -> tuple[list[int], list[tuple[int, int]]]:
    """`fold(q)`, or with `odd_survives` MPICH rab_rdb's: of each of the first 2r members, 2i+1 survives."""
    survivors, pairs = fold(q)
    if not odd_survives:
        return survivors, pairs
    return [s + 1 if s < 2 * len(pairs) else s for s in survivors], [(keep, extra) for extra, keep in pairs]


def nearest_halving(rounds: Rounds, members: np.ndarray, starts: np.ndarray, step: int) -> tuple[np.ndarray, int]:
    """Recursive halving over a power-of-two group, distance 1 first: the lower of each pair keeps the lower half of
    their window of segments (member i's is starts[i]:starts[i + 1]) and reduces the upper half into its partner.
    Returns each member's final window [lo, hi) of segments (a (q, 2) array) and the next step."""
    q, d = members.size, 1
    i, window = np.arange(members.size), np.tile([0, members.size], (members.size, 1))
    while d < q:
        lo, hi = window[:, 0], window[:, 1]
        mid, up = (lo + hi) // 2, (i & d) > 0
        give_lo, give_hi = np.where(up, lo, mid), np.where(up, mid, hi)
        rounds.add(members, members[i ^ d], starts[give_lo], starts[give_hi] - starts[give_lo], step=step, reduce=True)
        window = np.stack([np.where(up, mid, lo), np.where(up, hi, mid)], axis=1)
        d, step = 2 * d, step + 1
    return window, step


def farthest_doubling(rounds: Rounds, members: np.ndarray, starts: np.ndarray, window: np.ndarray, step: int,
                      gather: bool = False) -> int:
    """Undo `nearest_halving`'s windows, distance q/2 first: each member copies its window to its partner (with
    `gather`, only the members with bit d set send, as Rabenseifner's reduce does: towards member 0 a binomial
    gather, the others' messages land on ranks whose result nobody reads). Returns the next step."""
    q, d = members.size, members.size // 2
    while d >= 1:
        who = np.flatnonzero(np.arange(q) & d) if gather else np.arange(q)
        lo, hi = starts[window[who, 0]], starts[window[who, 1]]
        rounds.add(members[who], members[who ^ d], lo, hi - lo, step=step)
        partner = window[np.arange(q) ^ d]
        window = np.stack([np.minimum(window[:, 0], partner[:, 0]), np.maximum(window[:, 1], partner[:, 1])], axis=1)
        d, step = d // 2, step + 1
    return step


def _fold_in(rounds: Rounds, extra: np.ndarray, keep: np.ndarray, n: int, halves: bool) -> int:
    """The pre step: `extra` reduces its whole vector into `keep` (MPICH); or, with `halves` (Rabenseifner's reduce),
    the pair swap halves and reduce them (keep the first n/2 elements, extra the rest), then extra hands its reduced
    half to keep. Returns the next step."""
    if not halves:
        rounds.add(extra, keep, 0, n, step=0, reduce=True)
        return 1
    half, k = n // 2, extra.size
    rounds.add(np.concatenate((extra, keep)), np.concatenate((keep, extra)), np.repeat([0, half], k),
               np.repeat([half, n - half], k), step=0, reduce=True)
    rounds.add(extra, keep, half, n - half, step=1)
    return 2


def _rabenseifner(coll: Collective, group: np.ndarray, odd_survives: bool, gather: bool) -> ArraySchedule:
    """Fold, halving nearest first, then the doubling allgather (or gather to group[0]) farthest first, then unfold."""
    p, n = coll.ranks, coll.count
    rounds = Rounds(p)
    survivors, pairs = mpich_fold(p, odd_survives)
    extra, keep = (group[np.array(side, dtype=np.int64)] for side in zip(*pairs)) if pairs else ([], [])
    step = _fold_in(rounds, extra, keep, n, halves=gather) if pairs else 0
    members = group[np.array(survivors, dtype=np.int64)]
    starts = offsets_of(split_counts(n, members.size))
    window, step = nearest_halving(rounds, members, starts, step)
    step = farthest_doubling(rounds, members, starts, window, step, gather)
    if pairs and not gather:
        rounds.add(keep, extra, 0, n, step=step)
    return rounds.schedule(coll, "rabenseifner_nearest")


_ALLREDUCE = get("allreduce", "rabenseifner")


# Reduce (derived): `rabenseifner`'s 2 lg(p2) alpha + 2 (p2-1)/p2 n beta + (p2-1)/p2 n gamma over the p2 survivors; p not
# a power of two adds the halves swap (alpha + n/2 beta + n/2 gamma) and the hand-back of a half (alpha + n/2 beta).

def _reduce_cost(p, n, m: LinkModel):
    p2, x = pof2(p), fold_extra(p)
    f = (p2 - 1) / p2
    fold_in = 2 * m.alpha + n * m.beta + n / 2 * m.gamma
    return 2 * floor_lg(p) * m.alpha + 2 * f * n * m.beta + f * n * m.gamma + x * fold_in


@register("allreduce", "rabenseifner_nearest",
          "Rabenseifner in MPICH's order (SMPI rab_rdb): halving with partners at distance 1, 2, 4, ..., "
          "then doubling p/2, ..., 1: 2 lg p steps, 2n(p-1)/p bytes", cost=_ALLREDUCE.cost, exact=_ALLREDUCE.exact)
def allreduce_rabenseifner_nearest(coll: Collective) -> ArraySchedule:
    return _rabenseifner(coll, np.arange(coll.ranks), odd_survives=True, gather=False)


@register("reduce", "rabenseifner_nearest",
          "Rabenseifner's reduce (SMPI rab): halving with partners at distance 1, 2, 4, ..., then gathering towards "
          "the root from distance p/2 down: 2 lg p steps, 2n(p-1)/p bytes", cost=_reduce_cost)
def reduce_rabenseifner_nearest(coll: Collective) -> ArraySchedule:
    return _rabenseifner(coll, np.array(relative_group(coll.ranks, coll.root)), odd_survives=False, gather=True)
