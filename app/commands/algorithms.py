"""`collsim algorithms`: every (op, algorithm) with its constraints and parameters."""

from __future__ import annotations

import argparse

from collsim.algorithms import AlgorithmsRequest

from ..show import show


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("algorithms", help="list every algorithm for every collective",
                       description="List every registered (op, algorithm), the rank counts it accepts, its parameters and "
                                   "whether its cost is a closed form or simulated by the event engine on ideal:P.")
    p.add_argument("--op", help="only this collective")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return show(AlgorithmsRequest(args.op).run(), args.json)
