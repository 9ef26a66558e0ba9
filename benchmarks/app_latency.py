"""Time from a widget change to a page's figures being built, per page of the app, at p = 8, 16, 32.

The same functions the pages call, without the browser and without Streamlit's cache (a changed widget
is a new choice); 'step (move)' is the step slider alone, with the run already built (the page caches it); the model
vs reality page's `collsim predict` column is timed on its own (the page caches it per log).
Goal (issue 11): under 0.3 s at p = 16 for every page, under 1 s at p = 32. The what-if page's default view (NCCL's
picks, as `collsim predict` times them) is measured too: predict runs NCCL's own schedules, far more transfers.

usage: python -m benchmarks.app_latency [--ranks 8,16,32] [--repeat 3] [--pages WORD,...] [--json PATH]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable

from benchmarks.build_schedules import write_json
from simulator.render import table
from simulator.units import parse_rank_range

GOAL_S = {16: 0.3, 32: 1.0}


def _step(p: int) -> Callable[[], object]:
    from app.stepper import grid_html
    from app.ui.step_model import build_step_model, step_figures

    def build():
        model = build_step_model("allreduce", "ring", p, {"chunks": 1}, 0, "ring", "1MiB")
        i = model.num_steps // 2
        return step_figures(model, i), grid_html(model.stepper, i)
    return build


def _step_chunks(p: int) -> Callable[[], object]:
    """8 chunks per block: 8x the transfers and arrows (256 arrows per step at p=32)."""
    from app.stepper import grid_html
    from app.ui.step_model import build_step_model, step_figures

    def build():
        model = build_step_model("allreduce", "ring", p, {"chunks": 8}, 0, "ring", "1MiB")
        return step_figures(model, 5), grid_html(model.stepper, 5)
    return build


def _step_move(p: int) -> Callable[[], object]:
    from app.stepper import grid_html
    from app.ui.step_model import build_step_model, step_figures

    model = build_step_model("allreduce", "ring", p, {"chunks": 1}, 0, "ring", "1MiB")
    return lambda: (step_figures(model, 1), grid_html(model.stepper, 1))


def _cost(p: int) -> Callable[[], object]:
    from app.explorer import explore, explorer_figure
    from app.ui.inputs import link_model, sizes_input
    from simulator.topology import ideal

    def build():
        model = link_model("2us", "25GB/s")
        ex = explore("allreduce", p, sizes_input("1KiB:1GiB:4"), model, {"chunks": 1}, ideal(p, 2e-6, 25e9))
        return explorer_figure(ex), explorer_figure(ex, "busbw")
    return build


def _contention(p: int) -> Callable[[], object]:
    from app.topofig import topology_figure
    from app.ui.contention_model import busiest, chrome_json, run_contention, utilisation

    def build():
        run = run_contention("switch", "allreduce", "ring", p, "64MiB", {"chunks": 1}, 0, 3, 50.0, 0.5)
        return (topology_figure(run.before.topology, p, link_values=utilisation(run.before)),
                topology_figure(run.after.topology, p, link_values=utilisation(run.after)),
                busiest(run.after), chrome_json(run.after))
    return build


def _whatif(p: int) -> Callable[[], object]:
    import pandas as pd
    import plotly.express as px

    from app.ui.whatif_model import whatif_rows

    def build():
        rows = pd.DataFrame(whatif_rows([f"switch:{p}", f"ring:{p}"], ["allreduce"], [65536, 16 << 20, 1 << 30]))
        return px.bar(rows, x="bytes", y="time (us)", color="machine", barmode="group")
    return build


def _whatif_one(p: int) -> Callable[[], object]:
    """One machine edited: the page caches each machine's rows, so only that machine runs again."""
    import pandas as pd
    import plotly.express as px

    from app.ui.whatif_model import machine_rows

    def build():
        rows = pd.DataFrame(machine_rows(f"switch:{p}", ["allreduce"], [65536, 16 << 20, 1 << 30]))
        return px.bar(rows, x="bytes", y="time (us)", color="machine", barmode="group")
    return build


def _whatif_presets(p: int, nccl: bool) -> Callable[[], object]:
    """The page's default collectives view (allreduce and allgather at 64 KiB, 16 MiB, 1 GiB) on two presets of p GPUs,
    timed as NCCL runs them (collsim predict, the page's default) or with the best collsim algorithm."""
    import pandas as pd
    import plotly.express as px

    from app.ui.whatif_model import nccl_rows, whatif_rows

    machines = [f"dgx-h100:nodes={max(p // 8, 1)}", f"hgx-b200:nodes={max(p // 8, 1)}"]
    ops, sizes = ["allreduce", "allgather"], [65536, 16 << 20, 1 << 30]

    def build():
        found = [r for m in machines for r in nccl_rows(m, ops, sizes)] if nccl else whatif_rows(machines, ops, sizes)
        return px.bar(pd.DataFrame(found), x="bytes", y="time (us)", color="machine", barmode="group")
    return build


def _whatif_step(p: int) -> Callable[[], object]:
    """A DDP step of llama2-7b on two machines of p GPUs (8 per node), isolated runs (the page's default)."""
    import pandas as pd
    import plotly.express as px

    from app.ui.whatif_model import step_row, step_table_row

    machines = [f"dgx-h100:nodes={max(p // 8, 1)}", f"hgx-b200:nodes={max(p // 8, 1)}"]

    def build():
        rows = pd.DataFrame([step_table_row(step_row(m, "ddp", "llama2-7b")) for m in machines])
        return px.bar(rows, x="machine", y="step (ms)"), px.bar(rows, x="machine", y="tokens/s")
    return build


def _reality(p: int) -> Callable[[], object]:
    """The log fixes p (16 ranks here, whatever p is asked)."""
    import plotly.graph_objects as go

    from app.ui.reality_model import fit_log, read_bundled, rows

    def build():
        log = read_bundled("03_h100_p5_2node_16gpu_efa_allreduce.txt")
        table_rows = rows(fit_log(log, "ring"), log, "hopper", 2)
        return go.Figure(go.Scatter(x=[r["bytes"] for r in table_rows], y=[r["measured (us)"] for r in table_rows]))
    return build


def _reality_predict(p: int) -> Callable[[], object]:
    """The page's `collsim predict` column on a log's first look (log 03, 16 ranks, whatever p is asked): the NVLS step
    fitted on the other logs, then predict at every size of the log (the page caches both per log)."""
    from app.ui.reality_model import default_preset, held_out_nvls_step, predict_log, read_bundled

    name = "03_h100_p5_2node_16gpu_efa_allreduce.txt"
    log = read_bundled(name)
    return lambda: predict_log(log, default_preset(name), held_out_nvls_step(name))


def _lesson(key: str) -> Callable[[int], Callable[[], object]]:
    """A lesson's live numbers (its p is the lesson's own)."""
    def make(p: int):
        from app import lessons

        return {"b": lessons.faster_at_4k, "d": lessons.hierarchy_times, "e": lessons.straggler_times,
                "f": lessons.program_finishes}[key]
    return make


PAGES = {"step (new choice)": _step, "step (8 chunks)": _step_chunks, "step (move)": _step_move,
         "cost explorer": _cost, "contention": _contention,
         "what-if (2 machines)": _whatif,
         "what-if (1 machine edited)": _whatif_one,
         "what-if presets, NCCL (default view)": lambda p: _whatif_presets(p, True),
         "what-if presets, best algorithm": lambda p: _whatif_presets(p, False),
         "what-if (DDP step, 2 machines)": _whatif_step, "model vs reality": _reality,
         "model vs reality, collsim predict (log 03, first look)": _reality_predict, "lesson d (engine)": _lesson("d"),
         "lesson e (engine)": _lesson("e")}


def measure(make: Callable[[int], Callable[[], object]], p: int, repeat: int) -> float:
    """Best wall time of `repeat` builds, seconds (the first build also warms imports, so it runs once before)."""
    fn = make(p)
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", default="8,16,32", help="rank counts (default 8,16,32)")
    parser.add_argument("--repeat", type=int, default=3, help="builds per case; the best is reported")
    parser.add_argument("--pages", help="only the pages whose names contain one of these comma-separated words")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    args = parser.parse_args()
    ranks = parse_rank_range(args.ranks)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    rows = []
    for page, make in PAGES.items():
        if args.pages and not any(word.strip() in page for word in args.pages.split(",")):
            continue
        row = {"page": page}
        for p in ranks:
            row[f"p={p} (s)"] = measure(make, p, args.repeat)
        rows.append(row)
    print(f"# app latency: widget change -> figures built (best of {args.repeat}); load average {load:.2f}, "
          f"{os.cpu_count()} cores; goal < 0.3 s at p=16, < 1 s at p=32")
    headers = list(rows[0])
    print(table(headers, [[r[h] if h == "page" else round(r[h], 4) for h in headers] for r in rows]))
    misses = [(r["page"], p) for r in rows for p in ranks if p in GOAL_S and r[f"p={p} (s)"] > GOAL_S[p]]
    print("every page within the goal" if not misses else "over the goal: " + ", ".join(f"{n} at p={p}" for n, p in misses))
    if args.json:
        write_json(args.json, {"load_average": load, "rows": rows, "over_goal": misses})
    return 0


if __name__ == "__main__":
    sys.exit(main())
