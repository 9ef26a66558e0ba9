"""Memory per transfer of `collsim check` and `collsim simulate`: the constants collsim/limits.py estimates with.

Each run is a fresh `python -m app.cli` process whose peak resident memory comes from os.wait4 (ru_maxrss). The
schedule is NCCL's ring allreduce, whose transfer count is 2p(p - 1) by hand arithmetic (p - 1 reduce-scatter and
p - 1 allgather steps, each of p sends), checked against the built schedule at small p. The bytes per transfer are
the slope of a least-squares line through (transfers, peak RSS): the interpreter and imports fall in the intercept.

    python -m benchmarks.transfer_memory              # about 2 minutes on 2 shared cores, 2.5 GB at most
    python -m benchmarks.transfer_memory --quick      # two small points per command
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RING = ["--op", "allreduce", "--algo", "ring"]
COMMANDS = {  # name -> (argv at p ranks, rank counts)
    "check": (lambda p: ["check", *RING, "--ranks", str(p), "--size", "4100"], (600, 900, 1200)),
    "simulate": (lambda p: ["simulate", *RING, "--ranks", str(p), "--topology", f"switch:{p}"], (1024, 1448, 2048)),
}
QUICK = {"check": (300, 600), "simulate": (1024, 1448)}


def ring_transfers(p: int) -> int:
    """Transfers of the ring allreduce on p ranks: 2(p - 1) steps of p sends."""
    return 2 * p * (p - 1)


def peak(argv: list[str]) -> tuple[float, int]:
    """(wall seconds, peak RSS bytes) of `python -m app.cli ARGV` in a fresh process."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "app.cli", *argv], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"collsim {' '.join(argv)} failed")
    return time.monotonic() - start, usage.ru_maxrss * 1024


def slope(points: list[tuple[int, int]]) -> float:
    """Least-squares slope of y over x."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    return sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two small points per command")
    args = parser.parse_args()
    from simulator.algorithms import build_schedule
    from simulator.collective import Collective

    for p in (3, 8, 17):
        assert len(build_schedule(Collective("allreduce", p, 4 * p, "float32"), "ring")) == ring_transfers(p)
    print(f"# load average {os.getloadavg()[0]:.2f} at start, {os.cpu_count()} CPUs")
    for name, (argv, counts) in COMMANDS.items():
        points = []
        for p in QUICK[name] if args.quick else counts:
            seconds, nbytes = peak(argv(p))
            points.append((ring_transfers(p), nbytes))
            print(f"{name:9s} p={p:5d} {ring_transfers(p):10d} transfers {seconds:6.1f} s {nbytes / 2**20:8.1f} MiB",
                  flush=True)
        print(f"{name:9s} {slope(points):.0f} B per transfer (slope)")
    print(f"# load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
