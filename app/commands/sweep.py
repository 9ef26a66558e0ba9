"""`collsim sweep`: simulated nccl-tests-like tables over a range of sizes, one per algorithm (collsim/sweep.py)."""

from __future__ import annotations

import argparse

from collsim.sweep import DEFAULT_SIZES, SweepRequest, sweep_case

from ..args import add_algo_params, add_collective, add_op, algo_params
from ..engine_args import add_engine_args, machine_setup
from ..limits import add_limit_args, limits
from ..show import show

__all__ = ["add_parser", "run", "sweep_case"]  # sweep_case: the worker function, where tests have long found it


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep", help="simulate algorithms over a range of sizes (nccl-tests-like tables)",
        description="Simulate each algorithm at each size on a topology and print one nccl-tests-like table per "
                    "algorithm: size (B), count (elements), type, redop, root, time (us), algbw and busbw (GB/s).",
        epilog="example: collsim sweep --op allreduce --algo ring --sizes 1KiB:1GiB --topology dgx-h100:nodes=2")
    add_op(p)
    p.add_argument("--algo", help="comma-separated algorithm names (default: every algorithm for the op that can run)")
    p.add_argument("--ranks", type=int, help="number of ranks p (default: every device of the topology)")
    p.add_argument("--sizes", default=DEFAULT_SIZES, help=f"START:END[:FACTOR] (powers of 2 by default) or A,B,C (default {DEFAULT_SIZES})")
    add_collective(p)
    add_algo_params(p)
    add_engine_args(p)
    p.add_argument("--csv", metavar="FILE", help="also write the rows as CSV")
    p.add_argument("--nccl-log", metavar="FILE", help="also write nccl-tests logs (FILE, or FILE-ALGO for each of several algorithms)")
    p.add_argument("--json", action="store_true", help="print JSON")
    from .whatif import add_parallel_args

    add_parallel_args(p)
    add_limit_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    algorithms = tuple(n.strip() for n in args.algo.split(",") if n.strip()) if args.algo else None
    request = SweepRequest(args.op, algorithms, args.size or args.sizes, machine_setup(args), ranks=args.ranks,
                           dtype=args.dtype, root=args.root, params=tuple(algo_params(args).items()), jobs=args.jobs,
                           dask=args.dask, csv=args.csv, nccl_log=args.nccl_log, limits=limits(args))
    return show(request.run(), args.json)
