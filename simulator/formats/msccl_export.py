"""Writes any collsim Schedule as MSCCL algorithm XML that MSCCL's executor and collsim's importer both read.

Each gpu gets one threadblock per peer and channel it sends to, one per peer and channel it receives
from and one for local copies and reductions. Transfers that share a connection and a display step go
on separate channels (0, 1, ...), so the threadblocks do not serialize what the schedule runs in parallel.
Transfers are written in a topological order, so every
threadblock's steps follow the schedule's dependencies; a dependency becomes depid/deps when it involves
the same gpu (the first one on the step itself, the others on nop steps just before it, as the executor
requires), and the step waited for gets hasdep=1. The chunk is the largest element count that divides
every piece, buffer and offset, so the file works for any size that is a multiple of nchunksperloop
chunks.

In-place (the default when the schedule never touches 'in'), collsim's 'out' is MSCCL's whole buffer
('i' for reduce_scatter and scatter, 'o' otherwise). Out-of-place, 'in' is 'i' and 'out' is 'o', and each
gpu first copies its input into the output where collsim's 'out' starts with it (alltoall: nothing).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from math import gcd
from xml.sax.saxutils import quoteattr

from ..errors import CollsimError
from ..ops import SPECS
from ..schedule import Schedule
from .msccl_xml import PER_RANK_BASE, PROTOCOLS

# MSCCL executor limits (msccl_struct.h); files beyond them still import into collsim.
MAX_STEPS_PER_TB = 64
MAX_TBS_PER_CHANNEL = 32
MAX_COUNT = 72
MAX_OFFSET = 32767
BLOCK_OUTPUT = tuple(n for n, s in SPECS.items() if s.recv == "block")  # ops whose MSCCL output holds one rank's block
BLOCK_INPUT = tuple(n for n, s in SPECS.items() if s.send == "block")  # ops whose MSCCL input holds one rank's block
PER_RANK_OPS = tuple(n for n, s in SPECS.items() if s.total_size)  # buffers of ranks x equal blocks


@dataclass
class MscclExport:
    """The XML text and what it took to write it."""

    xml: str
    placement: str
    nchunksperloop: int
    chunk_elems: int
    threadblocks: int
    steps: int
    nops: int
    dropped_deps: int
    warnings: list[str] = field(default_factory=list)


@dataclass
class _Tb:
    id: int
    send: int = -1
    recv: int = -1
    chan: int = 0
    steps: list[dict] = field(default_factory=list)


class _Writer:
    """Builds threadblocks and steps for one schedule."""

    def __init__(self, schedule: Schedule, placement: str):
        self.s = schedule
        self.coll = coll = schedule.collective
        self.p = coll.ranks
        self.block = coll.count // self.p
        self.inplace = placement == "in-place"
        self.full = "i" if coll.op in BLOCK_OUTPUT else "o"
        self.c = self._chunk()
        self.tbs: list[dict[tuple, _Tb]] = [{} for _ in range(self.p)]
        self.last: dict[tuple[int, int], tuple[int, int]] = {}  # (transfer, rank) -> (tb, step)
        self.nops = self.dropped = 0

    def _chunk(self) -> int:
        coll, s = self.coll, self.s
        base = self.block if coll.op in PER_RANK_BASE else coll.count
        g = gcd(base, s.scratch_count)
        for r in range(self.p):
            g = gcd(g, coll.in_count[r])
            if coll.op in BLOCK_OUTPUT or coll.op in BLOCK_INPUT:
                g = gcd(g, r * self.block)
        for t in s.transfers:
            for piece in t.pieces:
                if piece.count:
                    g = gcd(gcd(g, piece.count), gcd(piece.src_off, piece.dst_off))
        return g

    def where(self, rank: int, buf: str, off: int, count: int) -> tuple[str, int]:
        """(MSCCL buffer, chunk offset) of a collsim region on a rank."""
        if buf == "scratch":
            return "s", off // self.c
        if self.inplace:
            if buf == "in":
                raise CollsimError(f"placement: {self.s.algorithm} reads its 'in' buffer, which an in-place MSCCL "
                                   f"algorithm does not have; expected placement out-of-place (or auto)")
            return self.full, off // self.c
        if buf == "in":
            return "i", off // self.c
        if self.coll.op in BLOCK_OUTPUT:
            lo = rank * self.block
            if not (lo <= off and off + count <= lo + self.block):
                raise CollsimError(
                    f"placement: {self.s.algorithm} uses out[{off}:{off + count}] on rank {rank}, outside the rank's own "
                    f"block, which an out-of-place MSCCL {self.coll.op} output does not hold; expected placement in-place")
            return "o", (off - lo) // self.c
        return "o", off // self.c

    def tb(self, rank: int, key: tuple) -> _Tb:
        table = self.tbs[rank]
        if key not in table:
            tb = _Tb(len(table))
            if key[0] == "send":
                tb.send, tb.chan = key[1], key[2]
            elif key[0] == "recv":
                tb.recv, tb.chan = key[1], key[2]
            table[key] = tb
        return table[key]

    def add(self, rank: int, tb: _Tb, kind: str, src: tuple[str, int], dst: tuple[str, int], cnt: int,
            waits: list[tuple[int, int]]) -> int:
        """Append a step (with nops for extra waits) and return its index."""
        best: dict[int, int] = {}
        for t_id, s_idx in waits:
            if t_id != tb.id:
                best[t_id] = max(best.get(t_id, -1), s_idx)
        deps = sorted(best.items())
        for t_id, s_idx in deps[1:]:
            tb.steps.append(self._step(len(tb.steps), "nop", ("i", -1), ("o", -1), 0, (t_id, s_idx)))
            self._mark(rank, t_id, s_idx)
            self.nops += 1
        tb.steps.append(self._step(len(tb.steps), kind, src, dst, cnt, deps[0] if deps else (-1, -1)))
        if deps:
            self._mark(rank, *deps[0])
        return len(tb.steps) - 1

    @staticmethod
    def _step(index: int, kind: str, src, dst, cnt: int, dep) -> dict:
        return {"s": index, "type": kind, "srcbuf": src[0], "srcoff": src[1], "dstbuf": dst[0], "dstoff": dst[1],
                "cnt": cnt, "depid": dep[0], "deps": dep[1], "hasdep": 0}

    def _mark(self, rank: int, tb_id: int, step: int) -> None:
        for tb in self.tbs[rank].values():
            if tb.id == tb_id:
                tb.steps[step]["hasdep"] = 1

    def waits(self, tid: int, rank: int) -> list[tuple[int, int]]:
        """Steps on `rank` that transfer `tid`'s side there must wait for."""
        out = []
        for d in self.s.transfers[tid].deps:
            dep = self.s.transfers[d]
            if rank in (dep.src, dep.dst) and (d, rank) in self.last:
                out.append(self.last[(d, rank)])
        return out

    def count_dropped(self, tid: int) -> None:
        """Dependencies on transfers that share no gpu with this one cannot be written in MSCCL."""
        t = self.s.transfers[tid]
        self.dropped += sum(1 for d in t.deps if not {t.src, t.dst} & {self.s.transfers[d].src, self.s.transfers[d].dst})

    def prologue(self) -> dict[int, tuple[int, int]]:
        """Out-of-place: copy the input to where collsim's 'out' starts with it; the last copy step per rank."""
        done = {}
        if self.inplace or not self.coll.spec.in_place:
            return done
        for r in range(self.p):
            for part in self.coll.spec.start(self.coll, r, "out"):
                lo, hi = part.off, part.off + part.count
                if self.coll.op in BLOCK_OUTPUT:
                    lo, hi = max(lo, r * self.block), min(hi, (r + 1) * self.block)
                if hi <= lo:
                    continue
                src_off = part.sources[0][1] + lo - part.off
                tb = self.tb(r, ("local",))
                step = self.add(r, tb, "cpy", ("i", src_off // self.c), self.where(r, "out", lo, hi - lo), (hi - lo) // self.c, [])
                done[r] = (tb.id, step)
        return done

    def run(self) -> None:
        start = self.prologue()
        first_use: set[tuple[int, tuple]] = set()

        def side_waits(tid: int, rank: int, key: tuple) -> list[tuple[int, int]]:
            w = self.waits(tid, rank)
            if rank in start and (rank, key) not in first_use and key != ("local",):
                w.append(start[rank])
            first_use.add((rank, key))
            return w

        lanes: dict[tuple[int, int, int], int] = {}
        for tid in self.s.topological_order():
            t = self.s.transfers[tid]
            pieces = [pc for pc in t.pieces if pc.count]
            if not pieces:
                continue
            self.count_dropped(tid)
            if t.local:
                tb = self.tb(t.src, ("local",))
                w = side_waits(tid, t.src, ("local",))
                for k, pc in enumerate(pieces):
                    step = self.add(t.src, tb, "re" if t.reduce else "cpy", self.where(t.src, pc.src_buf, pc.src_off, pc.count),
                                    self.where(t.dst, pc.dst_buf, pc.dst_off, pc.count), pc.count // self.c, w if k == 0 else [])
                self.last[(tid, t.src)] = (tb.id, step)
                continue
            # transfers of one display step on one connection go on separate channels, so they stay parallel
            chan = lanes[(t.src, t.dst, t.step)] = lanes.get((t.src, t.dst, t.step), -1) + 1
            skey, rkey = ("send", t.dst, chan), ("recv", t.src, chan)
            stb, rtb = self.tb(t.src, skey), self.tb(t.dst, rkey)
            sw, rw = side_waits(tid, t.src, skey), side_waits(tid, t.dst, rkey)
            for k, pc in enumerate(pieces):
                src = self.where(t.src, pc.src_buf, pc.src_off, pc.count)
                dst = self.where(t.dst, pc.dst_buf, pc.dst_off, pc.count)
                cnt = pc.count // self.c
                s_step = self.add(t.src, stb, "s", src, dst, cnt, sw if k == 0 else [])
                r_step = self.add(t.dst, rtb, "rrc" if t.reduce else "r", dst if t.reduce else src, dst, cnt, rw if k == 0 else [])
            self.last[(tid, t.src)] = (stb.id, s_step)
            self.last[(tid, t.dst)] = (rtb.id, r_step)


def export_msccl(schedule: Schedule, placement: str = "auto", proto: str = "Simple", name: str | None = None) -> MscclExport:
    """MSCCL XML for a schedule; placement 'in-place', 'out-of-place' or 'auto' (in-place unless 'in' is used).
    Join nodes are not MSCCL steps: they are taken out, their dependencies passed on (Schedule.without_joins)."""
    schedule = schedule.without_joins()
    coll = schedule.collective
    if coll.count == 0:
        raise CollsimError("size: 0 bytes cannot be cut into MSCCL chunks; expected a size of at least one element per rank")
    if proto not in PROTOCOLS:
        raise CollsimError(f"proto: {proto!r} is not an MSCCL protocol; expected one of {', '.join(PROTOCOLS)}")
    uses_in = any("in" in (pc.src_buf, pc.dst_buf) for t in schedule.transfers for pc in t.pieces if pc.count)
    if placement == "auto":
        placement = "out-of-place" if uses_in or not coll.spec.in_place else "in-place"
    if placement not in ("in-place", "out-of-place"):
        raise CollsimError(f"placement: {placement!r} is not a placement; expected auto, in-place or out-of-place")
    if placement == "in-place" and not coll.spec.in_place:
        raise CollsimError(f"placement: collsim's {coll.op} output starts empty, so it exports out-of-place only; "
                           "expected placement out-of-place (or auto)")
    if coll.op in PER_RANK_OPS and coll.count % coll.ranks:
        raise CollsimError(f"size: {coll.op} of {coll.count} elements does not split evenly over {coll.ranks} ranks, "
                           f"which MSCCL's equal per-rank blocks need; expected a multiple of {coll.ranks * coll.elem_size} bytes")
    w = _Writer(schedule, placement)
    w.run()
    return MscclExport(_xml(w, placement, proto, name or schedule.algorithm), placement, _nchunks(w), w.c,
                       sum(len(t) for t in w.tbs), sum(len(tb.steps) for t in w.tbs for tb in t.values()), w.nops, w.dropped,
                       _limits(w))


def _nchunks(w: _Writer) -> int:
    base = w.block if w.coll.op in PER_RANK_BASE else w.coll.count
    return base // w.c


def _chunks(w: _Writer, buf: str, rank: int) -> int:
    coll, c = w.coll, w.c
    if buf == "s":
        return w.s.scratch_count // c
    if w.inplace:
        if buf != w.full:
            return 0
        return coll.count // c
    if buf == "i":
        return coll.in_count[rank] // c
    return (w.block if coll.op in BLOCK_OUTPUT else coll.count) // c


def _xml(w: _Writer, placement: str, proto: str, name: str) -> str:
    coll = w.coll
    nchannels = 1 + max((tb.chan for t in w.tbs for tb in t.values()), default=0)
    attrs = {"name": name, "proto": proto, "nchannels": nchannels, "nchunksperloop": _nchunks(w), "ngpus": w.p,
             "coll": coll.spec.msccl, "inplace": int(placement == "in-place"),
             "outofplace": int(placement == "out-of-place"), "minBytes": 0, "maxBytes": 0, "redop": coll.redop}
    if coll.spec.rooted:
        attrs["root"] = coll.root
    lines = [f"<algo {_attrs(attrs)}>"]
    for r in range(w.p):
        lines.append(f"  <gpu id=\"{r}\" i_chunks=\"{_chunks(w, 'i', r)}\" o_chunks=\"{_chunks(w, 'o', r)}\" "
                     f"s_chunks=\"{_chunks(w, 's', r)}\">")
        for tb in sorted(w.tbs[r].values(), key=lambda t: t.id):
            lines.append(f"    <tb id=\"{tb.id}\" send=\"{tb.send}\" recv=\"{tb.recv}\" chan=\"{tb.chan}\">")
            lines.extend(f"      <step {_attrs(st)}/>" for st in tb.steps)
            lines.append("    </tb>")
        lines.append("  </gpu>")
    lines.append("</algo>")
    return "\n".join(lines) + "\n"


def _attrs(values: dict) -> str:
    return " ".join(f"{k}={quoteattr(str(v))}" for k, v in values.items())


def _limits(w: _Writer) -> list[str]:
    """Where the file exceeds what MSCCL's executor accepts (collsim reads it regardless)."""
    out = []
    most_steps = max((len(tb.steps) for t in w.tbs for tb in t.values()), default=0)
    if most_steps > MAX_STEPS_PER_TB:
        out.append(f"a threadblock has {most_steps} steps; MSCCL's executor allows {MAX_STEPS_PER_TB}")
    per_channel = Counter((r, tb.chan) for r, t in enumerate(w.tbs) for tb in t.values())
    most_tbs = max(per_channel.values(), default=0)
    if most_tbs > MAX_TBS_PER_CHANNEL:
        out.append(f"a gpu has {most_tbs} threadblocks on one channel; MSCCL's executor allows {MAX_TBS_PER_CHANNEL}")
    steps = [st for t in w.tbs for tb in t.values() for st in tb.steps]
    if any(st["cnt"] > MAX_COUNT for st in steps):
        out.append(f"a step moves more than {MAX_COUNT} chunks; MSCCL's executor allows {MAX_COUNT}")
    if any(max(st["srcoff"], st["dstoff"]) > MAX_OFFSET for st in steps):
        out.append(f"a chunk offset exceeds {MAX_OFFSET}, which MSCCL's executor stores in 16 bits")
    return out
