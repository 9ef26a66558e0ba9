"""Fit a calibration (simulator/nccl/calibration.py) to one nccl-tests log.

The fit minimises the squared relative error of `predict`'s time over the training sizes. Per size
the engine's time is close to linear in (1/efficiency, step latency) once the algorithm is fixed,
(an efficiency is fitted only if its protocol is bandwidth-bound, bandwidth term >= half the time, at
some training size: latency-bound sizes cannot tell a slow link from a slow step),
so each round linearises it by finite differences (engine runs), solves the box-constrained linear
least squares exactly (every active set), picks per size the faster family (ring or tree), and
relinearises at the solution (Gauss-Newton with bounds).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import numpy as np

from ..errors import CollsimError
from ..formats.nccl_tests import NcclTestsLog
from ..topology.model import Topology
from ..topology.presets import PRESET_GPUS
from .calibration import MAX_STEP_S, MIN_EFFICIENCY, PARAMS, Calibration, apply
from .channels import NVLS_STEP_FIT
from .machine import NcclMachine, resolve
from .predict import candidates, run_pick
from .tuning import PROTOCOLS, parse_nccl_version, release_name

ROUNDS = 2
BANDWIDTH_BOUND = 0.5  # an efficiency is fitted only where its bandwidth term is at least this share of a time
# finite-difference steps: 1/efficiency + 0.25, step latency + 10 us
DELTAS = (0.25,) * 6 + (10e-6, 10e-6)


def check_same_gpu(log: NcclTestsLog, topology: Topology, field: str, override: str, allowed: bool = False) -> None:
    """Refuse fitting a preset of one GPU to a log of another (the log's GPU read from its device list or header,
    NcclTestsLog.gpu): its constants would be those of the wrong machine. Presets or logs of no known GPU pass, and
    every pair when `allowed` (the user's `override` flag)."""
    preset = topology.origin.preset.name if topology.origin else None
    want, named = PRESET_GPUS.get(preset), log.gpu
    if allowed or want is None or named is None or named.family == want:
        return
    same = ", ".join(n for n, g in PRESET_GPUS.items() if g == named.family) or "none yet"
    raise CollsimError(f"{field}: {preset} is a machine of {want.upper()} GPUs but the log ran on {named.text} (its line "
                       f"{named.line}); expected a preset of the log's GPU ({same}), or {override} to fit it anyway")


@dataclass
class FitReport:
    """A calibration and its error on the training sizes and on the held-out sizes."""

    calibration: Calibration
    sizes: np.ndarray
    measured: np.ndarray
    predicted: np.ndarray
    train: np.ndarray   # boolean mask over sizes
    before: np.ndarray  # predict on the uncalibrated preset, for comparison

    @property
    def errors_pct(self) -> np.ndarray:
        """Signed % error of the calibrated prediction at each size."""
        return (self.predicted - self.measured) / self.measured * 100

    def median_abs_pct(self, train: bool) -> float | None:
        """Median |error| over the training sizes (train=True) or the held-out ones."""
        mask = self.train if train else ~self.train
        return float(np.median(np.abs(self.errors_pct[mask]))) if mask.any() else None



def _times(machine: NcclMachine, op: str, ranks: int, sizes, cal: Calibration, nvls_step_s: float = 0.0) -> np.ndarray:
    """Per size, per candidate (ring / tree) seconds of `predict` under `cal`: shape (sizes, 2), inf where absent."""
    engines = {proto: apply(machine.topology, cal, proto) for proto in PROTOCOLS}
    system, per_node = machine.system(ranks)
    out = np.full((len(sizes), 2), np.inf)
    for i, size in enumerate(sizes):
        for j, (algo, proto) in enumerate(candidates(system, op, int(size))):
            out[i, j] = run_pick(engines[proto], system, per_node, op, int(size), ranks, algo, proto, "float32",
                                 cal.net_step_s, cal.intra_step_s, nvls_step_s, built=machine.topology).time_s
    return out


def _box_lstsq(a: np.ndarray, y: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """argmin |a x - y|^2 with lo <= x <= hi, exactly: every assignment of each variable to lo, hi or free."""
    k = a.shape[1]
    best, best_x = np.inf, lo.copy()
    for state in itertools.product((0, 1, 2), repeat=k):
        x = np.where(np.array(state) == 0, lo, hi).astype(float)
        free = [i for i in range(k) if state[i] == 2]
        if free:
            fixed = [i for i in range(k) if state[i] != 2]
            rhs = y - a[:, fixed] @ x[fixed]
            sol, *_ = np.linalg.lstsq(a[:, free], rhs, rcond=None)
            if np.any(sol < lo[free] - 1e-12) or np.any(sol > hi[free] + 1e-12):
                continue
            x[free] = sol
        sse = float(np.sum((a @ x - y) ** 2))
        if sse < best - 1e-15:
            best, best_x = sse, x
    return best_x


def fit_calibration(topology: Topology, op: str, ranks: int, sizes, measured, train, source: str = "",
                    rounds: int = ROUNDS, nvls_step_s: float | None = None, nccl_version: str | None = None) -> FitReport:
    """Fit a preset machine's free parameters to the measured times at the training sizes (see module docstring).

    `nvls_step_s` is predict's NVLS step cost (default NVLS_STEP_FIT); it is not fitted here. `nccl_version` is the
    release the log ran ('2.20.3'): its tuning.cc latency tables set NCCL's picks and step costs, and the calibration
    keeps it for predict.
    """
    nvls_step = NVLS_STEP_FIT[0] if nvls_step_s is None else nvls_step_s

    if topology.origin is None:
        raise CollsimError(f"preset: {topology.name} is not a preset machine; expected e.g. p5 or dgx-h100:nodes=2")
    machine = resolve(topology, parse_nccl_version(nccl_version))
    system, _ = machine.system(ranks)
    sizes = np.asarray(sizes, dtype=np.float64)
    measured = np.asarray(measured, dtype=np.float64)
    train = np.asarray(train, dtype=bool)
    if train.sum() < 2:
        raise CollsimError(f"train-sizes: {int(train.sum())} measured size(s) to fit on; expected at least 2")
    cal = Calibration(machine.preset.name, machine.nodes, machine.net, fitted_to=source,
                      nccl_version=release_name(system.nccl_version))
    lo = np.array([1.0] * 6 + [0.0, 0.0])
    hi = np.array([1 / MIN_EFFICIENCY] * 6 + [MAX_STEP_S, MAX_STEP_S])
    ran = {proto for size in sizes[train] for _, proto in candidates(system, op, int(size))}
    active = [PROTOCOLS.index(p) for p in PROTOCOLS if p in ran] + [6]
    if system.nodes > 1:
        active += [3 + PROTOCOLS.index(p) for p in PROTOCOLS if p in ran] + [7]
    ts, tt = sizes[train], measured[train]
    before = _times(machine, op, ranks, sizes, cal, nvls_step).min(axis=1)
    identified: set[int] = set()
    for _ in range(rounds):
        x0 = cal.vector
        base = _times(machine, op, ranks, ts, cal, nvls_step)
        slopes = np.zeros((len(ts), 2, len(PARAMS)))
        for i in active:
            x = x0.copy()
            delta = DELTAS[i] if x0[i] + DELTAS[i] <= hi[i] else -DELTAS[i]  # stay inside the bounds
            x[i] += delta
            with np.errstate(invalid="ignore"):
                slopes[:, :, i] = (_times(machine, op, ranks, ts, cal.with_vector(x), nvls_step) - base) / delta
        slopes = np.nan_to_num(slopes, nan=0.0, posinf=0.0, neginf=0.0)
        # a latency is identified when it moves some training time by at least 0.1% over its range; an efficiency
        # when its protocol is bandwidth-bound at some training size (the bandwidth term is >= half the time there),
        # so that latency-bound sizes cannot pass a latency off as a slow link
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.nan_to_num(slopes * x0[None, None, :] / base[:, :, None], nan=0.0, posinf=0.0, neginf=0.0)
        seen = [i for i in active if (np.max(share[:, :, i]) >= BANDWIDTH_BOUND if i < 6 else
                                      np.max(np.abs(slopes[:, :, i]) * (hi[i] - lo[i]) / tt[:, None]) > 1e-3)]
        identified |= set(seen)
        x = x0.copy()
        for _ in range(4):  # pick each size's faster family at x, solve, repeat until the picks settle
            pred = base + np.einsum("sfk,k->sf", slopes, x - x0)
            fam = np.argmin(pred, axis=1)
            rows = np.arange(len(ts))
            if not seen:
                break
            jac = slopes[rows, fam][:, seen]
            a = jac / tt[:, None]
            y = 1.0 - (base[rows, fam] - jac @ x0[seen]) / tt
            new = x0.copy()
            new[seen] = _box_lstsq(a, y, lo[seen], hi[seen])
            if np.allclose(new, x):
                break
            x = new
        cal = cal.with_vector(np.clip(x, lo, hi))
    predicted = _times(machine, op, ranks, sizes, cal, nvls_step).min(axis=1)
    cal = replace(cal, identified=tuple(PARAMS[i] for i in sorted(identified)))
    report = FitReport(cal, sizes, measured, predicted, train, before)
    fit = {"op": op, "ranks": ranks, "train_bytes": [int(ts.min()), int(ts.max())], "train_sizes": int(train.sum()),
           "train_median_abs_pct": report.median_abs_pct(True), "holdout_median_abs_pct": report.median_abs_pct(False)}
    report.calibration = replace(cal, fit=fit)
    return report
