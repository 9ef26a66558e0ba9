"""Calibrate a preset on one log, predict what it was not fitted on: sizes, then node counts.

    python -m benchmarks.calibration_accuracy [--data tests/data/nccl-tests] [--json PATH] [--write-docs]

1. Sizes: for every shared log, `collsim fit LOG --preset <its machine> --train-sizes :16MiB`
   (simulator/nccl/calibration.py), then the median and worst |error| of the calibrated prediction on
   the sizes >= 64 MiB, which the fit never saw; next to it, the uncalibrated preset on the same sizes,
   and the ring alpha-beta fit on the same training sizes, free (`--piecewise`: 3 regimes cut where the
   data says) and bounded by the preset (`--bounds`, simulator/nccl/fit_bounds.py).
   Goal (issue 10): median <= 10% on every log.
2. Node counts and ops: calibrate on a one-node log (all its sizes), predict the two-node log of the
   same machine: 04 (p5, 1 x 8) -> 03 (p5, 2 x 8); 07 (HGX B200, 1 x 8) -> 05 (GB200 NVL, 2 x 4 in one
   NVLink 5 domain: a different machine of the same NVLink generation, so only a hint); and another
   op on the same machine: 07 (allreduce) -> 08 (allgather, same Vultr HGX B200).
   Errors over sizes >= 1 MiB, as in benchmarks/preset_accuracy.py.

No number here is an error on sizes a fit was trained on, except the `train` column, labelled so.
predict's NVLS step cost (benchmarks/nvls_step.py) is, for every row, the value fitted on the NVLS
logs other than the ones that row calibrates on or predicts.
`--write-docs` rewrites the tables in docs/accuracy.md between its calibration markers.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

from simulator.fileio import atomic_write
from simulator.fit import _unique, fit_measurements, predict_pieces
from simulator.formats.nccl_tests import read_log
from simulator.nccl.calibration import apply
from simulator.nccl.fit_bounds import fit_limited, preset_limits
from simulator.nccl.fitting import fit_calibration
from simulator.nccl.log_presets import CASES, LOG_NCCL
from simulator.nccl.nvls_fit import fit_without, nvls_data
from simulator.nccl.predict import predict
from simulator.render import table
from simulator.topology.spec import parse_topology

from .docs_block import replace_block

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "accuracy.md"
TRAIN_MAX, TEST_MIN, NODE_MIN = 16 << 20, 64 << 20, 1 << 20
TRANSFERS = (("04_", "03_", "p5:nodes=2"), ("07_", "05_", "gb200-nvl4:nodes=2"), ("07_", "08_", "hgx-b200"))


def _err(predicted, measured) -> np.ndarray:
    return np.abs((np.asarray(predicted) - measured) / measured * 100)


def size_holdout(path: Path, spec: str, nvls_step_s: float | None = None, nccl_version: str | None = None) -> dict:
    """Fit on sizes <= 16 MiB, report the error on sizes >= 64 MiB; also fitted with the log's NCCL release if given."""
    log = read_log(path)
    sizes, times = _unique(log.measurements())
    train = sizes <= TRAIN_MAX
    report = fit_calibration(parse_topology(spec), log.op, log.ranks, sizes, times, train, path.name,
                             nvls_step_s=nvls_step_s)
    test = sizes >= TEST_MIN
    release = None
    if nccl_version is not None:
        own = fit_calibration(parse_topology(spec), log.op, log.ranks, sizes, times, train, path.name,
                              nvls_step_s=nvls_step_s, nccl_version=nccl_version)
        err = _err(own.predicted[test], times[test])
        release = {"nccl_version": nccl_version, "train_median_abs_pct": own.median_abs_pct(True),
                   "median_abs_pct": float(np.median(err)), "worst_abs_pct": float(np.max(err))}
    cal, before = _err(report.predicted[test], times[test]), _err(report.before[test], times[test])
    train_log = [(int(s), float(t)) for s, t in zip(sizes[train], times[train])]
    free = fit_measurements(log.op, "ring", log.ranks, train_log, 3).pieces
    bounded = fit_limited(log.op, "ring", log.ranks, sizes[train], times[train],
                          preset_limits(parse_topology(spec), log.op, log.ranks))
    ab = {name: _err(predict_pieces(log.op, "ring", log.ranks, pieces, sizes[test]), times[test])
          for name, pieces in (("alpha_beta", free), ("alpha_beta_bounded", bounded))}
    return {"log": path.name, "preset": spec, "train_median_abs_pct": report.median_abs_pct(True),
            **{f"{k}_median_abs_pct": float(np.median(v)) for k, v in ab.items()},
            **{f"{k}_worst_abs_pct": float(np.max(v)) for k, v in ab.items()},
            "test_sizes": int(test.sum()), "median_abs_pct": float(np.median(cal)), "worst_abs_pct": float(np.max(cal)),
            "preset_median_abs_pct": float(np.median(before)), "preset_worst_abs_pct": float(np.max(before)),
            "identified": list(report.calibration.identified), "calibration": report.calibration.to_dict()["parameters"],
            "release": release}


def node_transfer(one: Path, two: Path, spec: str, nvls_step_s: float | None = None) -> dict:
    """Calibrate on the one-node log (all sizes), predict the two-node log (sizes >= 1 MiB)."""
    src = read_log(one)
    sizes, times = _unique(src.measurements())
    base = parse_topology(src_spec := next(c.new_spec for c in CASES if one.name.startswith(c.prefix)))
    cal = fit_calibration(base, src.op, src.ranks, sizes, times, np.ones(len(sizes), bool), one.name,
                          nvls_step_s=nvls_step_s).calibration
    dst = read_log(two)
    dsizes, dtimes = _unique(dst.measurements())
    keep = dsizes >= NODE_MIN
    target = apply(parse_topology(spec), cal)
    calibrated = np.array([r.time_s for r in predict(target, dst.op, dsizes[keep].astype(int), ranks=dst.ranks,
                                                     nvls_step_s=nvls_step_s)])
    plain = np.array([r.time_s for r in predict(parse_topology(spec), dst.op, dsizes[keep].astype(int), ranks=dst.ranks,
                                                nvls_step_s=nvls_step_s)])
    ce, pe = _err(calibrated, dtimes[keep]), _err(plain, dtimes[keep])
    return {"from": one.name, "from_preset": src_spec, "to": two.name, "to_preset": spec,
            "median_abs_pct": float(np.median(ce)), "worst_abs_pct": float(np.max(ce)),
            "preset_median_abs_pct": float(np.median(pe)), "preset_worst_abs_pct": float(np.max(pe)),
            "identified": list(cal.identified)}


def _release_cells(release: dict | None) -> str:
    if release is None:
        return "- | - | -"
    return f"{release['nccl_version']} | {release['median_abs_pct']:.1f}% | {release['worst_abs_pct']:.0f}%"


def markdown(sizes: list[dict], nodes: list[dict], load: str) -> str:
    """The docs tables."""
    lines = ["| log | preset | train: median (fitted, not a prediction) | sizes >= 64 MiB | calibrated: median | worst | "
             "goal (<= 10%) met | preset alone: median | worst | alpha-beta `--piecewise`: median | worst | "
             "alpha-beta `--bounds`: median | worst | parameters identified | calibrated with the log's NCCL release | "
             "median | worst |", "|" + "---|" * 17]
    for r in sizes:
        lines.append(f"| {r['log'][:2]} | `{r['preset']}` | {r['train_median_abs_pct']:.1f}% | {r['test_sizes']} | "
                     f"{r['median_abs_pct']:.1f}% | {r['worst_abs_pct']:.0f}% | {'yes' if r['median_abs_pct'] <= 10 else 'no'} | "
                     f"{r['preset_median_abs_pct']:.1f}% | {r['preset_worst_abs_pct']:.0f}% | "
                     f"{r['alpha_beta_median_abs_pct']:.0f}% | {r['alpha_beta_worst_abs_pct']:.0f}% | "
                     f"{r['alpha_beta_bounded_median_abs_pct']:.1f}% | {r['alpha_beta_bounded_worst_abs_pct']:.0f}% | "
                     f"{', '.join(r['identified']) or 'none'} | " + _release_cells(r.get("release")) + " |")
    lines += ["", "| calibrated on | predicts | sizes >= 1 MiB: calibrated median | worst | preset alone: median | worst |",
              "|---|---|---|---|---|---|"]
    for r in nodes:
        lines.append(f"| {r['from'][:2]} (`{r['from_preset']}`) | {r['to'][:2]} (`{r['to_preset']}`) | "
                     f"{r['median_abs_pct']:.1f}% | {r['worst_abs_pct']:.0f}% | {r['preset_median_abs_pct']:.1f}% | "
                     f"{r['preset_worst_abs_pct']:.0f}% |")
    lines += ["", f"Made by `python -m benchmarks.calibration_accuracy --write-docs`; load average when run: {load}."]
    return "\n".join(lines)



def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT / "tests" / "data" / "nccl-tests"))
    parser.add_argument("--json", metavar="PATH", help="also write the numbers as JSON")
    parser.add_argument("--write-docs", action="store_true", help="rewrite the tables in docs/accuracy.md")
    parser.add_argument("--only", help="comma list of log prefixes (e.g. 03,04) to run")
    args = parser.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    found = {case.prefix: (case, paths[0]) for case in CASES
             if (paths := sorted(Path(args.data).glob(case.prefix + "*.txt"))) and (only is None or case.prefix[:2] in only)}
    every = [(case.prefix, case.new_spec, paths[0]) for case in CASES
             if (paths := sorted(Path(args.data).glob(case.prefix + "*.txt")))]
    nvls = nvls_data(every)
    sizes = []
    for case, path in found.values():
        sizes.append(size_holdout(path, case.new_spec, fit_without(nvls, {case.prefix}), LOG_NCCL.get(case.prefix)))
        print(f"{path.name}: {sizes[-1]['median_abs_pct']:.1f}% median on sizes >= 64 MiB", file=sys.stderr)
    nodes = [node_transfer(found[a][1], found[b][1], spec, fit_without(nvls, {a, b}))
             for a, b, spec in TRANSFERS if a in found and b in found]
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print("Fit on sizes <= 16 MiB, predict sizes >= 64 MiB: median/worst |error| %")
    print(table(["log", "preset", "train med", "calibrated med/worst", "preset med/worst", "alpha-beta", "bounded alpha-beta"],
                [[r["log"][:34], r["preset"], f"{r['train_median_abs_pct']:.1f}",
                  f"{r['median_abs_pct']:.1f}/{r['worst_abs_pct']:.0f}",
                  f"{r['preset_median_abs_pct']:.1f}/{r['preset_worst_abs_pct']:.0f}",
                  f"{r['alpha_beta_median_abs_pct']:.0f}/{r['alpha_beta_worst_abs_pct']:.0f}",
                  f"{r['alpha_beta_bounded_median_abs_pct']:.1f}/{r['alpha_beta_bounded_worst_abs_pct']:.0f}"]
                 for r in sizes], "lllrrrr"))
    print(table(["calibrated on", "predicts", "calibrated med/worst", "preset med/worst"],
                [[r["from"][:34], r["to"][:34], f"{r['median_abs_pct']:.1f}/{r['worst_abs_pct']:.0f}",
                  f"{r['preset_median_abs_pct']:.1f}/{r['preset_worst_abs_pct']:.0f}"] for r in nodes], "llrr"))
    for r in sizes:
        if r["release"] is not None:
            rel = r["release"]
            print(f"{r['log'][:2]}: calibrated with NCCL {rel['nccl_version']}'s latency tables (the log's release): "
                  f"{rel['median_abs_pct']:.1f}/{rel['worst_abs_pct']:.0f}")
    print(f"load average: {load}")
    if args.json:
        atomic_write(args.json, json.dumps({"load_average": load, "sizes": sizes, "nodes": nodes}, indent=1))
    if args.write_docs:
        replace_block(DOC, "calibration_accuracy", markdown(sizes, nodes, load))
    return 0


if __name__ == "__main__":
    sys.exit(main())
