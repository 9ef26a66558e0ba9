"""Model vs reality: fit an algorithm's closed form to measurements (an nccl-tests log or a `collsim verify --json`
result), predict each size out of sample, and put NCCL's own pick next to it."""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

import numpy as np

from collsim.fit import FitRequest, Measured
from simulator.errors import CollsimError
from simulator.fit import FitResult
from simulator.formats.nccl_tests import parse_log
from simulator.nccl.tuning import OPS as NCCL_OPS
from simulator.nccl.tuning import System, choose

LOGS = Path(__file__).resolve().parents[2] / "tests" / "data" / "nccl-tests"
MAX_UPLOAD = 4 << 20  # bytes of an uploaded file


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
    """Fit (op, algo) to the measurements as `collsim fit` does; every size also gets an out-of-sample prediction."""
    return FitRequest(measured, algo=algo, segments=segments).run().fit


def rows(fit: FitResult, measured: Measured, arch: str, nodes: int, predictions: list | None = None) -> list[dict]:
    """Per size: measured, fitted, cross-validated prediction and its error, NCCL's pick and its predicted time; with
    `predictions` (predict_log), collsim predict's time, its error and NCCL's algorithm/protocol and channels in it."""
    picks, nccl = [None] * len(fit.sizes), [None] * len(fit.sizes)
    if measured.op in NCCL_OPS and measured.ranks % nodes == 0:
        system = System(arch=arch, gpus_per_node=measured.ranks // nodes, nodes=nodes)
        chosen, best, _ = choose(system, measured.op, fit.sizes)
        picks = [f"{a}/{p}" for a, p in chosen]
        nccl = list(np.asarray(best) * 1e6)
    out = [{"bytes": int(n), "measured (us)": float(t * 1e6), "fitted (us)": float(f * 1e6),
            "predicted out of sample (us)": float(c * 1e6), "error (%)": float(e),
            "NCCL's pick": pk, "NCCL model (us)": nt}
           for n, t, f, c, e, pk, nt in zip(fit.sizes, fit.times, fit.fitted, fit.cv_predicted, fit.cv_errors_pct, picks, nccl)]
    if predictions is not None:
        by_size = {p.bytes: p for p in predictions}
        for row in out:
            p = by_size.get(row["bytes"])
            row["predict (us)"] = None if p is None else p.time_s * 1e6
            row["predict error (%)"] = None if p is None else (p.time_s * 1e6 - row["measured (us)"]) / row["measured (us)"] * 100
            row["predict: NCCL algorithm/protocol"] = None if p is None else f"{p.nccl_algo}/{p.proto}"
            row["predict channels"] = None if p is None else p.channels
    return out

# ---- collsim predict on the log's machine preset (nothing fitted to the log) ----------------------------------------

# ranks the page runs predict on: log 03 (16 ranks) and 06 (32) take 3.8 and 5.3 s at load average 0.9 (benchmarks/reality_predict.py);
# one size at 64 ranks up to 4 s, so a 64-rank log would take minutes
PREDICT_MAX_RANKS = 32
ACCURACY_MIN_BYTES = 1 << 20  # predict's median / worst |error| are over sizes >= 1 MiB, as benchmarks/preset_accuracy.py


def default_preset(log_name: str | None) -> str:
    """The preset of the machine a bundled log came from (simulator/nccl/log_presets.py), '' for any other log."""
    from simulator.nccl.log_presets import preset_of

    return preset_of(log_name) if log_name in bundled_logs() else ""


def preset_topology(text: str, measured: Measured):
    """The machine preset typed on the page, for the log's ranks (field 'preset'); files and builders are refused."""
    from app.ui.inputs import topology_input
    from simulator.nccl.predict import OPS as PREDICT_OPS
    from simulator.topology.presets import MACHINE_PRESETS as names

    if text.split(":", 1)[0].strip() not in names:
        raise CollsimError(f"preset: {text!r} is not a machine preset collsim predict runs; expected one of "
                           f"{', '.join(names)}, optionally :nodes=N")
    if measured.op not in PREDICT_OPS:
        raise CollsimError(f"op: collsim predict covers {', '.join(PREDICT_OPS)}; this log is {measured.op}")
    if measured.ranks > PREDICT_MAX_RANKS:
        raise CollsimError(f"ranks: the log has {measured.ranks} ranks, over this page's limit of {PREDICT_MAX_RANKS} "
                           f"for collsim predict; expected at most {PREDICT_MAX_RANKS} (the command line "
                           "`collsim predict --ranks N` takes more)")
    try:
        return topology_input(text, measured.ranks, "preset")
    except CollsimError as exc:  # the spec's own parser names the field 'topology': on this page it is 'preset'
        message = str(exc)
        raise CollsimError("preset:" + message[len("topology:"):] if message.startswith("topology:") else message) from None


def predict_log(measured: Measured, text: str, nvls_step_s: float | None = None) -> list:
    """`collsim predict` on the preset `text` at every size of the log, with its ranks: one Prediction per size.

    The preset's own constants, as `collsim predict --preset TEXT` uses them; `nvls_step_s` replaces NVLS_STEP_FIT
    (held_out_nvls_step: for a log it was fitted on, the value fitted on the other logs).
    """
    from collsim.predict import PredictRequest

    preset_topology(text.strip(), measured)  # the page's own bounds first
    sizes = tuple(sorted({n for n, _ in measured.measurements}))
    return PredictRequest(preset=text.strip(), op=measured.op, sizes=sizes, ranks=measured.ranks,
                          nvls_step_s=nvls_step_s).run().rows


def predict_accuracy(measured: Measured, predictions: list) -> tuple[float, float] | None:
    """Median and worst |error| (%) of predict over the log's sizes >= 1 MiB (None if it has none)."""
    by_size = {p.bytes: p.time_s for p in predictions}
    errs = [abs(by_size[n] - t) / t * 100 for n, t in measured.measurements if n >= ACCURACY_MIN_BYTES and n in by_size]
    return (float(np.median(errs)), float(np.max(errs))) if errs else None


def fitted_logs(provenance: str) -> list[str]:
    """The log numbers a fitted constant's provenance names ('logs 04, 05, 07; held out: ...' -> 04, 05, 07)."""
    return re.findall(r"\d+", provenance.split(";")[0])


def _number(log_name: str | None) -> str | None:
    """A bundled log's number ('04' of 04_h100_...), None for any other log."""
    return log_name.split("_", 1)[0] if log_name in bundled_logs() else None


def held_out_nvls_step(log_name: str | None) -> float | None:
    """For a bundled log NVLS_STEP_FIT was fitted on, the NVLS step cost fitted on the *other* such logs only
    (simulator/nccl/nvls_fit.py, as benchmarks/preset_accuracy.py predicts it); None for any other log."""
    from simulator.nccl.channels import NVLS_STEP_FIT
    from simulator.nccl.log_presets import CASES
    from simulator.nccl.nvls_fit import fit, nvls_data

    number, logs = _number(log_name), fitted_logs(NVLS_STEP_FIT[1])
    if number not in logs:
        return None
    others = [(case.prefix, case.new_spec, paths[0]) for case in CASES
              if case.prefix[:-1] in logs and case.prefix[:-1] != number and (paths := sorted(LOGS.glob(case.prefix + "*.txt")))]
    data = nvls_data(others)
    return fit(data, sorted(data)) if data else None


def fitted_constants(measured: Measured, text: str, predictions: list,
                     nvls_step_s: float | None = None) -> list[tuple[str, bool]]:
    """The constants fitted on bundled logs that entered these predictions: (what and where from, fitted on this log)."""
    from simulator.nccl.channels import NVLS_STEP_FIT
    from simulator.topology.presets import HOST_STAGED, SHM_RATE_FIT

    number, out = _number(measured.source), []
    if text.split(":", 1)[0].strip() in HOST_STAGED:
        out.append((f"the preset's SHM load rate {SHM_RATE_FIT[0] / 1e9:.2f} GB/s (SHM_RATE_FIT) was fitted on "
                    f"{SHM_RATE_FIT[1]}", number in fitted_logs(SHM_RATE_FIT[1])))
    if any(p.algorithm == "nvls" for p in predictions):
        logs = fitted_logs(NVLS_STEP_FIT[1])
        if nvls_step_s is None:
            out.append((f"the NVLS step cost {NVLS_STEP_FIT[0] * 1e6:.1f} us (NVLS_STEP_FIT) was fitted on logs "
                        f"{', '.join(logs)}", number in logs))
        else:
            out.append((f"the NVLS step cost {nvls_step_s * 1e6:.1f} us was fitted on the other NVLS logs "
                        f"({', '.join(n for n in logs if n != number)}), not this one", False))
    return out


def predict_summary(measured: Measured, text: str, predictions: list, nvls_step_s: float | None = None) -> tuple[str, str]:
    """The predict trace's name and the page's caption line: median and worst |error| over sizes >= 1 MiB, and the
    constants fitted on bundled logs that entered the prediction (naming them)."""
    constants = fitted_constants(measured, text, predictions, nvls_step_s)
    on_this = any(mine for _, mine in constants)
    label = f"collsim predict on {text.strip()} ({'a constant fitted on this log' if on_this else 'nothing fitted'})"
    accuracy = predict_accuracy(measured, predictions)
    stat = (f"median |error| {accuracy[0]:.1f}%, worst {accuracy[1]:.0f}% over sizes >= 1 MiB" if accuracy else
            "no sizes >= 1 MiB to judge it on")
    fitted = "".join(f"; {what}" for what, _ in constants)
    return label, f"{label}: NCCL's algorithm, protocol and channels per size, timed by the engine; {stat}{fitted}."
