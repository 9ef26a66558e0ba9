"""`collsim draw`: an SVG picture of an algorithm, step by step."""

from __future__ import annotations

import argparse

from collsim.draw import DrawRequest

from ..args import add_algo_params, add_op, algo_params
from ..limits import add_limit_args, limits
from ..show import show


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "draw", help="draw an algorithm step by step (SVG)",
        description="Draw each rank's buffer after every step of an algorithm, with the messages of each step. "
                    "The colours are computed by running the schedule on symbolic data.",
        epilog="example: collsim draw --op allreduce --algo ring --ranks 4 -o ring.svg")
    add_op(p)
    p.add_argument("--algo", required=True, help="algorithm name")
    p.add_argument("--ranks", type=int, required=True, help="number of ranks (at most 16)")
    p.add_argument("--elements", type=int, help="elements in the drawn buffer (default: 2 per rank)")
    p.add_argument("--root", type=int, default=0, help="root rank for rooted collectives (default 0)")
    add_algo_params(p)
    p.add_argument("-o", "--output", required=True, help="SVG file to write")
    p.add_argument("--json", action="store_true", help="print what was drawn as JSON")
    add_limit_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    request = DrawRequest(args.op, args.algo, args.ranks, args.output, args.elements, args.root,
                          tuple(algo_params(args).items()), limits(args))
    return show(request.run(), args.json)
