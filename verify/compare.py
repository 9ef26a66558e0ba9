"""Predicted versus measured: closed forms (and the event engine when present) against real run times."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from simulator.cost import CLOSED_FORMS, predict
from simulator.profile import LinkProfile


@dataclass(frozen=True)
class Predictor:
    """A named way to predict seconds for (op, algorithm, ranks, sizes, profile, params); None when it cannot."""

    name: str
    fn: Callable[..., np.ndarray | None]


def _closed_form(op: str, algo: str, ranks: int, sizes, profile: LinkProfile, params: dict, dtype: str = "float32") -> np.ndarray | None:
    if (op, algo) not in CLOSED_FORMS:
        return None
    return predict(op, algo, ranks, sizes, profile.model, **params)


def _engine(op: str, algo: str, ranks: int, sizes, profile: LinkProfile, params: dict, dtype: str = "float32") -> np.ndarray | None:
    """The discrete-event engine on one non-blocking switch whose links give the profile's alpha and bandwidth end to end.

    A message crosses two links there (rank -> switch -> rank), so each link gets half of the
    measured one-way latency and the full bandwidth; gamma is the engine's reduction cost.
    None when simulator.engine is not installed.
    """
    try:
        from simulator.engine import EngineOptions, simulate
        from simulator.topology import switch
    except ImportError:
        return None
    from simulator.algorithms import build_schedule
    from simulator.collective import Collective

    topology = switch(ranks, latency=profile.alpha_s / 2, bandwidth=profile.bandwidth_Bps)
    options = EngineOptions(gamma=profile.gamma_s_per_byte)
    elem = Collective(op, 1, 0, dtype).elem_size
    times = []
    for n in sizes:
        coll = Collective(op, ranks, int(n) - int(n) % elem, dtype)
        times.append(simulate(build_schedule(coll, algo, **params), topology, options).time)
    return np.asarray(times, dtype=np.float64)


PREDICTORS = (Predictor("closed_form", _closed_form), Predictor("engine", _engine))


def predictions(op: str, algo: str, ranks: int, sizes, profile: LinkProfile, params: dict,
                dtype: str = "float32") -> dict[str, np.ndarray]:
    """Every available predictor's seconds per size (closed form always where registered; the engine once installed)."""
    out = {}
    for p in PREDICTORS:
        values = p.fn(op, algo, ranks, sizes, profile, params, dtype)
        if values is not None:
            out[p.name] = np.asarray(values, dtype=np.float64)
    return out


def error_table(sizes, measured, predicted: dict[str, np.ndarray]) -> tuple[list[dict], dict[str, float]]:
    """Per size: measured and each prediction with its signed % error; and each predictor's median |% error| (MdAPE)."""
    measured = np.asarray(measured, dtype=np.float64)
    rows = []
    for i, size in enumerate(sizes):
        row = {"bytes": int(size), "measured_s": float(measured[i])}
        for name, values in predicted.items():
            row[f"{name}_s"] = float(values[i])
            row[f"{name}_err_pct"] = float(100.0 * (values[i] - measured[i]) / measured[i])
        rows.append(row)
    summary = {name: float(np.median(np.abs(100.0 * (values - measured) / measured))) for name, values in predicted.items()}
    return rows, summary
