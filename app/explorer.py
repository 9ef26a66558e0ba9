"""The cost explorer's numbers and figure: closed-form lines, engine points on a topology, crossovers, regimes."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from app.figures import _label, cost_table, size_axis
from collsim.cost import CostRequest
from simulator.algorithms import build_schedule, get
from simulator.collective import Collective, busbw_factor
from simulator.cost import LinkModel
from simulator.engine import EngineOptions, simulate
from simulator.topology.model import Topology
from simulator.units import format_size

MAX_ENGINE_POINTS = 6   # engine sizes per algorithm (log-spaced picks from the sizes)
MAX_ENGINE_RANKS = 64   # the engine points are skipped above this (the lines stay)
_DASHES = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot"]
_SYMBOLS = ["circle", "square", "diamond", "triangle-up", "x", "star", "cross", "pentagon"]


@dataclass
class Explorer:
    """Times per algorithm and size, the engine's points, where the best algorithm changes and each size's regime."""

    op: str
    ranks: int
    sizes: list[int]
    table: dict
    engine: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    crossovers: list[tuple[int, str, str]] = field(default_factory=list)  # (first size the new one wins, old, new)
    latency_bound: list[bool] = field(default_factory=list)

    def best(self) -> list[str]:
        """The fastest algorithm's name per size."""
        names = list(self.table["times"])
        stacked = np.vstack([self.table["times"][n] for n in names])
        return [names[i] for i in stacked.argmin(axis=0)]


def engine_sizes(sizes: list[int], k: int = MAX_ENGINE_POINTS) -> list[int]:
    """Up to k sizes spread evenly (by index, so log-spaced on a log range) over `sizes`, ends included."""
    if len(sizes) <= k:
        return list(sizes)
    idx = np.unique(np.round(np.linspace(0, len(sizes) - 1, k)).astype(int))
    return [sizes[i] for i in idx]


def engine_point(op: str, algo: str, ranks: int, nbytes: int, params: dict, topology: Topology, gamma: float) -> float:
    """The engine's time of one (algorithm, size) on the topology (int8, so any byte count is allowed)."""
    accepted = {p.name for p in get(op, algo).params}
    schedule = build_schedule(Collective(op, ranks, nbytes, "int8"), algo,
                              **{k: v for k, v in params.items() if k in accepted})
    return float(simulate(schedule, topology, EngineOptions(gamma=gamma)).time)


def explore(op: str, ranks: int, sizes: list[int], model: LinkModel, params: dict | None = None,
            topology: Topology | None = None, algorithms: list[str] | None = None) -> Explorer:
    """Closed forms (engine on ideal:P where none exists) for each algorithm; engine points on `topology` if given."""
    params = params or {}
    table = cost_table(op, ranks, sizes, model, algorithms, params=params)
    at_zero = cost_table(op, ranks, [0], model, algorithms, params=params)["times"]
    return _explorer(op, ranks, list(sizes), table, at_zero, params, topology, model.gamma)


def cost_request(op: str, ranks: int, sizes: str, alpha: str, bandwidth: str, gamma: float = 0.0,
                 params: dict | None = None) -> CostRequest:
    """The request `collsim cost --op OP --ranks P --size SIZES --alpha A --bandwidth B [--gamma G] [--PARAM V]`
    builds, with its defaults (float32, root 0, every algorithm; gamma 0 left unset as the command leaves it)."""
    return CostRequest(op, ranks, sizes, alpha=alpha, bandwidth=bandwidth, gamma=f"{gamma:g}" if gamma else None,
                       params=tuple(sorted((params or {}).items())))


def explore_request(request: CostRequest, topology: Topology | None = None) -> Explorer:
    """The cost request's times, as `collsim cost` prints them, with crossovers, regimes and engine points."""
    result = request.run()
    table = {"sizes": list(request.sizes), "times": {name: np.asarray(times) for name, _, times, _ in result.results},
             "methods": {name: method for name, _, _, method in result.results}, "bound": np.asarray(result.bounds)}
    at_zero = {name: np.asarray(times) for name, _, times, _ in replace(request, sizes=(0,)).run().results}
    return _explorer(request.op, request.ranks, list(request.sizes), table, at_zero, dict(request.params), topology,
                     request.model.gamma)


def _explorer(op: str, ranks: int, sizes: list[int], table: dict, at_zero: dict, params: dict, topology: Topology | None,
              gamma: float) -> Explorer:
    """The Explorer of a cost table: where the best algorithm changes, each size's regime (latency-bound when the
    best algorithm's time is at most twice its time at 0 bytes) and engine points on `topology` if given."""
    ex = Explorer(op, ranks, sizes, table)
    best = ex.best()
    for i in range(1, len(sizes)):
        if best[i] != best[i - 1]:
            ex.crossovers.append((sizes[i], best[i - 1], best[i]))
    ex.latency_bound = [float(at_zero[b][0]) * 2 >= float(table["times"][b][i]) for i, b in enumerate(best)]
    if topology is not None and ranks <= MAX_ENGINE_RANKS:
        for name in table["times"]:
            ex.engine[name] = [(n, engine_point(op, name, ranks, n, params, topology, gamma)) for n in engine_sizes(sizes)]
    return ex


def explorer_figure(ex: Explorer, metric: str = "time", topology_name: str = "", lines_from: str = ""):
    """Lines (closed forms on the links `lines_from` describes), markers (engine on the topology), crossovers as vertical
    lines, regimes shaded. Each legend entry names its model; when the engine's topology is not the lines' links, the
    title says so (its markers are not expected on the lines)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    sizes = np.asarray(ex.sizes, dtype=float)
    factor = busbw_factor(ex.op, ex.ranks)

    def y_of(n, t):
        t = np.asarray(t, dtype=float)
        if metric == "time":
            return t * 1e6
        return np.divide(np.asarray(n, dtype=float) * factor, t, out=np.zeros_like(t), where=t > 0) / 1e9

    shapes, notes = _shade(ex)
    traces = []  # added at once: add_trace one by one re-validates the figure each time
    labels = [format_size(s) for s in ex.sizes]
    same = _same_as(ex.table["times"])
    other_links = bool(ex.engine) and not topology_name.startswith("ideal")  # the engine's links are not the lines'
    for k, (name, times) in enumerate(ex.table["times"].items()):
        colour = f"hsl({(k * 360) // max(len(ex.table['times']), 1)},65%,45%)"
        label = _label(name, ex.table) + (f" (= {same[name]})" if name in same else "")
        label += ": closed form" if other_links else ""  # two models on the chart: each entry names its own
        traces.append(go.Scatter(x=sizes, y=y_of(sizes, times), name=label, mode="lines",
                                 line=dict(color=colour, dash="dot" if name in same else _DASHES[k % len(_DASHES)],
                                           width=4 if k == 0 else 2),
                                 legendgroup=name, text=labels, hovertemplate="%{text}: %{y:.4g}<extra>" + name + "</extra>"))
        if name in ex.engine:
            pts = ex.engine[name]
            traces.append(go.Scatter(x=[n for n, _ in pts], y=y_of([n for n, _ in pts], [t for _, t in pts]),
                                     name=f"{name}: engine on {topology_name}", mode="markers", legendgroup=name,
                                     marker=dict(color=colour, size=9, symbol=_SYMBOLS[k % len(_SYMBOLS)],
                                                 line=dict(color="black", width=1)),
                                     hovertemplate="engine %{x} B: %{y:.4g}<extra>" + name + "</extra>"))
    if metric == "time":
        traces.append(go.Scatter(x=sizes, y=y_of(sizes, ex.table["bound"]), name="lower bound", mode="lines",
                                 line=dict(color="gray", dash="dot")))
    for n, _old, new in ex.crossovers:
        shapes.append(dict(type="line", x0=n, x1=n, xref="x", y0=0, y1=1, yref="y domain",
                           line=dict(color="#555", dash="dash", width=1)))
        notes.append(dict(x=np.log10(n), y=1.0, yref="paper", text=f"{new} wins from {format_size(n)}",
                          showarrow=False, textangle=-90, xanchor="right", yanchor="top", font=dict(size=10)))
    fig.add_traces(traces)
    # shapes and notes in one layout update: add_vrect / add_vline one by one cost a third of the figure's time
    fig.update_layout(shapes=shapes, annotations=notes)
    what = "time (us), lower is better" if metric == "time" else "bus bandwidth (GB/s), higher is better"
    fig.update_layout(title=_title(ex, topology_name, lines_from),
                      xaxis=size_axis(ex.sizes, "message size (nccl-tests meaning)"),
                      yaxis=dict(title=what, type="log" if metric == "time" else "linear"),
                      legend=dict(title="algorithm", font=dict(size=11)), margin=dict(t=80),
                      height=max(520, 200 + 26 * len(traces)))  # tall enough for every legend entry (about 25 px each)
    return fig


def _title(ex: Explorer, topology_name: str, lines_from: str) -> str:
    """What the lines and the markers are; when the engine ran on a topology other than the lines' ideal links, why the
    markers need not sit on the lines."""
    lines = f"lines: closed forms{f' ({lines_from})' if lines_from else ''}"
    if not ex.engine:
        return f"{ex.op}, {ex.ranks} ranks. {lines}"
    title = f"{ex.op}, {ex.ranks} ranks. {lines}; markers: the event engine on {topology_name or 'the topology'}"
    if topology_name and not topology_name.startswith("ideal"):
        title += (f"<br><sup>the engine runs {topology_name}'s own links, latencies and contention, not the sliders' "
                  "alpha and bandwidth: a marker away from its line is that difference</sup>")
    return title


def _same_as(times: dict[str, np.ndarray]) -> dict[str, str]:
    """Algorithm -> the first earlier algorithm with the same times at every size (their lines lie on top of each other)."""
    names, out = list(times), {}
    for i, name in enumerate(names):
        for other in names[:i]:
            if other not in out and np.allclose(times[name], times[other], rtol=1e-9, atol=0):
                out[name] = other
                break
    return out


def _shade(ex: Explorer) -> tuple[list[dict], list[dict]]:
    """Latency-bound sizes (alpha terms are at least half the best time) shaded blue, bandwidth-bound orange: the
    layout's shapes and annotations."""
    shapes: list[dict] = []
    notes: list[dict] = []
    if not ex.sizes:
        return shapes, notes
    runs, start = [], 0
    for i in range(1, len(ex.sizes) + 1):
        if i == len(ex.sizes) or ex.latency_bound[i] != ex.latency_bound[start]:
            runs.append((start, i - 1, ex.latency_bound[start]))
            start = i
    for a, b, lat in runs:
        lo = ex.sizes[a] if a == 0 else (ex.sizes[a - 1] * ex.sizes[a]) ** 0.5
        hi = ex.sizes[b] if b == len(ex.sizes) - 1 else (ex.sizes[b] * ex.sizes[b + 1]) ** 0.5
        shapes.append(dict(type="rect", x0=lo, x1=hi, xref="x", y0=0, y1=1, yref="y domain", layer="below",
                           fillcolor="#bee3f8" if lat else "#feebc8", opacity=0.45, line=dict(width=0)))
        notes.append(dict(x=(np.log10(lo) + np.log10(hi)) / 2, y=0.01, yref="paper", yanchor="bottom", showarrow=False,
                          text="latency-bound" if lat else "bandwidth-bound", font=dict(size=11, color="#4a5568")))
    return shapes, notes
