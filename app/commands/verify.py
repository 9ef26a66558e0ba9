"""`collsim verify`: run schedules as real torch.distributed P2P programs, check them against native collectives, time both."""

from __future__ import annotations

import argparse
import os
import sys

from collsim.verify import VERIFY_DTYPES, VerifyProgramRequest, VerifyRequest

from ..args import add_algo_params, add_op, algo_params
from ..limits import add_limit_args, limits
from ..show import show
from .lint_program import add_max_work, max_work


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "verify", help="run schedules on real torch.distributed backends, check and time them",
        description="Run the simulator's own schedules as torch.distributed point-to-point programs on a local world "
                    "of --ranks processes (gloo on CPU; nccl with one GPU per rank) or under torchrun, check every "
                    "rank's result against the numpy semantics and the native collective (bit-exact for integers; "
                    "floats within (p-1) u sum|x|, see docs/verify.md), and time both the nccl-tests way.",
        epilog="examples:\n"
               "  collsim verify --ranks 4 --op allreduce --algo ring --sizes 1KiB:16MiB --native\n"
               "  collsim verify --ranks 3 --all --sizes 0,56,4104 --dtype float32,int64 --no-time\n"
               "  torchrun --nproc-per-node 8 -m app.cli verify --backend nccl --op allreduce --algo ring --sizes 1MiB:1GiB")
    p.add_argument("--backend", default="gloo", help="gloo (CPU) or nccl (one GPU per rank) (default gloo)")
    p.add_argument("--ranks", type=int, help="processes in the local world (not with torchrun, which sets it)")
    add_op(p, required=False)
    p.add_argument("--algo", help="algorithm, or a comma list (default: every algorithm for the op)")
    p.add_argument("--all", action="store_true", help="every registered (op, algorithm)")
    p.add_argument("--sizes", "--size", dest="sizes", default="1KiB:16MiB:4",
                   help="sizes in bytes: START:END[:FACTOR] or a list (default 1KiB:16MiB:4); whole elements of every --dtype")
    p.add_argument("--dtype", default="float32", help=f"element type, or a comma list: {', '.join(VERIFY_DTYPES)} (default float32)")
    p.add_argument("--root", type=int, default=0, help="root rank for broadcast, reduce, gather, scatter (default 0)")
    p.add_argument("--redop", default="sum", help="reduction: sum, prod, max, min (default sum)")
    p.add_argument("--data", default="random", choices=("random", "exact"),
                   help="random floats in [-1, 1) (checked within the bound) or small integers (checked bit-exactly)")
    p.add_argument("--seed", type=int, default=0, help="seed of the input data (default 0)")
    p.add_argument("--native", action="store_true",
                   help="also time the native torch.distributed collective and show it side by side (it is always used as a check)")
    p.add_argument("--no-time", action="store_true", help="check only, do not time")
    p.add_argument("--iters", type=int, default=20, help="timed iterations per size, fewer for large sizes (default 20)")
    p.add_argument("--warmup", type=int, default=3, help="untimed iterations first (default 3)")
    p.add_argument("--budget", type=float, default=2.0, help="seconds of timing per size and side, which caps --iters (default 2)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds any single wait may take before the run is a hang (default 60)")
    p.add_argument("--check-limit", default="16MiB", help="largest size checked against numpy (every rank's input in memory); "
                                                         "larger sizes are checked against native only (default 16MiB)")
    p.add_argument("--slice", default="0", help="cut transfers above this size into messages of this size, so a reduction "
                                                "overlaps the next slice's arrival (default 0 = never)")
    p.add_argument("--nccl-algo", help="force NCCL_ALGO (e.g. Ring, Tree) for the native collectives")
    p.add_argument("--nccl-proto", help="force NCCL_PROTO (e.g. Simple, LL, LL128)")
    add_algo_params(p)
    p.add_argument("--csv", metavar="PATH", help="also write the rows as CSV")
    p.add_argument("--nccl-log", metavar="PATH", help="also write the schedule's timings as nccl-tests logs "
                                                     "(PATH, or PATH-ALGO per algorithm) that collsim fit reads")
    p.add_argument("--program", metavar="FILE", help="run a program's collectives on real process groups instead (docs/programs.md): "
                                                    "a mis-ordered one ends in an error naming every rank's pending call; "
                                                    "swapped same-shaped calls are caught by their data")
    add_max_work(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    add_limit_args(p)
    p.set_defaults(func=run)


def request(args: argparse.Namespace) -> VerifyRequest:
    """The verify request of the command line (the torchrun world when this process is one of its ranks)."""
    from verify.launch import in_torchrun

    return VerifyRequest(args.ranks, args.op, args.algo, args.all, args.sizes, args.dtype, args.root, args.redop, args.data,
                         args.seed, args.native, not args.no_time, args.iters, args.warmup, args.budget, args.timeout,
                         args.check_limit, args.slice, args.nccl_algo, args.nccl_proto, tuple(algo_params(args).items()),
                         args.backend, int(os.environ["WORLD_SIZE"]) if in_torchrun() else None, args.csv, args.nccl_log,
                         limits(args))


def run(args: argparse.Namespace) -> int:
    if args.program:
        return show(VerifyProgramRequest(args.program, args.ranks, args.backend, args.timeout, max_work(args),
                                         limits(args)).run(),
                    args.json)
    req = request(args)
    try:
        result = req.run()
    except KeyboardInterrupt:
        print("collsim: verify: interrupted; every rank was stopped", file=sys.stderr)
        return 130
    if result.records is None:  # a torchrun rank other than 0: rank 0 prints
        return 0
    return show(result, args.json)
