"""`collsim compare`: model predictions against measured times of the same schedule, per size, with the median error."""

from __future__ import annotations

import argparse

from collsim.compare import CompareRequest

from ..args import add_algo_params, add_op, algo_params
from ..limits import add_limit_args, limits
from ..show import show


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare", help="predicted vs measured time of an algorithm, per size",
        description="Predict the time of one (op, algorithm) with the closed form and the event engine from a "
                    "calibrated link profile, measure the same schedule on a real backend (or read a "
                    "`collsim verify --json` file), and print the error per size and the median absolute percentage error.",
        epilog="examples:\n"
               "  collsim calibrate --ranks 4 --out gloo.yaml\n"
               "  collsim compare --profile gloo.yaml --op allreduce --algo ring --ranks 4 --sizes 64KiB:64MiB:4\n"
               "  collsim compare --profile gloo.yaml --measured run.json --op allgather --algo ring --csv cmp.csv\n"
               "  collsim compare --profile gloo.yaml --op allreduce --algo ring --ranks 4 --trace steps.json")
    add_op(p)
    p.add_argument("--algo", required=True, help="algorithm name")
    p.add_argument("--ranks", type=int, help="ranks (default: the measured file's)")
    p.add_argument("--sizes", default="64KiB:64MiB:4", help="sizes to measure (default 64KiB:64MiB:4; ignored with --measured)")
    p.add_argument("--dtype", default="float32", help="element type of the measured run (default float32)")
    p.add_argument("--profile", help="link profile from `collsim calibrate` or `collsim fit` (alpha per message, bandwidth, "
                                     "gamma, per-size segments; docs/model.md)")
    p.add_argument("--alpha", help="latency per message instead of a profile, e.g. 50us")
    p.add_argument("--bandwidth", help="bandwidth instead of a profile, e.g. 3GB/s")
    p.add_argument("--gamma", default="0", help="reduction cost in s/B with --alpha/--bandwidth (default 0)")
    p.add_argument("--measured", metavar="JSON", help="use this `collsim verify --json` output instead of running")
    p.add_argument("--backend", default="gloo", help="backend to measure on (default gloo)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds any single wait may take (default 60)")
    p.add_argument("--budget", type=float, default=2.0, help="seconds of timing per size (default 2)")
    add_algo_params(p)
    p.add_argument("--csv", metavar="PATH", help="also write the plot-ready rows as CSV")
    p.add_argument("--trace", metavar="FILE", help="also write one Chrome/Perfetto trace: each rank's predicted (engine) and "
                   "measured transfer intervals side by side, for --trace-size (needs a live run, not --measured)")
    p.add_argument("--trace-size", metavar="SIZE", help="the size traced with --trace (default: the first of --sizes)")
    p.add_argument("--json", action="store_true", help="print JSON")
    add_limit_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return show(CompareRequest(args.op, args.algo, args.ranks, args.sizes, args.dtype, args.profile, args.alpha,
                               args.bandwidth, args.gamma, args.measured, args.backend, args.timeout, args.budget,
                               tuple(algo_params(args).items()), args.csv, args.trace, args.trace_size,
                               limits(args)).run(), args.json)
