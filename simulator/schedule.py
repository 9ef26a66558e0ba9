"""The schedule IR: which rank sends which pieces of which buffer to whom, and what each waits for.

A schedule is a DAG of transfers. Each transfer moves one or more pieces (buffer, offset,
count in elements) from a sender to a receiver, who either copies them into place or reduces
them into what is there. A transfer with sender == receiver is a local copy or reduction.

Algorithms write transfers in program order through `ScheduleBuilder`, which infers the
dependencies from the data (read-after-write, write-after-read, write-after-write), the way
MSCCLang does; `validate` checks any schedule, however it was made.

Buffers per rank: 'in' (the input), 'out' (the full-size output, which starts as the in-place
view of the input, as nccl-tests' in-place mode lays it out) and 'scratch'.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .collective import Collective
from .errors import CollsimError
from .validate import topological_order as _topological_order
from .validate import validate as _validate

BUFFERS = ("in", "out", "scratch")


@dataclass(frozen=True, slots=True)
class Piece:
    """A run of `count` elements read at (src_buf, src_off) on the sender, written at (dst_buf, dst_off) on the receiver."""

    src_buf: str
    src_off: int
    dst_buf: str
    dst_off: int
    count: int


def region(buf: str, off: int, count: int) -> Piece:
    """A piece that lands at the same place it was read from."""
    off = int(off)
    return _new_piece(buf, off, buf, off, int(count))


@dataclass(frozen=True, slots=True)
class Transfer:
    """One message: src sends `pieces` to dst, who copies or reduces them, after the transfers in `deps` end."""

    id: int
    src: int
    dst: int
    pieces: tuple[Piece, ...]
    reduce: bool
    deps: tuple[int, ...]
    step: int = 0

    @property
    def count(self) -> int:
        """Elements carried."""
        return sum(p.count for p in self.pieces)

    @property
    def local(self) -> bool:
        """True for a copy or reduction inside one rank (no network)."""
        return self.src == self.dst


def _fast_constructor(cls):
    """Build instances of a frozen slotted dataclass by setting its slots directly (the same object, faster)."""
    names = list(cls.__slots__)
    args = ", ".join(f"v{i}" for i in range(len(names)))
    body = "".join(f"    s{i}(obj, v{i})\n" for i in range(len(names)))
    namespace = {"new": object.__new__, "cls": cls, **{f"s{i}": cls.__dict__[n].__set__ for i, n in enumerate(names)}}
    exec(f"def make({args}):\n    obj = new(cls)\n{body}    return obj\n", namespace)  # noqa: S102 (fixed text)
    return namespace["make"]


_new_piece = _fast_constructor(Piece)
new_transfer = _fast_constructor(Transfer)  # Transfer(...) without dataclass overhead


@dataclass
class Schedule:
    """An algorithm's plan for one collective: transfers forming a DAG, plus per-rank scratch size."""

    collective: Collective
    algorithm: str
    transfers: list[Transfer]
    params: dict = field(default_factory=dict)
    scratch_count: int = 0
    helpers: int = 0  # in-network reducers (a switch that reduces): ranks p..p+helpers-1, scratch only

    @property
    def participants(self) -> int:
        """The collective's ranks plus the helpers (switches that reduce or multicast, with no input or output)."""
        return self.collective.ranks + self.helpers

    def __len__(self) -> int:
        return len(self.transfers)

    def nbytes(self, transfer: Transfer) -> int:
        """Bytes a transfer carries."""
        return transfer.count * self.collective.elem_size

    @cached_property
    def arrays(self) -> dict[str, np.ndarray]:
        """Columns for fast consumers: src, dst, bytes, reduce, step, and deps as CSR (dep_ptr, dep_idx)."""
        ts = self.transfers
        n = len(ts)
        src, dst, count, reduce, step, ndeps = ([], [], [], [], [], [])
        flat: list[int] = []
        for t in ts:  # one pass over the objects, then numpy
            src.append(t.src)
            dst.append(t.dst)
            pieces = t.pieces
            count.append(pieces[0].count if len(pieces) == 1 else sum(p.count for p in pieces))
            reduce.append(t.reduce)
            step.append(t.step)
            d = t.deps
            ndeps.append(len(d))
            flat.extend(d)
        ptr = np.zeros(n + 1, dtype=np.int64)
        ptr[1:] = np.cumsum(np.array(ndeps, dtype=np.int64))
        return {
            "src": np.array(src, dtype=np.int64).reshape(n),
            "dst": np.array(dst, dtype=np.int64).reshape(n),
            "bytes": np.array(count, dtype=np.int64).reshape(n) * self.collective.elem_size,
            "reduce": np.array(reduce, dtype=bool).reshape(n),
            "step": np.array(step, dtype=np.int64).reshape(n),
            "dep_ptr": ptr,
            "dep_idx": np.array(flat, dtype=np.int64).reshape(int(ptr[-1])),
        }

    def network_transfers(self) -> list[Transfer]:
        """Transfers that cross between ranks."""
        return [t for t in self.transfers if not t.local]

    def sends_per_rank(self) -> np.ndarray:
        """Messages each rank sends over the network."""
        a = self.arrays
        remote = a["src"] != a["dst"]
        return np.bincount(a["src"][remote], minlength=self.collective.ranks)

    def bytes_sent_per_rank(self) -> np.ndarray:
        """Bytes each rank sends over the network."""
        a = self.arrays
        remote = a["src"] != a["dst"]
        return np.bincount(a["src"][remote], weights=a["bytes"][remote], minlength=self.collective.ranks).astype(np.int64)

    def bytes_received_per_rank(self) -> np.ndarray:
        """Bytes each rank receives over the network."""
        a = self.arrays
        remote = a["src"] != a["dst"]
        return np.bincount(a["dst"][remote], weights=a["bytes"][remote], minlength=self.collective.ranks).astype(np.int64)

    @property
    def num_steps(self) -> int:
        """Display steps (rounds) the schedule spans."""
        return 1 + max((t.step for t in self.transfers), default=-1)

    def buffer_size(self, rank: int, buf: str) -> int:
        """Elements in one rank's buffer (a helper has only 'scratch')."""
        if rank >= self.collective.ranks and buf in ("in", "out"):
            return 0
        if buf == "in":
            return self.collective.in_count[rank]
        if buf == "out":
            return self.collective.out_count
        if buf == "scratch":
            return self.scratch_count
        raise CollsimError(f"buffer: unknown buffer {buf!r}; expected one of {', '.join(BUFFERS)}")

    def topological_order(self) -> list[int]:
        """Transfer ids in an order that respects every dependency (raises on a cycle)."""
        return _topological_order(self)

    def validate(self) -> Schedule:
        """Raise CollsimError if the schedule is ill formed; return self otherwise."""
        _validate(self)
        return self

    def without_joins(self) -> Schedule:
        """The same schedule with its join nodes (simulator/algorithms/columns.py) taken out: ids renumbered, and a
        dependency on a join replaced by the join's own dependencies (for consumers that know nothing of joins, such as
        the MSCCL export). Itself when it has none."""
        join = self.arrays.get("join")
        if join is None or not join.any():
            return self
        ts = self.transfers
        new_id = (np.cumsum(~join) - 1).tolist()
        is_join = join.tolist()
        flat: dict[int, tuple[int, ...]] = {}

        def through(d: int) -> tuple[int, ...]:
            if not is_join[d]:
                return (new_id[d],)
            if d not in flat:
                flat[d] = tuple(x for e in ts[d].deps for x in through(e))
            return flat[d]

        kept = [new_transfer(new_id[t.id], t.src, t.dst, t.pieces, t.reduce,
                             tuple(sorted({x for d in t.deps for x in through(d)})), t.step)
                for t in ts if not is_join[t.id]]
        return Schedule(self.collective, self.algorithm, kept, dict(self.params), self.scratch_count)


class ArraySchedule(Schedule):
    """A schedule made as columns, for algorithms that build thousands of ranks' transfers at once.

    `columns` holds per transfer src, dst, reduce, step and the dependencies as CSR (dep_ptr, dep_idx, each row
    sorted), optionally `join` (join nodes: simulator/algorithms/columns.py), and per piece (CSR piece_ptr)
    src_buf / dst_buf (indices into BUFFERS), src_off, dst_off, count.
    The engine and the statistics read `arrays`; Transfer objects are made only when something reads `transfers`.
    """

    def __init__(self, collective: Collective, algorithm: str, columns: dict[str, np.ndarray], params: dict | None = None,
                 scratch_count: int = 0):
        self.collective = collective
        self.algorithm = algorithm
        self.params = dict(params or {})
        self.scratch_count = scratch_count
        self.columns = columns

    def __len__(self) -> int:
        return int(self.columns["src"].size)

    @cached_property
    def transfers(self) -> list[Transfer]:  # type: ignore[override]
        """The Transfer objects, made on first use."""
        c = self.columns
        pptr, deps = c["piece_ptr"].tolist(), c["dep_idx"].tolist()
        dptr = c["dep_ptr"].tolist()
        pieces = [_new_piece(BUFFERS[a], o, BUFFERS[b], q, n) for a, o, b, q, n in
                  zip(c["src_buf"].tolist(), c["src_off"].tolist(), c["dst_buf"].tolist(), c["dst_off"].tolist(),
                      c["count"].tolist())]
        return [new_transfer(t, s, d, tuple(pieces[pptr[t]:pptr[t + 1]]), r, tuple(deps[dptr[t]:dptr[t + 1]]), st)
                for t, (s, d, r, st) in enumerate(zip(c["src"].tolist(), c["dst"].tolist(), c["reduce"].tolist(),
                                                      c["step"].tolist()))]

    @cached_property
    def arrays(self) -> dict[str, np.ndarray]:
        c = self.columns
        n = len(self)
        if c["count"].size == n:  # one piece per transfer
            counts = c["count"]
        else:
            counts = np.zeros(n, dtype=np.int64)
            np.add.at(counts, np.repeat(np.arange(n), np.diff(c["piece_ptr"])), c["count"])
        out = {"src": c["src"], "dst": c["dst"], "bytes": counts * self.collective.elem_size, "reduce": c["reduce"],
               "step": c["step"], "dep_ptr": c["dep_ptr"], "dep_idx": c["dep_idx"]}
        if "join" in c:  # join nodes (simulator/algorithms/columns.py): zero-count local copies the engine passes through
            out["join"] = c["join"]
        return out

    @property
    def num_steps(self) -> int:
        return 1 + int(self.columns["step"].max(initial=-1))


def csr_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR (ptr, idx) of a table whose row t lists t's dependencies, -1 meaning none: each row sorted, repeats dropped."""
    rows = np.sort(rows, axis=1)
    keep = rows >= 0
    keep[:, 1:] &= rows[:, 1:] != rows[:, :-1]
    ptr = np.zeros(rows.shape[0] + 1, dtype=np.int64)
    ptr[1:] = np.cumsum(keep.sum(axis=1))
    return ptr, rows[keep].astype(np.int64)


class _RegionState:
    """Per (rank, buffer): intervals with the transfers a reader or a writer must wait for."""

    __slots__ = ("starts", "writers", "base", "readers")

    def __init__(self, size: int):
        self.starts = [0, size]
        self.writers: list[tuple[int, ...]] = [(), ()]
        self.base: list[tuple[int, ...]] = [(), ()]
        self.readers: list[list[int]] = [[], []]

    def _split(self, at: int) -> int:
        starts = self.starts
        i = bisect_left(starts, at)
        if i < len(starts) and starts[i] == at:
            return i
        if i >= len(starts):  # grows past the declared size (scratch used before declared)
            self.starts.append(at)
            self.writers.append(())
            self.base.append(())
            self.readers.append([])
            return len(self.starts) - 1
        self.starts.insert(i, at)
        self.writers.insert(i, self.writers[i - 1])
        self.base.insert(i, self.base[i - 1])
        self.readers.insert(i, list(self.readers[i - 1]))
        return i

    def span(self, lo: int, hi: int) -> range:
        starts = self.starts
        i0 = bisect_left(starts, lo)
        if i0 == len(starts) or starts[i0] != lo:
            i0 = self._split(lo)
        i1 = bisect_left(starts, hi, i0)
        if i1 == len(starts) or starts[i1] != hi:
            i1 = self._split(hi)
        return range(i0, i1)


class ScheduleBuilder:
    """Collects transfers in program order and infers their dependencies from the data they touch."""

    def __init__(self, collective: Collective, algorithm: str, params: dict | None = None):
        self.collective = collective
        self.algorithm = algorithm
        self.params = dict(params or {})
        self.scratch_count = 0
        self._transfers: list[Transfer] = []
        self._state: dict[tuple[int, str], _RegionState] = {}

    def _region(self, rank: int, buf: str) -> _RegionState:
        key = (rank, buf)
        state = self._state.get(key)
        if state is None:
            state = self._state[key] = _RegionState(0)
        return state

    def use_scratch(self, count: int) -> None:
        """Declare that every rank needs at least `count` scratch elements."""
        self.scratch_count = max(self.scratch_count, int(count))

    def send(self, src: int, dst: int, pieces: Piece | Iterable[Piece], reduce: bool = False, step: int = 0) -> int:
        """Add a transfer (pieces moved from src to dst, reduced at dst if `reduce`); return its id."""
        pieces = (pieces,) if isinstance(pieces, Piece) else tuple(pieces)
        transfers = self._transfers
        tid = len(transfers)
        deps: set[int] = set()
        state = self._state
        for p in pieces:
            count = p.count
            if count <= 0:
                continue
            st = state.get((src, p.src_buf)) or self._region(src, p.src_buf)
            writers, readers = st.writers, st.readers
            for i in st.span(p.src_off, p.src_off + count):
                w = writers[i]
                if w:
                    deps.update(w)
                readers[i].append(tid)
        for p in pieces:
            count = p.count
            if count <= 0:
                continue
            st = state.get((dst, p.dst_buf)) or self._region(dst, p.dst_buf)
            writers, readers, base = st.writers, st.readers, st.base
            for i in st.span(p.dst_off, p.dst_off + count):
                rs = readers[i]
                if rs:
                    deps.update(rs)
                if reduce:
                    b = base[i]
                    if b:
                        deps.update(b)
                    writers[i] = writers[i] + (tid,)
                else:
                    w = writers[i]
                    if w:
                        deps.update(w)
                    writers[i] = base[i] = (tid,)
                    readers[i] = []
        deps.discard(tid)
        transfers.append(new_transfer(tid, int(src), int(dst), pieces, bool(reduce),
                                       tuple(sorted(deps)) if len(deps) > 1 else tuple(deps), int(step)))
        return tid

    def copy(self, src: int, dst: int, buf: str, off: int, count: int, step: int = 0) -> int:
        """Send one region to the same place on dst, which copies it."""
        return self.send(src, dst, region(buf, off, count), False, step)

    def reduce(self, src: int, dst: int, buf: str, off: int, count: int, step: int = 0) -> int:
        """Send one region to the same place on dst, which reduces it into its own."""
        return self.send(src, dst, region(buf, off, count), True, step)

    def build(self) -> Schedule:
        """The finished schedule."""
        return Schedule(self.collective, self.algorithm, self._transfers, self.params, self.scratch_count)


def segments(offsets: Sequence[int], lo: int, hi: int) -> tuple[int, int]:
    """(offset, count) of blocks lo..hi-1 given block start offsets."""
    return int(offsets[lo]), int(offsets[hi] - offsets[lo])
