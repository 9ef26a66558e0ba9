"""The one schedule interpreter: runs transfers in dependency order on pluggable values.

`run(schedule, values)` fills every rank's buffers with the collective's start state (simulator/ops.py)
and applies each transfer once, in dependency order (earliest display step first). What an element
is depends on `values`:

- `Numbers`: numpy numbers (semantics: the schedule computes the collective);
- `Contributors`: the set of ranks whose data an element holds, as a bitmask (the step pictures);
- `Origins`: the (rank, chunk) contributions an element holds (narration: "rank 2 sends chunk 1,
  holding ranks 1-2, to rank 3, which adds it in").

`expected(coll, values)` evaluates the spec's end state with the same values, so a result can be
compared element by element whatever the values are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .ops import Part

if TYPE_CHECKING:
    from .collective import Collective
    from .schedule import Schedule, Transfer

BUFFERS = ("in", "out", "scratch")
State = list[dict[str, Any]]


class Values(Protocol):
    """What an element is: how to make buffers, read inputs, and copy or reduce a region."""

    def empty(self, rank: int, buf: str, size: int) -> Any:
        """A buffer of `size` elements holding nothing valid yet."""

    def load(self, rank: int, off: int, count: int) -> Any:
        """Elements [off, off + count) of `rank`'s input, as they are before the collective."""

    def take(self, data: Any, off: int, count: int) -> Any:
        """A snapshot of data[off:off + count] (a message's payload)."""

    def copy(self, data: Any, off: int, payload: Any) -> None:
        """data[off:...] = payload."""

    def reduce(self, data: Any, off: int, payload: Any) -> None:
        """data[off:...] = data[off:...] (+) payload."""


def fill(values: Values, data: Any, off: int, part: Part) -> None:
    """Write the value a spec `Part` defines (its first source, reduced with the others) at data[off:]."""
    for k, (rank, src_off) in enumerate(part.sources):
        payload = values.load(rank, src_off, part.count)
        (values.reduce if k else values.copy)(data, off, payload)


def initial_state(schedule: Schedule, values: Values) -> State:
    """Every rank's buffers as the collective's spec says they start."""
    coll = schedule.collective
    state = []
    for rank in range(coll.ranks + getattr(schedule, "helpers", 0)):  # helpers (switches) start with nothing
        bufs = {}
        for buf in BUFFERS:
            data = bufs[buf] = values.empty(rank, buf, schedule.buffer_size(rank, buf))
            for part in coll.spec.start(coll, rank, buf) if rank < coll.ranks else ():
                fill(values, data, part.off, part)
        state.append(bufs)
    return state


def expected(coll: Collective, values: Values) -> dict[int, list[tuple[Part, Any]]]:
    """Per rank that must hold a result: each result region of 'out' (a spec Part) with its values."""
    result: dict[int, list[tuple[Part, Any]]] = {}
    for rank in coll.spec.result_ranks(coll):
        result[rank] = []
        for part in coll.spec.result(coll, rank):
            data = values.empty(rank, "out", part.count)
            fill(values, data, 0, part)
            result[rank].append((part, data))
    return result


def dependency_order(schedule: Schedule) -> list[int]:
    """Transfer ids in dependency order, by display step where the steps agree with the dependencies."""
    order = schedule.topological_order()
    if not order:
        return order
    a = schedule.arrays
    step, ptr, idx = a["step"], a["dep_ptr"], a["dep_idx"]
    owner = np.repeat(np.arange(len(step)), np.diff(ptr))
    if np.all(step[idx] <= step[owner]):  # then a stable sort by step keeps every dependency first
        arr = np.asarray(order, dtype=np.int64)
        order = arr[np.argsort(step[arr], kind="stable")].tolist()
    return order


StepHook = Callable[[int, list, State], None]
TransferHook = Callable[["Transfer", list], None]


def run(schedule: Schedule, values: Values, after_step: StepHook | None = None,
        on_transfer: TransferHook | None = None) -> State:
    """Apply every transfer once in dependency order; return each rank's buffers ('in', 'out', 'scratch').

    `after_step(step, transfers, state)` is called after each run of transfers of one display step;
    `on_transfer(transfer, payload)` with each transfer and what it carries (one snapshot per piece).
    """
    state = initial_state(schedule, values)
    ts = schedule.transfers
    take, copy, reduce = values.take, values.copy, values.reduce
    current, moved = None, []
    for i in dependency_order(schedule):
        t = ts[i]
        if after_step is not None and t.step != current:
            if current is not None:
                after_step(current, moved, state)
            current, moved = t.step, []
        src, dst = state[t.src], state[t.dst]
        payload = [take(src[p.src_buf], p.src_off, p.count) for p in t.pieces]
        if on_transfer is not None:
            on_transfer(t, payload)
        apply = reduce if t.reduce else copy
        for p, data in zip(t.pieces, payload):
            apply(dst[p.dst_buf], p.dst_off, data)
        moved.append(t)
    if after_step is not None and current is not None:
        after_step(current, moved, state)
    return state


class _Arrays:
    """Values held in numpy arrays: snapshots are copies, a copy is an assignment."""

    def take(self, data: np.ndarray, off: int, count: int) -> np.ndarray:
        return data[off:off + count].copy()

    def copy(self, data: np.ndarray, off: int, payload: np.ndarray) -> None:
        data[off:off + len(payload)] = payload


class Numbers(_Arrays):
    """Numbers: each rank's input array, reduced with a numpy ufunc; empty buffers hold garbage (NaN for floats)."""

    def __init__(self, inputs: list[np.ndarray], reducer: np.ufunc, seed: int = 12345):
        self.inputs, self.reducer = inputs, reducer
        self.dtype = inputs[0].dtype if inputs else np.dtype("float64")
        self.rng = np.random.default_rng(seed)

    def empty(self, rank: int, buf: str, size: int) -> np.ndarray:
        if self.dtype.kind == "f":
            return np.full(size, np.nan, dtype=self.dtype)
        info = np.iinfo(self.dtype)
        return self.rng.integers(info.min, info.max, size=size, endpoint=True, dtype=self.dtype)

    def load(self, rank: int, off: int, count: int) -> np.ndarray:
        return self.inputs[rank][off:off + count]

    def reduce(self, data: np.ndarray, off: int, payload: np.ndarray) -> None:
        target = data[off:off + len(payload)]
        self.reducer(target, payload, out=target)


class Contributors(_Arrays):
    """Contributor sets: bit r set when an element holds (or has reduced in) rank r's data; 0 is nothing yet."""

    def __init__(self, ranks: int):
        self.dtype = np.dtype(np.uint64) if ranks <= 64 else np.dtype(object)  # object: Python ints, any width

    def empty(self, rank: int, buf: str, size: int) -> np.ndarray:
        return np.zeros(size, dtype=self.dtype) if self.dtype != object else np.full(size, 0, dtype=object)

    def load(self, rank: int, off: int, count: int) -> np.ndarray:
        return np.full(count, 1 << rank, dtype=self.dtype)

    def reduce(self, data: np.ndarray, off: int, payload: np.ndarray) -> None:
        target = data[off:off + len(payload)]
        np.bitwise_or(target, payload, out=target)


NOTHING: frozenset = frozenset()


class Origins(_Arrays):
    """Chunk origins: each element is the frozenset of (rank, chunk) contributions it holds.

    A chunk is the block of the full buffer the element belongs to in its rank's input (for alltoall:
    the destination peer), as `OpSpec.input_chunks` says.
    """

    def __init__(self, coll: Collective):
        self.coll = coll
        self._chunks: dict[int, np.ndarray] = {}

    def empty(self, rank: int, buf: str, size: int) -> np.ndarray:
        data = np.empty(size, dtype=object)
        data.fill(NOTHING)
        return data

    def load(self, rank: int, off: int, count: int) -> np.ndarray:
        if rank not in self._chunks:
            self._chunks[rank] = self.coll.spec.input_chunks(self.coll, rank)
        data = np.empty(count, dtype=object)
        for j, chunk in enumerate(self._chunks[rank][off:off + count]):
            data[j] = frozenset({(rank, int(chunk))})
        return data

    def reduce(self, data: np.ndarray, off: int, payload: np.ndarray) -> None:
        target = data[off:off + len(payload)]
        np.bitwise_or(target, payload, out=target)


def holding(cells: np.ndarray) -> dict[int, tuple[int, ...]]:
    """For a region of `Origins` cells: chunk -> the ranks whose contribution to it the region holds."""
    out: dict[int, set[int]] = {}
    for cell in cells:
        for rank, chunk in cell:
            out.setdefault(chunk, set()).add(rank)
    return {chunk: tuple(sorted(ranks)) for chunk, ranks in sorted(out.items())}


def ranks_text(ranks: tuple[int, ...]) -> str:
    """'ranks 1-3', 'ranks 0, 2' or 'rank 4'."""
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    if list(ranks) == list(range(ranks[0], ranks[-1] + 1)):
        return f"ranks {ranks[0]}-{ranks[-1]}"
    return "ranks " + ", ".join(map(str, ranks))


def narration(schedule: Schedule) -> list[tuple[Transfer, str]]:
    """Every transfer, in the order run applies them, with a sentence saying what it carries."""
    told: list[tuple[Transfer, str]] = []
    run(schedule, Origins(schedule.collective), on_transfer=lambda t, payload: told.append((t, narrate(t, payload))))
    return told


def narrate(transfer: Transfer, payload: list[np.ndarray]) -> str:
    """One sentence for a transfer and its `Origins` payload (one array per piece)."""
    held = holding(np.concatenate(payload)) if payload else {}
    what = "; ".join(f"chunk {chunk}, holding {ranks_text(ranks)}" for chunk, ranks in held.items()) or "nothing"
    verb = "adds it in" if transfer.reduce else "stores it"
    if transfer.local:
        return f"rank {transfer.src} {'reduces' if transfer.reduce else 'copies'} {what} within itself"
    return f"rank {transfer.src} sends {what}, to rank {transfer.dst}, which {verb}"
