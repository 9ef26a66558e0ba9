"""Cost explorer: every algorithm of a collective against message size, closed forms and the engine side by side."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.explorer import MAX_ENGINE_RANKS, explorer_figure
from app.ui.common import algorithm_union_params, friendly
from app.ui.inputs import MAX_POINTS, link_model, sizes_input, topology_input
from app.ui.urlstate import UrlState
from simulator.collective import OPS
from simulator.units import format_size

MAX_RANKS = 4096

st.header("Cost explorer")
st.markdown(
    "Every message costs a fixed **latency** (alpha) plus its bytes over the **bandwidth**. Algorithms with few "
    "steps win small messages (latency-bound, shaded blue); algorithms that move the fewest bytes per rank win large "
    "ones (bandwidth-bound, orange). Dashed vertical lines mark the sizes where the fastest algorithm changes.")

url = UrlState("cost")
c = st.columns(4)
op = c[0].selectbox("collective", OPS, key=url.choice("op", OPS, "allreduce"))
ranks = c[1].number_input(f"ranks (1..{MAX_RANKS})", 1, MAX_RANKS, key=url.integer("p", 1, MAX_RANKS, 8))
sizes_text = c[2].text_input(f"sizes (START:END[:FACTOR], at most {MAX_POINTS})", key=url.text("sizes", "1KiB:1GiB:4"))
metric = c[3].radio("show", ["time", "busbw"], horizontal=True, key=url.choice("metric", ["time", "busbw"]))
c = st.columns(4)
alpha = c[0].text_input("latency per message (alpha)", key=url.text("alpha", "2us"))
bandwidth = c[1].text_input("bandwidth per direction", key=url.text("bw", "25GB/s"))
gamma = c[2].number_input("gamma (s per reduced byte, 0..1e-6)", 0.0, 1e-6, format="%g", key=url.number("gamma", 0.0, 1e-6, 0.0))
topo_text = c[3].text_input(f"engine points on (empty: none; p <= {MAX_ENGINE_RANKS})", key=url.text("topo", "ideal"),
                            help="ideal (the alpha and bandwidth above), switch, ring, torus, cluster:nodes=2,gpus=4, "
                                 "a preset such as dgx-h100")
params = algorithm_union_params(url, op, int(ranks))
url.show_notes()

with friendly():
    model = link_model(alpha, bandwidth, float(gamma))
    sizes = sizes_input(sizes_text)
    topology = None
    if topo_text.strip():
        spec = topo_text.strip()
        if spec == "ideal":
            from simulator.topology import ideal

            topology = ideal(int(ranks), model.alpha, 1.0 / model.beta)
        else:
            topology = topology_input(spec, int(ranks), "engine points on")
    from app.ui.common import cached_explore

    ex = cached_explore(op, int(ranks), tuple(sizes), model, tuple(sorted(params.items())), topo_text.strip())
    st.plotly_chart(explorer_figure(ex, metric, topology.name if topology else ""), key="cost.figure")
    if ex.crossovers:
        st.markdown("**Crossovers:** " + "; ".join(f"{new} beats {old} from {format_size(n)}" for n, old, new in ex.crossovers))
    else:
        st.markdown(f"**No crossover:** {ex.best()[0]} is fastest at every size shown.")
    best = ex.best()
    rows = [{"size": format_size(n), "bytes": n, "best": best[i],
             "best time (us)": float(ex.table["times"][best[i]][i]) * 1e6,
             "regime": "latency-bound" if ex.latency_bound[i] else "bandwidth-bound"} for i, n in enumerate(sizes)]
    st.dataframe(pd.DataFrame(rows), hide_index=True, key="cost.table")
    if topology is not None and int(ranks) > MAX_ENGINE_RANKS:
        st.info(f"Engine points are drawn for at most {MAX_ENGINE_RANKS} ranks; the lines are closed forms.")
url.sync()
