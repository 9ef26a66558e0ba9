"""Algorithms as chunk programs: sends of chunk c from rank a to rank b, dependencies inferred, lowered once to arrays.

A chunk program reads like MSCCLang's: `x.copy(src, dst, chunk, step)` and `x.reduce(...)` move chunk `chunk` (a region
of `out`, at the same place on every rank) from `src` to `dst`, which copies it or reduces it into its own. Each call
is one op for many ranks at once: its arguments are numpy arrays (or scalars), one transfer per element. With
`chunks = k` every chunk is cut into k pipelined pieces (`phases.chunked`), so one element is k transfers.

Nothing says what waits for what: `lower` infers it from the data, as ScheduleBuilder does (simulator/schedule.py),
per (rank, piece): a read waits for the writes that made the version it reads (the copy that started it and the
reductions into it since); a copy waits for those and for every read of the version it replaces; a reduction waits for
the copy that started the version and its reads (reductions into one version commute). An empty chunk touches no
data and waits for nothing. Transfers are numbered in program order: op by op, element by element, piece by piece.

`chunk_schedule` lowers a program once per shape (rank count, pieces per chunk, empty chunks, the program's own
arguments; functools.lru_cache), then fills in the pieces' offsets and counts for the size asked: a sweep over sizes
builds the dependency arrays once. The result is the ArraySchedule the engine runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache

import numpy as np

from ..collective import Collective
from ..schedule import BUFFERS, ArraySchedule, csr_rows
from .phases import Seg, chunked

Program = Callable[..., None]  # program(x: Chunks, *args) writes its ops into x


class Chunks:
    """The ops of one chunk program over `ranks` ranks and chunks of `npieces[c]` pieces (`full[c]`: not empty)."""

    def __init__(self, ranks: int, npieces: Sequence[int], full: Sequence[bool]):
        self.ranks = ranks
        self.rank = np.arange(ranks, dtype=np.int64)
        self.npieces = np.asarray(npieces, dtype=np.int64)
        self.full = np.asarray(full, dtype=bool)
        self.ops: list[tuple[np.ndarray, np.ndarray, np.ndarray, bool, np.ndarray]] = []

    def send(self, src, dst, chunk, step=0, reduce: bool = False) -> None:
        """dst receives chunk `chunk` from src and copies it into place, or reduces it into its own if `reduce` (one
        transfer per element of the broadcast arrays, per piece); `step` is the display step."""
        arrays = np.broadcast_arrays(*(np.asarray(a, dtype=np.int64) for a in (src, dst, chunk, step)))
        src, dst, chunk, step = (a.ravel() for a in arrays)
        self.ops.append((src, dst, chunk, reduce, step))

    def copy(self, src, dst, chunk, step=0) -> None:
        self.send(src, dst, chunk, step)

    def reduce(self, src, dst, chunk, step=0) -> None:
        self.send(src, dst, chunk, step, reduce=True)


def rings(x: Chunks, orders, owned, reduce_scatter: bool, allgather: bool, step: int = 0) -> int:
    """Rings over the rank orders in the rows of `orders`, advancing together (each step, ring after ring). Member i of
    ring k ends owning chunk owned[k][i] reduced over the ring (reduce-scatter), then every member gets every owned
    chunk (allgather); each step member i sends to member i+1. Returns the next free step."""
    orders, owned = np.atleast_2d(orders), np.atleast_2d(owned)
    q = orders.shape[1]
    i = np.arange(q)
    phases = [True] * (q - 1) * reduce_scatter + [False] * (q - 1) * allgather
    nexts = np.roll(orders, -1, axis=1)
    for s, rs in enumerate(phases):
        for order, nxt, own in zip(orders, nexts, owned):
            x.send(order, nxt, own[(i - s % (q - 1) - rs) % q], step + s, reduce=rs)
    return step + len(phases)


def chunk_schedule(coll: Collective, algorithm: str, program: Program, segs: Sequence[Seg], *args, chunks: int = 1,
                   params: dict | None = None) -> ArraySchedule:
    """The ArraySchedule of `program(x, *args)` over chunks `segs` of `out` ((offset, count) each), `chunks` pieces each.
    `args` must be hashable: the lowered program is cached on them and the shape of the pieces."""
    cuts = [chunked(seg, chunks) for seg in segs]
    off = np.array([o for c in cuts for o, _ in c], dtype=np.int64)
    count = np.array([n for c in cuts for _, n in c], dtype=np.int64)
    shape = (tuple(len(c) for c in cuts), tuple(seg[1] > 0 for seg in segs))
    lowered = lower(program, coll.ranks, *shape, *args)
    columns = {k: v for k, v in lowered.items() if k != "piece"}
    piece = lowered["piece"]
    return ArraySchedule(coll, algorithm, {**columns, "src_off": off[piece], "dst_off": off[piece], "count": count[piece]},
                         params)


@lru_cache(maxsize=4)
def lower(program: Program, ranks: int, npieces: tuple[int, ...], full: tuple[bool, ...], *args) -> dict[str, np.ndarray]:
    """The program's transfers as columns (read-only, shared by every size with this shape), each transfer's piece
    (an index into the chunks' concatenated pieces) in `piece`."""
    x = Chunks(ranks, npieces, full)
    program(x, *args)
    t = _transfers(x)
    n = t["src"].size
    if n >= 2**31:
        raise ValueError(f"chunk program: {n} transfers; at most 2**31 - 1")
    pieces = int(x.npieces.sum())
    versions, tables = _Versions(ranks * pieces), _Tables()
    read, write = t["src"] * pieces + t["piece"], t["dst"] * pieces + t["piece"]  # keys: (rank, piece)
    live = x.full[t["chunk"]]
    all_live = bool(live.all())
    for a, b, reduce in zip(t["bounds"][:-1].tolist(), t["bounds"][1:].tolist(), t["reduce_op"]):
        ids, whole = np.arange(a, b), all_live or live[a:b].all()
        on = slice(None) if whole else live[a:b]
        deps = versions.access(ids[on], read[a:b][on], write[a:b][on], reduce)
        deps = deps[:, (deps >= 0).any(axis=0)]  # columns of nothing only widen the sort
        if not whole:
            deps = _rows_at(deps, live[a:b])
        tables.add(deps)
    out = {**{k: t[k] for k in ("src", "dst", "reduce", "step", "piece")}, **tables.csr()}
    code = BUFFERS.index("out")
    out.update(piece_ptr=np.arange(n + 1, dtype=np.int64), src_buf=np.full(n, code, dtype=np.int64),
               dst_buf=np.full(n, code, dtype=np.int64))
    for column in out.values():
        column.flags.writeable = False
    return out


def _transfers(x: Chunks) -> dict:
    """Every op's elements cut into their chunks' pieces, in program order: src, dst, chunk, piece, reduce, step, and
    the transfer ids where each op starts (`bounds`)."""
    sizes = [op[0].size for op in x.ops]
    cat = [np.concatenate([op[k] for op in x.ops]) if x.ops else np.zeros(0, np.int64) for k in (0, 1, 2, 4)]
    reduce = np.repeat([op[3] for op in x.ops], sizes).astype(bool)
    src, dst, chunk, step = cat
    bounds = np.concatenate(([0], np.cumsum(sizes, dtype=np.int64)))
    piece = chunk  # one piece per chunk: piece c is chunk c
    if x.npieces.size and x.npieces.max() > 1:
        first = np.concatenate(([0], np.cumsum(x.npieces)))
        per = x.npieces[chunk]
        e = np.repeat(np.arange(per.size), per)
        piece = first[chunk][e] + np.arange(e.size) - np.repeat(np.cumsum(per) - per, per)
        src, dst, chunk, step, reduce = src[e], dst[e], chunk[e], step[e], reduce[e]
        bounds = np.concatenate(([0], np.cumsum(per)))[bounds]
    return {"src": src, "dst": dst, "chunk": chunk, "piece": piece, "reduce": reduce, "step": step, "bounds": bounds,
            "reduce_op": [op[3] for op in x.ops]}


def _rows_at(rows: np.ndarray, live: np.ndarray) -> np.ndarray:
    """`rows` placed at the True entries of `live`, rows of -1 elsewhere."""
    out = np.full((live.size, rows.shape[1]), -1, dtype=rows.dtype)
    out[live] = rows
    return out


class _Tables:
    """Dependency rows (-1: none) collected op by op, turned into CSR a batch at a time (a batch's rows sorted once)."""

    BATCH = 1 << 20

    def __init__(self) -> None:
        self.batch: list[np.ndarray] = []
        self.rows = 0
        self.ptr, self.idx, self.edges = [np.zeros(1, np.int64)], [], 0

    def add(self, rows: np.ndarray) -> None:
        self.batch.append(rows)
        self.rows += rows.shape[0]
        if self.rows >= self.BATCH:
            self._flush()

    def _flush(self) -> None:
        if not self.batch:
            return
        table = np.full((self.rows, max(r.shape[1] for r in self.batch)), -1, dtype=np.int64)
        at = 0
        for r in self.batch:
            table[at:at + r.shape[0], :r.shape[1]] = r
            at += r.shape[0]
        ptr, idx = csr_rows(table)
        self.ptr.append(ptr[1:] + self.edges)
        self.idx.append(idx)
        self.edges += idx.size
        self.batch, self.rows = [], 0

    def csr(self) -> dict[str, np.ndarray]:
        self._flush()
        return {"dep_ptr": np.concatenate(self.ptr), "dep_idx": np.concatenate(self.idx or [np.zeros(0, np.int64)])}


class _Versions:
    """Per key (rank, piece): the copy that made its current version, the reductions into it since, and its readers."""

    def __init__(self, keys: int):
        self.base = np.full(keys, -1, dtype=np.int32)
        self.reduced = _Lists(keys)
        self.readers = _Lists(keys)
        self.mark = np.full(keys, -1, dtype=np.int32)  # the first transfer of the last op that read each key

    def access(self, ids: np.ndarray, read: np.ndarray, write: np.ndarray, reduce: bool) -> np.ndarray:
        """Transfers `ids` read key `read` and copy or reduce into key `write`; each one's dependencies (-1: none)."""
        if not ids.size:
            return np.zeros((0, 0), dtype=np.int32)
        self.mark[read] = ids[0]
        if ((self.mark[write] == ids[0]) & (read != write)).any() or (not reduce and not _unique(self.readers, write)):
            raise ValueError("chunk program: an op reads what another transfer of it writes, or copies twice into one "
                             "place; split it into two ops")
        on_read = [self.base[read][:, None], self.reduced.rows(read)]
        self.readers.append(read, ids)
        readers = self.readers.rows(write)
        local = read == write
        if local.any():  # a rank's own copy or reduction: it does not wait for itself
            readers = np.where(readers == ids[:, None], -1, readers)
        on_write = [readers, self.base[write][:, None]]
        if reduce:
            self.reduced.append(write, ids)
        else:
            on_write.append(self.reduced.rows(write))
            self.base[write] = ids
            self.reduced.clear(write)
            self.readers.clear(write)
        return np.concatenate(on_read + on_write, axis=1)


def _unique(lists: _Lists, keys: np.ndarray) -> bool:
    """True if no key repeats (`lists.stamp` as scratch)."""
    at = np.arange(keys.size, dtype=np.int32)
    lists.stamp[keys] = at
    return bool((lists.stamp[keys] == at).all())


class _Lists:
    """A short list of ids per key, as a table padded with -1 (widened when a list outgrows it)."""

    def __init__(self, keys: int):
        self.table = np.full((keys, 1), -1, dtype=np.int32)  # ids and counts below 2**31 (`lower` checks)
        self.size = np.zeros(keys, dtype=np.int32)
        self.stamp = np.zeros(keys, dtype=np.int32)

    def rows(self, keys: np.ndarray) -> np.ndarray:
        return self.table[keys]

    def append(self, keys: np.ndarray, ids: np.ndarray) -> None:
        """Append ids[j] to the list of keys[j] (keys may repeat: then in order)."""
        if _unique(self, keys):
            slot, firsts, runs = self.size[keys], keys, 1
        else:
            order = np.argsort(keys, kind="stable")
            keys, ids = keys[order], ids[order]
            start = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
            runs = np.diff(np.concatenate((start, [keys.size])))
            slot = self.size[keys] + np.arange(keys.size) - np.repeat(start, runs)
            firsts = keys[start]
        top = int(slot.max())
        if top >= self.table.shape[1]:
            self.table = np.pad(self.table, ((0, 0), (0, top + 1 - self.table.shape[1])), constant_values=-1)
        self.table[keys, slot] = ids
        self.size[firsts] += runs

    def clear(self, keys: np.ndarray) -> None:
        self.table[keys] = -1
        self.size[keys] = 0
