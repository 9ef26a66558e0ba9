"""`collsim draw`: an SVG picture of an algorithm, step by step."""

from __future__ import annotations

import argparse

from simulator.algorithms import build_schedule
from simulator.collective import Collective
from simulator.fileio import atomic_write, say_written
from simulator.units import parse_size

from ..args import add_algo_params, add_op, algo_params
from ..diagram import render_svg
from ..limits import Footprint
from ..output import emit_json


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
    p.set_defaults(func=run, _footprint=Footprint(picture=True))


def run(args: argparse.Namespace) -> int:
    elements = args.elements if args.elements is not None else 2 * args.ranks
    coll = Collective(args.op, args.ranks, parse_size(elements, "elements"), "int8", root=args.root)
    schedule = build_schedule(coll, args.algo, **algo_params(args))
    atomic_write(args.output, render_svg(schedule))
    if args.json:
        emit_json({"output": args.output, "op": coll.op, "algorithm": args.algo, "ranks": coll.ranks, "elements": coll.count,
                   "steps": schedule.num_steps, "messages": len(schedule.network_transfers())})
        return 0
    say_written(f"wrote {args.output}: {schedule.num_steps} steps, {len(schedule.network_transfers())} messages")
    return 0
