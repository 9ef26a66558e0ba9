"""Topology and contention: which links a collective loads, and what a late rank or a busy link does to everyone."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.topofig import topology_figure
from app.ui.common import algorithm_params, friendly
from app.ui.contention_model import MAX_DELAY_US, MAX_RANKS, busiest, chrome_json, run_contention, utilisation
from app.ui.urlstate import UrlState
from simulator.algorithms import names_for
from simulator.collective import OPS

st.header("Topology and contention")
st.markdown(
    "On a real machine messages share links. The engine routes every message over the topology and splits each "
    "link's bandwidth fairly among the messages on it, so a link that many messages cross becomes the bottleneck. "
    "A rank that starts late, or a link that other traffic already uses, delays every rank that waits on it.")

url = UrlState("contention")
c = st.columns(5)
topology = c[0].text_input("topology", key=url.text("topo", "switch"),
                           help="switch, ring, torus, ideal (ranks filled in), cluster:nodes=2,gpus=4, dgx-h100:nodes=2, "
                                "fat_tree:hosts=8,leaf=2,oversub=2")
op = c[1].selectbox("collective", OPS, key=url.choice("op", OPS, "allreduce"))
algo = c[2].selectbox("algorithm", names_for(op), key=url.choice("algo", names_for(op), "ring"))
ranks = c[3].number_input(f"ranks (1..{MAX_RANKS})", 1, MAX_RANKS, key=url.integer("p", 1, MAX_RANKS, 8))
size = c[4].text_input("size", key=url.text("size", "64MiB"))
params = algorithm_params(url, op, algo, int(ranks), max_chunks=64)
c = st.columns(4)
late = c[0].number_input(f"late rank (-1 = none, 0..{int(ranks) - 1})", -1, int(ranks) - 1,
                         key=url.integer("late", -1, int(ranks) - 1, min(3, int(ranks) - 1)))
delay = c[1].number_input(f"starts late by (us, 0..{MAX_DELAY_US})", 0, MAX_DELAY_US, key=url.integer("delay", 0, MAX_DELAY_US, 50))
load = c[2].slider("other traffic on the busiest link (%)", 0, 90, key=url.integer("load", 0, 90, 0))
other = c[3].text_input("compare with topology (empty: none)", key=url.text("vs", "ring"))
url.show_notes()


@st.cache_resource(max_entries=16, show_spinner="running the engine...")
def _run(topology, op, algo, ranks, size, params, late, delay, load):
    return run_contention(topology, op, algo, ranks, size, dict(params), 0, late, delay, load / 100)


with friendly():
    key = (op, algo, int(ranks), size, tuple(sorted(params.items())))
    run = _run(topology, *key, int(late), float(delay), int(load))
    before, after = run.before, run.after
    m = st.columns(3)
    m[0].metric("as chosen", f"{before.time * 1e6:.4g} us")
    m[1].metric("with the disturbance", f"{after.time * 1e6:.4g} us", f"{(after.time - before.time) * 1e6:+.4g} us",
                delta_color="inverse")
    m[2].metric("busiest link", (before.busiest_link() or {}).get("name", "none"))
    st.caption(f"Disturbance: {run.disturbance}.")
    left, right = st.columns(2)
    left.plotly_chart(topology_figure(before.topology, int(ranks), link_values=utilisation(before),
                                      title=f"{before.topology.name}: link utilisation, as chosen"), key="contention.before")
    right.plotly_chart(topology_figure(after.topology, int(ranks), link_values=utilisation(after),
                                       title="with the disturbance"), key="contention.after")
    st.subheader("Busiest links")
    st.caption("utilisation: bytes / (bandwidth left after other traffic) / run time; busy: share of the run with a "
               "message on the link.")
    st.dataframe(pd.DataFrame(busiest(after)), hide_index=True, key="contention.links",
                 column_config={c: st.column_config.NumberColumn(format="percent")
                                for c in ("utilisation", "busy fraction", "other traffic")})
    st.download_button("Download the Chrome trace (open in ui.perfetto.dev)", chrome_json(after),
                       file_name=f"{op}_{algo}_{int(ranks)}.trace.json", mime="application/json", key="contention.trace")
    if other.strip():
        run2 = _run(other, *key, -1, 0.0, 0)
        st.subheader(f"Side by side: {before.topology.name} against {run2.before.topology.name}")
        a, b = st.columns(2)
        a.metric(before.topology.name, f"{before.time * 1e6:.4g} us")
        b.metric(run2.before.topology.name, f"{run2.before.time * 1e6:.4g} us")
        a.plotly_chart(topology_figure(before.topology, int(ranks), link_values=utilisation(before)), key="contention.a")
        b.plotly_chart(topology_figure(run2.before.topology, int(ranks), link_values=utilisation(run2.before)),
                       key="contention.b")
url.sync()
