"""`collsim run-program FILE`: run a program of collectives on the engine (step time, overlap, critical path)."""

from __future__ import annotations

import argparse

from simulator.algorithms import get
from simulator.collective import OPS, normalize_op
from simulator.engine import EngineOptions
from simulator.errors import CollsimError
from simulator.fileio import say_written
from simulator.program import load_program
from simulator.program.nccl_timing import AUTO, MEASURED, TIMINGS
from simulator.program.run import MODES, ProgramDeadlock, ProgramResult, run_program
from simulator.program.whatif import calls_timed
from simulator.render import table
from simulator.topology import Topology, ideal, parse_topology
from simulator.topology.spec import larger_preset
from simulator.units import format_time, parse_bandwidth, parse_time

from ..limits import Footprint
from ..output import emit_json
from .lint_program import PROGRAM_HINT, add_max_work, max_work


def add_machine_args(p: argparse.ArgumentParser, default: str | None = None) -> None:
    """Options shared by run-program, whatif and scale: algorithms and link numbers."""
    if default is None:
        p.add_argument("--topology", metavar="SPEC", help="machine (default ideal:P, 2us and 25GB/s per link); see `collsim topologies`")
    p.add_argument("--algo", action="append", default=[], metavar="OP=NAME",
                   help="algorithm for every call of an op, e.g. allreduce=hierarchical (default ring; repeatable)")
    p.add_argument("--gpus-per-node", type=int, help="GPUs per node, for hierarchical groups (default the scenario's, else 8)")
    p.add_argument("--ports", type=int, default=1, help="messages a rank may have in flight each way (default 1; 0 = unlimited)")
    p.add_argument("--gamma", default="0", help="reduction cost in seconds per byte (default 0)")
    p.add_argument("--no-contention", action="store_true", help="no max-min sharing of links between flows")


def add_timing_arg(p: argparse.ArgumentParser, default: str = "links") -> None:
    """--timing: how each collective call is timed. run-program's default is links; whatif's and scale's is auto
    (nccl_timing.default_timing: NCCL timing where NCCL's model knows every machine)."""
    auto = (f"{AUTO} (default): nccl where every machine is a preset NCCL's model knows and no option NCCL timing "
            "refuses (--mode exact, --algo for allreduce, allgather or reduce_scatter, scale's --algos) is given, "
            "else links (the output says which and why); " if default == AUTO else "")
    measured = ("; measured: each call that gives a time (a program from `collsim import-trace`) takes it, the others "
                "are timed on the links" if default == "links" else "")
    p.add_argument("--timing", default=default, choices=(AUTO, *TIMINGS) if default == AUTO else (*TIMINGS, MEASURED),
                   help=auto + f"links{' (default)' if default == 'links' else ''}: collsim's algorithms on the "
                        "machine's links (--algo, --mode); nccl: allreduce, allgather and reduce_scatter as NCCL runs "
                        "them on a preset machine (collsim predict: NCCL's algorithm, protocol, channels and "
                        "latencies), each call timed alone (--mode auto runs isolated; --mode exact and --algo for "
                        "those ops are refused); other calls, and machines NCCL's model does not know, stay on the "
                        "links (docs/whatif.md)" + measured)


def parse_algos(values: list[str]) -> dict[str, str]:
    """{op: algorithm} from OP=NAME items (each checked against the registry)."""
    out = {}
    for text in values:
        op, sep, name = text.partition("=")
        if not sep or not op.strip() or not name.strip():
            raise CollsimError(f"algo: cannot read {text!r}; expected OP=NAME such as allreduce=hierarchical (ops: {', '.join(OPS)})")
        op = normalize_op(op.strip())
        out[op] = get(op, name.strip()).name
    return out


def engine_options(args: argparse.Namespace) -> EngineOptions:
    """Engine options from the shared flags."""
    if args.ports < 0:
        raise CollsimError(f"ports: {args.ports}; expected an integer >= 1, or 0 for unlimited")
    try:
        gamma = float(args.gamma)
    except ValueError:
        raise CollsimError(f"gamma: {args.gamma!r} is not a number; expected seconds per byte such as 1e-11") from None
    options = EngineOptions(gamma=gamma, ports=args.ports, contention=not args.no_contention)
    options.check(1, ideal(1, 0.0, 1.0))
    return options


def machine(spec: str | None, world: int, alpha: str | None = None, bandwidth: str | None = None) -> Topology:
    """The topology of a run, with --alpha/--bandwidth applied."""
    topo = parse_topology(spec) if spec else ideal(world, 2e-6, 25e9)
    lat = parse_time(alpha, "alpha") if alpha else None
    bw = parse_bandwidth(bandwidth) if bandwidth else None
    if lat is not None or bw is not None:
        topo = topo.with_links(lat, bw)
    larger = larger_preset(spec, world) if spec else None
    topo.check_ranks(world, "topology", f"a topology of at least {world} devices for the program's {world} ranks"
                     + (f", such as {larger}" if larger else ""))
    return topo


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run-program", help="run a program of collectives on the engine: step time, exposed communication, critical path",
        description="Run a program (docs/programs.md) on a topology with the discrete-event engine: every collective "
                    "expands to its algorithm's schedule on its group's ranks, all sharing the machine's links and "
                    "ports; compute occupies its rank's stream. Prints the step time, compute, communication, the "
                    "communication no compute overlaps (exposed), per-call start and end, and the critical path. A "
                    "program whose ranks call in an order that cannot finish stops with the wait-for cycle named.",
        epilog="examples:\n  collsim scenario ddp --gpus 16 --out ddp.yaml\n"
               "  collsim run-program ddp.yaml --topology dgx-h100:nodes=2 --trace step.trace.json\n"
               "  collsim run-program ddp.yaml --topology dgx-h100:nodes=2 --timing nccl")
    p.add_argument("file", metavar="FILE", help="program file (.yaml, .yml or .json)")
    add_max_work(p)
    add_machine_args(p)
    p.add_argument("--alpha", metavar="TIME", help="set every link's latency")
    p.add_argument("--bandwidth", metavar="BW", help="set every link's bandwidth per direction")
    p.add_argument("--trace", metavar="FILE", help="write a Chrome trace (one track per rank per stream, and the links)")
    p.add_argument("--mode", default="auto", choices=MODES,
                   help="exact: every call expanded into its schedule (calls share links); isolated: each distinct call "
                        "timed alone, then run as one step (large programs); auto (default): exact up to about 2M transfers")
    add_timing_arg(p)
    p.add_argument("--calls", type=int, default=12, help="calls of rank 0 to list (default 12; 0 = none)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run, _memory_hint=PROGRAM_HINT, _footprint=Footprint())


def run(args: argparse.Namespace) -> int:
    if args.calls < 0:
        raise CollsimError(f"calls: {args.calls}; expected an integer >= 0 (calls of rank 0 to list, 0 = none)")
    program = load_program(args.file, max_work(args))
    set_links = [(name, value) for name, value in (("alpha", args.alpha), ("bandwidth", args.bandwidth)) if value]
    if args.timing == "nccl" and set_links:
        name, value = set_links[0]
        raise CollsimError(f"{name}: {value!r} with timing 'nccl': NCCL's model knows only the preset's own links; "
                           f"expected no --{name}, or timing links")
    topology = machine(args.topology, program.world, args.alpha, args.bandwidth)
    try:
        result = run_program(program, topology, engine_options(args), parse_algos(args.algo), args.gpus_per_node,
                             mode=args.mode, timing=args.timing)
    except ProgramDeadlock as exc:
        if args.json:
            emit_json({"file": args.file, "ok": False, "problems": [p.to_dict() for p in exc.problems]})
        raise
    if args.trace:
        result.to_chrome(args.trace)
    if args.json:
        emit_json({"file": args.file, "topology": topology.name, "ok": True, **result.summary()})
        return 0
    report(result, args.file, topology.name, args.calls)
    if args.trace:
        say_written(f"# wrote {args.trace}")
    return 0


def _timed_note(totals: dict) -> str:
    """How the calls were timed, for the header line (nothing for links)."""
    if totals["timing"] == "nccl":
        return f"; calls timed {calls_timed(totals)} (NCCL: as collsim predict times them)"
    if totals["timing"] == MEASURED:
        timed = totals["timed"]
        rest = sum(timed.values()) - timed.get(MEASURED, 0)
        return f"; calls timed: {timed.get(MEASURED, 0)} at their measured time, {rest} on the links"
    return ""


def report(result: ProgramResult, name: str, topology: str, calls: int = 12) -> None:
    """The totals, rank 0's first calls and the critical path, as text."""
    t = result.totals()
    ranks = result.program.meta.get("represents", result.program.world)  # a symmetric run runs rank 0 for all
    print(f"# {name}: {ranks} ranks on {topology}; {t['mode']} run, {t['transfers']:,} transfers, "
          f"{t['events']:,} events" + _timed_note(t))
    print(table(["step", "compute", "communication", "exposed", "rank"],
                [[format_time(t["step_s"]), format_time(t["compute_s"]), format_time(t["comm_s"]),
                  format_time(t["exposed_s"]), t["rank"]]]))
    rows = [[o["label"], o["algorithm"] or "", format_time(o["start"]), format_time(o["end"]), format_time(o["end"] - o["start"])]
            for o in result.collectives() if o["rank"] == 0 and o["end"] is not None][:max(calls, 0)]
    if rows:
        print("# rank 0's calls")
        print(table(["call", "algorithm", "start", "end", "time"], rows))
    path = result.critical_path()
    if path:
        comp = sum(x["end_s"] - x["start_s"] for x in path if x["kind"] == "compute")
        comm = sum(x["end_s"] - x["start_s"] for x in path if x["kind"] != "compute")
        print(f"# critical path: {len(path)} segments, {format_time(comp)} of compute, {format_time(comm)} of communication; "
              f"the last {min(len(path), 8)}:")
        print(table(["what", "kind", "from", "to", "links"],
                    [[s["what"], s["kind"], format_time(s["start_s"]), format_time(s["end_s"]), ", ".join(s.get("links", []))[:60]]
                     for s in path[-8:]]))
