"""`collsim simulate`: run one algorithm's schedule on a topology with the discrete-event engine."""

from __future__ import annotations

import argparse

from simulator.algorithms import build_schedule
from simulator.collective import Collective, normalize_op
from simulator.engine import simulate
from simulator.fileio import say_written
from simulator.units import format_size, format_time, parse_size

from ..args import add_algo_params, add_collective, add_op, algo_params
from ..engine_args import add_engine_args, engine_options, resolve_machine
from ..output import emit_json


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "simulate", help="run an algorithm on a topology (flows, max-min sharing, ports, stragglers)",
        description="Run one algorithm's schedule on a machine with the discrete-event engine: every transfer is a flow "
                    "along its route, flows share links max-min fairly, a transfer starts when the data it needs has "
                    "arrived and its ranks have a free port. Prints the time, algbw/busbw (nccl-tests definitions), the "
                    "busiest link and the critical path. See docs/model.md.",
        epilog="examples:\n"
               "  collsim simulate --op allreduce --algo ring --ranks 8 --size 64MiB --topology dgx-h100\n"
               "  collsim simulate --op allreduce --algo ring --ranks 16 --size 1MiB --topology switch:16 "
               "--alpha 1us --bandwidth 25GB/s --straggler 3:20us --trace ring.trace.json")
    add_op(p)
    p.add_argument("--algo", required=True, help="algorithm name (see `collsim algorithms`)")
    p.add_argument("--ranks", type=int, help="number of ranks p (default: every device of the topology)")
    add_collective(p, size_default="1MiB")
    add_algo_params(p)
    add_engine_args(p)
    p.add_argument("--trace", metavar="FILE", help="write a Chrome trace (open in https://ui.perfetto.dev or chrome://tracing)")
    p.add_argument("--export", metavar="FILE", help="write per-transfer data: FILE.csv (rows) or FILE.json (totals, links, transfers)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    op = normalize_op(args.op)
    size = parse_size(args.size, "size")
    machine = resolve_machine(args, args.ranks)
    topology, gamma = machine.topology, machine.gamma
    ranks = args.ranks or topology.num_devices
    topology.check_ranks(ranks)
    coll = Collective(op, ranks, size, args.dtype, args.root)
    options = machine.options(engine_options(args, topology, ranks, gamma), coll.nbytes)
    schedule = build_schedule(coll, args.algo, **algo_params(args))
    trace = simulate(schedule, topology, options)
    if args.trace:
        trace.to_chrome(args.trace)
    if args.export:
        trace.export(args.export)
    summary = trace.summary()
    path = trace.critical_path()
    summary["critical_path"] = {"transfers": len(path), "ids": path[:64]}
    profiled = machine.adapter if args.alpha is None and args.bandwidth is None else None
    closed = _closed_form(coll, args.algo, schedule.params, topology, gamma, options, profiled)
    if closed:
        closed["agrees_with_engine"] = abs(closed["time_s"] - trace.time) <= 1e-9 * max(trace.time, 1e-30)
        summary["closed_form"] = closed
    if args.json:
        emit_json(summary)
        return 0
    params = " ".join(f"{k}={v}" for k, v in schedule.params.items() if v is not None)
    print(f"# {coll.describe()}, {args.algo}{' ' + params if params else ''} on {topology.name} "
          f"(ports {options.ports or 'unlimited'}, contention {'on' if options.contention else 'off'}, gamma {gamma:g} s/B)")
    print(f"time            {format_time(trace.time)}")
    print(f"algbw           {trace.algbw / 1e9:.3f} GB/s")
    print(f"busbw           {trace.busbw / 1e9:.3f} GB/s")
    link = summary["busiest_link"]
    if link:
        print(f"busiest link    {link['name']}: {format_size(link['bytes'])} at {link['bandwidth_Bps'] / 1e9:g} GB/s, "
              f"utilisation {100 * link['utilisation']:.1f}%, busy {100 * link['busy_fraction']:.1f}%, "
              f"peak {link['peak_flows']} concurrent flows")
    print(f"critical path   {len(path)} transfers")
    if closed:
        agree = closed["agrees_with_engine"]
        note = ("exact for this model, and the engine agrees" if closed["exact"] and agree else
                "exact for even blocks; this size splits unevenly" if closed["exact"] else
                "an estimate for this case; see docs/algorithms.md")
        print(f"closed form     {format_time(closed['time_s'])} ({note})")
    print(f"engine          {len(schedule)} transfers, {trace.events} events in {trace.wall_s:.3f} s")
    for what, name in ((args.trace, "chrome trace"), (args.export, "data")):
        if what:
            say_written(f"wrote {name}: {what}")
    return 0


def _closed_form(coll, algo: str, params: dict, topology, gamma: float, options, adapter=None) -> dict | None:
    """The closed form's time when the machine is the one closed forms assume (ideal, one port, no extras);
    with a profile (and no --alpha/--bandwidth), the profile's regime for this size."""
    from dataclasses import replace

    from simulator.cost import CLOSED_FORMS, LinkModel, is_exact, predict

    plain = (topology.ideal and options.ports == 1 and not options.start_delay and not options.slowdown
             and not options.background and not options.header_bytes)
    if not plain or (coll.op, algo) not in CLOSED_FORMS:
        return None
    if adapter is not None:
        model = replace(adapter.link_model(coll.nbytes), gamma=gamma)
    else:
        model = LinkModel.from_bandwidth(topology.uniform_latency, topology.uniform_bandwidth, gamma)
    time_s = float(predict(coll.op, algo, coll.ranks, [coll.nbytes], model, **params)[0])
    return {"time_s": time_s, "exact": bool(is_exact(coll.op, algo, coll.ranks, model, **params))}
