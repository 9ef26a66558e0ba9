"""`collsim algorithms`: every (op, algorithm) with its constraints and parameters."""

from __future__ import annotations

import argparse

from simulator.algorithms import all_specs
from simulator.render import table

from ..output import emit_json


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("algorithms", help="list every algorithm for every collective",
                       description="List every registered (op, algorithm), the rank counts it accepts, its parameters and "
                                   "whether its cost is a closed form or simulated by the event engine on ideal:P.")
    p.add_argument("--op", help="only this collective")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from simulator.collective import normalize_op

    op = normalize_op(args.op) if args.op is not None else None
    specs = [s for s in all_specs() if op is None or s.op == op]
    rows = [{
        "op": s.op, "algorithm": s.name, "ranks": s.ranks_rule,
        "params": {p.name: {"default": p.default, "help": p.help, "minimum": p.minimum, "maximum": p.maximum} for p in s.params},
        "closed_form": s.cost is not None, "summary": s.summary,
    } for s in specs]
    if args.json:
        emit_json(rows)
        return 0
    print(table(["op", "algorithm", "ranks", "params", "cost", "summary"],
                [[r["op"], r["algorithm"], r["ranks"],
                  ",".join(f"{k}={v['default']}" for k, v in r["params"].items()) or "-",
                  "closed form" if r["closed_form"] else "engine", r["summary"]]
                 for r in rows], align="llllll"))
    return 0
