"""Model vs reality: fit an algorithm's closed form to an nccl-tests log, predict each size out of sample, NCCL's pick."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from simulator.errors import CollsimError
from simulator.fit import FitResult, fit_measurements
from simulator.formats.nccl_tests import NcclTestsLog, parse_log
from simulator.nccl_model import OPS as NCCL_OPS
from simulator.nccl_model import System, choose

LOGS = Path(__file__).resolve().parents[2] / "tests" / "data" / "nccl-tests"
MAX_UPLOAD = 4 << 20  # bytes of an uploaded log


def bundled_logs() -> list[str]:
    """File names of the real nccl-tests logs shipped with collsim."""
    return sorted(p.name for p in LOGS.glob("*.txt")) if LOGS.is_dir() else []


def read_bundled(name: str) -> NcclTestsLog:
    """A bundled log by file name (only names from `bundled_logs`)."""
    if name not in bundled_logs():
        raise CollsimError(f"log: {name!r} is not a bundled log; expected one of {', '.join(bundled_logs())}")
    return parse_log((LOGS / name).read_text(encoding="utf-8", errors="replace"), name)


def read_upload(data: bytes, name: str) -> NcclTestsLog:
    """An uploaded log (at most MAX_UPLOAD bytes, decoded as UTF-8 with bad bytes replaced)."""
    if len(data) > MAX_UPLOAD:
        raise CollsimError(f"log: {name!r} is {len(data):,} bytes, over the limit of {MAX_UPLOAD:,}")
    return parse_log(data.decode("utf-8", errors="replace"), name)


def fit_log(log: NcclTestsLog, algo: str, segments: int = 1) -> FitResult:
    """Fit (op, algo) on the log's out-of-place times; every size also gets an out-of-sample prediction."""
    return fit_measurements(log.op, algo, log.ranks, log.measurements("out"), segments)


def rows(fit: FitResult, log: NcclTestsLog, arch: str, nodes: int) -> list[dict]:
    """Per size: measured, fitted, cross-validated prediction and its error, NCCL's pick and its predicted time."""
    picks, nccl = [None] * len(fit.sizes), [None] * len(fit.sizes)
    if log.op in NCCL_OPS and log.ranks % nodes == 0:
        system = System(arch=arch, gpus_per_node=log.ranks // nodes, nodes=nodes)
        chosen, best, _ = choose(system, log.op, fit.sizes)
        picks = [f"{a}/{p}" for a, p in chosen]
        nccl = list(np.asarray(best) * 1e6)
    return [{"bytes": int(n), "measured (us)": float(t * 1e6), "fitted (us)": float(f * 1e6),
             "predicted out of sample (us)": float(c * 1e6), "error (%)": float(e),
             "NCCL's pick": pk, "NCCL model (us)": nt}
            for n, t, f, c, e, pk, nt in zip(fit.sizes, fit.times, fit.fitted, fit.cv_predicted, fit.cv_errors_pct, picks, nccl)]
