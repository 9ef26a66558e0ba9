"""Plotly figures for the app: cost curves and what-if comparisons, built from the simulator's numbers."""

from __future__ import annotations

import numpy as np

from simulator.algorithms import get, names_for
from simulator.collective import Collective, busbw_factor, normalize_op
from simulator.cost import LinkModel, lower_bound, predict
from simulator.units import format_size


def cost_table(op: str, ranks: int, sizes: list[int], model: LinkModel, algorithms: list[str] | None = None) -> dict:
    """Closed-form seconds per algorithm (those that accept this rank count) and the lower bound, per size."""
    op = normalize_op(op)
    names = [n for n in (algorithms or names_for(op)) if not get(op, n).refusal(ranks)]
    return {"sizes": list(sizes), "times": {n: predict(op, n, ranks, sizes, model) for n in names},
            "bound": lower_bound(op, ranks, sizes, model)}


def cost_figure(op: str, ranks: int, sizes: list[int], model: LinkModel, metric: str = "time",
                algorithms: list[str] | None = None):
    """Time (us) or bus bandwidth (GB/s) against message size, one line per algorithm, log axes."""
    import plotly.graph_objects as go

    data = cost_table(op, ranks, sizes, model, algorithms)
    sizes_arr = np.asarray(sizes, dtype=float)
    factor = busbw_factor(op, ranks)
    fig = go.Figure()
    labels = [format_size(s) for s in sizes]
    bound_label = "lower bound" if metric == "time" else "bound (best possible)"
    series = dict(data["times"], **{bound_label: data["bound"]})
    for name, times in series.items():
        y = times * 1e6 if metric == "time" else np.divide(sizes_arr * factor, times, out=np.zeros_like(times),
                                                           where=times > 0) / 1e9
        fig.add_trace(go.Scatter(x=sizes, y=y, name=name, mode="lines+markers", text=labels,
                                 line=dict(dash="dot", color="gray") if name == bound_label else None,
                                 hovertemplate="%{text}: %{y:.3g}<extra>" + name + "</extra>"))
    ytitle = "time (us), lower is better" if metric == "time" else "bus bandwidth (GB/s), higher is better"
    fig.update_layout(title=f"{op}, {ranks} ranks: {'time' if metric == 'time' else 'bus bandwidth'} by message size",
                      xaxis=dict(title="message size (bytes, nccl-tests meaning)", type="log"),
                      yaxis=dict(title=ytitle, type="log" if metric == "time" else "linear"),
                      legend=dict(title="algorithm"), margin=dict(t=50))
    return fig


def whatif_figure(op: str, ranks: int, sizes: list[int], models: dict[str, LinkModel]):
    """Best algorithm's time on each machine, per size: which hardware wins, and by how much."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for label, model in models.items():
        data = cost_table(op, ranks, sizes, model)
        stacked = np.vstack(list(data["times"].values()))
        best = stacked.min(axis=0)
        winners = [list(data["times"])[i] for i in stacked.argmin(axis=0)]
        fig.add_trace(go.Scatter(x=sizes, y=best * 1e6, name=label, mode="lines+markers", text=winners,
                                 hovertemplate="best: %{text}<br>%{y:.3g} us<extra>" + label + "</extra>"))
    fig.update_layout(title=f"{op}, {ranks} ranks: best algorithm's time on each machine",
                      xaxis=dict(title="message size (bytes)", type="log"),
                      yaxis=dict(title="time (us), lower is better", type="log"), margin=dict(t=50))
    return fig


def collective_for_picture(op: str, ranks: int, elements: int, root: int = 0) -> Collective:
    """A small int8 collective whose every element is drawn."""
    return Collective(op, ranks, elements, "int8", root=root)
