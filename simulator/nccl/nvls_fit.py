"""The cost of one NVLS pipeline step, fitted on nccl-tests logs leave-one-out (no log predicted with its own fit).

`collsim predict` charges each NVLS channel `nvls_step_s` for every step its chunks add over the largest
chunk's (simulator/nccl/channels.py). NCCL has no such constant: on a grid of 0 .. 5 us, the value with the
smallest mean median |error| over sizes >= 1 MiB of the logs whose prediction runs NVLS with smaller chunks.
benchmarks/nvls_step.py prints the fits (NVLS_STEP_FIT ships the one on all logs); benchmarks/preset_accuracy.py
and the app's Model vs reality page predict each of those logs with the value fitted on the *other* logs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..formats.nccl_tests import read_log
from .channels import nvls_extra_steps
from .machine import parse_machine
from .predict import predict

MIN_BYTES = 1 << 20
GRID_S = [k * 0.1e-6 for k in range(51)]  # 0 .. 5 us

Rows = tuple[np.ndarray, np.ndarray, np.ndarray]  # measured s, predicted s with no step cost, extra NVLS steps


def nvls_rows(spec: str, path: Path) -> Rows | None:
    """A log's sizes >= 1 MiB as (measured, predict at nvls_step_s = 0, extra steps); None if NVLS adds no step."""
    log = read_log(path)
    rows = [(s, t) for s, t in log.measurements() if s >= MIN_BYTES]
    machine = parse_machine(spec)
    preds = predict(machine, log.op, [s for s, _ in rows], ranks=log.ranks, nvls_step_s=0.0)
    system, _ = machine.system(log.ranks)
    steps = np.array([nvls_extra_steps(system, s) if p.algorithm == "nvls" else 0.0 for (s, _), p in zip(rows, preds)])
    if not steps.any():
        return None
    return np.array([t for _, t in rows]), np.array([p.time_s for p in preds]), steps


def median_error(rows: Rows, step_s: float) -> float:
    """Median |error| in percent with `step_s` per extra step (the step cost adds to NVLS's time, nothing else)."""
    measured, base, steps = rows
    return float(np.median(np.abs((base + step_s * steps - measured) / measured * 100)))


def fit(data: dict[str, Rows], prefixes: list[str]) -> float:
    """The grid value with the smallest mean median |error| over these logs."""
    return min(GRID_S, key=lambda x: np.mean([median_error(data[p], x) for p in prefixes]))


def nvls_data(cases: list[tuple[str, str, Path]]) -> dict[str, Rows]:
    """The logs (prefix, preset spec, path) whose prediction runs NVLS with smaller chunks, by prefix."""
    return {prefix: rows for prefix, spec, path in cases if (rows := nvls_rows(spec, path)) is not None}


def fit_without(data: dict[str, Rows], exclude: set[str]) -> float | None:
    """The value fitted on every NVLS log but `exclude` (None if none is left)."""
    rest = sorted(p for p in data if p not in exclude)
    return fit(data, rest) if rest else None


def leave_one_out(cases: list[tuple[str, str, Path]]) -> tuple[dict[str, float], tuple[float, list[str]]]:
    """Per NVLS log (prefix), the step cost fitted on the other NVLS logs; and the value fitted on all of them."""
    data = nvls_data(cases)
    prefixes = sorted(data)
    held_out = {p: fit(data, [q for q in prefixes if q != p]) for p in prefixes if len(prefixes) > 1}
    return held_out, (fit(data, prefixes) if prefixes else 0.0, prefixes)
