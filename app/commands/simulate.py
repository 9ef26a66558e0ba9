"""`collsim simulate`: run one algorithm's schedule on a topology with the discrete-event engine."""

from __future__ import annotations

import argparse

from collsim.simulate import SimulateRequest

from ..args import add_algo_params, add_collective, add_op, algo_params
from ..engine_args import add_engine_args, machine_setup
from ..limits import add_limit_args, limits
from ..show import show


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "simulate", help="run an algorithm on a topology (flows, max-min sharing, ports, stragglers)",
        description="Run one algorithm's schedule on a machine with the discrete-event engine: every transfer is a flow "
                    "along its route, flows share links max-min fairly, a transfer starts when the data it needs has "
                    "arrived and its ranks have a free port. Prints the time, algbw/busbw (nccl-tests definitions), the "
                    "busiest link and the critical path. See docs/model.md.",
        epilog="examples:\n"
               "  collsim simulate --op allreduce --algo ring --ranks 8 --size 64MiB --topology dgx-h100\n"
               "  collsim simulate --op allreduce --algo ring --ranks 16 --size 1MiB --topology switch:16 "
               "--alpha 1us --bandwidth 25GB/s --straggler 3:20us --trace ring.trace.json")
    add_op(p)
    p.add_argument("--algo", required=True, help="algorithm name (see `collsim algorithms`)")
    p.add_argument("--ranks", type=int, help="number of ranks p (default: every device of the topology)")
    add_collective(p, size_default="1MiB")
    add_algo_params(p)
    add_engine_args(p)
    p.add_argument("--trace", metavar="FILE", help="write a Chrome trace (open in https://ui.perfetto.dev or chrome://tracing)")
    p.add_argument("--export", metavar="FILE", help="write per-transfer data: FILE.csv (rows) or FILE.json (totals, links, transfers)")
    p.add_argument("--json", action="store_true", help="print JSON")
    add_limit_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    request = SimulateRequest(args.op, args.algo, args.size, machine_setup(args), ranks=args.ranks, dtype=args.dtype,
                              root=args.root, params=tuple(algo_params(args).items()), trace=args.trace, export=args.export,
                              limits=limits(args))
    return show(request.run(), args.json)
