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


def algorithm_params(url: UrlState, op: str, algo: str, ranks: int, max_chunks: int = 8) -> dict:
    """One bounded number input per registry parameter of (op, algo); the limit is in the label."""
    params = {}
    spec = get(op, algo)
    if not spec.params:
        return params
    cols = st.columns([1] * len(spec.params) + [max(4 - len(spec.params), 1)])
    for param, col in zip(spec.params, cols):
        if param.name == "chunks":
            hi = max_chunks if param.maximum is None else min(param.maximum, max_chunks)
            value = col.number_input(f"chunks (1..{hi}): {param.help}", param.minimum, hi,
                                     key=url.integer("chunks", param.minimum, hi, param.default or 1))
        elif param.name == "group":
            value = col.number_input(f"group (0 = the algorithm picks, 1..{ranks}): ranks per node", 0, ranks,
                                     key=url.integer("group", 0, ranks, 0))
            value = value or None
        else:
            hi = param.maximum if param.maximum is not None else 1024
            value = col.number_input(f"{param.name} ({param.minimum}..{hi}): {param.help}", param.minimum, hi,
                                     key=url.integer(param.name, param.minimum, hi, param.default or param.minimum))
        if value is not None:
            params[param.name] = int(value)
    return params


@st.cache_resource(max_entries=32, show_spinner="running the schedule on symbols and in the engine...")
def cached_step_model(op: str, algo: str, ranks: int, params: tuple, root: int, topology: str, size: str):
    """app.ui.step_model.build_step_model, kept for reruns with the same choice (read-only)."""
    from app.ui.step_model import build_step_model

    return build_step_model(op, algo, ranks, dict(params), root, topology, size)


def algorithm_union_params(url: UrlState, op: str, ranks: int, max_chunks: int = 64) -> dict:
    """The parameters any algorithm of `op` takes (chunks, group), each applied to the algorithms that accept it."""
    from simulator.algorithms import names_for

    names = {p.name for n in names_for(op) for p in get(op, n).params}
    params = {}
    cols = st.columns(max(len(names), 1))
    for name, col in zip(sorted(names), cols):
        if name == "chunks":
            params["chunks"] = int(col.number_input(f"chunks (1..{max_chunks}): pipelining depth of the algorithms "
                                                    "that take it", 1, max_chunks, key=url.integer("chunks", 1, max_chunks, 1)))
        elif name == "group":
            group = col.number_input(f"group (0 = auto, 1..{ranks}): ranks per node for hierarchical", 0, ranks,
                                     key=url.integer("group", 0, ranks, 0))
            if group:
                params["group"] = int(group)
    return params


@st.cache_resource(max_entries=32, show_spinner="pricing every algorithm...")
def cached_explore(op: str, ranks: int, sizes: tuple, model, params: tuple, topology: str):
    """app.explorer.explore for one choice, kept for reruns (read-only)."""
    from app.explorer import explore
    from app.ui.inputs import topology_input
    from simulator.topology import ideal

    topo = None
    if topology == "ideal":
        topo = ideal(ranks, model.alpha, 1.0 / model.beta)
    elif topology:
        topo = topology_input(topology, ranks, "engine points on")
    return explore(op, ranks, list(sizes), model, dict(params), topo)
