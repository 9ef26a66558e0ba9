"""What-if hardware: the same collectives on two or three machines, timed as NCCL runs them (collsim predict) or with the
best collsim algorithm on each, or a training step on each."""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import streamlit as st

from app.ui.colocate_view import several_jobs_section
from app.ui.common import friendly
from app.ui.inputs import sizes_input
from app.ui.urlstate import UrlState
from app.ui.whatif_model import (
    MAX_EXACT_GPUS,
    MAX_MACHINES,
    MAX_RANKS,
    MAX_SIZES,
    MAX_TP,
    STEP_MODES,
    STEP_SCENARIOS,
    check_choice,
    default_step_timing,
    machine_rows,
    nccl_rows,
    step_row,
    step_table_row,
)
from simulator.algorithms import build_schedule
from simulator.collective import OPS, Collective, normalize_op
from simulator.errors import CollsimError
from simulator.program.presets import GPUS, MODELS
from simulator.program.scenarios import SCENARIOS
from simulator.topology import PRESETS
from simulator.units import format_size

st.header("What-if hardware")
st.markdown(
    "Faster links help only the part of a collective they limit: latency-bound sizes care about per-message latency "
    "and the number of steps, bandwidth-bound sizes about the slowest link on the path. Compare machines here on "
    "collectives (each machine on all its GPUs in the event engine, running NCCL's own picks or the fastest of "
    "collsim's algorithms) or on a whole training step; or put several jobs on one machine and see what each loses to "
    "the others.")
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
KINDS = ("collectives", "a training step", "several jobs")
kind = st.radio("compare", KINDS, horizontal=True, key=url.choice("kind", KINDS))
chosen: tuple[str, ...] = ()
if kind != KINDS[2]:  # several jobs share one machine, chosen in its own view
    c = st.columns(3)
    defaults = ("dgx-h100:nodes=2", "hgx-b200:nodes=2", "")
    machines = [c[i].text_input(f"machine {'ABC'[i]}", key=url.text(f"m{i}", defaults[i])) for i in range(MAX_MACHINES)]
    chosen = tuple(m.strip() for m in machines if m.strip())


@st.cache_resource(max_entries=256, show_spinner=False)
def _schedule(op: str, ranks: int, nbytes: int, dtype: str, name: str):
    """A schedule (read-only), shared by the machines with as many GPUs."""
    return build_schedule(Collective(op, ranks, nbytes, dtype), name)


@st.cache_data(max_entries=32, show_spinner="running the machine in the engine...")
def _rows(machine: str, ops: tuple, sizes: tuple) -> list[dict]:
    """One machine's rows, cached on their own: changing machine B does not rerun machine A."""
    return machine_rows(machine, list(ops), list(sizes),
                        lambda coll, name: _schedule(coll.op, coll.ranks, coll.nbytes, coll.dtype, name))


@st.cache_data(max_entries=32, show_spinner="running NCCL's picks on the machine in the engine...")
def _nccl_rows(machine: str, ops: tuple, sizes: tuple) -> list[dict]:
    """One machine's rows as `collsim predict` times them, cached per machine like _rows."""
    return nccl_rows(machine, list(ops), list(sizes))


@st.cache_data(max_entries=32, show_spinner="running the training step in the engine...")
def _step(machine: str, scenario: str, model: str, gpu: str, tp: int, mfu: float, mode: str, timing: str) -> dict:
    """One machine's training step (as `collsim whatif`), cached per machine."""
    row = step_row(machine, scenario, model, gpu, tp, mfu, mode, timing)
    row.pop("trace_events", None)
    return row


@st.cache_data(max_entries=32, show_spinner=False)
def _default_timing(machines: tuple[str, ...]) -> str:
    return default_step_timing(list(machines))


TIMED = ("NCCL (collsim predict)", "best collsim algorithm (links only)")
STEP_TIMED = ("NCCL (collsim predict)", "collsim algorithms (links only)")  # --timing nccl, --timing links


def _each_machine(rows_of) -> dict:
    """machine -> rows_of(machine) for every machine chosen; a machine that cannot run shows its own error line and the
    others are still drawn (a typo in one machine blanked the whole page)."""
    drawn, said = {}, set()
    for spec in chosen:
        try:
            drawn[spec] = rows_of(spec)
        except CollsimError as exc:  # an error every machine hits (a bad size or op) is said once
            line = str(exc).splitlines()[0]
            if line not in said:
                said.add(line)
                st.error(line)
    return drawn


def collectives_section() -> None:
    timed = st.radio("timed as", TIMED, horizontal=True, key=url.choice("timed", TIMED))
    st.caption("NCCL (collsim predict): what nccl-tests would print, NCCL's own pick of algorithm, protocol and "
               "channels timed in the engine (preset machines only; docs/accuracy.md says how close it comes to real "
               "logs); best collsim algorithm: the fastest of collsim's algorithms on the machine's plain links.")
    nccl = timed == TIMED[0]
    c = st.columns(2)
    ops_text = c[0].text_input(f"collectives (comma-separated: {', '.join(OPS)})", key=url.text("ops", "allreduce,allgather"))
    sizes_text = c[1].text_input(f"sizes (at most {MAX_SIZES})", key=url.text("sizes", "64KiB,16MiB,1GiB"))
    url.show_notes()
    with friendly():
        ops = parse_ops(ops_text)
        sizes = sizes_input(sizes_text)
        check_choice(list(chosen), sizes)
        timing = _nccl_rows if nccl else _rows
        drawn = _each_machine(lambda spec: timing(spec, tuple(ops), tuple(sizes)))
        if not drawn:
            return
        rows = pd.DataFrame([row for found in drawn.values() for row in found])
        chosen_ok = list(drawn)
        if nccl:
            rows = rows.rename(columns={"best algorithm": "schedule"})
        hover = ["NCCL algorithm", "protocol", "channels", "schedule"] if nccl else ["best algorithm"]
        how = "NCCL's pick (collsim predict)" if nccl else "the best algorithm"
        rows["size"] = [format_size(int(n)) for n in rows["bytes"]]
        first = rows[rows["machine"] == chosen_ok[0]].set_index(["op", "bytes"])["time (us)"]
        rows[f"time vs {chosen_ok[0]}"] = [t / first[(op, n)] for op, n, t in zip(rows["op"], rows["bytes"], rows["time (us)"])]
        for op in ops:
            part = rows[rows["op"] == op]
            fig = px.bar(part, x="size", y="time (us)", color="machine", barmode="group", log_y=True,
                         hover_data=[*hover, "ranks", "busbw (GB/s)"],
                         title=f"{op}: engine time with {how} on each machine (lower is better)")
            fig.update_yaxes(dtick=1)  # one labelled tick per power of ten: plotly's 2 and 5 between them crowd
            st.plotly_chart(fig, key=f"whatif.{op}")
        st.dataframe(rows.drop(columns=["bytes"]), hide_index=True, key="whatif.table",
                     column_config={f"time vs {chosen_ok[0]}": st.column_config.NumberColumn(format="%.2fx")})


def step_section() -> None:
    st.markdown(
        "A training step is compute plus the collectives the parallelism needs. Communication that overlaps compute "
        "(DDP's gradient buckets behind the backward pass) costs nothing; what sticks out past the compute is the "
        "*exposed* communication, and it is what a faster network buys back. The step is generated and timed exactly "
        "as `collsim whatif` does it, on every GPU of each machine.")
    c = st.columns(3)
    scenario = c[0].selectbox("scenario", STEP_SCENARIOS, key=url.choice("scenario", STEP_SCENARIOS),
                              format_func=lambda s: f"{s}: {SCENARIOS[s].split(':')[0]}")
    model = c[1].selectbox("model", list(MODELS), key=url.choice("model", list(MODELS)))
    gpu_options = ("", *GPUS)
    gpu = c[2].selectbox("GPU", gpu_options, key=url.choice("gpu", gpu_options),
                         format_func=lambda g: g or "the machine preset's")
    c = st.columns(3)
    tp = c[0].number_input(f"tensor parallel (0 = the scenario's, 1..{MAX_TP})", 0, MAX_TP,
                           key=url.integer("tp", 0, MAX_TP, 0))
    mfu = c[1].slider("MFU (fraction of the GPU's peak achieved)", 0.05, 1.0, step=0.05,
                      key=url.number("mfu", 0.05, 1.0, 0.4))
    # the default of `collsim whatif` (nccl_timing.default_timing): NCCL timing where NCCL's model knows every machine
    default = STEP_TIMED[0] if _default_timing(tuple(chosen)) == "nccl" else STEP_TIMED[1]
    timed = st.radio("collectives timed as", STEP_TIMED, horizontal=True, key=url.choice("step_timed", STEP_TIMED, default),
                     help="NCCL: allreduce, allgather and reduce-scatter timed as `collsim predict` times them on the "
                          "machine preset (NCCL's algorithm, protocol, channels, latencies), each call alone; other "
                          "calls, and machines NCCL's model does not know, stay on the links. links: collsim's "
                          "algorithms on the machine's plain links")
    timing = "nccl" if timed == STEP_TIMED[0] else "links"
    mode = c[2].selectbox("run", STEP_MODES, key=url.choice("mode", STEP_MODES),
                          help="isolated: each distinct collective timed alone (fast); exact: every call expanded, "
                               "calls share links (seconds per machine; links timing only); auto: exact up to about "
                               f"2M transfers (isolated with NCCL timing). exact and auto: at most {MAX_EXACT_GPUS} GPUs "
                               "per machine here")
    url.show_notes()
    with friendly():
        if not chosen:
            raise CollsimError(f"machines: none given; expected 1..{MAX_MACHINES}")
        drawn = _each_machine(lambda m: step_table_row(_step(m, scenario, model, gpu, int(tp), float(mfu), mode, timing)))
        if not drawn:
            return
        rows = pd.DataFrame(list(drawn.values()))
        first = next(iter(drawn))
        rows[f"step vs {first}"] = rows["step (ms)"] / rows["step (ms)"].iloc[0]
        times = rows.melt(id_vars=["machine"], value_vars=["step (ms)", "compute (ms)", "exposed comm (ms)"],
                          var_name="part", value_name="ms")
        st.plotly_chart(px.bar(times, x="part", y="ms", color="machine", barmode="group",
                               title=f"{scenario} step of {model}: time per step (lower is better)"),
                        key="whatif.step_times")
        st.plotly_chart(px.bar(rows, x="machine", y="tokens/s", color="machine",
                               title="tokens per second (higher is better)"), key="whatif.tokens")
        st.dataframe(rows, hide_index=True, key="whatif.step_table",
                     column_config={"efficiency": st.column_config.NumberColumn(format="%.3f"),
                                    f"step vs {first}": st.column_config.NumberColumn(format="%.2fx")})
        st.caption("efficiency = compute-only step / step; tokens = data-parallel ranks x micro-batch x micro-batches "
                   "x sequence length; calls timed: how many collective calls NCCL's model timed and how many the "
                   "links. Same numbers: `collsim whatif " + scenario + " --machines ... --mode " + mode
                   + " --timing " + timing + "`.")


if kind == KINDS[0]:
    collectives_section()
elif kind == KINDS[1]:
    step_section()
else:
    several_jobs_section(url)
url.sync()
