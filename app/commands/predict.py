"""`collsim predict`: what nccl-tests would print on a preset machine (NCCL's picks, timed by the engine)."""

from __future__ import annotations

import argparse

from simulator.collective import REDUCING, TOTAL_SIZE_OPS, normalize_op
from simulator.errors import CollsimError
from simulator.formats.nccl_tests import ResultRow, format_log, nccl_type_name, write_log
from simulator.nccl_model import PROTOCOLS
from simulator.predict import MAX_RANKS, OPS, predict
from simulator.topology import PRESETS
from simulator.topology.spec import parse_topology
from simulator.units import format_size, parse_size_range

from ..output import emit_json, table


def add_parser(sub: argparse._SubParsersAction) -> None:
    machines = ", ".join(n for n, p in PRESETS.items() if p.machine is not None)
    p = sub.add_parser(
        "predict", help="what nccl-tests would print on a preset machine (NCCL's picks, timed by the engine)",
        description="For each size, pick the algorithm, protocol and channels as NCCL's tuning model does for the preset "
                    "machine, build that schedule (rings in rail-aware orders over NCCL's channels, or the pipelined "
                    "per-rail tree across nodes), time it with the engine (NCCL's protocol latencies and efficiencies, "
                    "max-min sharing on every link) and print an nccl-tests table. Accuracy against real logs: "
                    "docs/accuracy.md.",
        epilog="examples:\n"
               "  collsim predict --preset p5:nodes=2 --op allreduce --size 1MiB:8GiB\n"
               "  collsim predict --preset hgx-b200 --op allgather --size 64KiB:1GiB:4 --proto Simple\n"
               "  collsim predict --preset dgx-h100:nodes=2 --nccl-log h100x2.txt --json\n"
               f"machine presets: {machines}")
    p.add_argument("--preset", required=True, help="a machine preset, NAME or NAME:nodes=N[,net=NET]")
    p.add_argument("--op", default="allreduce", help=f"{', '.join(OPS)} (default allreduce)")
    p.add_argument("--size", default="1MiB:8GiB", help="sizes START:END[:FACTOR] or a list (nccl-tests meaning; default 1MiB:8GiB)")
    p.add_argument("--ranks", type=int, help="ranks (default: every GPU of the preset)")
    p.add_argument("--proto", default="auto", help=f"protocol: auto (NCCL's pick per size) or one of {', '.join(PROTOCOLS)}")
    p.add_argument("--nccl-log", metavar="FILE", help="also write the table to FILE (nccl-tests format, out-of-place)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def _proto(text: str) -> str | None:
    if text == "auto":
        return None
    match = {p.lower(): p for p in PROTOCOLS}.get(str(text).lower())
    if match is None:
        raise CollsimError(f"proto: {text!r} is not a protocol; expected auto, {', '.join(PROTOCOLS)}")
    return match


def run(args: argparse.Namespace) -> int:
    op = normalize_op(args.op)
    if op not in OPS:
        raise CollsimError(f"op: predict covers {', '.join(OPS)}; not {op}")
    proto = _proto(args.proto)
    topology = parse_topology(args.preset)
    ranks = args.ranks or topology.num_devices
    if ranks > MAX_RANKS:
        raise CollsimError(f"ranks: {ranks} ranks; predict simulates at most {MAX_RANKS}; expected a smaller preset or --ranks")
    sizes = parse_size_range(args.size, "size", multiple=4)
    rows = predict(topology, op, sizes, ranks=ranks, proto=proto)
    per = 4 * (ranks if op in TOTAL_SIZE_OPS else 1)  # nccl-tests' count: elements per rank
    results = [ResultRow(r.bytes, r.bytes // per, nccl_type_name("float32"), "sum" if op in REDUCING else "none", -1, r.time_s,
                         None, None) for r in rows]
    title = f"collsim predict {args.preset}"
    if args.nccl_log:
        write_log(args.nccl_log, op, ranks, results, title=title)
    if args.json:
        emit_json({"preset": args.preset, "op": op, "ranks": ranks,
                   "rows": [{"bytes": r.bytes, "time_s": r.time_s, "engine_s": r.engine_s, "base_s": r.base_s,
                             "nccl_algorithm": r.nccl_algo, "protocol": r.proto, "schedule": r.algorithm,
                             "channels": r.channels} for r in rows]})
        return 0
    print(format_log(op, ranks, results, title=title), end="")
    print("# picks (NCCL's tuning model) and the schedule the engine ran:")
    print(table(["size", "NCCL algo", "proto", "channels", "schedule"],
                [[format_size(r.bytes), r.nccl_algo, r.proto, r.channels, r.algorithm] for r in rows], "llrrl"))
    if args.nccl_log:
        print(f"wrote nccl-tests log: {args.nccl_log}")
    return 0
