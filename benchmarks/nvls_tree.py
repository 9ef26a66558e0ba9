"""NVLS-tree allreduce (simulator/nccl/nvls_tree.py) on the p5 preset, two nodes, held against shared log 03 (not fitted).

    python -m benchmarks.nvls_tree [--data tests/data/nccl-tests]

Runs the engine (unlimited ports) on `switch_view(p5:nodes=2, 16, 0.85, group=8)`: both nodes' NVSwitches as
helper devices, their links at NCCL's Hopper nvlsEfficiency, unchunked and in 16 pipelined chunks per half-shard.
No latency floor or protocol is added and the chunk count is not NCCL's, so this shows what the schedule alone
gives; it is not what `collsim predict` prints.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from simulator.collective import Collective
from simulator.engine import EngineOptions, simulate
from simulator.formats.nccl_tests import read_log
from simulator.nccl.nvls import switch_view, timing_view
from simulator.nccl.nvls_tree import nvls_tree_allreduce
from simulator.nccl.tuning import NVLS_EFFICIENCY
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
    print(f"{'bytes':>12} {'measured us':>12} {'busbw':>6} | {'chunks':>6} {'sim us':>10} {'error':>8} {'busbw':>6}")
    for size, measured in log.measurements():
        if size < 1 << 20:
            continue
        factor = 2 * (ranks - 1) / ranks * size / 1e9
        for chunks in (1, 16):
            sched = nvls_tree_allreduce(Collective("allreduce", ranks, size, "float32"), group, chunks=chunks)
            sim = simulate(timing_view(sched), view, EngineOptions(ports=0)).time
            print(f"{size:>12} {measured * 1e6:>12.1f} {factor / measured:>6.1f} | {chunks:>6} {sim * 1e6:>10.1f} "
                  f"{sim / measured - 1:>+8.1%} {factor / sim:>6.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
