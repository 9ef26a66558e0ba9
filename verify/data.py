"""Inputs, buffers and result checks for real runs: bit-exact for integers, a justified bound for floats.

Float bound. A reduced element is s = x_1 + ... + x_p computed by p-1 additions, each rounded
once to the element type, in whatever order the schedule (or the native library) chooses. For
any order, |s_computed - s| <= gamma_{p-1} * sum_i |x_i| with gamma_k = k u / (1 - k u) and u
the unit roundoff (2^-24 float32, 2^-11 float16, 2^-8 bfloat16, 2^-53 float64): Higham,
Accuracy and Stability of Numerical Algorithms, 2nd ed., eq. (4.4) and Lemma 3.1. (Additions
whose result is subnormal are exact, so the bound also holds there.) The reference sum is
taken in float64 from the very inputs the ranks hold, so its own error (<= gamma_{p-1} at
u = 2^-53) is added to the bound. Two implementations that both meet the bound differ by at
most twice of it. For prod the same argument bounds the relative error: |err| <= gamma_{p-1} |prod|.
max and min never round, and moving data never changes bits, so those are checked bit-exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.collective import Collective
from simulator.semantics import expected_outputs

UNIT_ROUNDOFF = {"float64": 2.0**-53, "float32": 2.0**-24, "float16": 2.0**-11, "bfloat16": 2.0**-8}


def gamma(k: int, u: float) -> float:
    """Higham's gamma_k = k u / (1 - k u): the error factor of k rounded operations."""
    return k * u / (1.0 - k * u) if k > 0 else 0.0


def float_bound_factor(coll: Collective) -> float:
    """Factor f such that |computed - exact| <= f * sum|x_i| (sum) or f * |result| (prod); 0 when bit-exact."""
    u = UNIT_ROUNDOFF.get(coll.dtype)
    if u is None or not coll.spec.reduces or coll.redop in ("max", "min"):
        return 0.0
    return gamma(coll.ranks - 1, u) + gamma(coll.ranks - 1, UNIT_ROUNDOFF["float64"])


def rank_input(coll: Collective, rank: int, mode: str, seed: int):
    """Rank `rank`'s input tensor (CPU): 'random' floats in [-1, 1) or 'exact' small integers; integers use the full range."""
    import torch

    from .executor import torch_dtype

    rng = np.random.default_rng([seed, rank])
    n = coll.in_count[rank]
    if coll.dtype.startswith(("int", "uint")):
        info = np.iinfo(np.dtype(coll.dtype))
        return torch.from_numpy(rng.integers(info.min, info.max, size=n, endpoint=True, dtype=np.dtype(coll.dtype)))
    if coll.redop == "prod":
        data = rng.choice(np.array([-1.0, 1.0], dtype=np.float32), size=n) * (1 if mode == "exact" else rng.uniform(0.5, 2.0, n))
    elif mode == "exact":  # small integers: every reduction order gives the same, exactly representable, result
        bound = 8 if coll.elem_size <= 2 else 64
        data = rng.integers(-bound, bound, size=n, endpoint=True)
    else:
        data = rng.uniform(-1.0, 1.0, size=n)
    return torch.from_numpy(np.asarray(data, dtype=np.float32)).to(torch_dtype(coll.dtype))


def as_reference(t) -> np.ndarray:
    """A tensor as numpy: float64 for floating types (exact widening), the same integer type otherwise."""
    import torch

    t = t.detach().cpu()
    return t.to(torch.float64).numpy() if t.is_floating_point() else t.numpy()


@dataclass
class Expected:
    """Per rank that holds a result: (offset, exact values, error bound per element) triples."""

    parts: dict[int, list[tuple[int, np.ndarray, np.ndarray | float]]]


def expected(coll: Collective, inputs: list) -> Expected:
    """What every rank must hold, from all ranks' inputs (tensors), with the per-element float bound."""
    ref = [as_reference(x) for x in inputs]
    want = expected_outputs(coll, ref)
    factor = float_bound_factor(coll)
    if factor == 0.0:
        return Expected({r: [(off, vals, 0.0) for off, vals in parts] for r, parts in want.items()})
    if coll.redop == "prod":
        return Expected({r: [(off, vals, factor * np.abs(vals)) for off, vals in parts] for r, parts in want.items()})
    mags = expected_outputs(coll, [np.abs(x) for x in ref])
    return Expected({r: [(off, vals, factor * mag) for (off, vals), (_, mag) in zip(parts, mags[r])]
                     for r, parts in want.items()})


@dataclass
class CheckOutcome:
    """How many result elements of one rank are wrong, the worst error, and the first wrong one."""

    wrong: int = 0
    max_err: float = 0.0
    first: str = ""


def check_rank(out, parts, label: str, rank: int) -> CheckOutcome:
    """Compare a rank's 'out' tensor with its expected parts (bit-exact where the bound is 0)."""
    got_all = as_reference(out)
    result = CheckOutcome()
    for off, want, bound in parts:
        got = got_all[off:off + len(want)]
        if got.dtype.kind == "f":
            with np.errstate(invalid="ignore", over="ignore"):
                err = np.abs(got - want)
            bad = ~(err <= bound)  # NaN counts as wrong
            if err.size:
                finite = err[np.isfinite(err)]
                result.max_err = max(result.max_err, float(finite.max()) if finite.size else float("inf"))
        else:
            bad = got != want
        nbad = int(bad.sum())
        if nbad and not result.first:
            i = int(np.argmax(bad))
            b = bound if np.isscalar(bound) else float(bound[i])
            result.first = (f"{label}: rank {rank} out[{off + i}] is {got[i]!r}, expected {want[i]!r}"
                            + (f" within {b:.3g}" if b else ""))
        result.wrong += nbad
    return result


def fresh_buffers(coll: Collective, scratch_count: int, rank: int, my_input, device) -> dict:
    """'in', 'out' and 'scratch' for one rank: 'out' holds the in-place view of the input, the rest is garbage."""
    dtype = my_input.dtype
    bufs = {"in": my_input.to(device).clone(), "out": _garbage(coll.out_count, dtype, device),
            "scratch": _garbage(scratch_count, dtype, device)}
    reset_output(coll, rank, bufs)
    return bufs


def reset_output(coll: Collective, rank: int, bufs: dict) -> None:
    """Put 'out' back to its starting state (the op's spec: the in-place view of the input) before another run."""
    for part in coll.spec.start(coll, rank, "out"):
        src_off = part.sources[0][1]  # a start part is one copy of the rank's own input
        bufs["out"][part.off:part.off + part.count].copy_(bufs["in"][src_off:src_off + part.count])


def _garbage(n: int, dtype, device):
    """Values no correct run leaves behind: NaN for floats, an unlikely sentinel for integers."""
    import torch

    if dtype.is_floating_point:
        return torch.full((n,), float("nan"), dtype=dtype, device=device)
    return torch.full((n,), torch.iinfo(dtype).min + 7, dtype=dtype, device=device)
