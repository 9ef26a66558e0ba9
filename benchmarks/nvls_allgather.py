"""Log 08 (8 x B200, allgather) three ways: NCCL's pick (a ring, what `collsim predict` runs), NVLS forced, and
the ring on the datasheet's NVLink links.

    python -m benchmarks.nvls_allgather [--data tests/data/nccl-tests] [--json PATH]

NCCL's tuning model picks a ring for allgather on one 8-GPU B200 node at every size
(simulator/nccl/tuning.py), so `collsim predict` times a ring. This script also times the NVLS
allgather schedule (simulator/nccl/nvls.py) at each size of the log, as run_nvls would if NCCL had
picked it: the switch's links at nvlsEfficiency (0.74 on Blackwell), 25 us once, and the NVLS
step cost NVLS_STEP_FIT, which was fitted on allreduce logs 04, 05, 07 only (not on this log).
`predict` runs rings on NVLink at NCCL's per-link figure (topo.h SM100_NVLINK_BW = 40.1 GB/s of NVLink 5's
50: simulator/nccl/predict.py nccl_graph_view), what NCCL's own graph search assumes a ring reaches; the third
column is the same ring on the datasheet's 50 GB/s links, as `predict` ran it before.
Nothing is fitted here. Errors are (predicted - measured) / measured of the out-of-place time,
sizes >= 1 MiB, as in benchmarks/preset_accuracy.py.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from simulator.collective import busbw_factor
from simulator.formats.nccl_tests import read_log
from simulator.nccl.channels import NVLS_STEP_FIT
from simulator.nccl.machine import parse_machine
from simulator.nccl.predict import predict, run_pick
from simulator.render import table

from .preset_accuracy import MIN_BYTES, ROOT, errors

LOG, PRESET = "08_", "hgx-b200"
DATASHEET_NVLINK_GBPS = 18 * 50.0  # NVLink 5: 18 links x 50 GB/s per direction per GPU


def run(path: Path) -> dict:
    """Measured and both predictions at every size >= 1 MiB of the log."""
    log = read_log(path)
    rows = [(s, t) for s, t in log.measurements() if s >= MIN_BYTES]
    sizes = [s for s, _ in rows]
    measured = np.array([t for _, t in rows])
    machine = parse_machine(PRESET)
    topology = machine.topology
    system, per_node = machine.system(log.ranks)
    ring = predict(machine, log.op, sizes, ranks=log.ranks)
    nvls = [run_pick(topology, system, per_node, log.op, s, log.ranks, "nvls", "Simple", nvls_step_s=NVLS_STEP_FIT[0])
            for s in sizes]
    datasheet = replace(system, bus_bw_GBps=DATASHEET_NVLINK_GBPS)  # the rings' links left at the datasheet's rate
    datasheet_links = [run_pick(topology, datasheet, per_node, log.op, s, log.ranks, r.nccl_algo, r.proto)
                       for s, r in zip(sizes, ring)]
    factor = busbw_factor(log.op, log.ranks)
    out = {"log": path.name, "preset": PRESET, "sizes": sizes, "measured_s": measured.tolist(),
           "nvls_step_us": NVLS_STEP_FIT[0] * 1e6, "load_average": " ".join(f"{x:.2f}" for x in os.getloadavg())}
    for key, preds in (("nccl_pick", ring), ("nvls_forced", nvls), ("ring_at_datasheet_nvlink_bw", datasheet_links)):
        times = np.array([r.time_s for r in preds])
        err = errors(times, measured)
        out[key] = {"algorithms": sorted({f"{r.nccl_algo}/{r.proto}" for r in preds}), "error_pct": err.tolist(),
                    "median_abs_pct": float(np.median(np.abs(err))), "worst_abs_pct": float(np.max(np.abs(err))),
                    "busbw_GBps": [s / t * factor / 1e9 for s, t in zip(sizes, times)]}
    out["measured_busbw_GBps"] = [s / t * factor / 1e9 for s, t in zip(sizes, measured)]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT / "tests" / "data" / "nccl-tests")
    ap.add_argument("--json", type=Path, help="also write the results as JSON")
    args = ap.parse_args(argv)
    path = next(args.data.glob(f"{LOG}*.txt"), None)
    if path is None:
        print(f"data: no log {LOG}*.txt in {args.data}", file=sys.stderr)
        return 2
    res = run(path)
    keys = ("nccl_pick", "nvls_forced", "ring_at_datasheet_nvlink_bw")
    body = [[f"{s >> 20} MiB", f"{m:.0f}"] + [cell for k in keys for cell in (f"{res[k]['busbw_GBps'][i]:.0f}",
                                                                            f"{res[k]['error_pct'][i]:+.1f}%")]
            for i, (s, m) in enumerate(zip(res["sizes"], res["measured_busbw_GBps"]))]
    print(f"{res['log']} on {PRESET}: busbw GB/s and time error per size")
    print(table(["size", "measured", "NCCL's pick", "error", "NVLS forced", "error", "ring, 50 GB/s links", "error"],
                body))
    for key in keys:
        r = res[key]
        print(f"{key}: {', '.join(r['algorithms'])}: median {r['median_abs_pct']:.1f}%, worst {r['worst_abs_pct']:.1f}%")
    print(f"NVLS step cost {res['nvls_step_us']:.1f} us (fitted on allreduce logs 04, 05, 07); "
          f"load average: {res['load_average']}")
    if args.json:
        args.json.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
