"""The live figure of each lesson: the simulator's own pictures and numbers for the lesson's example."""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from app import lessons as L
from app.lessons import HIER_TOPOLOGY, TEXTBOOK, deadlock_program, hierarchy_times, straggler_times
from app.stepper import grid_html, legend_html, step_sentences
from app.ui.urlstate import UrlState
from simulator.units import format_size


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
    st.caption(f"{algo.replace('_', ' ')} all-reduce on {ranks} ranks, one row per rank")
    st.markdown(grid_html(stepper, i), unsafe_allow_html=True)
    st.markdown(legend_html(ranks), unsafe_allow_html=True)
    st.markdown("\n".join(f"- {s}" for s in step_sentences(stepper, i)[:8]))


@st.cache_resource(max_entries=8)
def _explorer(algorithms: tuple, sizes: tuple, ranks: int = 8):
    from app.explorer import explore

    return explore("allreduce", ranks, list(sizes), TEXTBOOK, algorithms=list(algorithms))


def _a(url: UrlState) -> None:
    _step_through(url, "ring", L.A_RANKS, L.A_RANKS - 1)


def _b(url: UrlState) -> None:
    from app.explorer import explorer_figure

    sizes = tuple(1 << k for k in range(10, 31, 1))
    ex = _explorer(("ring", "recursive_doubling", "rabenseifner"), sizes)
    st.plotly_chart(explorer_figure(ex), key="lesson.b.figure")
    st.caption("8 ranks, alpha 2 us, 25 GB/s, closed forms. " + "; ".join(
        f"{new} beats {old} from {n:,} B" for n, old, new in ex.crossovers))


def _c(url: UrlState) -> None:
    from app.explorer import explorer_figure

    _step_through(url, "recursive_doubling", L.C_RANKS, 1)
    ex = _explorer(("ring", "recursive_doubling", "binomial", "double_binary_tree"), tuple(1 << k for k in range(6, 23)),
                   L.C_RANKS)
    st.plotly_chart(explorer_figure(ex), key="lesson.c.figure")
    st.caption(f"{L.C_RANKS} ranks, alpha 2 us, 25 GB/s, closed forms. " + "; ".join(
        f"{new} beats {old} from {n:,} B" for n, old, new in ex.crossovers))


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
    st.markdown("\n".join(f"- rank {r} calls {text}" for r, text in L.call_order(program).items()))
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


def _size_axis(fig, sizes) -> None:
    """A log size axis ticked in B/KiB/MiB/GiB."""
    fig.update_xaxes(type="log", tickvals=list(sizes), ticktext=[format_size(n) for n in sizes], title="size")


def _busbw_rows(spec: str, sizes: tuple, label: str, algo: str | None = None) -> list[dict]:
    nodes, per_node = L.gpus(spec)
    return [{"size": p.bytes, "busbw (GB/s)": L.busbw(p.bytes, p.time_s, nodes * per_node), "curve": label,
             "NCCL pick": f"{p.nccl_algo}/{p.proto}"} for p in L.predicted(spec, sizes, algo=algo)]


def _measured_rows(log: str, sizes: tuple, label: str) -> list[dict]:
    found = L.measured_busbw(log)
    return [{"size": n, "busbw (GB/s)": found[n], "curve": label, "NCCL pick": ""} for n in sizes if n in found]


def _asked(fig, size: int) -> None:
    """A dotted vertical line at the size the lesson's question asks about."""
    fig.add_vline(x=size, line_dash="dot", line_color="#718096", annotation_text=f"the question: {format_size(size)}",
                  annotation_position="bottom right")


def _busbw_figure(rows: list[dict], sizes: tuple, lines: dict[str, float], title: str):
    import plotly.express as px

    fig = px.line(pd.DataFrame(rows), x="size", y="busbw (GB/s)", color="curve", markers=True, hover_data=["NCCL pick"],
                  title=title)
    for text, value in lines.items():
        fig.add_hline(y=value, line_dash="dot", line_color="#718096", annotation_text=text,
                      annotation_position="top left")
    _size_axis(fig, sizes)
    _asked(fig, L.BIG)
    fig.update_layout(legend=dict(orientation="h", y=-0.25), margin=dict(b=90))
    return fig


NVLS_SIZES = tuple(1 << k for k in range(21, 34, 2))  # 2 MiB .. 8 GiB (L.BIG)


@st.cache_data(max_entries=2)
def _nvls_rows() -> list[dict]:
    return (_busbw_rows(L.NVLS_PRESET, NVLS_SIZES, "collsim predict: NCCL's pick") +
            _busbw_rows(L.NVLS_PRESET, NVLS_SIZES, "collsim predict: NCCL_ALGO=Ring", algo="Ring") +
            _measured_rows(L.NVLS_LOG, NVLS_SIZES, f"measured, log {L.NVLS_LOG[:2]}"))


def _g(url: UrlState) -> None:
    nvlink = L.link_rates(L.NVLS_PRESET)["nvlink"]
    p = L.gpus(L.NVLS_PRESET)[1]
    lines = {f"NVLink {nvlink:.0f} GB/s": nvlink, "NVLS's ceiling 2(p-1)/(p+1) x NVLink": 2 * (p - 1) / (p + 1) * nvlink}
    st.plotly_chart(_busbw_figure(_nvls_rows(), NVLS_SIZES, lines, f"all-reduce busbw on one {L.NVLS_PRESET} node"),
                    key="lesson.g.figure")
    st.markdown(f"Bytes through one GPU's link each way for an all-reduce of n bytes on {p} GPUs: ring 2(p-1)/p n = "
                f"{2 * (p - 1) / p:.3f} n; NVLS at most (1 + 1/p) n = {1 + 1 / p:.3f} n (up: n into the switch's reduction, "
                "n/p of stores; down: n/p of sums, n (p-1)/p of multicasts, n in all).")


NODE_SIZES = tuple(1 << k for k in range(21, 34, 2))


@st.cache_data(max_entries=2)
def _nodes_rows() -> list[dict]:
    """The two logs' busbw, and collsim predict at the asked size only (the reveal's numbers: predict on four nodes
    takes seconds a size on 2 cores)."""
    rows = []
    for spec, log in (L.NODES_ONE, L.NODES_MANY):
        rows += _measured_rows(log, NODE_SIZES, f"measured, log {log[:2]} ({math.prod(L.gpus(spec))} GPUs)")
        value, pick = L.predicted_busbw(spec, L.BIG)
        rows.append({"size": L.BIG, "busbw (GB/s)": value, "curve": f"collsim predict on {spec}", "NCCL pick": pick})
    return rows


def _h(url: UrlState) -> None:
    rates = L.link_rates(L.NODES_MANY[0])
    lines = {f"one node's NICs: {rates['nics']:.0f} GB/s": rates["nics"], f"NVLink {rates['nvlink']:.0f} GB/s":
             rates["nvlink"]}
    st.plotly_chart(_busbw_figure(_nodes_rows(), NODE_SIZES, lines, f"all-reduce busbw: one B200 node and {L.gpus(L.NODES_MANY[0])[0]}"),
                    key="lesson.h.figure")


PROTO_SIZES = tuple(1 << k for k in range(10, 31, 2))


@st.cache_data(max_entries=2)
def _proto_rows() -> list[dict]:
    rows = []
    for proto in (*L.PROTOS, None):
        for p in L.predicted(L.PROTO_PRESET, PROTO_SIZES, proto=proto):
            rows.append({"size": p.bytes, "time (us)": p.time_s * 1e6, "NCCL pick": f"{p.nccl_algo}/{p.proto}",
                         "curve": f"{proto} forced" if proto else "NCCL's pick"})
    return rows


def _i(url: UrlState) -> None:
    import plotly.express as px

    from simulator.nccl.protocols import protocol
    fig = px.line(pd.DataFrame(_proto_rows()), x="size", y="time (us)", color="curve", markers=True, log_y=True,
                  hover_data=["NCCL pick"], title=f"collsim predict: all-reduce on one {L.PROTO_PRESET} node")
    fig.update_traces(selector=dict(name="NCCL's pick"), line=dict(dash="dot", width=4))
    _asked(fig, L.PROTO_SIZE)
    _size_axis(fig, PROTO_SIZES)
    fig.update_layout(legend=dict(orientation="h", y=-0.25), margin=dict(b=90))
    st.plotly_chart(fig, key="lesson.i.figure")
    costs = [protocol(p) for p in L.PROTOS]
    st.dataframe(pd.DataFrame([{"protocol": c.name, "launch (us)": c.base_s * 1e6, "per NVLink step (us)": c.intra_s * 1e6,
                                "per network step (us)": c.net_s * 1e6, "wire bytes per byte": c.byte_factor}
                               for c in costs]), hide_index=True)
    st.caption("NCCL's ring costs (simulator/nccl/tuning.py, from NCCL's src/graph/tuning.cc).")


_FIGURES = {"a": _a, "b": _b, "c": _c, "d": _d, "e": _e, "f": _f, "g": _g, "h": _h, "i": _i}


def show(key: str, url: UrlState) -> None:
    """Draw lesson `key`'s live figure (its widgets are bound to the URL)."""
    _FIGURES[key](url)
