"""Predicted versus measured: closed forms (and the event engine when present) against real run times."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from simulator.cost import CLOSED_FORMS
from simulator.errors import CollsimError
from simulator.profile import LinkProfile
from simulator.profile_adapter import ProfileAdapter
from simulator.readfile import read_data
from simulator.units import parse_size


@dataclass(frozen=True)
class Predictor:
    """A named way to predict seconds for (op, algorithm, ranks, sizes, profile, params); None when it cannot."""

    name: str
    fn: Callable[..., np.ndarray | None]


def _closed_form(op: str, algo: str, ranks: int, sizes, profile: LinkProfile, params: dict, dtype: str = "float32") -> np.ndarray | None:
    if (op, algo) not in CLOSED_FORMS:
        return None
    return ProfileAdapter(profile).predict(op, algo, ranks, sizes, **params)


def _engine(op: str, algo: str, ranks: int, sizes, profile: LinkProfile, params: dict, dtype: str = "float32") -> np.ndarray | None:
    """The discrete-event engine on one non-blocking switch, the profile applied by the profile adapter.

    A message crosses two links there (rank -> switch -> rank): each link gets half of the profile's
    per-message alpha, and each size its segment's regime; gamma is the engine's reduction cost.
    """
    from simulator.algorithms import build_schedule
    from simulator.collective import Collective
    from simulator.engine import simulate
    from simulator.topology import switch

    adapter = ProfileAdapter(profile)
    topology = adapter.topology(switch(ranks))
    elem = Collective(op, 1, 0, dtype).elem_size
    times = []
    for n in sizes:
        coll = Collective(op, ranks, int(n) - int(n) % elem, dtype)
        times.append(simulate(build_schedule(coll, algo, **params), topology, adapter.options(coll.nbytes)).time)
    return np.asarray(times, dtype=np.float64)


PREDICTORS = (Predictor("closed_form", _closed_form), Predictor("engine", _engine))


def predictions(op: str, algo: str, ranks: int, sizes, profile: LinkProfile, params: dict,
                dtype: str = "float32") -> dict[str, np.ndarray]:
    """Every available predictor's seconds per size (the closed form where one is registered, and the engine)."""
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


def load_measured(path: str, op: str, algo: str, ranks: int | None) -> tuple[int, list[int], list[float], dict]:
    """(ranks, sizes, seconds, params) of the timed op/algo rows of a `collsim verify --json` file, each value checked."""
    data = read_data(path, "measured")
    records = data.get("records") if isinstance(data, dict) else None
    if not isinstance(records, list):
        raise CollsimError(f"measured: {path} has no 'records' list; expected `collsim verify --json` output")
    for i, r in enumerate(records):
        if not isinstance(r, dict):
            raise CollsimError(f"measured: {path}: records[{i}] is {str(r)[:40]!r}; expected a mapping "
                               "{op, algorithm, ranks, bytes, time_s} as `collsim verify --json` writes")
    rows = [(i, r) for i, r in enumerate(records) if r.get("op") == op and r.get("algorithm") == algo and "time_s" in r
            and (ranks is None or r.get("ranks") == ranks)]
    if not rows:
        found = sorted({f"{r.get('op')}/{r.get('algorithm')} p={r.get('ranks')}" for r in records})
        raise CollsimError(f"measured: {path} has no timed {op}/{algo}{'' if ranks is None else f' p={ranks}'} rows; it has: "
                           f"{', '.join(found[:10]) or 'nothing timed'}")
    sizes, times = [], []
    for i, r in rows:
        where = f"measured: {path}: records[{i}]"
        size = parse_size(r["bytes"], f"{where} bytes") if isinstance(r.get("bytes"), str) else r.get("bytes")
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise CollsimError(f"{where} bytes is {size!r}; expected a byte count >= 1 such as 65536 or \"64KiB\"")
        t = r["time_s"]
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t <= 0:
            raise CollsimError(f"{where} time_s is {t!r}; expected a finite time in seconds > 0")
        sizes.append(size)
        times.append(float(t))
    p, params = rows[0][1].get("ranks"), rows[0][1].get("params") or {}
    if isinstance(p, bool) or not isinstance(p, int) or p < 1:
        raise CollsimError(f"measured: {path}: ranks is {p!r}; expected a rank count >= 1")
    if not isinstance(params, dict):
        raise CollsimError(f"measured: {path}: params is {params!r}; expected a mapping of algorithm parameters")
    return p, sizes, times, dict(params)
