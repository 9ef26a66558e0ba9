"""How many closed-form evaluations per second `predict` gives on a mixed sweep: every algorithm, many p, 64 sizes.

usage: python -m benchmarks.cost_sweep [--ranks 2:1024] [--sizes 64] [--repeat 2]
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from simulator.algorithms import all_specs
from simulator.cost import LinkModel, predict


def sweep(ranks: list[int], sizes: np.ndarray, model: LinkModel) -> int:
    """Evaluate every algorithm at every rank count it accepts; returns the number of (algorithm, p, size) values."""
    done = 0
    for spec in all_specs():
        for p in ranks:
            if spec.refusal(p):
                continue
            done += len(predict(spec.op, spec.name, p, sizes, model))
    return done


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", default="2:1024", help="rank range LO:HI, every p in it (default 2:1024)")
    parser.add_argument("--sizes", type=int, default=64, help="sizes per (algorithm, p), 1 KiB .. 1 GiB (default 64)")
    parser.add_argument("--repeat", type=int, default=2, help="passes; the first is cold (per-p caches empty), the last warm")
    args = parser.parse_args()
    lo, hi = (int(x) for x in args.ranks.split(":"))
    sizes = np.geomspace(1024, 2 ** 30, args.sizes)
    model = LinkModel(2e-6, 1 / 25e9, 1e-11)
    for i in range(args.repeat):
        start = time.process_time()
        count = sweep(list(range(lo, hi + 1)), sizes, model)
        seconds = time.process_time() - start  # CPU time: steadier than wall time on a shared machine
        print(f"pass {i + 1}: {count} evaluations in {seconds:.2f} s CPU: {count / seconds:,.0f} per second")
    return 0


if __name__ == "__main__":
    sys.exit(main())
