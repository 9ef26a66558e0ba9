"""Predicted versus measured: closed forms (and the event engine when present) against real run times."""

from __future__ import annotations

import importlib.util
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


def _closed_form(op: str, algo: str, ranks: int, sizes, profile: LinkProfile, params: dict) -> np.ndarray | None:
    if (op, algo) not in CLOSED_FORMS:
        return None
    return predict(op, algo, ranks, sizes, profile.model, **params)


def _engine(op: str, algo: str, ranks: int, sizes, profile: LinkProfile, params: dict) -> np.ndarray | None:
    """The discrete-event engine's time on a full-duplex switch with the profile's links, when simulator.engine exists."""
    if importlib.util.find_spec("simulator.engine") is None:
        return None
    from simulator import engine

    simulate = getattr(engine, "predict_times", None)
    if simulate is None:
        return None
    return np.asarray(simulate(op, algo, ranks, sizes, profile, **params), dtype=np.float64)


PREDICTORS = (Predictor("closed_form", _closed_form), Predictor("engine", _engine))


def predictions(op: str, algo: str, ranks: int, sizes, profile: LinkProfile, params: dict) -> dict[str, np.ndarray]:
    """Every available predictor's seconds per size."""
    out = {}
    for p in PREDICTORS:
        values = p.fn(op, algo, ranks, sizes, profile, params)
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
