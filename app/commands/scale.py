"""`collsim scale SCENARIO --gpus 8:4096`: step time and efficiency as the data-parallel degree grows, per algorithm."""

from __future__ import annotations

import argparse

from collsim.whatif import fallback_note, resolve_timing, step_request
from simulator.errors import CollsimError
from simulator.fileio import atomic_write, say_written
from simulator.parallel import check_parallel, run_cases
from simulator.program.nccl_timing import AUTO
from simulator.program.whatif import calls_timed, evaluate
from simulator.render import table
from simulator.topology.presets import NETWORKS, PRESETS
from simulator.units import format_time

from ..output import emit_json
from .run_program import add_timing_arg
from .whatif import add_step_args, step_template

DEFAULT_ALGOS = "ring,hierarchical,double_binary_tree"
NCCL_LABEL = "nccl"  # the one row per GPU count with NCCL timing (NCCL picks each call's algorithm)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "scale", help="step time and scaling efficiency as the GPU count grows: flat ring vs hierarchical vs tree",
        description="Generate the scenario at each GPU count (powers of two from START to END) on a preset machine of "
                    "that many GPUs, run it and print step time, exposed communication and scaling efficiency "
                    "(compute-only step / step). On a preset NCCL's model knows the collectives are timed as NCCL "
                    "runs them (one 'nccl' row per count; as `collsim whatif`'s default); with --timing links, or "
                    "--algos, --algo for an op NCCL picks for or --mode exact given without --timing, each all-reduce "
                    "algorithm of --algos runs on the links instead: where each algorithm stops scaling. The output "
                    "says which timing ran and why. --html writes a plotly chart.",
        epilog="examples:\n  collsim scale ddp --gpus 8:512 --preset dgx-h100 --net ib400 --html scale.html\n"
               "  collsim scale ddp --gpus 8:512 --algos ring,hierarchical   # collsim's algorithms on the links")
    add_step_args(p)
    add_timing_arg(p, AUTO)
    p.add_argument("--gpus", default="8:512", metavar="START:END", help="GPU counts: powers of two from START to END (default 8:512)")
    p.add_argument("--preset", default="dgx-h100", help=f"machine preset, as many nodes as needed: {', '.join(PRESETS)} (default dgx-h100)")
    p.add_argument("--net", default="ib400", help=f"network between nodes: {', '.join(NETWORKS)} (default ib400)")
    p.add_argument("--algos", help=f"all-reduce algorithms to compare on the links (links timing; default {DEFAULT_ALGOS})")
    p.add_argument("--html", metavar="FILE", help="write an interactive plotly chart (efficiency and step time vs GPUs)")
    p.set_defaults(func=run)


def gpu_counts(text: str, per_node: int) -> list[int]:
    """Powers of two from START to END (each a whole number of nodes once past one node)."""
    start, sep, end = str(text).partition(":")
    try:
        lo, hi = int(start), int(end) if sep else int(start)
    except ValueError:
        raise CollsimError(f"gpus: cannot read {text!r}; expected START:END such as 8:4096") from None
    if lo < 1 or hi < lo or hi > 1 << 16:
        raise CollsimError(f"gpus: {text!r}; expected 1 <= START <= END <= 65536")
    out, g = [], lo
    while g <= hi:
        if g > per_node and g % per_node:
            raise CollsimError(f"gpus: {g} GPUs do not fill whole nodes of {per_node}; expected START a power of two "
                               f"times {per_node} or below it")
        out.append(g)
        g *= 2
    return out


def machine_spec(preset: str, net: str, gpus: int) -> str:
    per = PRESETS[preset].gpus_per_node
    nodes = max(1, gpus // per)
    return preset if nodes == 1 else f"{preset}:nodes={nodes},net={net}"


def run(args: argparse.Namespace) -> int:
    if args.preset not in PRESETS:
        raise CollsimError(f"preset: unknown preset {args.preset!r}; expected one of {', '.join(PRESETS)}")
    if args.net not in NETWORKS:
        raise CollsimError(f"net: unknown network {args.net!r}; expected one of {', '.join(NETWORKS)}")
    check_parallel(args.jobs, args.dask)
    counts = gpu_counts(args.gpus, PRESETS[args.preset].gpus_per_node)
    machines = [machine_spec(args.preset, args.net, g) for g in counts]
    timing = resolve_timing(step_template(args), machines, [f"--algos {args.algos}"] if args.algos is not None else [])
    args.timing = timing.timing
    algos = _algos(args)
    given = list(args.algo)  # with NCCL timing as given (one forced on an op NCCL picks for is refused)
    base_algos = [a for a in given if not a.startswith(("allreduce=", "all_reduce="))]
    cases = []
    for g, machine in zip(counts, machines):
        for algo in algos:
            args.algo = [*base_algos, f"allreduce={algo}"] if algo != NCCL_LABEL else given
            cases.append(step_request(step_template(args), machine=machine, gpus=g, label=algo))
    rows = run_cases(evaluate, cases, args.jobs, args.dask, "scale")
    if args.html:
        atomic_write(args.html, _html(rows, args))
    if args.json:
        emit_json({"scenario": args.scenario, "preset": args.preset, "net": args.net, "timing": timing.timing,
                   "timing_why": timing.why, "rows": rows, "html": args.html})
        return 0
    print(f"# scale {args.scenario}: {rows[0]['model']} on {args.preset} nodes over {args.net}; "
          "efficiency = compute-only step / step")
    print(f"# timing: {timing.why}")
    print(table(["gpus", "algorithm", "step", "exposed comm", "tokens/s", "efficiency", "mode", "calls timed"],
                [[r["gpus"], r["label"], format_time(r["step_s"]), format_time(r["exposed_s"]), round(r["tokens_per_s"]),
                  f"{r['efficiency']:.1%}", r["mode"], calls_timed(r)] for r in rows]))
    _summary(rows, algos)
    if args.html:
        say_written(f"# wrote {args.html}")
    return 0


def _algos(args: argparse.Namespace) -> list[str]:
    """The rows of each GPU count: 'nccl' with NCCL timing (--algos refused), else --algos' all-reduce algorithms."""
    if args.timing == "nccl":
        if args.algos is not None:
            raise CollsimError(f"algos: {args.algos!r} with timing 'nccl': NCCL picks its own all-reduce algorithm; "
                               "expected no --algos, or timing links")
        return [NCCL_LABEL]
    text = DEFAULT_ALGOS if args.algos is None else args.algos
    algos = [a.strip() for a in text.split(",") if a.strip()]
    if not algos:
        raise CollsimError(f"algos: {text!r} names no algorithm; expected names such as {DEFAULT_ALGOS}")
    return algos


def _summary(rows: list[dict], algos: list[str]) -> None:
    """Where each row kind falls below 90% efficiency, and the counts whose calls were not all timed by NCCL."""
    for algo in algos:
        mine = [r for r in rows if r["label"] == algo]
        below = next((r["gpus"] for r in mine if r["efficiency"] < 0.9), None)
        print(f"# {algo}: " + (f"efficiency falls below 90% at {below} GPUs" if below else "90% or better up to "
                               f"{mine[-1]['gpus']} GPUs"))
    for r in rows:
        note = fallback_note(r)
        if note:
            print(f"# {r['gpus']} GPUs: {note}")


def _html(rows: list[dict], args: argparse.Namespace) -> str:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, subplot_titles=("scaling efficiency", "step time (s)"))
    for algo in dict.fromkeys(r["label"] for r in rows):
        mine = [r for r in rows if r["label"] == algo]
        x = [r["gpus"] for r in mine]
        fig.add_trace(go.Scatter(x=x, y=[r["efficiency"] for r in mine], name=algo, mode="lines+markers", legendgroup=algo), 1, 1)
        fig.add_trace(go.Scatter(x=x, y=[r["step_s"] for r in mine], name=algo, mode="lines+markers", legendgroup=algo,
                                 showlegend=False), 1, 2)
    fig.update_xaxes(type="log", title_text="GPUs")
    fig.update_yaxes(tickformat=".0%", row=1, col=1)
    fig.update_layout(title=f"collsim scale {args.scenario}: {rows[0]['model']} on {args.preset} over {args.net}")
    return fig.to_html(include_plotlyjs=True, full_html=True)
