"""Lowers a parsed MSCCL algorithm to a collsim Schedule by running its threadblocks symbolically.

Every threadblock runs its steps in order. A send meets the matching receive (same connection, same
position) and becomes one collsim transfer, placed in program order where the receive happens; the
ScheduleBuilder then infers data dependencies, and MSCCL's own ordering (previous step of the
threadblock, depid/deps) is added on top. Sends are rendezvous when both sides are ready; when no
threadblock can move otherwise, a send is issued into its connection's buffer, as MSCCL does, and if the
sender overwrites the data before the receiver takes it, the importer keeps a snapshot in extra scratch.

MSCCL buffers map to collsim's: scratch 's' -> 'scratch'. Out-of-place, 'i' -> 'in' and 'o' -> 'out';
in-place, both alias collsim's 'out' (which starts as nccl's in-place view of the input). MSCCL's
out-of-place output starts empty while collsim's 'out' starts with that view, so the importer tracks what
MSCCL has defined itself, refuses reads of undefined data, and drops local copies that only rebuild the
view collsim already holds (they are counted in `folded_copies`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..collective import Collective
from ..errors import CollsimError
from ..schedule import Piece, Schedule, ScheduleBuilder
from ..semantics import expected_outputs, make_inputs
from ..validate import initially_defined
from .msccl_xml import PER_RANK_BASE, MscclAlgo, Step, signal_step

PLACEMENTS = ("in-place", "out-of-place")
Key = tuple[int, int, int]  # (gpu, tb, step index)


@dataclass
class MscclImport:
    """The schedule an MSCCL file lowers to, with what was found on the way."""

    algo: MscclAlgo
    schedule: Schedule
    placement: str
    chunk_elems: int
    channels: list[int]
    folded_copies: int = 0
    snapshots: int = 0
    buffered_sends: int = 0
    merged_steps: int = 0
    unwritten: list[str] = field(default_factory=list)

    @property
    def network_transfers(self) -> int:
        """Transfers between gpus."""
        return sum(1 for t in self.schedule.transfers if not t.local)


@dataclass
class _Op:
    src: int
    dst: int
    pieces: list[Piece]
    reduce: bool
    ctrl: set[int]
    channel: int


DEFAULT_SIZE_CAP = 1 << 20


def default_size(algo: MscclAlgo, dtype_size: int) -> int:
    """The smallest byte size that splits into whole chunks and reaches the file's minBytes (capped at 1 MiB)."""
    unit = chunk_unit(algo) * dtype_size
    want = max(min(algo.min_bytes, DEFAULT_SIZE_CAP), unit)
    return -(-want // unit) * unit


def chunk_unit(algo: MscclAlgo) -> int:
    """Elements of the collective's count per element of chunk (count = chunk_unit x chunk elements)."""
    return algo.nchunksperloop * (algo.ngpus if algo.op in PER_RANK_BASE else 1)


def collective_for(algo: MscclAlgo, size: int | None, dtype: str = "float32") -> Collective:
    """The collsim Collective an import runs on; the size must cut into whole chunks."""
    probe = Collective(algo.op, algo.ngpus, 0, dtype, algo.root, algo.redop)
    nbytes = default_size(algo, probe.elem_size) if size is None else size
    coll = Collective(algo.op, algo.ngpus, nbytes, dtype, algo.root, algo.redop)
    unit = chunk_unit(algo)
    if coll.count == 0 or coll.count % unit:
        raise CollsimError(
            f"size: {nbytes} bytes is {coll.count} {coll.dtype} elements, which MSCCL cannot cut into {algo.nchunksperloop} "
            f"equal chunks{' per rank' if algo.op in PER_RANK_BASE else ''}; expected a positive multiple of "
            f"{unit * coll.elem_size} bytes")
    return coll


def import_msccl(algo: MscclAlgo, size: int | None = None, dtype: str = "float32", placement: str | None = None) -> MscclImport:
    """Lower the algorithm to a Schedule for one placement (default: out-of-place if the file supports it)."""
    placement = placement or algo.placements[0]
    if placement not in PLACEMENTS:
        raise CollsimError(f"placement: {placement!r} is not a placement; expected one of {', '.join(PLACEMENTS)}")
    if placement not in algo.placements:
        raise CollsimError(f"placement: {algo.source} declares {' and '.join(algo.placements)} only "
                           f"(inplace={int(algo.inplace)} outofplace={int(algo.outofplace)}); expected one of those")
    coll = collective_for(algo, size, dtype)
    return _Lowering(algo, coll, placement).run()


class _Lowering:
    """One symbolic run of the threadblocks."""

    def __init__(self, algo: MscclAlgo, coll: Collective, placement: str):
        self.algo, self.coll, self.placement = algo, coll, placement
        self.inplace = placement == "in-place"
        self.p = coll.ranks
        base = coll.count // self.p if algo.op in PER_RANK_BASE else coll.count
        self.c = base // algo.nchunksperloop
        self.block = coll.count // self.p
        self.scratch_base = max(g.s_chunks for g in algo.gpus) * self.c
        self.temp_used = [0] * self.p
        self.ops: list[_Op | None] = []
        self.done: dict[Key, set[int]] = {}
        self.pos = [[0] * len(g.tbs) for g in algo.gpus]
        self.recv_done: set[Key] = set()
        self.step_ops: dict[Key, set[int]] = {}
        self.temps: dict[Key, tuple[str, int, int]] = {}
        self.issued: dict[Key, tuple[int, set[int], tuple[str, int, int]]] = {}
        self.slot_waits: dict[int, set[int]] = {}
        self.folded = self.snapshots = self.buffered = self.merged = 0
        sched = Schedule(coll, "msccl", [], {}, self.scratch_base)
        self.defined: dict[tuple[int, str], np.ndarray] = {}
        self.pristine: dict[int, np.ndarray] = {}
        self.last_write: dict[tuple[int, str], np.ndarray] = {}
        for r in range(self.p):
            for buf in ("in", "out"):
                arr = np.zeros(sched.buffer_size(r, buf), dtype=bool)
                for lo, hi in initially_defined(sched, r, buf):
                    arr[lo:hi] = True
                if buf == "out":
                    self.pristine[r] = arr.copy()
                    if not self.inplace:
                        arr[:] = False
                self.defined[(r, buf)] = arr
        self._pair()

    # --- matching sends with receives -------------------------------------------------------------------
    def _pair(self) -> None:
        algo = self.algo
        sends: dict[tuple[int, int, int], list[Key]] = {}
        recvs: dict[tuple[int, int, int], list[Key]] = {}
        for g in algo.gpus:
            for tb in g.tbs:
                for st in tb.steps:
                    if st.sends:
                        sends.setdefault((g.id, tb.send, tb.chan), []).append((g.id, tb.id, st.index))
                    if st.receives:
                        recvs.setdefault((tb.recv, g.id, tb.chan), []).append((g.id, tb.id, st.index))
        self.send_to: dict[Key, Key] = {}
        self.recv_from: dict[Key, Key] = {}
        for conn in sorted(set(sends) | set(recvs)):
            s_list, r_list = sends.get(conn, []), recvs.get(conn, [])
            src, dst, chan = conn
            for a, b in zip(s_list, r_list):
                sa, sb = self.step(a), self.step(b)
                if sa.cnt != sb.cnt:
                    raise CollsimError(
                        f"msccl: {algo.where(sb.line)}: this receive takes cnt={sb.cnt} chunks from gpu {src} on channel {chan}, "
                        f"but the matching send ({algo.where(sa.line)}) sends cnt={sa.cnt}; expected equal counts")
                self.send_to[a], self.recv_from[b] = b, a
            if len(r_list) > len(s_list):
                extra = self.step(r_list[len(s_list)])
                raise CollsimError(
                    f"msccl: {algo.where(extra.line)}: receive with no matching send: gpu {dst} receives {len(r_list)} times from "
                    f"gpu {src} on channel {chan}, but gpu {src} sends to gpu {dst} on channel {chan} only {len(s_list)} times")
            if len(s_list) > len(r_list):
                extra = self.step(s_list[len(r_list)])
                raise CollsimError(
                    f"msccl: {algo.where(extra.line)}: send with no matching receive: gpu {src} sends {len(s_list)} times to "
                    f"gpu {dst} on channel {chan}, but gpu {dst} receives from gpu {src} on channel {chan} only {len(r_list)} times")

    def step(self, key: Key) -> Step:
        g, t, i = key
        return self.algo.gpus[g].tbs[t].steps[i]

    def chan(self, key: Key) -> int:
        return self.algo.gpus[key[0]].tbs[key[1]].chan

    # --- buffers ----------------------------------------------------------------------------------------
    def loc(self, rank: int, buf: str, off: int, cnt: int) -> tuple[str, int, int]:
        """(collsim buffer, element offset, element count) of an MSCCL chunk range on a rank."""
        spec, c = self.coll.spec, self.c
        if buf == "s":
            return "scratch", off * c, cnt * c
        shift = 0
        if buf == "i" and spec.send == "block" and self.inplace:
            shift = rank * self.block
        if buf == "o" and spec.recv == "block":
            shift = rank * self.block
        target = "out" if (self.inplace or buf == "o") else "in"
        return target, shift + off * c, cnt * c

    def temp(self, rank: int, count: int) -> tuple[str, int, int]:
        """A fresh region of extra scratch on a rank."""
        off = self.scratch_base + self.temp_used[rank]
        self.temp_used[rank] += count
        return "scratch", off, count

    def _arr(self, table: dict, key: tuple[int, str], fill, dtype) -> np.ndarray:
        arr = table.get(key)
        size = self.scratch_base + max(self.temp_used) if key[1] == "scratch" else len(self.defined[(key[0], key[1])])
        if arr is None or len(arr) < size:
            new = np.full(size, fill, dtype=dtype)
            if arr is not None:
                new[:len(arr)] = arr
            table[key] = arr = new
        return arr

    def _require_defined(self, rank: int, region: tuple[str, int, int], key: Key, what: str) -> None:
        buf, off, cnt = region
        arr = self._arr(self.defined, (rank, buf), False, bool)
        if not arr[off:off + cnt].all():
            st = self.step(key)
            bad = off + int(np.argmin(arr[off:off + cnt]))
            start = "" if buf != "out" or self.inplace else " (an out-of-place output starts empty in MSCCL)"
            raise CollsimError(f"msccl: {self.algo.where(st.line)}: gpu {rank} {what} {buf}[{bad}] (chunk {bad // self.c}) "
                               f"before any step has put data there{start}")

    def emit(self, src: int, dst: int, s_region, d_region, reduce: bool, ctrl: set[int], key: Key, what: str) -> int | None:
        """Append one op (or fold a no-op copy); return its index, or None when folded."""
        self._require_defined(src, s_region, key, what)
        sbuf, soff, cnt = s_region
        dbuf, doff, _ = d_region
        if reduce:
            self._require_defined(dst, d_region, key, "reduces into")
        if (src == dst and not reduce and sbuf == "in" and dbuf == "out" and self.pristine[dst][doff:doff + cnt].all()
                and self._view_source(dst, doff) == soff):
            self.folded += 1
            self._arr(self.defined, (dst, "out"), False, bool)[doff:doff + cnt] = True
            return None
        idx = len(self.ops)
        self.ops.append(_Op(src, dst, [Piece(sbuf, soff, dbuf, doff, cnt)], reduce, set(ctrl), self.chan(key)))
        self._written(dst, d_region, idx)
        return idx

    def _written(self, rank: int, region: tuple[str, int, int], idx: int) -> None:
        buf, off, cnt = region
        self._arr(self.defined, (rank, buf), False, bool)[off:off + cnt] = True
        self._arr(self.last_write, (rank, buf), -1, np.int64)[off:off + cnt] = idx
        if buf == "out":
            self.pristine[rank][off:off + cnt] = False

    def _view_source(self, rank: int, out_off: int) -> int:
        """Where in 'in' collsim's initial 'out' element comes from."""
        return out_off - self.coll.spec.in_place_offset(self.coll, rank)

    # --- running threadblocks ---------------------------------------------------------------------------
    def pre(self, key: Key) -> set[int] | None:
        """Ops a step waits for (previous step of its tb, explicit dependency), or None when not yet runnable."""
        g, t, i = key
        if self.pos[g][t] != i:
            return None
        st = self.step(key)
        waits: set[int] = set(self.done[(g, t, i - 1)]) if i else set()
        if st.depid >= 0:
            target = (g, st.depid, signal_step(self.algo.gpus[g].tbs[st.depid], st.deps))
            if target not in self.done:
                return None
            waits |= self.done[target]
        return waits

    def finish(self, key: Key, ops: set[int]) -> None:
        self.done[key] = {o for o in ops if o is not None}
        self.pos[key[0]][key[1]] += 1

    def send_region(self, key: Key) -> tuple[str, int, int]:
        st = self.step(key)
        if st.type == "s":
            return self.loc(key[0], st.srcbuf, st.srcoff, st.cnt)
        if st.type == "rrs":
            return self.temps[key]
        return self.loc(key[0], st.dstbuf, st.dstoff, st.cnt)

    def ready_to_send(self, key: Key) -> set[int] | None:
        """What the send part of a step waits for, if it is at its send part now."""
        waits = self.pre(key)
        if waits is None or key in self.issued:
            return None
        st = self.step(key)
        if st.receives:
            if key not in self.recv_done:
                return None
            return waits | self.step_ops[key]
        return waits

    def ready_to_receive(self, key: Key) -> set[int] | None:
        waits = self.pre(key)
        if waits is None or key in self.recv_done:
            return None
        return waits

    def receive(self, rkey: Key, skey: Key, send_waits: set[int], source: tuple[str, int, int] | None = None) -> int:
        """Materialize the transfer skey -> rkey now; return its op index."""
        r_waits = self.ready_to_receive(rkey)
        st = self.step(rkey)
        g_dst, g_src = rkey[0], skey[0]
        source = source or self.send_region(skey)
        ops: set[int] = set()
        if st.type in ("r", "rcs"):
            target, reduce = self.loc(g_dst, st.dstbuf, st.dstoff, st.cnt), False
        else:
            local_src = self.loc(g_dst, st.srcbuf, st.srcoff, st.cnt)
            target = self.temp(g_dst, local_src[2]) if st.type == "rrs" else self.loc(g_dst, st.dstbuf, st.dstoff, st.cnt)
            if st.type == "rrs":
                self.temps[rkey] = target
            reduce = True
            if target != local_src:
                ops.add(self.emit(g_dst, g_dst, local_src, target, False, r_waits, rkey, "reads"))
        what = "sends" if self.step(skey).type == "s" else "forwards"
        tid = self.emit(g_src, g_dst, source, target, reduce, send_waits | r_waits | {o for o in ops if o is not None},
                        skey, what)
        ops.add(tid)
        self.step_ops[rkey] = {o for o in ops if o is not None}
        self.recv_done.add(rkey)
        if not st.sends:
            self.finish(rkey, self.step_ops[rkey])
        return tid

    def advance(self, g: int, t: int) -> bool:
        """Run the tb's current step (or the part of it that can run); True if something happened."""
        tb = self.algo.gpus[g].tbs[t]
        i = self.pos[g][t]
        if i >= len(tb.steps):
            return False
        key = (g, t, i)
        st = tb.steps[i]
        waits = self.pre(key)
        if waits is None:
            return False
        if st.type in ("cpy", "re"):
            src = self.loc(g, st.srcbuf, st.srcoff, st.cnt)
            dst = self.loc(g, st.dstbuf, st.dstoff, st.cnt)
            op = self.emit(g, g, src, dst, st.type == "re", waits, key, "copies" if st.type == "cpy" else "reduces")
            self.finish(key, {op} if op is not None else waits)
            return True
        if st.type == "nop":
            self.finish(key, waits)
            return True
        if st.receives and key not in self.recv_done:
            skey = self.recv_from[key]
            if skey in self.issued:
                self.receive(key, skey, *self._take_issued(skey))
                return True
            send_waits = self.ready_to_send(skey)
            if send_waits is None:
                return False
            self.rendezvous(skey, key, send_waits)
            return True
        # the send part
        rkey = self.send_to[key]
        if self.ready_to_receive(rkey) is None:
            return False
        self.rendezvous(key, rkey, self.ready_to_send(key))
        return True

    def rendezvous(self, skey: Key, rkey: Key, send_waits: set[int]) -> None:
        """Both sides are ready: one transfer, which also carries the plain send/receive pairs right behind it."""
        tid = self.receive(rkey, skey, send_waits)
        self.finish(skey, self.step_ops.get(skey, set()) | {tid})
        while (pair := self._next_pair(skey, rkey, tid)) is not None:
            skey, rkey = pair
            st = self.step(rkey)
            source, target = self.send_region(skey), self.loc(rkey[0], st.dstbuf, st.dstoff, st.cnt)
            self._require_defined(skey[0], source, skey, "sends")
            if st.type == "rrc":
                self._require_defined(rkey[0], target, rkey, "reduces into")
            self.ops[tid].pieces.append(Piece(source[0], source[1], target[0], target[1], target[2]))
            self._written(rkey[0], target, tid)
            self.finish(skey, {tid})
            self.step_ops[rkey] = {tid}
            self.recv_done.add(rkey)
            self.finish(rkey, {tid})
            self.merged += 1

    def _next_pair(self, skey: Key, rkey: Key, tid: int) -> tuple[Key, Key] | None:
        """The next send/receive pair when it can ride in the same message: plain 's' into 'r' (or in-place 'rrc')
        on both threadblocks' very next steps, nothing waiting for the steps in between, no waits of their own,
        and no overlap with what the message already writes."""
        s0, r0 = self.step(skey), self.step(rkey)
        if s0.type != "s" or r0.type not in ("r", "rrc") or s0.hasdep or r0.hasdep:
            return None
        nxt_s, nxt_r = (skey[0], skey[1], skey[2] + 1), (rkey[0], rkey[1], rkey[2] + 1)
        if self.send_to.get(nxt_s) != nxt_r:
            return None
        s1, r1 = self.step(nxt_s), self.step(nxt_r)
        if s1.type != "s" or r1.type != r0.type or s1.depid >= 0 or r1.depid >= 0:
            return None
        if r0.type == "rrc" and any((r.srcbuf, r.srcoff) != (r.dstbuf, r.dstoff) for r in (r0, r1)):
            return None
        buf, off, cnt = self.loc(nxt_r[0], r1.dstbuf, r1.dstoff, r1.cnt)
        if any(pc.dst_buf == buf and pc.dst_off < off + cnt and off < pc.dst_off + pc.count for pc in self.ops[tid].pieces):
            return None
        return nxt_s, nxt_r

    def _take_issued(self, skey: Key) -> tuple[set[int], tuple[str, int, int]]:
        """The waits and source of a buffered send, snapshotting its data if the sender wrote over it since."""
        slot, waits, region = self.issued.pop(skey)
        buf, off, cnt = region
        writes = self._arr(self.last_write, (skey[0], buf), -1, np.int64)[off:off + cnt]
        if cnt and writes.max() > slot:
            copy = self.temp(skey[0], cnt)
            self.ops[slot] = _Op(skey[0], skey[0], [Piece(buf, off, copy[0], copy[1], cnt)], False, set(waits), self.chan(skey))
            self.snapshots += 1
            self._arr(self.defined, (skey[0], "scratch"), False, bool)[copy[1]:copy[1] + cnt] = True
            return {slot}, copy
        return waits, region

    def issue_buffered(self) -> bool:
        """Let one blocked send go into its connection buffer; True if one could."""
        for g, gpu in enumerate(self.algo.gpus):
            for t, tb in enumerate(gpu.tbs):
                i = self.pos[g][t]
                if i >= len(tb.steps) or not tb.steps[i].sends:
                    continue
                key = (g, t, i)
                waits = self.ready_to_send(key)
                if waits is None:
                    continue
                region = self.send_region(key)
                self._require_defined(g, region, key, "sends" if tb.steps[i].type == "s" else "forwards")
                slot = len(self.ops)
                self.ops.append(None)
                self.issued[key] = (slot, waits, region)
                self.slot_waits[slot] = set(waits)
                self.buffered += 1
                self.finish(key, self.step_ops.get(key, set()) | waits | {slot})
                return True
        return False

    def run(self) -> MscclImport:
        gpus = self.algo.gpus
        if self.inplace and not self.coll.spec.in_place:
            for r in range(self.p):  # in-place alltoall: the input lives in the output buffer from the start
                n = self.coll.count
                self.ops.append(_Op(r, r, [Piece("in", 0, "out", 0, n)], False, set(), 0))
                self.defined[(r, "out")][:] = True
                self._arr(self.last_write, (r, "out"), -1, np.int64)[:] = len(self.ops) - 1
        total = sum(len(tb.steps) for g in gpus for tb in g.tbs)
        while sum(self.pos[g][t] for g in range(self.p) for t in range(len(gpus[g].tbs))) < total:
            progress = False
            for skey in list(self.issued):
                rkey = self.send_to[skey]
                if skey in self.issued and self.ready_to_receive(rkey) is not None:
                    self.receive(rkey, skey, *self._take_issued(skey))
                    progress = True
            for g in range(self.p):
                for t in range(len(gpus[g].tbs)):
                    progress |= self.advance(g, t)
            if not progress and not self.issue_buffered():
                raise CollsimError(self._deadlock())
        return self._build()

    def _deadlock(self) -> str:
        stuck = []
        for g, gpu in enumerate(self.algo.gpus):
            for t, tb in enumerate(gpu.tbs):
                i = self.pos[g][t]
                if i < len(tb.steps):
                    st = tb.steps[i]
                    if st.depid >= 0 and self.pre((g, t, i)) is None:
                        why = f"waits for tb {st.depid} step {st.deps}"
                    elif st.receives and (g, t, i) not in self.recv_done:
                        why = f"waits for a send from gpu {tb.recv} on channel {tb.chan}"
                    else:
                        why = f"waits for gpu {tb.send} to receive on channel {tb.chan}"
                    stuck.append(f"gpu {g} tb {t} step {i} ({self.algo.where(st.line)}, {st.type}) {why}")
        return (f"msccl: {self.algo.source}: the threadblocks deadlock: {len(stuck)} cannot go on, e.g. "
                + "; ".join(stuck[:4]))

    # --- the schedule -----------------------------------------------------------------------------------
    def _build(self) -> MscclImport:
        coll = self.coll
        b = ScheduleBuilder(coll, f"msccl:{self.algo.name}")
        b.use_scratch(self.scratch_base + max(self.temp_used))
        ids: dict[int, int] = {}
        channels = []
        for idx, op in enumerate(self.ops):
            if op is None:
                continue
            ids[idx] = b.send(op.src, op.dst, op.pieces, op.reduce)
            channels.append(op.channel)
        sched = b.build()
        transfers = []
        depth: list[int] = []
        for idx, op in enumerate(self.ops):
            if op is None:
                continue
            t = sched.transfers[ids[idx]]
            deps = set(t.deps)
            for c in op.ctrl:
                deps |= self._resolve(c, ids)
            deps.discard(t.id)
            step = 1 + max((depth[d] for d in deps), default=-1)
            depth.append(step)
            transfers.append(replace(t, deps=tuple(sorted(deps)), step=step))
        sched.transfers = transfers
        sched.params = {"format": "msccl", "name": self.algo.name, "proto": self.algo.proto, "placement": self.placement,
                        "nchunksperloop": self.algo.nchunksperloop, "nchannels": self.algo.nchannels, "chunk_elems": self.c}
        result = MscclImport(self.algo, sched, self.placement, self.c, channels, self.folded, self.snapshots, self.buffered,
                             self.merged)
        result.unwritten = self._unwritten()
        return result

    def _resolve(self, op: int, ids: dict[int, int]) -> set[int]:
        """Transfer ids a control dependency on op stands for: itself, or for an unused buffer slot what the slot waited for."""
        if op in ids:
            return {ids[op]}
        out: set[int] = set()
        for w in self.slot_waits.get(op, ()):
            out |= self._resolve(w, ids)
        return out

    def _unwritten(self) -> list[str]:
        """Result regions that MSCCL's own run never defines (collsim's pre-filled output would hide them)."""
        problems = []
        for rank, parts in expected_outputs(self.coll, make_inputs(self.coll)).items():
            arr = self.defined[(rank, "out")]
            for off, want in parts:
                hole = ~arr[off:off + len(want)]
                if hole.any():
                    bad = off + int(np.argmax(hole))
                    problems.append(f"gpu {rank}: out[{bad}] (chunk {bad // self.c}) is never written, but the result "
                                    f"of the {self.coll.op} must be there")
        return problems
