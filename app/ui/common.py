"""What every page shares: friendly errors, algorithm-parameter widgets, cached engine-backed builds."""

from __future__ import annotations

from contextlib import contextmanager

import streamlit as st

from app.ui.urlstate import UrlState
from simulator.algorithms import get
from simulator.errors import CollsimError


@contextmanager
def friendly():
    """Show a CollsimError as one in-page error line (field, value, what is accepted) instead of a traceback."""
    try:
        yield
    except CollsimError as exc:
        st.error(str(exc).splitlines()[0])


def _param_widget(col, url: UrlState, param, ranks: int, max_chunks: int, who: str = "") -> int | None:
    """One bounded number input for a registry Param, its limit in the label; 0 means 'the algorithm picks' for a
    parameter without a default (group, node)."""
    if param.default is None:
        value = col.number_input(f"{param.name} (0 = the algorithm picks, 1..{ranks}){who}: {param.help}", 0, ranks,
                                 key=url.integer(param.name, 0, ranks, 0))
        return int(value) or None
    hi = max_chunks if param.name == "chunks" else 1024
    hi = min(hi, param.maximum) if param.maximum is not None else hi
    value = col.number_input(f"{param.name} ({param.minimum}..{hi}){who}: {param.help}", param.minimum, hi,
                             key=url.integer(param.name, param.minimum, hi, param.default))
    return int(value)


def algorithm_params(url: UrlState, op: str, algo: str, ranks: int, max_chunks: int = 8) -> dict:
    """One bounded number input per registry parameter of (op, algo); the limit is in the label."""
    spec = get(op, algo)
    if not spec.params:
        return {}
    cols = st.columns([1] * len(spec.params) + [max(4 - len(spec.params), 1)])
    values = {param.name: _param_widget(col, url, param, ranks, max_chunks) for param, col in zip(spec.params, cols)}
    return {k: v for k, v in values.items() if v is not None}


def algorithm_union_params(url: UrlState, op: str, ranks: int, max_chunks: int = 64) -> dict:
    """The parameters any algorithm of `op` takes (chunks, group, ...), each applied to the algorithms that accept it."""
    from simulator.algorithms import names_for

    params, takers = {}, {}
    for name in names_for(op):
        for param in get(op, name).params:
            params.setdefault(param.name, param)
            takers.setdefault(param.name, []).append(name)
    if not params:
        return {}
    cols = st.columns(len(params))
    values = {name: _param_widget(col, url, param, ranks, max_chunks, f", for {', '.join(takers[name])}")
              for (name, param), col in zip(params.items(), cols)}
    return {k: v for k, v in values.items() if v is not None}


@st.cache_resource(max_entries=32, show_spinner="running the schedule on symbols and in the engine...")
def cached_step_model(op: str, algo: str, ranks: int, params: tuple, root: int, topology: str, size: str):
    """app.ui.step_model.build_step_model, kept for reruns with the same choice (read-only)."""
    from app.ui.step_model import build_step_model

    return build_step_model(op, algo, ranks, dict(params), root, topology, size)


@st.cache_resource(max_entries=32, show_spinner="pricing every algorithm...")
def cached_explore(request, topology: str):
    """app.explorer.explore_request for one CostRequest and engine topology, kept for reruns (read-only)."""
    from app.explorer import explore_request
    from app.ui.inputs import topology_input
    from simulator.topology import ideal

    topo = None
    if topology == "ideal":
        topo = ideal(request.ranks, request.model.alpha, 1.0 / request.model.beta)
    elif topology:
        topo = topology_input(topology, request.ranks, "engine points on")
    return explore_request(request, topo)
