"""Plotly figures for the app: cost curves and what-if comparisons, built from the simulator's numbers."""

from __future__ import annotations

import numpy as np

from simulator.algorithms import get, names_for
from simulator.collective import normalize_op
from simulator.cost import CLOSED_FORM, LinkModel, estimate, lower_bound
from simulator.units import format_size, size_ticks


def size_axis(sizes, title: str = "message size", most: int = 8) -> dict:
    """A log x axis of bytes with B/KiB/MiB/GiB ticks (plotly's own would read '1B' for 1e9 bytes)."""
    values = [float(s) for s in sizes if s and s > 0]
    tickvals, ticktext = size_ticks(min(values, default=1), max(values, default=1), most)
    return dict(title=title, type="log", tickmode="array", tickvals=tickvals, ticktext=ticktext)


def decade_axis(title: str) -> dict:
    """A log axis with one labelled tick per power of ten (plotly's 2 and 5 between them crowd a short axis)."""
    return dict(title=title, type="log", dtick=1)


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


def _rank_steps(trace) -> dict[str, np.ndarray]:
    """One bar per (sending rank, step): from its first message's start to its last one's arrival, with the messages
    and bytes it covers (8 chunks at p = 32 are 16,000 messages but 2,000 such bars)."""
    a = trace.schedule.arrays
    net = np.flatnonzero((a["src"] != a["dst"]) & ~np.isnan(trace.start))
    src, step = a["src"][net].astype(np.int64), a["step"][net].astype(np.int64)
    key = src * (int(step.max(initial=0)) + 1) + step
    groups, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    start, end = np.full(len(groups), np.inf), np.full(len(groups), -np.inf)
    np.minimum.at(start, inverse, trace.start[net])
    np.maximum.at(end, inverse, trace.end[net])
    dst = a["dst"][net]
    lone = np.ones(len(groups), dtype=bool)  # every message of the bar goes to one rank
    np.logical_and.at(lone, inverse, dst == dst[first][inverse])
    return {"src": src[first], "step": step[first], "dst": np.where(lone, dst[first], -1),
            "start": start, "end": end, "messages": np.bincount(inverse, minlength=len(groups)),
            "bytes": np.bincount(inverse, weights=a["bytes"][net].astype(float), minlength=len(groups))}


def _segments(bars: dict[str, np.ndarray], ids: np.ndarray, name: str, colour: str, width: float):
    """The bars `ids` as one thick line trace, a segment per bar (one SVG path, where plotly draws a path per bar of a
    Bar trace: 2,000 of them made each step of a 32-rank run take seconds to redraw)."""
    import plotly.graph_objects as go

    n = len(ids)
    x = np.full(3 * n, np.nan)
    x[0::3], x[1::3] = bars["start"][ids] * 1e6, bars["end"][ids] * 1e6
    y = np.full(3 * n, None, dtype=object)
    y[0::3] = y[1::3] = [f"rank {int(r)}" for r in bars["src"][ids]]
    to = [f"rank {d}" if d >= 0 else "several ranks" for d in bars["dst"][ids]]
    said = [f"step {s}: {k} message(s), {format_size(int(b))} to {d}<br>{a:.4g} to {e:.4g} us"
            for s, k, b, d, a, e in zip(bars["step"][ids], bars["messages"][ids], bars["bytes"][ids], to,
                                        bars["start"][ids] * 1e6, bars["end"][ids] * 1e6)]
    text = np.full(3 * n, None, dtype=object)
    text[0::3] = text[1::3] = said
    return go.Scatter(x=x, y=y, mode="lines", name=name, line=dict(color=colour, width=width), text=text,
                      hovertemplate="%{text}<extra></extra>", connectgaps=False)


def timeline_figure(trace, highlight_step: int | None = None, height_per_rank: int = 22, x_max_us: float | None = None):
    """The engine's timeline: one row per rank, a bar per step it sends in (its first message's start to its last
    one's arrival); the step shown in orange. The legend sits above the plot, clear of the ranks' rows.
    `x_max_us` fixes the time axis (to compare two runs side by side)."""
    import plotly.graph_objects as go

    bars = _rank_steps(trace)
    p = trace.schedule.collective.ranks
    fig = go.Figure()
    for current in (False, True):
        ids = np.flatnonzero((bars["step"] == highlight_step) == current) if highlight_step is not None else (
            np.arange(len(bars["step"])) if not current else np.zeros(0, int))
        if len(ids) == 0:
            continue
        fig.add_trace(_segments(bars, ids, "this step" if current else "other steps",
                                "#dd6b20" if current else "#90cdf4", max(height_per_rank * 0.6, 3)))
    fig.update_layout(height=110 + height_per_rank * p, margin=dict(l=10, r=10, t=70, b=30),
                      title=dict(text=f"engine timeline: {trace.time * 1e6:.4g} us on {trace.topology.name}", y=0.98,
                                 yanchor="top"),
                      xaxis=dict(title="time (us)", range=[0, x_max_us] if x_max_us else None),
                      yaxis=dict(categoryorder="array", categoryarray=[f"rank {r}" for r in range(p)][::-1]),
                      legend=dict(orientation="h", yanchor="bottom", y=1.0, x=1, xanchor="right"))
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
