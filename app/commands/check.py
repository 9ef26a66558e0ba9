"""`collsim check`: run schedules on numpy buffers and check every rank's result."""

from __future__ import annotations

import argparse

from collsim.check import DEFAULT_RANKS, DEFAULT_SIZES, CheckRequest

from ..args import add_algo_params, add_collective, add_op, algo_params
from ..limits import add_limit_args, limits
from ..show import show


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "check", help="prove algorithms right on numpy buffers",
        description="Execute schedules on random per-rank data and check that every rank ends with exactly "
                    "what the collective defines. Exit status 0 only if all pass.",
        epilog="examples: collsim check --op allreduce --algo ring --ranks 6 --size 1MiB\n"
               "          collsim check --all --ranks 1-33")
    add_op(p, required=False)
    p.add_argument("--algo", help="algorithm name")
    p.add_argument("--all", action="store_true", help="check every registered (op, algorithm)")
    p.add_argument("--ranks", default=DEFAULT_RANKS, help=f"rank count, range 2-17 or list 2,4,8 (default {DEFAULT_RANKS})")
    add_collective(p, size_default=DEFAULT_SIZES)
    p.add_argument("--seed", type=int, default=0, help="seed of the random data (default 0)")
    add_algo_params(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    add_limit_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    request = CheckRequest(args.op, args.algo, args.all, args.ranks, args.size, args.dtype, args.root, args.seed,
                           tuple(algo_params(args).items()), limits(args))
    return show(request.run(), args.json)
