"""What-if hardware: the same collectives on two or three machines, timed by the engine with the best algorithm on each."""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import streamlit as st

from app.ui.common import friendly
from app.ui.inputs import sizes_input
from app.ui.urlstate import UrlState
from app.ui.whatif_model import MAX_MACHINES, MAX_RANKS, MAX_SIZES, check_choice, machine_rows
from simulator.collective import OPS, normalize_op
from simulator.errors import CollsimError
from simulator.topology import PRESETS
from simulator.units import format_size

st.header("What-if hardware")
st.markdown(
    "Faster links help only the part of a collective they limit: latency-bound sizes care about per-message latency "
    "and the number of steps, bandwidth-bound sizes about the slowest link on the path. Compare machines here: each "
    "one runs every algorithm of each collective in the event engine, on all its GPUs, and the fastest counts.")
st.caption(f"Presets: {', '.join(PRESETS)} (add :nodes=N); builders such as cluster:nodes=2,gpus=8,net_bw=50GB/s. "
           f"At most {MAX_MACHINES} machines, {MAX_RANKS} GPUs each, {MAX_SIZES} sizes.")



def parse_ops(text: str) -> list[str]:
    """Collective names from 'allreduce, allgather' (aliases such as all_reduce allowed), no repeats."""
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise CollsimError(f"collectives: {text!r} names none; expected one or more of {', '.join(OPS)}")
    out = []
    for name in names:
        try:
            op = normalize_op(name)
        except CollsimError:
            raise CollsimError(f"collectives: {name!r} is not a collective; expected one or more of {', '.join(OPS)}") from None
        if op not in out:
            out.append(op)
    return out


url = UrlState("whatif")
c = st.columns(3)
defaults = ("dgx-h100:nodes=2", "hgx-b200:nodes=2", "")
machines = [c[i].text_input(f"machine {'ABC'[i]}", key=url.text(f"m{i}", defaults[i])) for i in range(MAX_MACHINES)]
c = st.columns(2)
ops_text = c[0].text_input(f"collectives (comma-separated: {', '.join(OPS)})", key=url.text("ops", "allreduce,allgather"))
sizes_text = c[1].text_input(f"sizes (at most {MAX_SIZES})", key=url.text("sizes", "64KiB,16MiB,1GiB"))
url.show_notes()


@st.cache_data(max_entries=32, show_spinner="running the machine in the engine...")
def _rows(machine: str, ops: tuple, sizes: tuple) -> list[dict]:
    """One machine's rows, cached on their own: changing machine B does not rerun machine A."""
    return machine_rows(machine, list(ops), list(sizes))


with friendly():
    ops = parse_ops(ops_text)
    sizes = sizes_input(sizes_text)
    chosen = tuple(m.strip() for m in machines if m.strip())
    check_choice(list(chosen), sizes)
    rows = pd.DataFrame([row for spec in chosen for row in _rows(spec, tuple(ops), tuple(sizes))])
    rows["size"] = [format_size(int(n)) for n in rows["bytes"]]
    first = rows[rows["machine"] == chosen[0]].set_index(["op", "bytes"])["time (us)"]
    rows[f"time vs {chosen[0]}"] = [t / first[(op, n)] for op, n, t in zip(rows["op"], rows["bytes"], rows["time (us)"])]
    for op in ops:
        part = rows[rows["op"] == op]
        fig = px.bar(part, x="size", y="time (us)", color="machine", barmode="group", log_y=True,
                     hover_data=["best algorithm", "ranks", "busbw (GB/s)"],
                     title=f"{op}: engine time with the best algorithm on each machine (lower is better)")
        st.plotly_chart(fig, key=f"whatif.{op}")
    st.dataframe(rows.drop(columns=["bytes"]), hide_index=True, key="whatif.table",
                 column_config={f"time vs {chosen[0]}": st.column_config.NumberColumn(format="%.2fx")})
url.sync()
