"""`collsim colocate --topology SPEC JOB JOB...`: several programs on one machine, run together and each alone."""

from __future__ import annotations

import argparse

from collsim.colocate import ColocateRequest, jobs_from_file

from ..limits import add_limit_args, limits
from ..show import show
from .lint_program import PROGRAM_HINT, add_max_work, max_work
from .run_program import parse_algos


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "colocate", help="several programs on one machine: each job's slowdown against running alone, where they meet",
        description="Place two or more programs (docs/programs.md) on one machine, each on its own devices (rank r of "
                    "a program on the r-th device listed), and run them together on the engine as one program: every "
                    "call is expanded into its schedule, so the jobs' collectives share the machine's links. Each job "
                    "also runs alone on the same devices. Prints each job's step alone and together, its slowdown "
                    "(together / alone - 1), and the links that carried bytes of two or more jobs, with each job's "
                    "bytes.",
        epilog="examples:\n  collsim scenario ddp --gpus 16 --out a.yaml && cp a.yaml b.yaml\n"
               "  collsim colocate --topology dgx-h100:nodes=4 a.yaml@0-15 b.yaml@16-31\n"
               "  collsim colocate --topology dgx-h100:nodes=4,routing=static a.yaml@0-7,16-23 b.yaml@8-15,24-31\n"
               "  collsim colocate --topology dgx-h100:nodes=4 jobs.yaml   # jobs: [{program: a.yaml, devices: 0-15}, ...]")
    p.add_argument("jobs", nargs="+", metavar="JOB", help="PROGRAM@DEVICES: a program file and its devices, e.g. "
                                                          "a.yaml@0-15 or b.yaml@16,17,18,19 (two or more jobs); or one "
                                                          "file with a jobs: section (docs/programs.md)")
    p.add_argument("--topology", required=True, metavar="SPEC", help="the machine; see `collsim topologies`")
    p.add_argument("--algo", action="append", default=[], metavar="OP=NAME",
                   help="algorithm for every call of an op, e.g. allreduce=hierarchical (default ring; repeatable)")
    p.add_argument("--top", type=int, default=8, help="shared links to list, the busiest first (default 8)")
    add_max_work(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    add_limit_args(p)
    p.set_defaults(func=run, _memory_hint=PROGRAM_HINT)


def request(args: argparse.Namespace) -> ColocateRequest:
    """The colocate request of the command line (a jobs file read into its PROGRAM@DEVICES jobs)."""
    jobs = jobs_from_file(args.jobs[0]) if len(args.jobs) == 1 and "@" not in args.jobs[0] else tuple(args.jobs)
    return ColocateRequest(topology=args.topology, jobs=jobs, algorithms=tuple(parse_algos(args.algo).items()),
                           max_work=max_work(args), top=args.top, limits=limits(args))


def run(args: argparse.Namespace) -> int:
    return show(request(args).run(), args.json)
