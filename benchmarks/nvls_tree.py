"""NVLS-tree allreduce (simulator/nvls_tree.py) on the p5 preset, two nodes, held against shared log 03 (not fitted).

    python -m benchmarks.nvls_tree [--data tests/data/nccl-tests]

Runs the engine (unlimited ports) on `switch_view(p5:nodes=2, 16, 0.85, group=8)`: both nodes' NVSwitches as
helper devices, their links at NCCL's Hopper nvlsEfficiency. No latency floor, protocol or NCCL chunk pipelining
is added, so this shows what the schedule alone gives; it is not what `collsim predict` prints.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from simulator.collective import Collective
from simulator.engine import EngineOptions, simulate
from simulator.formats.nccl_tests import read_log
from simulator.nccl_model import NVLS_EFFICIENCY
from simulator.nvls import switch_view, timing_view
from simulator.nvls_tree import nvls_tree_allreduce
from simulator.topology.spec import parse_topology

ROOT = Path(__file__).resolve().parents[1]
LOG = "03_h100_p5_2node_16gpu_efa_allreduce.txt"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT / "tests" / "data" / "nccl-tests")
    args = ap.parse_args(argv)
    log = read_log(args.data / LOG)
    ranks, group = log.ranks, 8
    view = switch_view(parse_topology("p5:nodes=2"), ranks, NVLS_EFFICIENCY["hopper"], group=group)
    print(f"{'bytes':>12} {'measured us':>12} {'nvls_tree us':>12} {'error':>8} {'busbw meas':>10} {'busbw sim':>10}")
    for size, measured in log.measurements():
        if size < 1 << 20:
            continue
        sched = nvls_tree_allreduce(Collective("allreduce", ranks, size, "float32"), group)
        sim = simulate(timing_view(sched), view, EngineOptions(ports=0)).time
        factor = 2 * (ranks - 1) / ranks * size / 1e9
        print(f"{size:>12} {measured * 1e6:>12.1f} {sim * 1e6:>12.1f} {sim / measured - 1:>+8.1%} "
              f"{factor / measured:>10.1f} {factor / sim:>10.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
