"""A small API for building schedules as arrays: transfers added a block at a time, dependencies written out.

`Columns.send` adds one transfer per element of its (broadcast) array arguments and returns their ids, so a
builder says "in step s rank r reduces block (r+s) mod p into rank r+s" with numpy expressions instead of a loop of
objects. `Columns.join` adds join nodes: a join waits for many transfers and others wait for the join, so "each of m
transfers waits for the same k transfers" costs m + k edges instead of m x k. A join moves nothing and takes no time
(a zero-count local copy marked in the `join` column; the engine ends it the instant its last dependency ends).
`schedule` returns the ArraySchedule (Transfer objects only when something iterates them).
"""

from __future__ import annotations

import numpy as np

from ..collective import Collective
from ..schedule import BUFFERS, ArraySchedule, csr_rows

NONE = -1  # "no dependency" in a dependency table


class Columns:
    """Transfers added in blocks of arrays, numbered in the order they are added."""

    def __init__(self) -> None:
        self._parts: list[dict[str, np.ndarray]] = []
        self.size = 0

    def send(self, src, dst, off, count, *, reduce: bool = False, step=0, deps=None, buf: str = "out",
             src_buf: str | None = None, src_off=None) -> np.ndarray:
        """One transfer per element of the broadcast arrays: `count` elements at `off` of `buf` from src to dst (reduced
        there if `reduce`), in display step `step`, waiting for the ids in the rows of `deps` (an (n, k) table, NONE for
        none; or one id per transfer). Read from `src_off` of `src_buf` when given (default: the same place as written).
        Returns the new ids, shaped like the broadcast arguments."""
        src_off = off if src_off is None else src_off
        src, dst, off, count, step, src_off = np.broadcast_arrays(*(np.asarray(a, dtype=np.int64) for a in (
            src, dst, off, count, step, src_off)))
        shape = src.shape
        n = src.size
        if deps is None:
            table = np.full((n, 0), NONE, dtype=np.int64)
        else:
            table = np.asarray(deps, dtype=np.int64)
            table = table.reshape(n, -1) if table.size else np.full((n, 0), NONE, dtype=np.int64)
        code = BUFFERS.index(buf)
        part = {"src": src.ravel(), "dst": dst.ravel(), "off": off.ravel(), "count": count.ravel(),
                "reduce": np.full(n, reduce), "step": step.ravel(), "deps": table,
                "buf": np.full(n, code, dtype=np.int64), "join": np.zeros(n, dtype=bool),
                "src_buf": np.full(n, BUFFERS.index(src_buf or buf), dtype=np.int64), "src_off": src_off.ravel()}
        return self._add(part, shape)

    def join(self, rank, deps, step=0) -> np.ndarray:
        """One join node per row of `deps` ((m, k) ids, NONE for none), at `rank` (broadcast): it ends when they all
        have. Returns the joins' ids."""
        table = np.asarray(deps, dtype=np.int64)
        m = table.shape[0]
        rank = np.broadcast_to(np.asarray(rank, dtype=np.int64), (m,))
        part = {"src": rank.copy(), "dst": rank.copy(), "off": np.zeros(m, np.int64), "count": np.zeros(m, np.int64),
                "reduce": np.zeros(m, dtype=bool), "step": np.broadcast_to(np.asarray(step, np.int64), (m,)).copy(),
                "deps": table.reshape(m, -1), "buf": np.full(m, BUFFERS.index("out"), dtype=np.int64),
                "join": np.ones(m, dtype=bool)}
        part.update(src_buf=part["buf"], src_off=part["off"])
        return self._add(part, (m,))

    def _add(self, part: dict[str, np.ndarray], shape: tuple[int, ...]) -> np.ndarray:
        ids = np.arange(self.size, self.size + part["src"].size, dtype=np.int64)
        self._parts.append(part)
        self.size += ids.size
        return ids.reshape(shape)

    def schedule(self, coll: Collective, algorithm: str, params: dict | None = None, scratch: int = 0) -> ArraySchedule:
        """The ArraySchedule of everything added (one piece per transfer), each rank with `scratch` scratch elements."""
        parts = self._parts
        n = self.size
        cat = (lambda k: np.concatenate([q[k] for q in parts])) if parts else (lambda k: np.zeros(0, np.int64))
        ptrs, idxs, base = [np.zeros(1, np.int64)], [], 0
        for q in parts:  # each block's table to CSR on its own (a few wide rows must not widen every row)
            ptr, idx = csr_rows(q["deps"])
            ptrs.append(ptr[1:] + base)
            idxs.append(idx)
            base += idx.size
        dep_ptr = np.concatenate(ptrs)
        dep_idx = np.concatenate(idxs) if idxs else np.zeros(0, np.int64)
        columns = {"src": cat("src"), "dst": cat("dst"), "reduce": cat("reduce").astype(bool), "step": cat("step"),
                   "dep_ptr": dep_ptr, "dep_idx": dep_idx, "piece_ptr": np.arange(n + 1, dtype=np.int64),
                   "src_buf": cat("src_buf"), "dst_buf": cat("buf"), "src_off": cat("src_off"), "dst_off": cat("off"),
                   "count": cat("count"),
                   "join": cat("join").astype(bool)}
        return ArraySchedule(coll, algorithm, columns, params, scratch)


def merged_piece_columns(n: int, owner, src_buf, src_off, dst_buf, dst_off, count,
                         empty_buf: str = "scratch") -> dict[str, np.ndarray]:
    """Per-piece columns of multi-piece transfers: pieces given in order, piece k belonging to transfer owner[k]
    (non-decreasing, in 0..n-1; buffers as BUFFERS indices). Empty pieces are dropped and a piece contiguous with the
    one before it in the same transfer (on both sides, same buffers) is merged into it; a transfer left with no piece
    gets one empty piece at offset 0 of `empty_buf`. Returns piece_ptr (CSR over the n transfers) and the piece columns
    src_buf, src_off, dst_buf, dst_off, count, as ArraySchedule reads them."""
    cols = [np.asarray(a, dtype=np.int64).ravel() for a in (owner, src_buf, src_off, dst_buf, dst_off, count)]
    keep = cols[5] > 0
    owner, sb, so, db, do, cnt = (a[keep] for a in cols)
    new_run = np.ones(owner.size, dtype=bool)
    new_run[1:] = ((owner[1:] != owner[:-1]) | (sb[1:] != sb[:-1]) | (db[1:] != db[:-1])
                   | (so[1:] != so[:-1] + cnt[:-1]) | (do[1:] != do[:-1] + cnt[:-1]))
    first = np.flatnonzero(new_run)
    run_owner = owner[first]
    run_count = np.add.reduceat(cnt, first) if first.size else np.zeros(0, np.int64)
    runs = np.bincount(run_owner, minlength=n)
    piece_ptr = np.zeros(n + 1, dtype=np.int64)
    piece_ptr[1:] = np.cumsum(np.maximum(runs, 1))
    run_ptr = np.concatenate(([0], np.cumsum(runs)))
    at = piece_ptr[run_owner] + np.arange(first.size) - run_ptr[run_owner]  # each run's slot
    total = int(piece_ptr[-1])
    code = BUFFERS.index(empty_buf)
    out = {"src_buf": np.full(total, code, np.int64), "src_off": np.zeros(total, np.int64),
           "dst_buf": np.full(total, code, np.int64), "dst_off": np.zeros(total, np.int64),
           "count": np.zeros(total, np.int64)}
    for key, values in (("src_buf", sb), ("src_off", so), ("dst_buf", db), ("dst_off", do)):
        out[key][at] = values[first]
    out["count"][at] = run_count
    return {"piece_ptr": piece_ptr, **out}


def with_pieces(sched: ArraySchedule, first: int, blocks: list[dict[str, np.ndarray]],
                scratch_count: int = 0) -> ArraySchedule:
    """`sched` (one piece per transfer, from `Columns.schedule`) with transfers first.. carrying the multi-piece columns
    `blocks` (each from `merged_piece_columns`, over consecutive transfers) in place of their one piece each."""
    c = sched.columns
    keys = ("src_buf", "src_off", "dst_buf", "dst_off", "count")
    ptrs, base = [c["piece_ptr"][:first + 1]], first
    for q in blocks:
        ptrs.append(q["piece_ptr"][1:] + base)
        base += int(q["piece_ptr"][-1])
    columns = {**c, **{k: np.concatenate([c[k][:first]] + [q[k] for q in blocks]) for k in keys},
               "piece_ptr": np.concatenate(ptrs)}
    return ArraySchedule(sched.collective, sched.algorithm, columns, sched.params, scratch_count)


class Table:
    """Columns of `n` transfers (one piece each) whose ids are laid out in advance, filled a kind of transfer at a time
    (any order), with a dependency table of `width` columns (-1: none); `columns()` is what ArraySchedule takes."""

    def __init__(self, n: int, width: int):
        self.cols = {key: np.zeros(n, dtype=np.int64) for key in ("src", "dst", "step", "src_buf", "src_off",
                                                                     "dst_buf", "dst_off", "count")}
        self.cols["reduce"] = np.zeros(n, dtype=bool)
        self.deps = np.full((n, width), -1, dtype=np.int64)

    def put(self, ids, src, dst, src_piece, dst_piece, count, step, deps, reduce: bool = False) -> None:
        """Transfers `ids` (any shape; the other arguments broadcast to it): (buffer, offset) pieces, each waiting for
        the ids along the last axis of the arrays in `deps` (-1 for none)."""
        ids = np.asarray(ids)
        c = self.cols
        for key, value in (("src", src), ("dst", dst), ("src_buf", BUFFERS.index(src_piece[0])), ("src_off", src_piece[1]),
                           ("dst_buf", BUFFERS.index(dst_piece[0])), ("dst_off", dst_piece[1]), ("count", count),
                           ("step", step), ("reduce", reduce)):
            c[key][ids] = np.broadcast_to(value, ids.shape)
        table = np.concatenate([np.broadcast_to(np.asarray(d)[..., None] if np.ndim(d) == ids.ndim else d,
                                                ids.shape + (np.shape(d)[-1] if np.ndim(d) > ids.ndim else 1,))
                                for d in deps], axis=-1)
        self.deps[ids.ravel(), :table.shape[-1]] = table.reshape(ids.size, -1)

    def columns(self) -> dict[str, np.ndarray]:
        dep_ptr, dep_idx = csr_rows(self.deps)
        n = self.deps.shape[0]
        return {**self.cols, "dep_ptr": dep_ptr, "dep_idx": dep_idx, "piece_ptr": np.arange(n + 1, dtype=np.int64)}
