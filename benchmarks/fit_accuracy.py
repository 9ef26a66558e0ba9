"""Accuracy on the shared nccl-tests logs: cross-validated alpha-beta fits, and NCCL's own model against the logs.

    python -m benchmarks.fit_accuracy [--data tests/data/nccl-tests] [--json PATH]

Prints two tables (the ones in docs/fit.md): the median absolute percentage error of the
cross-validated ring fit (one segment, and piecewise with 3) per log, and how far NCCL's tuning
model (collsim nccl-model) is from each log, with the system each log was run on.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from simulator.fit import fit_measurements
from simulator.formats.nccl_tests import read_log
from simulator.nccl.tuning import System, compare
from simulator.profile import atomic_write
from simulator.render import table

ROOT = Path(__file__).resolve().parents[1]

# The system behind each log, read off its first line (hardware named by the source). NICs: per node.
SYSTEMS = {
    "01_": ("2 nodes, GCP A3 Mega, TCPXO 8x200G", System("hopper", 8, 2, nic_bw_GBps=25.0, nics_per_node=8)),
    "02_": ("2 nodes, AWS p4de, EFA 4x100G", System("ampere", 8, 2, nic_bw_GBps=12.5, nics_per_node=4)),
    "03_": ("2 nodes, AWS p5, EFA 32x100G", System("hopper", 8, 2, nic_bw_GBps=12.5, nics_per_node=32)),
    "04_": ("1 node, AWS p5 H100", System("hopper", 8, 1)),
    "05_": ("GB200 NVL, 2x4 GPUs in one NVLink domain (MNNVL = one node to NCCL)", System("blackwell", 8, 1)),
    "06_": ("4 nodes A100, IB 8x200G + SHARP", System("ampere", 8, 4, nic_bw_GBps=25.0, nics_per_node=8)),
    "07_": ("1 node, HGX B200", System("blackwell", 8, 1)),
    "08_": ("1 node, HGX B200", System("blackwell", 8, 1)),
    "12_": ("1 node, 2x RTX 4090 PCIe (sm89: Ampere tables)", System("ampere", 2, 1, link="pcie")),
    "13_": ("1 node, 4x RTX 4090 PCIe (sm89: Ampere tables)", System("ampere", 4, 1, link="pcie")),
}

# The rows under a log in docs/fit.md's model table: the same system with NVLS off, or at NCCL >= 2.28's nvlsEfficiency.
VARIANTS = {
    "04_": (("same, NVLS off", System("hopper", 8, 1, nvls=False)),
            ("same, `--nvls-efficiency 0.85`", System("hopper", 8, 1, nvls_efficiency=0.85))),
    "05_": (("same, NVLS off", System("blackwell", 8, 1, nvls=False)),),
    "07_": (("same, NVLS off", System("blackwell", 8, 1, nvls=False)),
            ("same, `--nvls-efficiency 0.74`", System("blackwell", 8, 1, nvls_efficiency=0.74))),
}


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT / "tests" / "data" / "nccl-tests"))
    parser.add_argument("--json", metavar="PATH", help="also write the numbers as JSON")
    args = parser.parse_args(argv)
    fits, models = [], []
    for path in sorted(Path(args.data).glob("*.txt")):
        log = read_log(path)
        one = fit_measurements(log.op, "ring", log.ranks, log.measurements(), 1)
        three = fit_measurements(log.op, "ring", log.ranks, log.measurements(), 3)
        fits.append({"log": path.name, "op": log.op, "ranks": log.ranks,
                     "alpha_us": one.alpha_s * 1e6, "bandwidth_GBps": one.bandwidth_Bps / 1e9,
                     "cv1_ge_64KiB": one.cv_median_abs_pct_error(), "cv1_all": one.cv_median_abs_pct_error(0),
                     "cv3_ge_64KiB": three.cv_median_abs_pct_error(), "cv3_all": three.cv_median_abs_pct_error(0),
                     "last_segment_GBps": three.pieces[-1].bandwidth_Bps / 1e9})
        base = SYSTEMS.get(path.name[:3])
        if base is None or base[1].ranks != log.ranks:
            continue
        for label, system in (base, *VARIANTS.get(path.name[:3], ())):
            result = compare(system, log.op, log.measurements())
            rows = result["rows"]
            models.append({"log": path.name, "system": label, "ge_64KiB": result["median_abs_pct_error_ge_64KiB"],
                           "all": result["median_abs_pct_error_all"], "pick_small": rows[0]["pick"],
                           "pick_large": rows[-1]["pick"], "measured_busbw_large": rows[-1]["measured_busbw_GBps"],
                           "predicted_busbw_large": rows[-1]["predicted_busbw_GBps"],
                           "measured_small_us": rows[0]["measured_s"] * 1e6, "predicted_small_us": rows[0]["predicted_s"] * 1e6})
    print("Cross-validated ring fit (fit on every other size, predict the rest): median |error| %")
    print(table(["log", "p", "1 seg >=64KiB", "1 seg all", "3 seg >=64KiB", "3 seg all", "alpha(us)", "bw(GB/s)", "last seg bw"],
                [[f["log"][:40], f["ranks"], _pct(f["cv1_ge_64KiB"]), _pct(f["cv1_all"]), _pct(f["cv3_ge_64KiB"]),
                  _pct(f["cv3_all"]), f["alpha_us"], f["bandwidth_GBps"], f["last_segment_GBps"]] for f in fits],
                "lrrrrrrrr"))
    print()
    print("NCCL's tuning model (its pick at each size) against the logs: median |error| %")
    print(table(["log", "system", ">=64KiB", "all", "small: meas/pred us", "pick small", "pick large", "busbw large meas/pred"],
                [[m["log"][:28], m["system"][:40], _pct(m["ge_64KiB"]), _pct(m["all"]),
                  f"{m['measured_small_us']:.1f}/{m['predicted_small_us']:.1f}", m["pick_small"], m["pick_large"],
                  f"{m['measured_busbw_large']:.0f}/{m['predicted_busbw_large']:.0f}"] for m in models],
                "llrrrllr"))
    if args.json:
        atomic_write(args.json, json.dumps({"fits": fits, "nccl_model": models}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
