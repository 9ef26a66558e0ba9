"""`collsim sweep`: simulated nccl-tests-like tables over a range of sizes, one per algorithm."""

from __future__ import annotations

import argparse
import csv
import io
from functools import lru_cache

from collsim.machine import MachineSetup
from simulator.algorithms import build_schedule, get, names_for
from simulator.algorithms.registry import check_ranks
from simulator.collective import REDUCING, ROOTED, Collective, normalize_op
from simulator.engine import simulate
from simulator.fileio import atomic_write, say_written
from simulator.parallel import check_parallel, run_cases
from simulator.render import table
from simulator.units import parse_size_range

from ..args import add_algo_params, add_collective, add_op, algo_params
from ..engine_args import add_engine_args, machine_setup
from ..limits import ENGINE_TRANSFER_BYTES, Footprint
from ..nccl_log import result_row, save_logs
from ..output import emit_json

COLUMNS = ["size", "count", "type", "redop", "root", "time(us)", "algbw", "busbw"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep", help="simulate algorithms over a range of sizes (nccl-tests-like tables)",
        description="Simulate each algorithm at each size on a topology and print one nccl-tests-like table per "
                    "algorithm: size (B), count (elements), type, redop, root, time (us), algbw and busbw (GB/s).",
        epilog="example: collsim sweep --op allreduce --algo ring --sizes 1KiB:1GiB --topology dgx-h100:nodes=2")
    add_op(p)
    p.add_argument("--algo", help="comma-separated algorithm names (default: every algorithm for the op that can run)")
    p.add_argument("--ranks", type=int, help="number of ranks p (default: every device of the topology)")
    p.add_argument("--sizes", default="1KiB:64MiB", help="START:END[:FACTOR] (powers of 2 by default) or A,B,C (default 1KiB:64MiB)")
    add_collective(p)
    add_algo_params(p)
    add_engine_args(p)
    p.add_argument("--csv", metavar="FILE", help="also write the rows as CSV")
    p.add_argument("--nccl-log", metavar="FILE", help="also write nccl-tests logs (FILE, or FILE-ALGO for each of several algorithms)")
    p.add_argument("--json", action="store_true", help="print JSON")
    from .whatif import add_parallel_args

    add_parallel_args(p)
    p.set_defaults(func=run, _footprint=Footprint(sizes=("size", "sizes"), ranks_from_topology=True, transfer_bytes=ENGINE_TRANSFER_BYTES,
                                         workers=True))


@lru_cache(maxsize=4)
def _machine(setup: MachineSetup, ranks: int):
    """The machine and engine options of a sweep, built once per process from its setup."""
    machine = setup.machine(ranks)
    return machine, setup.options(machine.topology, ranks, machine.gamma)


def sweep_case(case: tuple) -> dict:
    """One (algorithm, size) of a sweep: its row. Runs anywhere (worker processes, Dask workers)."""
    setup, ranks, op, name, size, dtype, root, params = case
    machine, options = _machine(setup, ranks)
    coll = Collective(op, ranks, size, dtype, root)
    schedule = build_schedule(coll, name, **dict(params))
    trace = simulate(schedule, machine.topology, machine.options(options, coll.nbytes))
    return {"algorithm": name, "size": size, "count": coll.count, "type": coll.dtype,
            "redop": coll.redop if op in REDUCING else "none", "root": coll.root if op in ROOTED else -1,
            "time_us": trace.time * 1e6, "algbw_GBps": trace.algbw / 1e9, "busbw_GBps": trace.busbw / 1e9}


def run(args: argparse.Namespace) -> int:
    op = normalize_op(args.op)
    sizes = parse_size_range(args.size or args.sizes, "sizes")
    setup = machine_setup(args)
    machine = setup.machine(args.ranks)
    topology, gamma = machine.topology, machine.gamma
    ranks = args.ranks or topology.num_devices
    topology.check_ranks(ranks)
    for size in sizes:
        Collective(op, ranks, size, args.dtype, args.root)
    names = [n.strip() for n in args.algo.split(",") if n.strip()] if args.algo else names_for(op)
    skipped = {}
    specs = []
    for name in names:
        spec = get(op, name)
        if not args.algo and spec.refusal(ranks):
            skipped[name] = spec.refusal(ranks)
            continue
        check_ranks(spec, ranks)
        specs.append(spec)
    options = setup.options(topology, ranks, gamma)
    check_parallel(args.jobs, args.dask)
    cases = [(setup, ranks, op, spec.name, size, args.dtype, args.root,
              tuple(sorted(algo_params(args, tuple(p.name for p in spec.params)).items())))
             for spec in specs for size in sizes]
    rows = run_cases(sweep_case, cases, args.jobs, args.dask, "sweep")
    if args.csv:
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(rows[0]) if rows else ["algorithm"])
        writer.writeheader()
        writer.writerows(rows)
        atomic_write(args.csv, buf.getvalue())
    logs = []
    if args.nccl_log:
        by_algo = {spec.name: [result_row(r["size"], r["count"], r["type"], r["redop"], r["root"], r["time_us"] * 1e-6, None)
                               for r in rows if r["algorithm"] == spec.name] for spec in specs}
        logs = save_logs(args.nccl_log, op, ranks, by_algo, f"collsim sweep on {topology.name} (simulated)")
    if args.json:
        emit_json({"op": op, "ranks": ranks, "topology": topology.name, "gamma_s_per_byte": gamma,
                   "ports": options.ports, "contention": options.contention, "rows": rows, "skipped": skipped})
        return 0
    print(f"# collsim sweep: {op}, {ranks} ranks on {topology.name} (simulated; times in us, bandwidths in GB/s)")
    for spec in specs:
        mine = [r for r in rows if r["algorithm"] == spec.name]
        print(f"#\n# algorithm: {spec.name}")
        print(table(COLUMNS, [[r["size"], r["count"], r["type"], r["redop"], r["root"], r["time_us"], r["algbw_GBps"],
                               r["busbw_GBps"]] for r in mine]))
        busbw = [r["busbw_GBps"] for r in mine]
        if busbw:
            print(f"# Avg bus bandwidth    : {sum(busbw) / len(busbw):.3f}")
    for name, reason in skipped.items():
        print(f"# {name}: not for {ranks} ranks ({reason})")
    if args.csv:
        say_written(f"# wrote {args.csv}")
    for path in logs:
        say_written(f"# wrote {path}")
    return 0
