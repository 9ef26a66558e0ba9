"""`collsim verify`: run schedules as real torch.distributed P2P programs, check them against native collectives, time both."""

from __future__ import annotations

import argparse
import csv
import io
import os
import sys
from typing import TYPE_CHECKING

from simulator.algorithms import all_specs, get, names_for
from simulator.algorithms.registry import check_ranks, resolve_params
from simulator.collective import DTYPES, normalize_dtype, normalize_op
from simulator.errors import CollsimError
from simulator.render import table
from simulator.units import parse_size, parse_size_range

from ..args import add_algo_params, add_op, algo_params
from ..limits import Footprint
from ..output import emit_json
from .lint_program import add_max_work, max_work

if TYPE_CHECKING:
    from verify.runner import VerifyRequest

VERIFY_DTYPES = ("float32", "float16", "bfloat16", "int32", "int64")


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
    p.set_defaults(func=run, _footprint=Footprint(sizes=("sizes",), buffers=True, processes=True))


def cases_from_args(args: argparse.Namespace, ranks: int | None) -> tuple[tuple[str, str, dict], ...]:
    """(op, algorithm, params) for what the arguments ask; refusals for this rank count are errors unless --all."""
    if args.all:
        specs = [s for s in all_specs() if not args.op or s.op == normalize_op(args.op)]
    else:
        if not args.op:
            raise CollsimError("op: give --op (e.g. --op allreduce) or --all")
        op = normalize_op(args.op)
        names = [n.strip() for n in args.algo.split(",")] if args.algo else names_for(op)
        specs = [get(op, n) for n in names]
        if ranks is not None and args.algo:
            for spec in specs:
                check_ranks(spec, ranks)
    cases = []
    for spec in specs:
        params = resolve_params(spec, algo_params(args, tuple(x.name for x in spec.params)))
        cases.append((spec.op, spec.name, params))
    return tuple(cases)


def run(args: argparse.Namespace) -> int:
    from verify.launch import in_torchrun

    if args.program:
        return run_program_check(args)
    dtypes, sizes = checked_values(args)
    torchrun = in_torchrun()
    ranks = world_ranks(args, torchrun)
    req = request_from_args(args, ranks, dtypes, sizes)
    try:
        records = run_request(req, ranks, args.backend, args.timeout, torchrun)
    except KeyboardInterrupt:
        print("collsim: verify: interrupted; every rank was stopped", file=sys.stderr)
        return 130
    if records is None:  # a torchrun rank other than 0: rank 0 prints
        return 0
    failed = [r for r in records if r.get("correct") is False]
    meta = {"backend": args.backend, "ranks": ranks, "launcher": "torchrun" if torchrun else "local", "data": args.data,
            "seed": args.seed, "nccl_algo": args.nccl_algo, "nccl_proto": args.nccl_proto}
    if args.csv:
        write_csv(args.csv, records)
    if args.nccl_log:
        write_nccl_logs(args.nccl_log, records, args.backend)
    if args.json:
        emit_json({**meta, "passed": not failed, "records": records})
    else:
        print(render(records, meta, show_native=args.native and not args.no_time))
    return 1 if failed else 0


def checked_values(args: argparse.Namespace) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """Iterations, dtypes, reduction and sizes checked; (dtypes, sizes)."""
    if args.iters < 1 or args.warmup < 0:
        raise CollsimError(f"iters: {args.iters} timed and {args.warmup} warm-up iterations; expected iters >= 1 and warmup >= 0")
    dtypes = tuple(normalize_dtype(d.strip()) for d in args.dtype.split(",") if d.strip())
    for d in dtypes:
        if d not in VERIFY_DTYPES:
            raise CollsimError(f"dtype: {d} is not verified on torch.distributed; expected one of {', '.join(VERIFY_DTYPES)}")
    if args.redop not in ("sum", "prod", "max", "min"):
        raise CollsimError(f"redop: unknown reduction {args.redop!r}; expected one of sum, prod, max, min")
    sizes = tuple(parse_size_range(args.sizes, "sizes", multiple=max(DTYPES[d] for d in dtypes)))
    for d, size in ((d, s) for d in dtypes for s in sizes if s % DTYPES[d]):
        raise CollsimError(f"sizes: {size} bytes is not a whole number of {d} elements ({DTYPES[d]} bytes each); "
                           f"expected a multiple of {DTYPES[d]}")
    return dtypes, sizes


def world_ranks(args: argparse.Namespace, torchrun: bool) -> int:
    """The world size: torchrun's, or --ranks for a local world."""
    if torchrun and args.ranks is not None and args.ranks != int(os.environ["WORLD_SIZE"]):
        raise CollsimError(f"ranks: --ranks {args.ranks} but torchrun started {os.environ['WORLD_SIZE']} processes; leave --ranks out")
    ranks = int(os.environ["WORLD_SIZE"]) if torchrun else args.ranks
    if ranks is None or ranks < 1:
        raise CollsimError(f"ranks: {ranks!r}; give --ranks N (N >= 1) for a local world")
    return ranks


def request_from_args(args: argparse.Namespace, ranks: int, dtypes: tuple[str, ...], sizes: tuple[int, ...]) -> VerifyRequest:
    """The VerifyRequest the arguments ask for on `ranks` ranks (the rest checked; NCCL_ALGO/NCCL_PROTO exported)."""
    if args.timeout <= 0:
        raise CollsimError(f"timeout: {args.timeout} s; expected seconds > 0")
    for key, value in (("NCCL_ALGO", args.nccl_algo), ("NCCL_PROTO", args.nccl_proto)):
        if value:
            os.environ[key] = value  # inherited by the ranks; only NCCL reads them
    from verify.runner import VerifyRequest

    req = VerifyRequest(cases=cases_from_args(args, ranks), sizes=sizes, dtypes=dtypes, mode=args.data, seed=args.seed,
                        root=args.root, redop=args.redop, native=True, timing=not args.no_time, time_native=args.native,
                        iters=args.iters,
                        warmup=args.warmup, time_budget_s=args.budget, check_limit=parse_size(args.check_limit, "check-limit"),
                        slice_bytes=parse_size(args.slice, "slice"))
    if args.root < 0 or args.root >= ranks:
        raise CollsimError(f"root: {args.root} is not a rank of {ranks}; expected 0..{ranks - 1}")
    return req


def run_request(req: VerifyRequest, ranks: int, backend: str, timeout: float, torchrun: bool) -> list[dict] | None:
    """Run a VerifyRequest on a local world or, under torchrun, on this process's rank; rank 0's records."""
    from verify.launch import run_local, run_torchrun
    from verify.runner import verify_job

    if torchrun:
        rank, records = run_torchrun(verify_job, backend, timeout, (req,))
        return records if rank == 0 else None
    return run_local(verify_job, ranks, backend, timeout, (req,))[0]


ROW_FIELDS = ("op", "algorithm", "ranks", "bytes", "count", "dtype", "redop", "root", "correct", "wrong", "wrong_vs_native",
              "time_s", "algbw_GBps", "busbw_GBps", "native_time_s", "native_algbw_GBps", "native_busbw_GBps", "native_wrong")


def write_nccl_logs(path: str, records: list[dict], backend: str) -> None:
    """The timed rows of each (op, algorithm) as nccl-tests logs (the schedule's out-of-place time)."""
    from simulator.formats.nccl_tests import result_row

    from ..nccl_log import save_logs

    timed = [r for r in records if r.get("status") == "ok" and "time_s" in r]
    if not timed:
        raise CollsimError("nccl-log: nothing was timed (was --no-time given?); no log written")
    for op in dict.fromkeys(r["op"] for r in timed):
        mine = [r for r in timed if r["op"] == op]
        rows = {}
        for r in mine:
            rows.setdefault(r["algorithm"], []).append(
                result_row(r["bytes"], r["count"], r["dtype"], r["redop"], r["root"], r["time_s"], r.get("wrong", 0)))
        save_logs(path if len({x["op"] for x in timed}) == 1 else f"{path}.{op}", op, mine[0]["ranks"], rows,
                  f"collsim verify on {backend}")


def write_csv(path: str, records: list[dict]) -> None:
    """The records' main fields as CSV, written atomically."""
    from simulator.fileio import atomic_write

    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=ROW_FIELDS, extrasaction="ignore")
    writer.writeheader()
    for r in records:
        if r.get("status") == "ok":
            writer.writerow(r)
    atomic_write(path, out.getvalue())


def render(records: list[dict], meta: dict, show_native: bool) -> str:
    """nccl-tests-style tables, one per (op, algorithm): the schedule and the native collective side by side."""
    lines = [f"# collsim verify: backend {meta['backend']}, {meta['ranks']} ranks ({meta['launcher']}), data {meta['data']}, "
             f"seed {meta['seed']}"]
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in records:
        groups.setdefault((r["op"], r["algorithm"]), []).append(r)
    timed = any("time_s" in r for r in records)
    for (op, algo), rows in groups.items():
        lines.append("")
        if rows[0].get("status") == "refused":
            lines.append(f"# {op} / {algo}: refused for {rows[0]['ranks']} ranks ({rows[0]['message']})")
            continue
        params = ",".join(f"{k}={v}" for k, v in rows[0]["params"].items() if v is not None)
        lines.append(f"# {op} / {algo}{' (' + params + ')' if params else ''}: schedule as P2P"
                     + (" | native torch.distributed" if show_native and timed else "") + "; time in us, bandwidth in GB/s")
        head = ["size(B)", "count", "type", "redop", "root"]
        if timed:
            head += ["time", "algbw", "busbw"]
        head += ["#wrong"]
        if show_native and timed:
            head += ["|", "time", "algbw", "busbw", "#wrong", "x native"]
        body = []
        for r in rows:
            row = [r["bytes"], r["count"], r["dtype"], r["redop"], r["root"]]
            if timed:
                row += [r["time_s"] * 1e6, r["algbw_GBps"], r["busbw_GBps"]]
            row += [_wrong(r.get("wrong", 0) + (r.get("wrong_vs_native") or 0), r.get("correct"))]
            if show_native and timed:
                row += ["|", r["native_time_s"] * 1e6, r["native_algbw_GBps"], r["native_busbw_GBps"],
                        _wrong(r.get("native_wrong", 0), r.get("native_correct")),
                        r["busbw_GBps"] / r["native_busbw_GBps"] if r["native_busbw_GBps"] else float("nan")]
            body.append(row)
        lines.append(table(head, body, align="rrllr" + "r" * (len(head) - 5)))
        bad = [r for r in rows if r.get("correct") is False]
        for r in bad[:3]:
            lines.append(f"# WRONG: {r['first_error']}")
        if timed:
            mean = sum(r["busbw_GBps"] for r in rows) / len(rows)
            lines.append(f"# Avg bus bandwidth : {mean:.4f}" + (f"   (native {sum(r['native_busbw_GBps'] for r in rows) / len(rows):.4f})"
                                                                  if show_native else ""))
    failed = sum(1 for r in records if r.get("correct") is False)
    checked = sum(1 for r in records if r.get("status") == "ok")
    lines.append(f"# {checked - failed} of {checked} cases correct" + (f", {failed} WRONG" if failed else ""))
    return "\n".join(lines)


def _wrong(n: int, correct) -> str | int:
    return "N/A" if correct is None else int(n)


def run_program_check(args: argparse.Namespace) -> int:
    """`collsim verify --program FILE`: print the outcome; exit 1 on a hang or wrong data."""
    from simulator.program import load_program
    from verify.program import verify_program

    program = load_program(args.program, max_work(args))
    if args.ranks is not None and args.ranks != program.world:
        raise CollsimError(f"ranks: --ranks {args.ranks} but {program.source} has a world of {program.world}; leave --ranks out")
    if args.timeout <= 0:
        raise CollsimError(f"timeout: {args.timeout} s; expected seconds > 0")
    summary = verify_program(program, args.backend, args.timeout)
    if args.json:
        emit_json({"file": args.program, **summary})
    elif summary["passed"]:
        checked = sum(r["checked"] for r in summary["ranks"])
        print(f"OK: {args.program}: {program.world} ranks on {args.backend}, every operation completed, "
              f"{checked} received buffers hold the expected data ({summary['seconds']:.1f} s)")
    else:
        print(f"{args.program}: {summary['error']}")
    return 0 if summary["passed"] else 1
