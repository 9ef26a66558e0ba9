"""`collsim run-program FILE`: run a program of collectives on the engine (step time, overlap, critical path)."""

from __future__ import annotations

import argparse

from collsim.run_program import RunProgramRequest
from simulator.algorithms import get
from simulator.collective import OPS, normalize_op
from simulator.errors import CollsimError
from simulator.program.nccl_timing import AUTO, MEASURED, TIMINGS
from simulator.program.run import MODES, ProgramDeadlock

from ..limits import add_limit_args, limits
from ..output import emit_json
from ..show import show
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
    add_limit_args(p)
    p.set_defaults(func=run, _memory_hint=PROGRAM_HINT)


def request(args: argparse.Namespace) -> RunProgramRequest:
    """The run-program request of the command line."""
    return RunProgramRequest(args.file, max_work(args), args.topology, args.alpha, args.bandwidth,
                             tuple(sorted(parse_algos(args.algo).items())), args.gpus_per_node, args.ports, args.gamma,
                             not args.no_contention, args.mode, args.timing, args.trace, args.calls, limits(args))


def run(args: argparse.Namespace) -> int:
    req = request(args)
    try:
        result = req.run()
    except ProgramDeadlock as exc:
        if args.json:
            emit_json({"file": args.file, "ok": False, "problems": [p.to_dict() for p in exc.problems]})
        raise
    return show(result, args.json)
