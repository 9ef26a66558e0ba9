"""Model vs reality: fit an algorithm's closed form to measurements (an nccl-tests log or a `collsim verify --json`
result), predict each size out of sample, and put NCCL's own pick next to it."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simulator.errors import CollsimError
from simulator.fit import FitResult, fit_measurements
from simulator.formats.nccl_tests import parse_log
from simulator.nccl_model import OPS as NCCL_OPS
from simulator.nccl_model import System, choose

LOGS = Path(__file__).resolve().parents[2] / "tests" / "data" / "nccl-tests"
MAX_UPLOAD = 4 << 20  # bytes of an uploaded file


@dataclass(frozen=True)
class Measured:
    """Times measured for one collective: where from, op, ranks, (bytes, seconds) pairs, the algorithm if known."""

    source: str
    op: str
    ranks: int
    measurements: tuple[tuple[int, float], ...]
    algorithm: str | None = None


def bundled_logs() -> list[str]:
    """File names of the real nccl-tests logs shipped with collsim."""
    return sorted(p.name for p in LOGS.glob("*.txt")) if LOGS.is_dir() else []


def read_bundled(name: str) -> Measured:
    """A bundled log by file name (only names from `bundled_logs`)."""
    if name not in bundled_logs():
        raise CollsimError(f"log: {name!r} is not a bundled log; expected one of {', '.join(bundled_logs())}")
    log = parse_log((LOGS / name).read_text(encoding="utf-8", errors="replace"), name)
    return Measured(name, log.op, log.ranks, tuple(log.measurements("out")))


def read_upload(data: bytes, name: str, choice: str | None = None) -> Measured:
    """An uploaded nccl-tests log, or a `collsim verify --json` result (`choice` 'op/algorithm p=N' picks its rows)."""
    if len(data) > MAX_UPLOAD:
        raise CollsimError(f"upload: {name!r} is {len(data):,} bytes, over the limit of {MAX_UPLOAD:,}")
    if not name.lower().endswith(".json"):
        log = parse_log(data.decode("utf-8", errors="replace"), name)
        return Measured(name, log.op, log.ranks, tuple(log.measurements("out")))
    choices = verify_choices(data, name)
    pick = choice if choice in choices else choices[0]
    op_algo, _, ranks = pick.partition(" p=")
    op, _, algo = op_algo.partition("/")
    from verify.compare import load_measured

    fd, tmp = tempfile.mkstemp(suffix=".json")  # load_measured reads a path, with all its checks
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        p, sizes, times, _ = load_measured(tmp, op, algo, int(ranks))
    except CollsimError as exc:
        raise CollsimError(str(exc).replace(tmp, repr(name))) from None  # name the file the person uploaded
    finally:
        os.unlink(tmp)
    return Measured(f"{name} ({pick})", op, p, tuple(zip(sizes, times)), algo)


def verify_choices(data: bytes, name: str) -> list[str]:
    """'op/algorithm p=N' for every timed group of records in a `collsim verify --json` file."""
    try:
        records = json.loads(data.decode("utf-8", errors="replace")).get("records")
    except (ValueError, AttributeError):
        records = None
    if not isinstance(records, list):
        raise CollsimError(f"upload: {name!r} is not `collsim verify --json` output (no 'records' list); expected that, "
                           "or an nccl-tests log")
    found = {f"{r.get('op')}/{r.get('algorithm')} p={r.get('ranks')}" for r in records
             if isinstance(r, dict) and "time_s" in r and isinstance(r.get("ranks"), int)}
    if not found:
        raise CollsimError(f"upload: {name!r} has no timed records; run `collsim verify` with timing")
    return sorted(found)


def fit_log(measured: Measured, algo: str, segments: int = 1) -> FitResult:
    """Fit (op, algo) to the measurements; every size also gets an out-of-sample prediction."""
    return fit_measurements(measured.op, algo, measured.ranks, list(measured.measurements), segments)


def rows(fit: FitResult, measured: Measured, arch: str, nodes: int) -> list[dict]:
    """Per size: measured, fitted, cross-validated prediction and its error, NCCL's pick and its predicted time."""
    picks, nccl = [None] * len(fit.sizes), [None] * len(fit.sizes)
    if measured.op in NCCL_OPS and measured.ranks % nodes == 0:
        system = System(arch=arch, gpus_per_node=measured.ranks // nodes, nodes=nodes)
        chosen, best, _ = choose(system, measured.op, fit.sizes)
        picks = [f"{a}/{p}" for a, p in chosen]
        nccl = list(np.asarray(best) * 1e6)
    return [{"bytes": int(n), "measured (us)": float(t * 1e6), "fitted (us)": float(f * 1e6),
             "predicted out of sample (us)": float(c * 1e6), "error (%)": float(e),
             "NCCL's pick": pk, "NCCL model (us)": nt}
            for n, t, f, c, e, pk, nt in zip(fit.sizes, fit.times, fit.fitted, fit.cv_predicted, fit.cv_errors_pct, picks, nccl)]
