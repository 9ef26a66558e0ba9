"""Ring algorithms (Patarasuk & Yuan 2009): each rank talks only to its neighbours, p-1 steps per phase.

One ring builder serves everything: `ring_transfers` writes a ring's messages over any group of
ranks with their dependencies spelled out, and `ring_columns` the same as arrays (an ArraySchedule:
rings of thousands of ranks without an object per transfer). The whole-ring algorithms use the
columns; the ring phases (`ring_reduce_scatter`, `ring_allgather`) feed the same messages to a
ScheduleBuilder, which infers the dependencies on data that other phases of a composite algorithm
(hierarchical, van de Geijn broadcast) wrote or read; tests check that the written dependencies
are exactly the inferred ones, and that the columns are exactly `ring_transfers`.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from ..collective import Collective
from ..schedule import BUFFERS, ArraySchedule, Schedule, ScheduleBuilder, Transfer, csr_rows, new_transfer, region
from .forms import LinkModel
from .phases import Seg, block_segs, chunked
from .registry import CHUNKS, register


def ring_transfers(group: Sequence[int], segs: Sequence[Seg], chunks: int = 1, reduce_scatter: bool = True,
                   allgather: bool = True, buf: str = "out", step: int = 0) -> list[Transfer]:
    """Reduce-scatter and/or allgather around `group` on `buf`, ids from 0, with explicit dependencies.

    Member i owns segs[i]: after the reduce-scatter it holds segs[i] reduced over the group; the
    allgather starts from there. Transfer (s, i, c) is member i's message of step s carrying chunk
    c of the block it forwards. It waits for the message that brought it that chunk (from member
    i-1, step s-1); an allgather copy into member i+1 also waits for the last reduction into that
    block there and for member i+1's own send of it (write after read), exactly what
    ScheduleBuilder infers.
    """
    group = list(group)
    pieces = [[(region(buf, off, count),) for off, count in chunked(seg, chunks)] for seg in segs]
    full = [seg[1] > 0 for seg in segs]
    transfers: list[Transfer] = []
    rs_first = _reduce_scatter(transfers, group, pieces, full, step) if reduce_scatter else None
    if allgather:
        _allgather(transfers, group, pieces, full, step + (len(group) - 1 if reduce_scatter else 0), rs_first)
    return transfers


def _reduce_scatter(transfers: list[Transfer], group: list[int], pieces: list, full: list[bool], step: int) -> list[list[int]]:
    """Append the reduce-scatter; rs_first[s][i] is the id of member i's first chunk message in step s."""
    q, add = len(group), transfers.append
    rs_first: list[list[int]] = []
    for s in range(q - 1):
        row = [0] * q
        prev = rs_first[s - 1] if s else None
        at = step + s
        for i in range(q):
            blk = (i - s - 1) % q
            row[i] = tid = len(transfers)
            src, dst = group[i], group[(i + 1) % q]
            for c, piece in enumerate(pieces[blk]):
                deps = (prev[i - 1] + c,) if prev is not None and full[blk] else ()
                add(new_transfer(tid + c, src, dst, piece, True, deps, at))
        rs_first.append(row)
    return rs_first


def _allgather(transfers: list[Transfer], group: list[int], pieces: list, full: list[bool], step: int,
               rs_first: list[list[int]] | None) -> None:
    """Append the allgather (after the reduce-scatter whose first-message ids are `rs_first`, if any)."""
    q, add = len(group), transfers.append
    ag_prev: list[int] | None = None
    for s in range(q - 1):
        row = [0] * q
        at = step + s
        for i in range(q):
            blk = (i - s) % q
            row[i] = tid = len(transfers)
            j = (i + 1) % q
            src, dst = group[i], group[j]
            for c, piece in enumerate(pieces[blk]):
                deps: tuple[int, ...] = ()
                if full[blk]:
                    wait = [] if ag_prev is None else [ag_prev[i - 1] + c]
                    if rs_first is not None:
                        wait.append(rs_first[q - 2][i - 1] + c if s == 0 else rs_first[s - 1][i] + c)
                        wait.append(rs_first[s][j] + c)
                    deps = tuple(sorted(set(wait)))
                add(new_transfer(tid + c, src, dst, piece, False, deps, at))
        ag_prev = row


def ring_columns(group: Sequence[int], segs: Sequence[Seg], chunks: int = 1, reduce_scatter: bool = True,
                 allgather: bool = True, buf: str = "out", step: int = 0) -> dict[str, np.ndarray]:
    """`ring_transfers` as columns (ArraySchedule): the same transfers, ids and dependencies, made with numpy.

    Messages are numbered step by step, member by member, chunk by chunk; (s, i) below is member i's message of
    step s, `first[s, i]` the id of its first chunk, and a chunk c depends on chunk c of the named message.
    """
    cuts = [chunked(seg, chunks) for seg in segs]
    piece_off = np.array([o for c in cuts for o, _ in c], dtype=np.int64)
    piece_cnt = np.array([n for c in cuts for _, n in c], dtype=np.int64)
    shape = (tuple(int(g) for g in group), tuple(len(c) for c in cuts), tuple(seg[1] > 0 for seg in segs))
    structure = _ring_structure(*shape, reduce_scatter, allgather, BUFFERS.index(buf), step)
    if structure is None:
        return _no_columns()
    pieces = structure["piece"]
    columns = {k: v for k, v in structure.items() if k != "piece"}
    return {**columns, "src_off": piece_off[pieces], "dst_off": piece_off[pieces], "count": piece_cnt[pieces]}


@lru_cache(maxsize=2)
def _ring_structure(group: tuple[int, ...], npieces_t: tuple[int, ...], full_t: tuple[bool, ...], reduce_scatter: bool,
                    allgather: bool, code: int, step: int) -> dict[str, np.ndarray] | None:
    """Everything of ring_columns but the pieces' offsets and counts: the same for every size that cuts the blocks into
    as many pieces and leaves the same blocks empty, so a sweep over sizes builds it once. Read-only arrays (shared).
    `piece` is the index of each transfer's piece in the blocks' concatenated piece lists."""
    group_a = np.asarray(group, dtype=np.int64)
    q = group_a.size
    npieces = np.array(npieces_t, dtype=np.int64)
    poff = np.concatenate(([0], np.cumsum(npieces)))
    full = np.array(full_t, dtype=bool)
    if q < 2 or not (reduce_scatter or allgather):
        return None
    s_idx, i_idx = np.meshgrid(np.arange(q - 1), np.arange(q), indexing="ij")
    parts, base = [], 0
    rs_first = None
    if reduce_scatter:
        blk = (i_idx - s_idx - 1) % q
        rs_first = base + _first_ids(npieces[blk])
        prev = np.full_like(blk, -1)
        prev[1:] = rs_first[:-1][:, (np.arange(q) - 1) % q]
        parts.append((blk, rs_first, [prev], True, step))
        base += int(npieces[blk].sum())
    if allgather:
        blk = (i_idx - s_idx) % q
        first = base + _first_ids(npieces[blk])
        waits = [np.full_like(blk, -1)]
        waits[0][1:] = first[:-1][:, (np.arange(q) - 1) % q]
        if rs_first is not None:
            own = np.empty_like(blk)
            own[0] = rs_first[q - 2][(np.arange(q) - 1) % q]
            own[1:] = rs_first[:-1]
            waits += [own, rs_first[:, (np.arange(q) + 1) % q]]
        parts.append((blk, first, waits, False, step + (q - 1 if reduce_scatter else 0)))
    cols = [_ring_part(group_a, blk, first, waits, red, at, npieces, poff, full) for blk, first, waits, red, at in parts]
    width = max(c[4].shape[1] for c in cols)
    src, dst, red, stp, pieces = (np.concatenate([c[k] for c in cols]) for k in (0, 1, 2, 3, 5))
    deps = np.concatenate([np.pad(c[4], ((0, 0), (0, width - c[4].shape[1])), constant_values=-1) for c in cols])
    n = src.size
    dep_ptr, dep_idx = csr_rows(deps)
    out = {"src": src, "dst": dst, "reduce": red.astype(bool), "step": stp, "dep_ptr": dep_ptr, "dep_idx": dep_idx,
           "piece_ptr": np.arange(n + 1, dtype=np.int64), "src_buf": np.full(n, code, dtype=np.int64),
           "dst_buf": np.full(n, code, dtype=np.int64), "piece": pieces}
    for column in out.values():
        column.flags.writeable = False
    return out


def _no_columns() -> dict[str, np.ndarray]:
    empty = np.zeros(0, dtype=np.int64)
    return {"src": empty, "dst": empty, "reduce": empty.astype(bool), "step": empty, "dep_ptr": np.zeros(1, np.int64),
            "dep_idx": empty, "piece_ptr": np.zeros(1, np.int64), "src_buf": empty, "dst_buf": empty, "src_off": empty,
            "dst_off": empty, "count": empty}


def _first_ids(npieces: np.ndarray) -> np.ndarray:
    """Id of each message's first chunk, messages numbered row by row."""
    flat = npieces.ravel()
    return (np.cumsum(flat) - flat).reshape(npieces.shape)


def _ring_part(group, blk, first, waits, reduce, step, npieces, poff, full):
    """One phase's columns (src, dst, reduce, step, dependency rows, piece index) from per-message tables."""
    q = group.size
    per = npieces[blk].ravel()
    b = blk.ravel()
    if per.min() == 1 and per.max() == 1:  # one chunk per message: messages are transfers
        msg, chunk = np.arange(per.size), 0
    else:
        msg = np.repeat(np.arange(per.size), per)
        chunk = np.arange(msg.size) - np.repeat(first.ravel() - first.ravel()[0], per)
        b = b[msg]
    s_of, i_of = np.divmod(msg, q)
    whole = full[b]
    rows = []
    for w in waits:
        w = w.ravel() if np.isscalar(chunk) else w.ravel()[msg]
        rows.append(np.where((w >= 0) & whole, w + chunk, -1))
    return (group[i_of], group[(i_of + 1) % q], np.full(msg.size, reduce), step + s_of, np.stack(rows, axis=1),
            poff[b] + chunk)


def _ring_phase(b: ScheduleBuilder, group: Sequence[int], segs: Sequence[Seg], chunks: int, buf: str, step: int,
                reduce_scatter: bool) -> int:
    """The ring's messages through the builder (dependencies inferred); the next free step."""
    for t in ring_transfers(group, segs, chunks, reduce_scatter, not reduce_scatter, buf, step):
        b.send(t.src, t.dst, t.pieces, t.reduce, t.step)
    return step + max(len(group) - 1, 0)


def ring_reduce_scatter(b: ScheduleBuilder, group: Sequence[int], segs: Sequence[Seg], chunks: int = 1,
                        buf: str = "out", step: int = 0) -> int:
    """Ring reduce-scatter phase: after q-1 steps group[i] holds segs[i] reduced over the group."""
    return _ring_phase(b, group, segs, chunks, buf, step, reduce_scatter=True)


def ring_allgather(b: ScheduleBuilder, group: Sequence[int], segs: Sequence[Seg], chunks: int = 1,
                   buf: str = "out", step: int = 0) -> int:
    """Ring allgather phase: group[i] starts with segs[i]; after q-1 steps everyone holds all of them."""
    return _ring_phase(b, group, segs, chunks, buf, step, reduce_scatter=False)


def ring_schedule(coll: Collective, reduce_scatter: bool, allgather: bool, chunks: int = 1) -> Schedule:
    """The whole-ring schedule around ranks 0..p-1 on 'out'."""
    segs = block_segs(coll.block_offsets)
    return ArraySchedule(coll, "ring", ring_columns(range(coll.ranks), segs, chunks, reduce_scatter, allgather))


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
