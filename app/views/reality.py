"""Model vs reality: a real nccl-tests log against the model fitted to it, size by size, and NCCL's own pick."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from app.figures import decade_axis, size_axis
from app.ui.common import friendly
from app.ui.reality_model import (
    MAX_UPLOAD,
    Measured,
    bundled_logs,
    default_preset,
    fit_log,
    held_out_nvls_step,
    predict_log,
    predict_summary,
    read_bundled,
    read_upload,
    rows,
    verify_choices,
)
from app.ui.urlstate import UrlState
from simulator.algorithms import names_for
from simulator.nccl.tuning import ARCHS
from simulator.units import format_size

st.header("Model vs reality")
st.markdown(
    "A model is only as good as its error on data it was not fitted to. Pick a real nccl-tests log (or upload one): "
    "collsim fits the algorithm's alpha-beta closed form to it, predicts **every other size from a fit to the rest** "
    "(so each error below is out of sample), and shows what NCCL's own tuning model would pick at each size. Name the "
    "machine the log ran on and `collsim predict` times NCCL's picks on that preset, with nothing fitted to the log.")


@st.cache_data(max_entries=32, show_spinner="running collsim predict at every size of the log...")
def cached_predict(log: Measured, preset: str, nvls_step_s: float | None) -> list:
    """predict_log, kept per (log, preset): logs 03 and 06 take 3.8 and 5.3 s at load average 0.9 (benchmarks/reality_predict.py)."""
    return predict_log(log, preset, nvls_step_s)


@st.cache_data(max_entries=16, show_spinner="fitting the NVLS step cost on the other NVLS logs...")
def cached_held_out(log_name: str | None) -> float | None:
    """held_out_nvls_step, kept per bundled log."""
    return held_out_nvls_step(log_name)


FIRST_LOG = "07_"
url = UrlState("reality")
logs = bundled_logs()
c = st.columns([3, 1.3, 1, 1.2, 1])
# the page opens on a log the model meets its goal on (one HGX B200 node, docs/accuracy.md), not on log 01, its worst
first = next((n for n in logs if n.startswith(FIRST_LOG)), logs[0] if logs else None)
log_name = c[0].selectbox("bundled log (tests/data/nccl-tests)", logs, key=url.choice("log", logs, first))
upload = c[0].file_uploader(f"or upload an nccl-tests log or a `collsim verify --json` result (at most "
                            f"{MAX_UPLOAD >> 20} MiB)", type=["txt", "log", "out", "json"], key="reality.upload",
                            max_upload_size=MAX_UPLOAD >> 20)
segments = c[2].number_input("size ranges (1..3)", 1, 3, key=url.integer("segments", 1, 3, 1),
                             help="fit each protocol regime (LL, LL128, Simple) on its own")
arch = c[3].selectbox("GPU generation (NCCL model)", ARCHS, key=url.choice("arch", ARCHS, "hopper"))
nodes = c[4].number_input("nodes (0 = 8 GPUs each, 1..64)", 0, 64, key=url.integer("nodes", 0, 64, 0),
                          help="nodes the log's ranks ran on, for NCCL's model; 0 assumes 8 GPUs per node")
source = upload.name if upload is not None else log_name
preset_key = url.text("preset", "" if upload is not None else default_preset(log_name))
if st.session_state.get("reality.preset_source", source) != source:  # another log: its own machine's preset
    st.session_state[preset_key] = "" if upload is not None else default_preset(log_name)
st.session_state["reality.preset_source"] = source
preset = st.columns([2, 3])[0].text_input(
    "machine preset (collsim predict, nothing fitted; empty = none)", key=preset_key,
    help="a machine preset such as p5:nodes=2 (`collsim topologies`); a bundled log starts with its own machine's")
url.show_notes()

with friendly():
    if upload is not None and upload.name.lower().endswith(".json"):
        choices = verify_choices(upload.getvalue(), upload.name)
        choice = c[0].selectbox("timed rows of the verify result", choices, key="reality.verify")
        log = read_upload(upload.getvalue(), upload.name, choice)
    else:
        log = read_upload(upload.getvalue(), upload.name) if upload is not None else read_bundled(log_name)
    algos = names_for(log.op)
    algo = c[1].selectbox("algorithm to fit", algos, key=url.choice("algo", algos, log.algorithm or "ring"))
    fit = fit_log(log, algo, int(segments))
    predictions, nvls_step_s = None, None
    if preset.strip():
        with friendly():  # a preset predict cannot run shows one error line; the rest of the page stays
            nvls_step_s = cached_held_out(log_name if upload is None else None)
            predictions = cached_predict(log, preset.strip(), nvls_step_s)
    table = pd.DataFrame(rows(fit, log, arch, int(nodes) or max(1, -(-log.ranks // 8)), predictions))
    st.caption(f"{log.source}: {log.op} on {log.ranks} ranks, {len(table)} sizes. Fitted alpha "
               f"{fit.alpha_s * 1e6:.3g} us, bandwidth {fit.bandwidth_Bps / 1e9:.3g} GB/s; median |error| out of sample "
               f"(sizes >= 64 KiB): {fit.cv_median_abs_pct_error() or 0:.1f}%.")
    if predictions is not None:
        label, caption = predict_summary(log, preset, predictions, nvls_step_s)
        st.caption(caption)
    labels = [format_size(int(n)) for n in table["bytes"]]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=table["bytes"], y=table["measured (us)"], name="measured", mode="markers",
                             marker=dict(size=9, color="black"), text=labels))
    fig.add_trace(go.Scatter(x=table["bytes"], y=table["predicted out of sample (us)"], name=f"{algo} model (out of sample)",
                             mode="lines+markers", line=dict(color="#dd6b20")))
    if table["NCCL model (us)"].notna().any():
        fig.add_trace(go.Scatter(x=table["bytes"], y=table["NCCL model (us)"], name="NCCL's tuning model",
                                 mode="lines", line=dict(color="#3182ce", dash="dash")))
    if predictions is not None:
        fig.add_trace(go.Scatter(x=table["bytes"], y=table["predict (us)"], name=label, mode="lines+markers",
                                 line=dict(color="#2f855a"), marker=dict(symbol="diamond")))
    fig.update_layout(title="measured against predicted", xaxis=size_axis(table["bytes"], "size"),
                      yaxis=decade_axis("time (us)"), height=460,
                      legend=dict(orientation="h", yanchor="top", y=-0.2))  # below: the predict trace's name is long
    left, right = st.columns(2)
    left.plotly_chart(fig, key="reality.figure")
    err = go.Figure(go.Bar(x=labels, y=table["error (%)"], marker_color="#dd6b20", name=f"{algo} model (out of sample)"))
    if predictions is not None:
        err.add_trace(go.Bar(x=labels, y=table["predict error (%)"], marker_color="#2f855a", name="collsim predict"))
    err.update_layout(title="error per size (%)", yaxis=dict(title="predicted - measured (%)"), height=460)
    right.plotly_chart(err, key="reality.error")
    st.dataframe(table, hide_index=True, key="reality.table")
url.sync()
