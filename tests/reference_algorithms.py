"""Reference forms of the algorithms, for tests only: the same messages as the production builders, sent through
ScheduleBuilder, which infers every dependency from the data (the production forms write theirs out as arrays).

The equivalence tests check that each production builder makes exactly these transfers and dependencies, and the
same per-transfer engine times (tests/same_times.py). Moved here from simulator/algorithms/ (issue 22): the package
keeps one form of each algorithm.
"""

from __future__ import annotations

from collections.abc import Sequence

from simulator.algorithms.pat import _messages
from simulator.algorithms.phases import Seg, alltoall_offsets, block_segs, chunked, fold, pieces_of, relative_group, ring_phase
from simulator.algorithms.recursive import _survivor_segs
from simulator.collective import Collective, offsets_of, split_counts
from simulator.schedule import Piece, Schedule, ScheduleBuilder, Transfer, new_transfer, region


# ---- from simulator/algorithms/phases.py ----------------------------------------------------------------------
def binomial_broadcast(b: ScheduleBuilder, group: Sequence[int], segs: Sequence[Seg], buf: str = "out",
                       step: int = 0) -> int:
    """Binomial tree from group[0]: farthest subtree first; ceil(lg q) rounds of the whole region."""
    q = len(group)
    mask = 1 << max(q - 1, 0).bit_length() >> 1 if q > 1 else 0
    rounds = 0
    while mask:
        for v in range(0, q, 2 * mask):
            if v + mask < q:
                b.send(group[v], group[v + mask], pieces_of(segs, buf), step=step + rounds)
        mask >>= 1
        rounds += 1
    return step + rounds


def binomial_reduce(b: ScheduleBuilder, group: Sequence[int], segs: Sequence[Seg], buf: str = "out",
                    step: int = 0) -> int:
    """Binomial tree reduction to group[0]: children reduce into their parents, nearest first."""
    q, mask, rounds = len(group), 1, 0
    while mask < q:
        for v in range(mask, q, 2 * mask):
            b.send(group[v], group[v - mask], pieces_of(segs, buf), reduce=True, step=step + rounds)
        mask <<= 1
        rounds += 1
    return step + rounds


def binomial_gather(b: ScheduleBuilder, group: Sequence[int], segs: Sequence[Seg], buf: str = "out",
                    step: int = 0) -> int:
    """Binomial gather to group[0]: member v forwards segs[v:v+lowbit(v)] (what its subtree holds) to v - lowbit(v)."""
    q, mask, rounds = len(group), 1, 0
    while mask < q:
        for v in range(mask, q, 2 * mask):
            b.send(group[v], group[v - mask], pieces_of(segs[v:min(v + mask, q)], buf), step=step + rounds)
        mask <<= 1
        rounds += 1
    return step + rounds


def binomial_scatter(b: ScheduleBuilder, group: Sequence[int], segs: Sequence[Seg], buf: str = "out",
                     step: int = 0, dst_buf: str | None = None) -> int:
    """Binomial scatter from group[0]: member v ends with segs[v]; each send carries a whole subtree's regions."""
    q = len(group)
    mask = 1 << max(q - 1, 0).bit_length() >> 1 if q > 1 else 0
    rounds = 0
    while mask:
        for v in range(0, q, 2 * mask):
            if v + mask < q:
                b.send(group[v], group[v + mask], pieces_of(segs[v + mask:min(v + 2 * mask, q)], buf, dst_buf),
                       step=step + rounds)
        mask >>= 1
        rounds += 1
    return step + rounds


def halving_reduce_scatter(b: ScheduleBuilder, group: Sequence[int], segs: Sequence[Seg], buf: str = "out",
                           step: int = 0) -> int:
    """Recursive halving over a power-of-two group: distance q/2 first; member i ends with segs[i] reduced."""
    q = len(group)
    win = [(0, q)] * q
    d = q // 2
    while d >= 1:
        new = list(win)
        for i in range(q):
            lo, hi = win[i]
            mid = (lo + hi) // 2
            keep, give = ((mid, hi), (lo, mid)) if i & d else ((lo, mid), (mid, hi))
            b.send(group[i], group[i ^ d], pieces_of(segs[give[0]:give[1]], buf), reduce=True, step=step)
            new[i] = keep
        win = new
        d //= 2
        step += 1
    return step


def doubling_allgather(b: ScheduleBuilder, group: Sequence[int], segs: Sequence[Seg], buf: str = "out",
                       step: int = 0) -> int:
    """Recursive doubling over a power-of-two group: member i starts with segs[i]; distance 1 first."""
    q, d = len(group), 1
    while d < q:
        for i in range(q):
            lo = i & ~(d - 1)
            b.send(group[i], group[i ^ d], pieces_of(segs[lo:lo + d], buf), step=step)
        d <<= 1
        step += 1
    return step


def doubling_allreduce(b: ScheduleBuilder, group: Sequence[int], seg: Seg, step: int = 0) -> int:
    """Recursive doubling allreduce over a power-of-two group: swap whole vectors via scratch, reduce locally."""
    q, d = len(group), 1
    off, count = seg
    b.use_scratch(off + count)
    while d < q:
        for i in range(q):
            b.send(group[i], group[i ^ d], Piece("out", off, "scratch", off, count), step=step)
        for i in range(q):
            b.send(group[i], group[i], Piece("scratch", off, "out", off, count), reduce=True, step=step)
        d <<= 1
        step += 1
    return step



# ---- from simulator/algorithms/pat.py -------------------------------------------------------------------------
def pat_inferred(coll: Collective, aggregate: int | None, reduce_scatter: bool) -> Schedule:
    """PAT through the inferring builder: the reference `_pat`'s arrays are tested equal to."""
    b = ScheduleBuilder(coll, "pat", {"aggregate": aggregate})
    p, blocks = coll.ranks, block_segs(coll.block_offsets)
    steps = _messages(p, aggregate)
    if reduce_scatter:
        steps = steps[::-1]
    step = 0
    for d, messages in steps:
        for offsets in messages:
            for r in range(p):
                if reduce_scatter:  # r reduces the partial blocks of r + 2^d + j into r + 2^d
                    dst, segs = (r + (1 << d)) % p, [blocks[(r + (1 << d) + j) % p] for j in offsets]
                else:  # r forwards the blocks of r + j to r - 2^d
                    dst, segs = (r - (1 << d)) % p, [blocks[(r + j) % p] for j in offsets]
                b.send(r, dst, pieces_of(segs), reduce=reduce_scatter, step=step)
            step += 1
    return b.build()

# ---- from simulator/algorithms/hierarchical.py ----------------------------------------------------------------
def hierarchical_inferred(coll: Collective, g: int) -> Schedule:
    """The same messages through the inferring builder (dependencies found from the data; for the tests)."""
    p = coll.ranks
    b = ScheduleBuilder(coll, "hierarchical", {"group": g})
    groups = [list(range(i * g, (i + 1) * g)) for i in range(p // g)]
    segs = block_segs(offsets_of(split_counts(coll.count, g)))
    step = 0
    for members in groups:
        step = ring_phase(b, members, segs, True)
    across = [[members[j] for members in groups] for j in range(g)]
    sub = [block_segs(offsets_of(split_counts(segs[j][1], len(groups))) + segs[j][0]) for j in range(g)]
    for j in range(g):
        after_rs = ring_phase(b, across[j], sub[j], True, step=step)
    for j in range(g):
        after_ag = ring_phase(b, across[j], sub[j], False, step=after_rs)
    for members in groups:
        ring_phase(b, members, segs, False, step=after_ag)
    return b.build()

# ---- from simulator/algorithms/bruck.py -----------------------------------------------------------------------
def _merged(pieces: list[Piece]) -> list[Piece]:
    """Adjacent pieces (contiguous on both sides, same buffers) merged into one."""
    out: list[Piece] = []
    for pc in pieces:
        if pc.count == 0:
            continue
        last = out[-1] if out else None
        if (last and last.src_buf == pc.src_buf and last.dst_buf == pc.dst_buf
                and last.src_off + last.count == pc.src_off and last.dst_off + last.count == pc.dst_off):
            out[-1] = Piece(last.src_buf, last.src_off, last.dst_buf, last.dst_off, last.count + pc.count)
        else:
            out.append(pc)
    return out or [Piece("scratch", 0, "scratch", 0, 0)]


def alltoall_bruck_inferred(coll: Collective) -> Schedule:
    """Bruck's alltoall through the inferring builder: the reference `alltoall_bruck`'s arrays are tested equal to."""
    b = ScheduleBuilder(coll, "bruck")
    p = coll.ranks
    size = [coll.pair_count(0, i) for i in range(p)]  # slot i's size is the same on every rank
    start = [0] * p
    for i in range(1, p):
        start[i] = start[i - 1] + size[i - 1]
    b.use_scratch(2 * coll.count)
    in_off, out_off = alltoall_offsets(coll)
    where = ["in"] * p  # which copy holds slot i now: 'in', or scratch half 0 or 1

    def locate(rank: int, i: int, at: str) -> tuple[str, int]:
        if at == "in":
            return "in", int(in_off[rank, (rank + i) % p])
        return "scratch", start[i] + (coll.count if at == "1" else 0)

    for r in range(p):  # the own block never moves
        b.send(r, r, Piece("in", int(in_off[r, r]), "out", int(out_off[r, r]), size[0]))
    dist, step = 1, 0
    while dist < p:
        moving = [i for i in range(1, p) if i & dist]
        after = {i: "1" if where[i] == "0" else "0" for i in moving}
        for r in range(p):
            dst = (r + dist) % p
            pieces = []
            for i in moving:
                src_buf, src_off = locate(r, i, where[i])
                if i < 2 * dist:  # last hop: dst is the block's destination, sent by rank dst - i
                    dst_buf, dst_off = "out", int(out_off[dst, (dst - i) % p])
                else:
                    dst_buf, dst_off = locate(dst, i, after[i])
                pieces.append(Piece(src_buf, src_off, dst_buf, dst_off, size[i]))
            b.send(r, dst, _merged(pieces), step=step)
        for i in moving:
            where[i] = after[i]
        dist <<= 1
        step += 1
    return b.build()

# ---- from simulator/algorithms/tree.py ------------------------------------------------------------------------
def _member_blocks(coll: Collective) -> tuple[list[int], list]:
    """Ranks relative to the root and, per member, the block of the rank it is."""
    group, blocks = relative_group(coll.ranks, coll.root), block_segs(coll.block_offsets)
    return group, [blocks[r] for r in group]


def gather_binomial_inferred(coll: Collective) -> Schedule:
    """The binomial gather through the inferring builder: the reference `gather_binomial`'s arrays are tested
    equal to."""
    b = ScheduleBuilder(coll, "binomial")
    binomial_gather(b, *_member_blocks(coll))
    return b.build()


def scatter_binomial_inferred(coll: Collective) -> Schedule:
    """The binomial scatter through the inferring builder: the reference `scatter_binomial`'s arrays are tested
    equal to."""
    b = ScheduleBuilder(coll, "binomial")
    binomial_scatter(b, *_member_blocks(coll))
    return b.build()


def broadcast_scatter_allgather_inferred(coll: Collective) -> Schedule:
    """van de Geijn's broadcast through the inferring builder: the reference `broadcast_scatter_allgather`'s arrays
    are tested equal to."""
    b = ScheduleBuilder(coll, "scatter_allgather")
    group, segs = relative_group(coll.ranks, coll.root), block_segs(coll.block_offsets)
    step = binomial_scatter(b, group, segs)
    ring_phase(b, group, segs, False, step=step)
    return b.build()

# ---- from simulator/algorithms/recursive.py -------------------------------------------------------------------
def _fold_out(b: ScheduleBuilder, group: list[int], segs_of_extra, step: int) -> int:
    """Post step: each survivor hands the extra member its result (the regions `segs_of_extra(extra)`)."""
    _, pairs = fold(len(group))
    for extra, keep in pairs:
        b.send(group[keep], group[extra], pieces_of(segs_of_extra(extra)), step=step)
    return step + (1 if pairs else 0)


def allgather_recursive_doubling_inferred(coll: Collective) -> Schedule:
    """The recursive doubling allgather through the inferring builder: the reference `allgather_recursive_doubling`'s
    arrays are tested equal to."""
    b = ScheduleBuilder(coll, "recursive_doubling")
    p = coll.ranks
    group, blocks = list(range(p)), block_segs(coll.block_offsets)
    survivors, pairs = fold(p)
    for extra, keep in pairs:
        b.send(extra, keep, region("out", *blocks[extra]), step=0)
    step = 1 if pairs else 0
    step = doubling_allgather(b, [group[s] for s in survivors], _survivor_segs(coll, p), step=step)
    _fold_out(b, group, lambda extra: blocks[:extra] + blocks[extra + 1:], step)
    return b.build()

# ---- from simulator/algorithms/direct.py ----------------------------------------------------------------------
def direct_reduce_scatter(b: ScheduleBuilder, p: int, blocks, step: int = 0) -> int:
    """Every rank reduces its copy of block d straight into rank d (dependencies inferred: for composites)."""
    for s in range(1, p):
        for r in range(p):
            d = (r + s) % p
            b.reduce(r, d, "out", *blocks[d], step=step + s - 1)
    return step + max(p - 1, 0)


def direct_allgather(b: ScheduleBuilder, p: int, blocks, step: int = 0) -> int:
    """Every rank copies its block straight to every other rank (dependencies inferred: for composites)."""
    for s in range(1, p):
        for r in range(p):
            b.copy(r, (r + s) % p, "out", *blocks[r], step=step + s - 1)
    return step + max(p - 1, 0)



# ---- from simulator/algorithms/ring.py ----------------------------------------------------------------------
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

