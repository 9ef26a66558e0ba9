"""Plotly figures for the app: cost curves and what-if comparisons, built from the simulator's numbers."""

from __future__ import annotations

import numpy as np

from simulator.algorithms import get, names_for
from simulator.collective import normalize_op
from simulator.cost import CLOSED_FORM, LinkModel, estimate, lower_bound


def cost_table(op: str, ranks: int, sizes: list[int], model: LinkModel, algorithms: list[str] | None = None,
               params: dict | None = None) -> dict:
    """Seconds per algorithm (those that accept this rank count) and the lower bound, per size.

    `params` (e.g. {"chunks": 4}) go to the algorithms that take them. `methods` says per algorithm
    whether its times are its closed form or the event engine's on ideal:P (no closed form).
    """
    op = normalize_op(op)
    names = [n for n in (algorithms or names_for(op)) if not get(op, n).refusal(ranks)]
    estimates = {}
    for n in names:
        accepted = {p.name for p in get(op, n).params}
        estimates[n] = estimate(op, n, ranks, sizes, model, **{k: v for k, v in (params or {}).items() if k in accepted})
    return {"sizes": list(sizes), "times": {n: e.times for n, e in estimates.items()},
            "methods": {n: e.method for n, e in estimates.items()}, "bound": lower_bound(op, ranks, sizes, model)}


def _label(name: str, data: dict) -> str:
    """An algorithm's legend name: marked "(engine)" when its times are simulated, not a closed form."""
    return name if data["methods"][name] == CLOSED_FORM else f"{name} (engine)"


def timeline_figure(trace, highlight_step: int | None = None, height_per_rank: int = 22, x_max_us: float | None = None):
    """The engine's timeline: one row per rank, a bar per message it sends (start to arrival); the step shown is bold.
    `x_max_us` fixes the time axis (to compare two runs side by side)."""
    import plotly.graph_objects as go

    a = trace.schedule.arrays
    p = trace.schedule.collective.ranks
    net = np.flatnonzero((a["src"] != a["dst"]) & ~np.isnan(trace.start))
    fig = go.Figure()
    for current in (False, True):
        ids = net[(a["step"][net] == highlight_step) == current] if highlight_step is not None else (net if not current else [])
        if len(ids) == 0:
            continue
        start = trace.start[ids] * 1e6
        length = np.maximum((trace.end[ids] - trace.start[ids]) * 1e6, 1e-9)
        fig.add_trace(go.Bar(
            y=[f"rank {int(r)}" for r in a["src"][ids]], x=length, base=start, orientation="h",
            name="this step" if current else "other steps",
            marker=dict(color="#dd6b20" if current else "#90cdf4", line=dict(color="#2c5282", width=0.5)),
            customdata=np.stack([a["dst"][ids], a["step"][ids], a["bytes"][ids]], axis=1),
            hovertemplate="to rank %{customdata[0]}, step %{customdata[1]}, %{customdata[2]} B<br>"
                          "%{base:.3g} to %{x:.3g} us long<extra></extra>"))
    fig.update_layout(barmode="overlay", height=80 + height_per_rank * p, margin=dict(l=10, r=10, t=40, b=30),
                      title=f"engine timeline: {trace.time * 1e6:.4g} us on {trace.topology.name}",
                      xaxis=dict(title="time (us)", range=[0, x_max_us] if x_max_us else None),
                      yaxis=dict(categoryorder="array", categoryarray=[f"rank {r}" for r in range(p)][::-1]),
                      legend=dict(orientation="h", y=1.02, x=1, xanchor="right"))
    return fig


def link_timeline_figure(trace, k: int = 12):
    """When each of the k links that carried the most bytes was busy (merged flow intervals), one row per link."""
    import plotly.graph_objects as go

    table = trace.link_table
    order = np.argsort(-table["bytes"], kind="stable")[:k]
    fig = go.Figure()
    names, starts, lengths = [], [], []
    for i in order:
        lid = int(table["link"][i])
        name = trace.topology.link_name(lid)
        for a, b in trace.link_busy_intervals(lid):
            names.append(name)
            starts.append(a * 1e6)
            lengths.append(max((b - a) * 1e6, 1e-9))
    fig.add_trace(go.Bar(y=names, x=lengths, base=starts, orientation="h", marker=dict(color="#68d391"),
                         hovertemplate="%{y}: busy from %{base:.4g} us for %{x:.4g} us<extra></extra>", showlegend=False))
    rows = [trace.topology.link_name(int(table["link"][i])) for i in order]
    fig.update_layout(height=80 + 22 * max(len(rows), 1), margin=dict(l=10, r=10, t=40, b=30),
                      title=f"when the {len(rows)} links that carried the most bytes were busy",
                      xaxis=dict(title="time (us)"), yaxis=dict(categoryorder="array", categoryarray=rows[::-1]))
    return fig
