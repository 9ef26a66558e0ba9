"""collsim in the browser: step through an algorithm, compare cost curves, ask what-if about hardware.

Run with `collsim app` (or `streamlit run app/streamlit_app.py`).
"""

from __future__ import annotations

import streamlit as st

from app.diagram import DRAWABLE_OPS, MAX_RANKS, render_svg
from app.figures import collective_for_picture, cost_figure, whatif_figure
from simulator.algorithms import build_schedule, get, names_for
from simulator.collective import OPS
from simulator.cost import LinkModel
from simulator.errors import CollsimError
from simulator.topology.model import check_link_value
from simulator.units import parse_bandwidth, parse_size_range, parse_time

st.set_page_config(page_title="collsim", layout="wide")
st.title("collsim: how GPUs talk in collectives")


MAX_POINTS = 256  # sizes per curve in the app: 13,870 took 44 s to draw, with no visibly better plot


def sizes_input(text: str, field: str = "sizes") -> list[int]:
    """Sizes from a text field (parsed like --sizes, which counts a range before making it), at most MAX_POINTS."""
    sizes = parse_size_range(text, field)
    if len(sizes) > MAX_POINTS:
        raise CollsimError(f"{field}: {text!r} gives {len(sizes):,} sizes, over the app's limit of {MAX_POINTS} per curve; "
                           "use a larger FACTOR or a shorter range")
    return sizes


def link_inputs(prefix: str, alpha: str = "2us", bandwidth: str = "25GB/s") -> LinkModel:
    """Latency, bandwidth and gamma inputs, parsed like the command line parses them; finite, bandwidth > 0."""
    cols = st.columns(3)
    a = cols[0].text_input("latency per message (alpha)", alpha, key=f"{prefix}-alpha")
    b = cols[1].text_input("bandwidth per direction", bandwidth, key=f"{prefix}-bw")
    g = cols[2].number_input("gamma (s per reduced byte)", value=0.0, format="%g", key=f"{prefix}-gamma", min_value=0.0)
    latency = check_link_value("alpha", parse_time(a, "alpha"), "")
    return LinkModel.from_bandwidth(latency, check_link_value("bandwidth", parse_bandwidth(b), ""), g)


def param_inputs(params, prefix: str) -> dict:
    """One number input per algorithm Param (its help, minimum and maximum); empty means the algorithm's default."""
    cols = st.columns(max(len(params), 1))
    values = {p.name: col.number_input(f"{p.name}: {p.help}", value=p.default, min_value=p.minimum, max_value=p.maximum,
                                       step=1, key=f"{prefix}-{p.name}") for p, col in zip(params, cols)}
    return {k: int(v) for k, v in values.items() if v is not None}


step_tab, cost_tab, whatif_tab = st.tabs(["Step through", "Cost curves", "What-if hardware"])

with step_tab:
    st.markdown("Pick a collective and an algorithm: each row is a rank's buffer, each column the state after "
                "a step, arrows are the messages of that step. Colours come from running the schedule itself.")
    cols = st.columns(4)
    op = cols[0].selectbox("collective", list(DRAWABLE_OPS), key="step-op")
    algo = cols[1].selectbox("algorithm", names_for(op), key="step-algo")
    ranks = cols[2].slider("ranks", 1, MAX_RANKS, 4, key="step-ranks")
    elements = cols[3].slider("elements per buffer", 1, 64, 2 * ranks, key="step-elements")
    params = param_inputs(get(op, algo).params, "step")
    try:
        schedule = build_schedule(collective_for_picture(op, ranks, elements), algo, **params)
        st.caption(f"{schedule.num_steps} steps, {len(schedule.network_transfers())} messages")
        st.image(render_svg(schedule))
    except CollsimError as exc:
        st.error(str(exc))

with cost_tab:
    cols = st.columns(3)
    op_c = cols[0].selectbox("collective", OPS, key="cost-op")
    ranks_c = cols[1].number_input("ranks", 1, 4096, 8, key="cost-ranks")
    sizes_c = cols[2].text_input("sizes (START:END[:FACTOR])", "1KiB:1GiB:4", key="cost-sizes")
    try:
        model = link_inputs("cost")
        sizes = sizes_input(sizes_c)
        tunables = {p.name: p for n in names_for(op_c) for p in get(op_c, n).params}
        params_c = param_inputs(list(tunables.values()), "cost")
        st.plotly_chart(cost_figure(op_c, int(ranks_c), sizes, model, "time", params=params_c), use_container_width=True)
        st.plotly_chart(cost_figure(op_c, int(ranks_c), sizes, model, "busbw", params=params_c), use_container_width=True)
        st.caption("Lines marked (engine) are algorithms without a closed form, simulated on the contention-free ideal machine.")
    except CollsimError as exc:
        st.error(str(exc))

with whatif_tab:
    st.markdown("Two machines, the same collective: which one is faster at each message size, "
                "with the best algorithm on each.")
    cols = st.columns(3)
    op_w = cols[0].selectbox("collective", OPS, key="w-op")
    ranks_w = cols[1].number_input("ranks", 2, 4096, 16, key="w-ranks")
    sizes_w = cols[2].text_input("sizes", "1KiB:1GiB:4", key="w-sizes")
    try:
        st.subheader("Machine A")
        model_a = link_inputs("a", "3us", "50GB/s")
        st.subheader("Machine B")
        model_b = link_inputs("b", "10us", "100GB/s")
        st.plotly_chart(whatif_figure(op_w, int(ranks_w), sizes_input(sizes_w), {"A": model_a, "B": model_b}),
                        use_container_width=True)
    except CollsimError as exc:
        st.error(str(exc))
