"""`collsim check`: run schedules on numpy buffers and check every rank's result."""

from __future__ import annotations

import argparse
from itertools import product

from simulator.algorithms import all_specs, build_schedule, get
from simulator.algorithms.registry import check_ranks
from simulator.collective import Collective, normalize_op
from simulator.errors import CollsimError
from simulator.render import table
from simulator.semantics import check
from simulator.units import parse_rank_range, parse_size_range

from ..args import add_algo_params, add_collective, add_op, algo_params
from ..limits import CHECK_TRANSFER_BYTES, Footprint
from ..output import emit_json, progress

DEFAULT_SIZES = "0,4,28,388,4100"  # 0, 1, 7, 97 and 1025 float32 elements: primes, uneven blocks


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
    p.add_argument("--ranks", default="2-9", help="rank count, range 2-17 or list 2,4,8 (default 2-9)")
    add_collective(p, size_default=DEFAULT_SIZES)
    p.add_argument("--seed", type=int, default=0, help="seed of the random data (default 0)")
    add_algo_params(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run, _footprint=Footprint(sizes=("size",), buffers=True, transfer_bytes=CHECK_TRANSFER_BYTES))


def run(args: argparse.Namespace) -> int:
    ranks = parse_rank_range(args.ranks)
    sizes = parse_size_range(args.size, "size")
    if args.root >= min(ranks):
        raise CollsimError(f"root: {args.root} is not a rank of {min(ranks)}; expected 0..{min(ranks) - 1} for --ranks {args.ranks}")
    if args.all:
        op = normalize_op(args.op) if args.op else None
        specs = [s for s in all_specs() if op is None or s.op == op]
    else:
        if not args.op or not args.algo:
            raise CollsimError("check: give --op and --algo, or --all")
        specs = [get(args.op, args.algo)]
        for p in ranks:
            check_ranks(specs[0], p)
    results = []
    jobs = list(product(specs, ranks))
    for spec, p in progress(jobs, total=len(jobs), desc="check"):
        reason = spec.refusal(p)
        if reason:
            results.append({"op": spec.op, "algorithm": spec.name, "ranks": p, "status": "refused", "message": reason})
            continue
        params = algo_params(args, tuple(x.name for x in spec.params))
        status, message = "pass", ""
        for size in sizes:
            coll = Collective(spec.op, p, size, args.dtype, args.root)
            try:
                schedule = build_schedule(coll, spec.name, **params)
            except CollsimError as exc:
                if not args.all:
                    raise
                status, message = "refused", str(exc)  # e.g. --group that does not divide this rank count
                break
            outcome = check(schedule, seed=args.seed)
            if not outcome.ok:
                status, message = "FAIL", outcome.message
                break
        results.append({"op": spec.op, "algorithm": spec.name, "ranks": p, "status": status, "message": message})
    failed = [r for r in results if r["status"] == "FAIL"]
    if args.json:
        emit_json({"passed": not failed, "sizes": sizes, "dtype": args.dtype, "seed": args.seed, "results": results})
        return 1 if failed else 0
    summary: dict[tuple[str, str], dict[str, list[int]]] = {}
    for r in results:
        summary.setdefault((r["op"], r["algorithm"]), {}).setdefault(r["status"], []).append(r["ranks"])
    print(table(["op", "algorithm", "passed", "refused", "FAILED"],
                [[op, name, _span(s.get("pass", [])), _span(s.get("refused", [])), _span(s.get("FAIL", []))]
                 for (op, name), s in summary.items()], align="lllll"))
    for r in failed:
        print(f"FAIL {r['op']}/{r['algorithm']} p={r['ranks']}: {r['message']}")
    refused = sum(r["status"] == "refused" for r in results)
    print(f"{len(results) - len(failed) - refused} passed, {len(failed)} failed, {refused} refused by design "
          f"(sizes {','.join(map(str, sizes))} B, dtype {args.dtype}, seed {args.seed})")
    return 1 if failed else 0


def _span(values: list[int]) -> str:
    """'1-5,8' for [1,2,3,4,5,8]."""
    if not values:
        return "-"
    out, start, prev = [], values[0], values[0]
    for v in values[1:] + [None]:
        if v is not None and v == prev + 1:
            prev = v
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if v is not None:
            start = prev = v
    return ",".join(out)
