"""The topology as a picture: a layout per builder (circle for rings, grid for tori, nodes grouped for clusters,
switches as hubs), with a step's transfers or each link's utilisation drawn on it (plotly)."""

from __future__ import annotations

import math
import re

import numpy as np

from simulator.topology.model import Topology

_CHUNK_COLOURS = ["#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#46f0f0", "#f032e6", "#bcf60c",
                  "#008080", "#9a6324", "#800000", "#808000", "#000075", "#808080"]


def chunk_colour(chunk: int) -> str:
    """A distinct colour per chunk (cycling)."""
    return _CHUNK_COLOURS[chunk % len(_CHUNK_COLOURS)]


def _circle(n: int, radius: float = 1.0, cx: float = 0.0, cy: float = 0.0) -> list[tuple[float, float]]:
    return [(cx + radius * math.sin(2 * math.pi * i / max(n, 1)), cy + radius * math.cos(2 * math.pi * i / max(n, 1)))
            for i in range(n)]


def layout(topo: Topology) -> dict[int, tuple[float, float]]:
    """Node index -> (x, y): tori on their grid, clusters as groups of GPUs around their switch, leaf-spine networks
    in rows, others on a circle with their switches in the middle."""
    names, kinds = topo.node_names, topo.node_kinds
    gpus = [i for i, k in enumerate(kinds) if k == "gpu"]
    others = [i for i, k in enumerate(kinds) if k != "gpu"]
    torus = [re.fullmatch(r"[a-z]+(\d+)_(\d+)(?:_(\d+))?", names[i]) for i in gpus]
    grouped = [re.fullmatch(r"n(\d+)g(\d+)", names[i]) for i in gpus]
    if gpus and all(torus):
        return {i: (int(m.group(2)) + int(m.group(3) or 0) * 0.25, -int(m.group(1)) - int(m.group(3) or 0) * 0.25)
                for i, m in zip(gpus, torus)}
    if gpus and all(grouped):
        return _grouped(names, gpus, others, grouped)
    if any(names[i].startswith("leaf") for i in others):  # leaf-spine: hosts, leaves and spines in rows
        pos = {}
        for row, members in enumerate((gpus, [i for i in others if names[i].startswith("leaf")],
                                       [i for i in others if not names[i].startswith("leaf")])):
            for k, i in enumerate(members):
                pos[i] = ((k + 0.5) / max(len(members), 1) * max(len(gpus), 4) * 0.5, 1.5 * row)
        return pos
    pos = dict(zip(gpus, _circle(len(gpus))))
    for k, i in enumerate(others):
        pos[i] = (0.0, 0.0) if len(others) == 1 else (0.5 * math.cos(2 * math.pi * k / len(others)),
                                                      0.5 * math.sin(2 * math.pi * k / len(others)))
    return pos


def _grouped(names: list[str], gpus: list[int], others: list[int], matches: list) -> dict[int, tuple[float, float]]:
    """Nodes of a cluster side by side (rows of up to 4), each node's GPUs on a circle around its switch, each NIC just
    outside the GPU it serves (NIC k beside GPU k), the network's leaves and spines in rows above, spread as wide."""
    nodes = sorted({int(m.group(1)) for m in matches})
    per = max(int(m.group(2)) for m in matches) + 1
    columns = min(len(nodes), 4)
    centres = {n: (4.0 * (k % columns), -4.0 * (k // columns)) for k, n in enumerate(nodes)}
    pos = {}
    for i, m in zip(gpus, matches):
        cx, cy = centres[int(m.group(1))]
        pos[i] = _circle(per, 1.0, cx, cy)[int(m.group(2))]
    rest = []
    for i in others:
        own = re.match(r"n(\d+)", names[i])
        if own and int(own.group(1)) in centres:
            cx, cy = centres[int(own.group(1))]
            nic = re.search(r"nic(\d*)", names[i])
            pos[i] = _circle(per, 1.5, cx, cy)[int(nic.group(1) or 0) % per] if nic else (cx, cy)
        else:
            rest.append(i)
    left, right = -1.5, 4.0 * (columns - 1) + 1.5
    for row, members in enumerate(([i for i in rest if "spine" not in names[i]], [i for i in rest if "spine" in names[i]])):
        for k, i in enumerate(members):
            pos[i] = (left + (right - left) * (k + 0.5) / len(members), 2.6 + 0.9 * row)
    return pos


def topology_figure(topo: Topology, ranks: int, arrows: list[tuple[int, int, int, str]] | None = None,
                    link_values: dict[int, float] | None = None, title: str = "", height: int = 460):
    """The graph; `arrows` (src rank, dst rank, chunk, hover) drawn over it, or links coloured by `link_values` (0..1)."""
    import plotly.graph_objects as go

    pos = layout(topo)
    fig = go.Figure()
    seen = set()
    xs, ys = [], []
    for lid in range(min(topo.num_links, 20000) if not topo.ideal else 0):
        u, v = int(topo.link_src[lid]), int(topo.link_dst[lid])
        if (v, u) in seen or link_values is not None:
            continue
        seen.add((u, v))
        xs += [pos[u][0], pos[v][0], None]
        ys += [pos[u][1], pos[v][1], None]
    if xs:
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color="#c8c8c8", width=1.5), hoverinfo="skip",
                                 name="links", showlegend=False))
    if link_values is not None:
        _utilisation_lines(fig, topo, pos, link_values)
    placement = [topo.devices[topo.placement[r]] for r in range(ranks)]
    switches = [i for i, k in enumerate(topo.node_kinds) if k != "gpu"]
    if switches:
        fig.add_trace(go.Scatter(x=[pos[i][0] for i in switches], y=[pos[i][1] for i in switches], mode="markers",
                                 marker=dict(symbol="square", size=10, color="#718096"), name="switches / NICs",
                                 text=[topo.node_names[i] for i in switches], hovertemplate="%{text}<extra></extra>"))
    fig.add_trace(go.Scatter(x=[pos[n][0] for n in placement], y=[pos[n][1] for n in placement], mode="markers+text",
                             marker=dict(size=max(12, 30 - ranks // 2), color="#ebf4ff", line=dict(color="#2b6cb0", width=2)),
                             text=[str(r) for r in range(ranks)], textfont=dict(size=11), name="ranks (GPUs)",
                             hovertext=[f"rank {r} on {topo.node_names[n]}" for r, n in enumerate(placement)],
                             hoverinfo="text"))
    _arrows(fig, [(pos[placement[src]], pos[placement[dst]], chunk, hover) for src, dst, chunk, hover in arrows or []])
    fig.update_layout(title=title, height=height, margin=dict(l=10, r=10, t=40, b=10), plot_bgcolor="white",
                      xaxis=dict(visible=False), yaxis=dict(visible=False, scaleanchor="x"),
                      legend=dict(orientation="h", y=-0.02))
    return fig


def _arrows(fig, arrows: list[tuple[tuple[float, float], tuple[float, float], int, str]]) -> None:
    """Arrows (from, to, chunk, hover) as one line trace per chunk colour, an arrowhead marker at each end: a few
    traces whatever the count (annotations, one per arrow, took seconds to draw for 256). The same (from, to, chunk)
    is drawn once, its hover saying how many messages it stands for."""
    import plotly.graph_objects as go

    merged: dict[tuple, list[str]] = {}
    for a, b, chunk, hover in arrows:
        merged.setdefault((a, b, chunk), []).append(hover)
    by_colour: dict[str, tuple[list, list, list, list]] = {}
    for (a, b, chunk), hovers in merged.items():
        dx, dy = b[0] - a[0], b[1] - a[1]
        cut = 0.12 if math.hypot(dx, dy) > 0 else 0.0  # stop short of the nodes' markers
        xs, ys, sizes, text = by_colour.setdefault(chunk_colour(chunk), ([], [], [], []))
        label = hovers[0] + (f" ({len(hovers)} messages)" if len(hovers) > 1 else "")
        xs += [a[0] + cut * dx, b[0] - cut * dx, None]
        ys += [a[1] + cut * dy, b[1] - cut * dy, None]
        sizes += [0, 11, 0]
        text += [label, label, None]
    for colour, (xs, ys, sizes, text) in by_colour.items():
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers", line=dict(color=colour, width=2), opacity=0.85,
                                 marker=dict(symbol="arrow", angleref="previous", size=sizes, color=colour),
                                 text=text, hovertemplate="%{text}<extra></extra>", showlegend=False))


def _utilisation_lines(fig, topo: Topology, pos, link_values: dict[int, float]) -> None:
    import plotly.graph_objects as go
    from plotly.colors import sample_colorscale

    bins: dict[int, tuple[list, list, list]] = {}  # ten colour levels, one trace each (a trace per link is slow)
    for lid, value in link_values.items():
        u, v = int(topo.link_src[lid]), int(topo.link_dst[lid])
        level = int(round(float(np.clip(value, 0, 1)) * 10))
        # draw each direction offset a little so both are visible
        dx, dy = pos[v][0] - pos[u][0], pos[v][1] - pos[u][1]
        norm = math.hypot(dx, dy) or 1.0
        ox, oy = -dy / norm * 0.03, dx / norm * 0.03
        xs, ys, text = bins.setdefault(level, ([], [], []))
        xs += [pos[u][0] + ox, pos[v][0] + ox, None]
        ys += [pos[u][1] + oy, pos[v][1] + oy, None]
        label = f"{topo.link_name(lid)}: {value:.0%} busy"
        text += [label, label, None]
    for level in sorted(bins):
        xs, ys, text = bins[level]
        colour = sample_colorscale("YlOrRd", [level / 10])[0]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=colour, width=2 + 0.5 * level),
                                 showlegend=False, text=text, hovertemplate="%{text}<extra></extra>"))
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", showlegend=False, hoverinfo="skip",
                             marker=dict(colorscale="YlOrRd", cmin=0, cmax=1, color=[0], showscale=True,
                                         colorbar=dict(title="link busy", tickformat=".0%"))))
