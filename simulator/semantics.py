"""Executes a schedule on numpy buffers and checks every rank ends with what the collective defines."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .collective import Collective
from .schedule import Schedule
from .validate import initially_defined

# numpy has no bfloat16: its values are carried as float32 (the check is about data movement).
_NUMPY_DTYPE = {"bfloat16": "float32"}
_REDUCERS = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}


def numpy_dtype(dtype: str) -> np.dtype:
    """The numpy dtype that carries a collsim dtype."""
    return np.dtype(_NUMPY_DTYPE.get(dtype, dtype))


def make_inputs(coll: Collective, seed: int = 0) -> list[np.ndarray]:
    """Distinct random input buffers per rank, chosen so every reduction order gives the same exact result.

    Integers wrap, which is associative and commutative. Floats hold small integers (sums of
    up to thousands of them are exact in float16 and above); for prod they are +-1.
    """
    rng = np.random.default_rng(seed)
    dt = numpy_dtype(coll.dtype)
    out = []
    for rank in range(coll.ranks):
        n = coll.in_count[rank]
        if dt.kind in "iu":
            info = np.iinfo(dt)
            data = rng.integers(info.min, info.max, size=n, endpoint=True, dtype=dt)
        elif coll.redop == "prod":
            data = rng.choice(np.array([-1, 1], dtype=dt), size=n)
        else:
            bound = 8 if dt.itemsize <= 2 else 64
            data = rng.integers(-bound, bound, size=n, endpoint=True).astype(dt)
        out.append(data)
    return out


def _fresh(dt: np.dtype, n: int, rng: np.random.Generator) -> np.ndarray:
    """Garbage for buffers that hold nothing yet: NaN for floats, random for integers."""
    if dt.kind == "f":
        return np.full(n, np.nan, dtype=dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, size=n, endpoint=True, dtype=dt)


def execute(schedule: Schedule, inputs: list[np.ndarray]) -> list[dict[str, np.ndarray]]:
    """Run the schedule in dependency order; return each rank's buffers ('in', 'out', 'scratch')."""
    coll = schedule.collective
    dt = numpy_dtype(coll.dtype)
    rng = np.random.default_rng(12345)
    state = []
    for rank in range(coll.ranks):
        bufs = {"in": inputs[rank].copy(), "out": _fresh(dt, coll.out_count, rng),
                "scratch": _fresh(dt, schedule.scratch_count, rng)}
        for lo, hi in initially_defined(schedule, rank, "out"):
            src = inputs[rank] if coll.op not in ("allgather", "gather") else None
            bufs["out"][lo:hi] = src[lo:hi] if src is not None else inputs[rank]
        state.append(bufs)
    reducer = _REDUCERS[coll.redop]
    with np.errstate(over="ignore", invalid="ignore"):
        for i in schedule.topological_order():
            t = schedule.transfers[i]
            payload = [state[t.src][p.src_buf][p.src_off:p.src_off + p.count].copy() for p in t.pieces]
            for p, data in zip(t.pieces, payload):
                target = state[t.dst][p.dst_buf][p.dst_off:p.dst_off + p.count]
                if t.reduce:
                    reducer(target, data, out=target)
                else:
                    target[:] = data
    return state


def expected_outputs(coll: Collective, inputs: list[np.ndarray]) -> dict[int, list[tuple[int, np.ndarray]]]:
    """Per rank that must hold a result: (offset in 'out', expected values) pairs."""
    p, op = coll.ranks, coll.op
    offs = coll.block_offsets
    with np.errstate(over="ignore", invalid="ignore"):
        if op in ("allreduce", "reduce", "reduce_scatter"):
            total = inputs[0].copy()
            for data in inputs[1:]:
                _REDUCERS[coll.redop](total, data, out=total)
    if op == "allreduce":
        return {r: [(0, total)] for r in range(p)}
    if op == "reduce":
        return {coll.root: [(0, total)]}
    if op == "reduce_scatter":
        return {r: [(int(offs[r]), total[offs[r]:offs[r + 1]])] for r in range(p)}
    if op == "broadcast":
        return {r: [(0, inputs[coll.root])] for r in range(p)}
    if op in ("allgather", "gather"):
        whole = np.concatenate(inputs) if inputs else inputs
        ranks = range(p) if op == "allgather" else [coll.root]
        return {r: [(0, whole)] for r in ranks}
    if op == "scatter":
        return {r: [(int(offs[r]), inputs[coll.root][offs[r]:offs[r + 1]])] for r in range(p)}
    # alltoall
    result = {}
    for r in range(p):
        parts = []
        for s in range(p):
            n = coll.pair_count(s, r)
            src_off = coll.pair_offset(s, r, "in")
            parts.append((coll.pair_offset(r, s, "out"), inputs[s][src_off:src_off + n]))
        result[r] = parts
    return result


@dataclass(frozen=True)
class CheckResult:
    """Outcome of a semantics check."""

    ok: bool
    message: str


def check(schedule: Schedule, seed: int = 0, validate: bool = True) -> CheckResult:
    """Validate, execute on random data and compare with the collective's definition."""
    from .errors import CollsimError

    coll = schedule.collective
    try:
        if validate:
            schedule.validate()
    except CollsimError as exc:
        return CheckResult(False, str(exc))
    inputs = make_inputs(coll, seed)
    state = execute(schedule, inputs)
    for rank, parts in expected_outputs(coll, inputs).items():
        out = state[rank]["out"]
        for off, want in parts:
            got = out[off:off + len(want)]
            same = (got == want) | (np.isnan(got) & np.isnan(want)) if got.dtype.kind == "f" else got == want
            if not np.all(same):
                bad = int(np.argmin(same))
                return CheckResult(False, (
                    f"{schedule.algorithm} {coll.describe()}: rank {rank} out[{off + bad}] is {got[bad]!r}, "
                    f"expected {want[bad]!r} (seed {seed})"))
    return CheckResult(True, f"{schedule.algorithm} {coll.describe()}: ok ({len(schedule.transfers)} transfers, seed {seed})")
