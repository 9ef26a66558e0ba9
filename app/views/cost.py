"""Cost explorer: every algorithm of a collective against message size, closed forms and the engine side by side."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.explorer import MAX_ENGINE_RANKS, cost_request, explorer_figure
from app.ui.common import algorithm_union_params, friendly
from app.ui.inputs import MAX_POINTS, sizes_input, topology_input
from app.ui.urlstate import UrlState
from collsim.cost import DEFAULT_ALPHA, DEFAULT_BANDWIDTH
from simulator.collective import OPS
from simulator.units import format_size

MAX_RANKS = 4096
# the sliders' stops: every rank count to 64, then the usual cluster sizes; log-spaced link numbers
RANK_STEPS = [*range(1, 65), 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096]
ALPHAS = ["100ns", "200ns", "500ns", "1us", "1.5us", "2us", "3us", "5us", "7us", "10us", "15us", "20us", "30us",
          "50us", "100us"]
BANDWIDTHS = ["1GB/s", "2GB/s", "5GB/s", "10GB/s", "12.5GB/s", "25GB/s", "50GB/s", "100GB/s", "200GB/s", "400GB/s",
              "450GB/s", "900GB/s"]
GAMMAS = [0.0, 1e-12, 2e-12, 5e-12, 1e-11, 2e-11, 5e-11, 1e-10, 2e-10, 5e-10, 1e-9]

st.header("Cost explorer")
st.markdown(
    "Every message costs a fixed **latency** (alpha) plus its bytes over the **bandwidth**. Algorithms with few "
    "steps win small messages (latency-bound, shaded blue); algorithms that move the fewest bytes per rank win large "
    "ones (bandwidth-bound, orange). Dashed vertical lines mark the sizes where the fastest algorithm changes.")

url = UrlState("cost")
c = st.columns(3)
op = c[0].selectbox("collective", OPS, key=url.choice("op", OPS, "allreduce"))
sizes_text = c[1].text_input(f"sizes (START:END[:FACTOR], at most {MAX_POINTS})", key=url.text("sizes", "1KiB:1GiB:4"))
metric = c[2].radio("show", ["time", "busbw"], horizontal=True, key=url.choice("metric", ["time", "busbw"]))
c = st.columns(2)
ranks = c[0].select_slider(f"ranks (1..{MAX_RANKS})", RANK_STEPS, key=url.choice("p", RANK_STEPS, 8))
alpha = c[1].select_slider("latency per message (alpha)", ALPHAS, key=url.choice("alpha", ALPHAS, DEFAULT_ALPHA))
c = st.columns(2)
bandwidth = c[0].select_slider("bandwidth per direction", BANDWIDTHS, key=url.choice("bw", BANDWIDTHS, DEFAULT_BANDWIDTH))
gamma = c[1].select_slider("gamma (reduction cost, s per reduced byte)", GAMMAS, key=url.choice("gamma", GAMMAS, 0.0),
                           format_func=lambda g: f"{g:g}")
topo_text = st.text_input(f"engine points on (empty: none; p <= {MAX_ENGINE_RANKS})", key=url.text("topo", "ideal"),
                          help="ideal (the alpha and bandwidth above), switch, ring, torus, cluster:nodes=2,gpus=4, "
                               "a preset such as dgx-h100")
params = algorithm_union_params(url, op, int(ranks))
url.show_notes()

with friendly():
    sizes = sizes_input(sizes_text)  # at most MAX_POINTS, counted before the request makes them
    request = cost_request(op, int(ranks), sizes_text, alpha, bandwidth, float(gamma), params)  # as `collsim cost`
    topology = None
    if topo_text.strip():
        with friendly():  # a bad topology shows its error line; the closed forms are still drawn
            spec = topo_text.strip()
            if spec == "ideal":
                from simulator.topology import ideal

                topology = ideal(int(ranks), request.model.alpha, 1.0 / request.model.beta)
            else:
                topology = topology_input(spec, int(ranks), "engine points on")
    from app.ui.common import cached_explore

    ex = cached_explore(request, topo_text.strip() if topology is not None else "")
    st.plotly_chart(explorer_figure(ex, metric, topology.name if topology else "", f"alpha {alpha}, {bandwidth}"),
                    key="cost.figure")
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
