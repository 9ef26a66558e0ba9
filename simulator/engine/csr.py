"""Array helpers of the batched engine: rows of a CSR table for many ids at once, rank within equal keys."""

from __future__ import annotations

from array import array

import numpy as np

_EMPTY = np.zeros(0, dtype=np.int64)
_CODES = {np.int64: "q", np.float64: "d"}  # array.array type codes of the same memory layout


def scalar_filled(size: int, fill: int | float, dtype: type = np.int64) -> tuple[array, np.ndarray]:
    """`size` int64 or float64 elements equal to `fill` as an array.array, and a numpy view of the same memory: reading
    or writing one element of the array.array costs about half what it costs on a numpy array; array operations use
    the view."""
    buf = array(_CODES[np.dtype(dtype).type], [fill]) * size  # int64 or float64 only (KeyError for others)
    return buf, np.frombuffer(buf, dtype=dtype)


def scalar_backed(values: np.ndarray) -> tuple[array, np.ndarray]:
    """scalar_filled holding a copy of int64 or float64 `values`."""
    buf, view = scalar_filled(values.size, 0, values.dtype.type)
    view[:] = values
    return buf, view


def gather(ptr: np.ndarray, idx: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The entries idx[ptr[i]:ptr[i + 1]] of every i in `ids`, concatenated, and for each the position in `ids` it came from."""
    lo = ptr[ids]
    count = ptr[ids + 1] - lo
    if ids.size and count.min() == count.max():  # rows of one length (a switch's routes, say): no running offsets
        width = int(count[0])
        if width == 0:
            return _EMPTY, _EMPTY
        entries = idx[(lo[:, None] + np.arange(width)).ravel()]
        return entries, (np.arange(ids.size) if width == 1 else np.repeat(np.arange(ids.size), width))
    total = int(count.sum())
    if total == 0:
        return _EMPTY, _EMPTY
    owner = np.repeat(np.arange(ids.size), count)
    first = np.cumsum(count) - count
    return idx[lo[owner] + (np.arange(total) - first[owner])], owner


def occurrence(keys: np.ndarray) -> np.ndarray:
    """For each position, how many earlier positions hold the same key (0 for a key's first)."""
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    new = np.ones(keys.size, dtype=bool)
    new[1:] = sorted_keys[1:] != sorted_keys[:-1]
    starts = np.flatnonzero(new)
    group = np.cumsum(new) - 1
    out = np.empty(keys.size, dtype=np.int64)
    out[order] = np.arange(keys.size) - starts[group]
    return out


def distinct(ids: np.ndarray) -> np.ndarray:
    """The distinct values of `ids`, sorted (np.unique without its fixed cost on small arrays)."""
    out = np.sort(ids)
    if out.size > 1:
        out = out[np.concatenate(([True], out[1:] != out[:-1]))]
    return out
