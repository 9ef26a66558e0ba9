"""Presets against the shared nccl-tests logs, no fitting: median and worst |error| over sizes >= 1 MiB.

    python -m benchmarks.preset_accuracy [--data tests/data/nccl-tests] [--json PATH] [--write-docs] [--fit]

For every log, the preset that matches its machine (simulator/nccl/log_presets.py, read off the log's
first line and its README), simulated two ways:

- `simulate`: today's plain path, `collsim simulate --algo ring` (one ring over ranks 0..p-1,
  links alone, no protocol) on the preset the log's machine was mapped to before this script;
- `predict`: `collsim predict` (channels over every rail, NCCL's protocol latencies and
  efficiencies, NCCL's pick of algorithm and protocol) on the machine's own preset.

Errors are (predicted - measured) / measured of the out-of-place time. `--write-docs` rewrites
the table in docs/accuracy.md (between its markers), with the machine's load average.

Two constants are fitted, each only where another log of its kind exists, and every log is
predicted with the value fitted on the *other* logs (leave-one-out); `--fit` prints the value
fitted on all of them (the one a preset would ship):

- the extra latency per network step of a fabric (NET_STEP_FIT in simulator/topology/presets.py),
  over the logs of the same fabric family (FABRIC_FAMILY: the cloud fabrics EFA and TCPXO, whose
  NCCL net plugins are not the IB transport that tuning.cc's network latencies describe);
- the SHM load rate of host-staged GPUs without P2P (SHM_RATE_FIT), over logs 12 and 13.

The `predict` columns of the logs that run NVLS (04, 05, 07) use the NVLS step cost fitted on the
other NVLS logs (benchmarks/nvls_step.py), not the shipped NVLS_STEP_FIT, which was fitted on them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from simulator.algorithms import build_schedule
from simulator.collective import Collective, busbw_factor
from simulator.engine import EngineOptions, simulate
from simulator.fileio import atomic_write
from simulator.formats.nccl_tests import read_log
from simulator.nccl.log_presets import CASES, LOG_NCCL, Case
from simulator.nccl.nvls_fit import leave_one_out as nvls_leave_one_out
from simulator.render import table
from simulator.topology.presets import SHM_RATE_FIT, build_preset
from simulator.topology.spec import parse_topology

from .docs_block import replace_block

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "accuracy.md"
MIN_BYTES = 1 << 20


def simulate_ring(spec: str, op: str, ranks: int, sizes: list[int]) -> np.ndarray:
    """Seconds of `simulate --algo ring` (defaults: one port, contention on, no gamma) at each size."""
    topology = parse_topology(spec)
    out = []
    for size in sizes:
        schedule = build_schedule(Collective(op, ranks, size, "float32"), "ring")
        out.append(simulate(schedule, topology, EngineOptions()).time)
    return np.array(out)


def predict_nccl(spec: str, op: str, ranks: int, sizes: list[int], net_extra_s: float = 0.0,
                 nvls_step_s: float | None = None, nccl_version: str | None = None) -> np.ndarray:
    """Seconds of `collsim predict` at each size, with `net_extra_s` more per network step (and `nvls_step_s`, and
    the latency tables of NCCL release `nccl_version`)."""
    from simulator.nccl.predict import predict

    rows = predict(parse_topology(spec), op, sizes, ranks=ranks, net_extra_s=net_extra_s, nvls_step_s=nvls_step_s,
                   nccl_version=nccl_version)
    return np.array([row.time_s for row in rows])


GRID_S = [k * 20e-6 for k in range(11)]  # 0 .. 200 us
SHM_GRID = [k * 0.05e9 for k in range(20, 81)]  # 1.0 .. 4.0 GB/s
HOST_STAGED = "rtx4090-pcie"  # the preset whose SHM load rate is fitted (SHM_RATE_FIT)


def predict_host_staged(shm_Bps: float, op: str, ranks: int, sizes: list[int]) -> np.ndarray:
    """Seconds of `collsim predict` on rtx4090-pcie with this SHM load rate instead of the shipped one."""
    from simulator.nccl.predict import predict

    topology = build_preset(HOST_STAGED, shm_Bps=shm_Bps)
    return np.array([row.time_s for row in predict(topology, op, sizes, ranks=ranks)])


def network_of(case: Case) -> str | None:
    """The network between the nodes of a case's preset, or None on one node / one NVLink domain."""
    built = parse_topology(case.new_spec).origin
    return built.net if built.nodes > 1 and built.preset.machine.nics_per_node is not None else None


class Fitter:
    """Median |error| of predict on a log for each value of one constant on a grid (cached).

    `run(case, op, ranks, sizes, value)` gives predict's seconds with that value.
    """

    def __init__(self, logs: dict[str, tuple[Case, object]], grid: list[float], run):
        self.logs, self.grid, self.run = logs, grid, run
        self.cache: dict[tuple[str, float], float] = {}

    def median(self, prefix: str, value: float) -> float:
        key = (prefix, value)
        if key not in self.cache:
            case, log = self.logs[prefix]
            rows = [(s, t) for s, t in log.measurements() if s >= MIN_BYTES]
            times = self.run(case, log.op, log.ranks, [s for s, _ in rows], value)
            self.cache[key] = float(np.median(np.abs(errors(times, np.array([t for _, t in rows])))))
        return self.cache[key]

    def fit(self, prefixes: list[str]) -> float:
        """The grid value with the smallest mean median |error| over these logs."""
        return min(self.grid, key=lambda x: np.mean([self.median(p, x) for p in prefixes]))


def _fit_groups(groups: dict[str, list[str]], fitter: Fitter) -> tuple[dict[str, float], dict[str, tuple[float, list[str]]]]:
    held_out, shipped = {}, {}
    for key, prefixes in groups.items():
        if len(prefixes) < 2:
            continue
        for prefix in prefixes:
            held_out[prefix] = fitter.fit([q for q in prefixes if q != prefix])
        shipped[key] = (fitter.fit(prefixes), prefixes)
    return held_out, shipped


# Fabrics fitted together. EFA (SRD through libfabric and the aws-ofi-nccl plugin) and GPUDirect-TCPXO (the FasTrak
# plugin) are cloud transports driven through an external NCCL net plugin; tuning.cc's network latencies describe NCCL's
# own IB transport. Whether they share one extra step cost is a hypothesis the leave-one-out table tests.
CLOUD = "cloud (efa100, efa400, tcpxo200)"
FABRIC_FAMILY = {"efa100": CLOUD, "efa400": CLOUD, "tcpxo200": CLOUD}


def leave_one_out(cases: list[tuple[Case, Path]]) -> tuple[dict[str, float], dict[str, tuple[float, list[str]]]]:
    """Per log, the extra network latency fitted on the other logs of its fabric family (0 if none); per family, the all-log fit."""
    by_family: dict[str, list[str]] = {}
    logs = {}
    for case, path in cases:
        net = network_of(case)
        if net is not None:
            by_family.setdefault(FABRIC_FAMILY.get(net, net), []).append(case.prefix)
            logs[case.prefix] = (case, read_log(path))
    return _fit_groups(by_family, Fitter(logs, GRID_S, lambda case, *a: predict_nccl(case.new_spec, *a)))


def shm_leave_one_out(cases: list[tuple[Case, Path]]) -> tuple[dict[str, float], dict[str, tuple[float, list[str]]]]:
    """Per host-staged log, the SHM load rate fitted on the other such logs; and the rate fitted on all of them."""
    logs = {case.prefix: (case, read_log(path)) for case, path in cases if case.new_spec == HOST_STAGED}
    return _fit_groups({HOST_STAGED: list(logs)}, Fitter(logs, SHM_GRID, lambda case, *a: predict_host_staged(a[-1], *a[:-1])))


def errors(predicted: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """Signed relative error in percent."""
    return (predicted - measured) / measured * 100.0


def evaluate(path: Path, case: Case, net_extra_s: float = 0.0, shm_Bps: float | None = None,
             nvls_step_s: float | None = None, with_simulate: bool = True) -> dict:
    """Both models against one log; predict also with the constant fitted on the *other* logs only.

    `net_extra_s`: extra latency per network step; `nvls_step_s`: the NVLS step cost fitted on the other NVLS logs
    (used in the predict column itself); `shm_Bps`: the SHM load rate of a host-staged preset, whose
    shipped value (SHM_RATE_FIT) was fitted on this log too, so only the held-out run is a prediction.
    `with_simulate` False leaves the `simulate` model out. Each model's entry holds its run time (wall_s, and
    cpu_s: this process's CPU seconds, which other jobs on the machine do not inflate).
    """
    log = read_log(path)
    rows = [(s, t) for s, t in log.measurements() if s >= MIN_BYTES]
    sizes = [s for s, _ in rows]
    measured = np.array([t for _, t in rows])
    factor = busbw_factor(log.op, log.ranks)
    out = {"log": path.name, "machine": case.machine, "op": log.op, "ranks": log.ranks, "sizes": sizes,
           "measured_s": measured.tolist(), "measured_busbw_GBps": sizes[-1] / measured[-1] * factor / 1e9,
           "net_extra_us_fitted_on_other_logs": net_extra_s * 1e6,
           "nvls_step_us_fitted_on_other_logs": None if nvls_step_s is None else nvls_step_s * 1e6,
           "shm_GBps_fitted_on_other_logs": None if shm_Bps is None else shm_Bps / 1e9,
           "fitted_on_this_log": shm_Bps is not None}
    models = [("simulate", case.old_spec, simulate_ring)] if with_simulate else []
    models.append(("predict", case.new_spec, lambda *a: predict_nccl(*a, 0.0, nvls_step_s)))
    release = LOG_NCCL.get(case.prefix)
    if release is not None:
        out["nccl_version"] = release
        models.append(("predict_release", case.new_spec, lambda *a: predict_nccl(*a, 0.0, nvls_step_s, release)))
    if net_extra_s:
        models.append(("predict_loo", case.new_spec, lambda *a: predict_nccl(*a, net_extra_s, nvls_step_s)))
    if shm_Bps is not None:
        models.append(("predict_loo", case.new_spec, lambda _spec, *a: predict_host_staged(shm_Bps, *a)))
    for key, spec, fn in models:
        start, cpu = time.perf_counter(), time.process_time()
        times = fn(spec, log.op, log.ranks, sizes)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        err = errors(times, measured)
        out[key] = {"spec": spec, "median_abs_pct": float(np.median(np.abs(err))),
                    "worst_abs_pct": float(np.max(np.abs(err))), "error_pct": err.tolist(),
                    "busbw_GBps": sizes[-1] / times[-1] * factor / 1e9, "wall_s": wall, "cpu_s": cpu}
    return out


def _loo_label(r: dict) -> str:
    if r["shm_GBps_fitted_on_other_logs"] is not None:
        return f"SHM {r['shm_GBps_fitted_on_other_logs']:.2f} GB/s"
    return f"+{r['net_extra_us_fitted_on_other_logs']:.0f} us/step"


def _cells(result: dict | None) -> list[str]:
    if result is None:
        return ["-", "-", "-", "-"]
    return [f"`{result['spec']}`", f"{result['median_abs_pct']:.1f}%", f"{result['worst_abs_pct']:.0f}%",
            _gbps(result["busbw_GBps"])]


def _gbps(value: float) -> str:
    return f"{value:.1f}" if value < 10 else f"{value:.0f}"


def markdown(results: list[dict], load: str) -> str:
    """The docs table."""
    head = ("| log | machine | p | measured busbw at largest (GB/s) | simulate: preset | median | worst | busbw | "
            "predict: preset | median | worst | busbw | goal met | + constant fitted on other logs | median | worst | "
            "log's NCCL release: latency tables of | median | worst | busbw |")
    lines = [head, "|" + "---|" * 20]
    for r in results:
        pred, loo = r["predict"], r.get("predict_loo")
        judged = loo if r["fitted_on_this_log"] else pred  # a constant fitted on this log is no prediction of it
        met = "yes" if judged["median_abs_pct"] <= 15 and judged["worst_abs_pct"] <= 40 else "no"
        cells = _cells(pred)
        if r["fitted_on_this_log"]:
            cells[1:3] = [f"({c})" for c in cells[1:3]]
        fitted = (["-", "-", "-"] if loo is None else
                  [_loo_label(r), f"{loo['median_abs_pct']:.1f}%", f"{loo['worst_abs_pct']:.0f}%"])
        rel = r.get("predict_release")
        release = (["-"] * 4 if rel is None else
                   [r["nccl_version"], f"{rel['median_abs_pct']:.1f}%", f"{rel['worst_abs_pct']:.0f}%", _gbps(rel["busbw_GBps"])])
        lines.append("| " + " | ".join([r["log"][:2], r["machine"], str(r["ranks"]), _gbps(r["measured_busbw_GBps"]),
                                         *_cells(r["simulate"]), *cells, met, *fitted, *release]) + " |")
    lines.append("")
    nvls = ", ".join(f"{r['log'][:2]} {r['nvls_step_us_fitted_on_other_logs']:.1f} us" for r in results
                     if r["nvls_step_us_fitted_on_other_logs"] is not None)
    lines.append(f"Errors over sizes >= 1 MiB of the out-of-place time; busbw at the log's largest size. NVLS step cost "
                 f"fitted on the other NVLS logs (benchmarks/nvls_step.py): {nvls or 'none'}. In parentheses: "
                 f"the preset's SHM load rate ({SHM_RATE_FIT[0] / 1e9:.2f} GB/s, SHM_RATE_FIT) was fitted on {SHM_RATE_FIT[1]}, "
                 f"this log included, so that error is not a prediction; the goal is judged on the value fitted on the "
                 f"other log. Made by `python -m benchmarks.preset_accuracy --write-docs`; load average when run: {load}.")
    return "\n".join(lines)


def found_logs(data: Path) -> list[tuple[Case, Path]]:
    """The bundled logs present in `data`, each with its case (simulator/nccl/log_presets.py)."""
    return [(case, paths[0]) for case in CASES if (paths := sorted(data.glob(case.prefix + "*.txt")))]


def accuracy_results(data: Path, with_simulate: bool = True) -> tuple[list[dict], dict, dict]:
    """`evaluate` of every log in `data`, each with the constants fitted on the other logs; and the network and SHM
    constants fitted on all of them (what --fit prints)."""
    found = found_logs(data)
    held_out, shipped = leave_one_out(found)
    shm_held_out, shm_shipped = shm_leave_one_out(found)
    nvls_held_out, _ = nvls_leave_one_out([(case.prefix, case.new_spec, path) for case, path in found])
    results = [evaluate(path, case, held_out.get(case.prefix, 0.0), shm_held_out.get(case.prefix),
                        nvls_held_out.get(case.prefix), with_simulate) for case, path in found]
    return results, shipped, shm_shipped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT / "tests" / "data" / "nccl-tests"))
    parser.add_argument("--json", metavar="PATH", help="also write the numbers as JSON")
    parser.add_argument("--write-docs", action="store_true", help="rewrite the table in docs/accuracy.md")
    parser.add_argument("--fit", action="store_true", help="print the network latencies fitted on all logs (NET_STEP_FIT)")
    args = parser.parse_args(argv)
    results, shipped, shm_shipped = accuracy_results(Path(args.data))
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    rows = []
    for r in results:
        s, p = r["simulate"], r["predict"]
        rows.append([r["log"][:34], r["ranks"], f"{r['measured_busbw_GBps']:.0f}",
                     f"{s['median_abs_pct']:.1f}/{s['worst_abs_pct']:.0f}", f"{s['busbw_GBps']:.0f}",
                     "-" if p is None else f"{p['median_abs_pct']:.1f}/{p['worst_abs_pct']:.0f}",
                     "-" if p is None else f"{p['busbw_GBps']:.0f}"])
    print("Presets against the logs, sizes >= 1 MiB: median/worst |error| %, busbw (GB/s) at the largest size")
    print(table(["log", "p", "meas busbw", "simulate med/worst", "busbw", "predict med/worst", "busbw"], rows, "lrrrrrr"))
    print(f"load average: {load}")
    for r in results:
        if "predict_loo" in r:
            loo = r["predict_loo"]
            print(f"{r['log'][:2]}: with {_loo_label(r)} (fitted on the other logs): "
                  f"{loo['median_abs_pct']:.1f}/{loo['worst_abs_pct']:.0f}")
        if "predict_release" in r:
            rel = r["predict_release"]
            print(f"{r['log'][:2]}: with the latency tables of NCCL {r['nccl_version']} (the log's release): "
                  f"{rel['median_abs_pct']:.1f}/{rel['worst_abs_pct']:.0f}, busbw {_gbps(rel['busbw_GBps'])}")
    if args.fit:
        for family, (value, prefixes) in shipped.items():
            print(f"NET_STEP_FIT for {family}: ({value:.6g}, 'logs {', '.join(p[:2] for p in prefixes)}')")
        for value, prefixes in shm_shipped.values():
            print(f"SHM_RATE_FIT = ({value:.6g}, 'logs {', '.join(p[:2] for p in prefixes)}')")
    if args.json:
        atomic_write(args.json, json.dumps({"load_average": load, "results": results}, indent=1))
    if args.write_docs:
        replace_block(DOC, "preset_accuracy", markdown(results, load))
    return 0


if __name__ == "__main__":
    sys.exit(main())
