"""Executes a schedule on numpy buffers and checks every rank ends with what the collective defines."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import interpret
from .collective import Collective
from .interpret import Numbers
from .schedule import Schedule

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


def execute(schedule: Schedule, inputs: list[np.ndarray]) -> list[dict[str, np.ndarray]]:
    """Run the schedule in dependency order on numbers; return each rank's buffers ('in', 'out', 'scratch')."""
    with np.errstate(over="ignore", invalid="ignore"):
        return interpret.run(schedule, Numbers(inputs, _REDUCERS[schedule.collective.redop]))


def expected_outputs(coll: Collective, inputs: list[np.ndarray]) -> dict[int, list[tuple[int, np.ndarray]]]:
    """Per rank that must hold a result: (offset in 'out', expected values) pairs, from the op's spec."""
    with np.errstate(over="ignore", invalid="ignore"):
        want = interpret.expected(coll, Numbers(inputs, _REDUCERS[coll.redop]))
    return {rank: [(part.off, values) for part, values in parts] for rank, parts in want.items()}


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
