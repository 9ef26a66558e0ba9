"""`collsim scale SCENARIO --gpus 8:4096`: step time and efficiency as the data-parallel degree grows, per algorithm."""

from __future__ import annotations

import argparse

from simulator.errors import CollsimError
from simulator.fileio import atomic_write
from simulator.parallel import check_jobs, run_cases
from simulator.program.whatif import evaluate
from simulator.topology.presets import NETWORKS, PRESETS
from simulator.units import format_time

from ..output import emit_json, table
from .whatif import add_step_args, step_case

DEFAULT_ALGOS = "ring,hierarchical,double_binary_tree"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "scale", help="step time and scaling efficiency as the GPU count grows: flat ring vs hierarchical vs tree",
        description="Generate the scenario at each GPU count (powers of two from START to END) on a preset machine of "
                    "that many GPUs, run it with each all-reduce algorithm and print step time, exposed communication "
                    "and scaling efficiency (compute-only step / step): where each algorithm stops scaling. "
                    "--html writes a plotly chart.",
        epilog="example: collsim scale ddp --gpus 8:512 --preset dgx-h100 --net ib400 --html scale.html")
    add_step_args(p)
    p.add_argument("--gpus", default="8:512", metavar="START:END", help="GPU counts: powers of two from START to END (default 8:512)")
    p.add_argument("--preset", default="dgx-h100", help=f"machine preset, as many nodes as needed: {', '.join(PRESETS)} (default dgx-h100)")
    p.add_argument("--net", default="ib400", help=f"network between nodes: {', '.join(NETWORKS)} (default ib400)")
    p.add_argument("--algos", default=DEFAULT_ALGOS, help=f"all-reduce algorithms to compare (default {DEFAULT_ALGOS})")
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
    jobs = check_jobs(args.jobs)
    counts = gpu_counts(args.gpus, PRESETS[args.preset].gpus_per_node)
    algos = [a.strip() for a in args.algos.split(",") if a.strip()]
    if not algos:
        raise CollsimError(f"algos: {args.algos!r} names no algorithm; expected names such as {DEFAULT_ALGOS}")
    base_algos = [a for a in args.algo if not a.startswith(("allreduce=", "all_reduce="))]
    cases = []
    for g in counts:
        for algo in algos:
            args.algo = [*base_algos, f"allreduce={algo}"]
            cases.append(step_case(args, machine_spec(args.preset, args.net, g), gpus=g, label=algo))
    rows = run_cases(evaluate, cases, jobs, args.dask, "scale")
    if args.html:
        atomic_write(args.html, _html(rows, args))
    if args.json:
        emit_json({"scenario": args.scenario, "preset": args.preset, "net": args.net, "rows": rows, "html": args.html})
        return 0
    print(f"# scale {args.scenario}: {rows[0]['model']} on {args.preset} nodes over {args.net}; "
          "efficiency = compute-only step / step")
    print(table(["gpus", "algorithm", "step", "exposed comm", "tokens/s", "efficiency", "mode"],
                [[r["gpus"], r["label"], format_time(r["step_s"]), format_time(r["exposed_s"]), round(r["tokens_per_s"]),
                  f"{r['efficiency']:.1%}", r["mode"]] for r in rows]))
    for algo in algos:
        mine = [r for r in rows if r["label"] == algo]
        below = next((r["gpus"] for r in mine if r["efficiency"] < 0.9), None)
        print(f"# {algo}: " + (f"efficiency falls below 90% at {below} GPUs" if below else "90% or better up to "
                               f"{mine[-1]['gpus']} GPUs"))
    if args.html:
        print(f"# wrote {args.html}")
    return 0


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
