"""`collsim cost`: closed-form time, algbw and busbw of one or all algorithms for an op (collsim/cost.py)."""

from __future__ import annotations

import argparse

from collsim.cost import CostRequest

from ..args import add_algo_params, add_collective, add_op, algo_params
from ..limits import add_limit_args, limits
from ..show import show


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "cost", help="closed-form alpha-beta-gamma time of algorithms",
        description="Closed-form time, algorithm bandwidth and bus bandwidth (nccl-tests definitions) of one "
                    "algorithm, or of every algorithm for the op when --algo is left out, with the lower bound. "
                    "An algorithm without a closed form is simulated by the event engine on ideal:P instead "
                    "(marked 'engine').",
        epilog="example: collsim cost --op allreduce --ranks 8 --size 1KiB:1GiB:32 --alpha 2us --bandwidth 25GB/s")
    add_op(p)
    p.add_argument("--algo", help="algorithm name (default: compare all for the op)")
    p.add_argument("--ranks", type=int, required=True, help="number of ranks p")
    add_collective(p, size_default="1MiB")
    p.add_argument("--alpha", help="latency per message, with a unit: 2us, 0.5ms, 3e-6s (default 2us)")
    p.add_argument("--bandwidth", help="per-direction link bandwidth: 25GB/s, 400Gbit/s or B/s (default 25GB/s)")
    p.add_argument("--gamma", help="reduction cost in seconds per byte, e.g. 1e-11 (default 0)")
    p.add_argument("--profile", metavar="FILE", help="a link profile (collsim calibrate / fit) instead of --alpha/--bandwidth/"
                                                     "--gamma; a piecewise profile prices each size with its segment")
    add_algo_params(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    add_limit_args(p)
    p.set_defaults(func=run)


def request(args: argparse.Namespace) -> CostRequest:
    """The cost request of the command line."""
    return CostRequest(args.op, args.ranks, args.size, args.algo, args.dtype, args.root, args.alpha, args.bandwidth,
                       args.gamma, args.profile, tuple(sorted(algo_params(args).items())), limits(args))


def run(args: argparse.Namespace) -> int:
    return show(request(args).run(), args.json)
