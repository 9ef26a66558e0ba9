"""Alpha-beta-gamma time of every registered algorithm, and lower bounds: the public cost API.

Each algorithm declares its closed form next to its builder (`register(..., cost=..., exact=...)`
in simulator/algorithms; the shared math is simulator/algorithms/forms.py). `estimate` uses that
form and, for an algorithm registered without one, runs the discrete-event engine on the
contention-free `ideal:P` machine with the model's alpha, bandwidth and gamma instead, and says
which of the two it used. Sizes are bytes in nccl-tests' meaning; every result is vectorised over
them. Notation and execution model: simulator/algorithms/forms.py.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .algorithms import REGISTRY, build_schedule, get
from .algorithms.forms import CostFn, LinkModel, lg
from .collective import Collective, normalize_op
from .ops import lookup

__all__ = ["CLOSED_FORMS", "CLOSED_FORM", "ENGINE", "Estimate", "LinkModel", "engine_times", "estimate",
           "has_closed_form", "is_exact", "lower_bound", "predict"]

CLOSED_FORM, ENGINE = "closed form", "engine"  # how an estimate was made


class _ClosedForms(Mapping):
    """(op, name) -> closed form, read live from the algorithm registry (only algorithms that declare one)."""

    def __getitem__(self, key: tuple[str, str]) -> CostFn:
        spec = REGISTRY.get(key)
        if spec is None or spec.cost is None:
            raise KeyError(key)
        return spec.cost

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter([key for key, spec in REGISTRY.items() if spec.cost is not None])

    def __len__(self) -> int:
        return sum(1 for spec in REGISTRY.values() if spec.cost is not None)


CLOSED_FORMS: Mapping[tuple[str, str], CostFn] = _ClosedForms()


@dataclass(frozen=True)
class Estimate:
    """Seconds per size and how they were obtained: CLOSED_FORM, or ENGINE (simulated on ideal:P)."""

    times: np.ndarray
    method: str


def has_closed_form(op: str, name: str) -> bool:
    """True when algorithm (op, name) declares a closed form (False also for unknown algorithms)."""
    return (normalize_op(op), name) in CLOSED_FORMS


def _given(params: dict) -> dict:
    return {k: v for k, v in params.items() if v is not None}


def estimate(op: str, name: str, p: int, sizes, model: LinkModel, **params) -> Estimate:
    """Seconds of algorithm `name` for each size in `sizes` (bytes): its closed form, else the engine on ideal:P."""
    spec = get(op, name)
    n = np.asarray(sizes, dtype=np.float64)
    params = _given(params)
    if spec.cost is None:
        return Estimate(engine_times(spec.op, name, p, n, model, **params), ENGINE)
    if p == 1:
        return Estimate(np.zeros_like(n), CLOSED_FORM)
    times = np.asarray(spec.cost(p, n, model, **params), dtype=np.float64)
    return Estimate(np.broadcast_to(times, n.shape).copy(), CLOSED_FORM)


def predict(op: str, name: str, p: int, sizes, model: LinkModel, **params) -> np.ndarray:
    """Seconds of algorithm `name` for each size in `sizes` (bytes); see `estimate`."""
    return estimate(op, name, p, sizes, model, **params).times


def is_exact(op: str, name: str, p: int, model: LinkModel, **params) -> bool:
    """True where `predict` is the schedule's exact time under the model (always when the engine gives it)."""
    spec = get(op, name)
    return p == 1 or spec.cost is None or bool(spec.exact(p, model, **_given(params)))


def engine_times(op: str, name: str, p: int, sizes, model: LinkModel, **params) -> np.ndarray:
    """The event engine's time of the schedule on ideal:P (one port per rank, no contention), per size.

    Each size is rounded to whole bytes and built as an int8 collective, so every size is allowed.
    """
    spec = get(op, name)
    key = tuple(sorted(_given(params).items()))
    sizes = np.asarray(sizes, dtype=np.float64)
    out = [_engine_time(spec.build, spec.op, name, p, int(round(float(n))), model, key) for n in sizes.ravel()]
    return np.asarray(out, dtype=np.float64).reshape(sizes.shape)


@lru_cache(maxsize=4096)
def _engine_time(builder, op: str, name: str, p: int, nbytes: int, model: LinkModel, params: tuple) -> float:
    """One simulated time; `builder` keys the cache so that re-registering a name never reuses old times."""
    from .engine import EngineOptions, simulate  # the engine imports the trace writer, which imports this module
    from .topology import ideal

    schedule = build_schedule(Collective(op, p, nbytes, "int8"), name, **dict(params))
    if p == 1:
        return 0.0
    bandwidth = 1.0 / model.beta if model.beta > 0 else float("inf")
    return float(simulate(schedule, ideal(p, model.alpha, bandwidth), EngineOptions(gamma=model.gamma)).time)


def lower_bound(op: str, p: int, sizes, model: LinkModel) -> np.ndarray:
    """ceil(lg p) alpha + W beta: no single-port algorithm can beat it (REFERENCE.md, Thakur et al. 2005).

    Latency: the number of ranks holding (or contributing to) a datum at most doubles per
    message round. Bandwidth: W n bytes must cross some rank's port (2(p-1)/p n for allreduce,
    (p-1)/p n for allgather, reduce-scatter, scatter, gather and alltoall, n for broadcast and reduce).
    """
    n = np.asarray(sizes, dtype=np.float64)
    if p == 1:
        return np.zeros_like(n)
    return lg(p) * model.alpha + lookup(op).bandwidth_bound(p) * n * model.beta
