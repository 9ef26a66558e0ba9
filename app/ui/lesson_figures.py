"""The live figure of each lesson: the simulator's own pictures and numbers for the lesson's example."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.lessons import HIER_TOPOLOGY, TEXTBOOK, deadlock_program, hierarchy_times, straggler_times
from app.stepper import grid_html, legend_html, step_sentences
from app.ui.urlstate import UrlState


@st.cache_resource(max_entries=8)
def _stepper(op: str, algo: str, ranks: int):
    from app.stepper import build_stepper, picture_collective
    from simulator.algorithms import build_schedule

    return build_stepper(build_schedule(picture_collective(op, ranks), algo))


def _step_through(url: UrlState, algo: str, ranks: int, start: int) -> None:
    stepper = _stepper("allreduce", algo, ranks)
    n = stepper.num_steps
    i = st.slider(f"step (0..{n})", 0, n, key=url.integer("s", 0, n, start))
    st.markdown(f"**Step {i} of {n}** — " + (f"phase: {stepper.phases[i]}" if i else "start"))
    st.markdown(grid_html(stepper, i), unsafe_allow_html=True)
    st.markdown(legend_html(ranks), unsafe_allow_html=True)
    st.markdown("\n".join(f"- {s}" for s in step_sentences(stepper, i)[:8]))


@st.cache_resource(max_entries=8)
def _explorer(algorithms: tuple, sizes: tuple):
    from app.explorer import explore

    return explore("allreduce", 8, list(sizes), TEXTBOOK, algorithms=list(algorithms))


def _a(url: UrlState) -> None:
    _step_through(url, "ring", 4, 3)


def _b(url: UrlState) -> None:
    from app.explorer import explorer_figure

    sizes = tuple(1 << k for k in range(10, 31, 1))
    ex = _explorer(("ring", "recursive_doubling", "rabenseifner"), sizes)
    st.plotly_chart(explorer_figure(ex), key="lesson.b.figure")
    st.caption("8 ranks, alpha 2 us, 25 GB/s, closed forms. " + "; ".join(
        f"{new} beats {old} from {n:,} B" for n, old, new in ex.crossovers))


def _c(url: UrlState) -> None:
    from app.explorer import explorer_figure

    _step_through(url, "recursive_doubling", 8, 1)
    ex = _explorer(("ring", "recursive_doubling", "binomial", "double_binary_tree"), tuple(1 << k for k in range(6, 23)))
    st.plotly_chart(explorer_figure(ex), key="lesson.c.figure")


@st.cache_data(max_entries=4)
def _hierarchy_rows() -> list[dict]:
    rows = []
    for label, nbytes in (("4 KiB", 4096), ("1 MiB", 1 << 20), ("64 MiB", 64 << 20)):
        for algo, seconds in hierarchy_times(nbytes).items():
            rows.append({"size": label, "algorithm": algo, "time (us)": seconds * 1e6})
    return rows


def _d(url: UrlState) -> None:
    import plotly.express as px

    from app.topofig import topology_figure
    from simulator.topology import parse_topology

    rows = pd.DataFrame(_hierarchy_rows())
    fig = px.bar(rows, x="size", y="time (us)", color="algorithm", barmode="group", log_y=True,
                 title=f"engine, all-reduce on {HIER_TOPOLOGY}")
    left, right = st.columns(2)
    left.plotly_chart(fig, key="lesson.d.figure")
    right.plotly_chart(topology_figure(parse_topology(HIER_TOPOLOGY), 16, title="4 nodes x 4 GPUs"), key="lesson.d.topo")
    st.dataframe(rows, hide_index=True)


def _e(url: UrlState) -> None:
    from app.figures import timeline_figure
    from simulator.algorithms import build_schedule
    from simulator.collective import Collective
    from simulator.engine import EngineOptions, simulate
    from simulator.topology import parse_topology

    delay = st.slider("rank 3 starts late by (us, 0..200)", 0, 200, key=url.integer("delay", 0, 200, 50))
    before, after = straggler_times(delay * 1e-6)
    st.markdown(f"**{before * 1e6:.1f} us** on time, **{after * 1e6:.1f} us** with rank 3 {delay} us late: "
                f"**{(after - before) * 1e6:.1f} us** later.")
    topo = parse_topology("ring:8")
    schedule = build_schedule(Collective("allreduce", 8, 1 << 20, "float32"), "ring")
    left, right = st.columns(2)
    span = max(before, after) * 1e6 * 1.02  # one time axis for both
    left.plotly_chart(timeline_figure(simulate(schedule, topo), x_max_us=span), key="lesson.e.before")
    right.plotly_chart(timeline_figure(simulate(schedule, topo, EngineOptions(start_delay={3: delay * 1e-6})),
                                       x_max_us=span), key="lesson.e.after")


def _f(url: UrlState) -> None:
    import plotly.graph_objects as go

    from simulator.program.matching import check_program

    same = st.toggle("same order on both ranks (the fix)", key=url.flag("fixed", False))
    program = deadlock_program(not same)
    problems = check_program(program)
    order = {0: "grads (dp), then loss (metrics)", 1: "grads (dp), then loss (metrics)" if same else
             "loss (metrics), then grads (dp)"}
    st.markdown("\n".join(f"- rank {r} calls {text}" for r, text in order.items()))
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[0, 2], y=[0, 0], mode="markers+text", text=["rank 0", "rank 1"], textposition="top center",
                             marker=dict(size=40, color="#ebf4ff", line=dict(color="#2b6cb0", width=2)), showlegend=False))
    if problems:
        fig.add_annotation(x=2, y=0.08, ax=0, ay=0.08, xref="x", yref="y", axref="x", ayref="y", arrowhead=3,
                           arrowcolor="#c53030", arrowwidth=2, text="", standoff=22, startstandoff=22)
        fig.add_annotation(x=0, y=-0.08, ax=2, ay=-0.08, xref="x", yref="y", axref="x", ayref="y", arrowhead=3,
                           arrowcolor="#c53030", arrowwidth=2, text="", standoff=22, startstandoff=22)
        fig.add_annotation(x=1, y=0.2, text="waits in grads for", showarrow=False)
        fig.add_annotation(x=1, y=-0.2, text="waits in loss for", showarrow=False)
    fig.update_layout(height=260, xaxis=dict(visible=False, range=[-0.6, 2.6]), yaxis=dict(visible=False, range=[-0.4, 0.4]),
                      title="wait-for graph" + (" (a cycle: deadlock)" if problems else " (no cycle)"),
                      plot_bgcolor="white", margin=dict(t=40, b=10))
    st.plotly_chart(fig, key="lesson.f.figure")
    if problems:
        for problem in problems:
            st.markdown(f"**checker ({problem.kind}):** {problem.message}")
    else:
        st.markdown("**checker:** no problems; both all-reduces meet and the program finishes.")


_FIGURES = {"a": _a, "b": _b, "c": _c, "d": _d, "e": _e, "f": _f}


def show(key: str, url: UrlState) -> None:
    """Draw lesson `key`'s live figure (its widgets are bound to the URL)."""
    _FIGURES[key](url)
