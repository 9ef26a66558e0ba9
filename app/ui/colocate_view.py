"""The What-if page's "several jobs" view: two or more jobs placed on one machine, run together and each alone, as
`collsim colocate` runs them (app/ui/colocate_model.py builds its request)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pandas as pd
import plotly.express as px
import streamlit as st

from app.ui.colocate_model import (
    DEFAULT_MACHINE,
    DISJOINT,
    JOB_OPS,
    MAX_PAGE_JOBS,
    SHARED,
    colocate_request,
    job_rows,
    link_rows,
)
from app.ui.common import friendly
from app.ui.urlstate import UrlState


@st.cache_resource(show_spinner=False)
def _folder() -> Path:
    """Where the page writes its jobs' program files (named by content, shared by every session of this server)."""
    return Path(tempfile.mkdtemp(prefix="collsim-colocate-"))


@st.cache_data(max_entries=32, show_spinner="running the jobs together and each alone in the engine...")
def _run(machine: str, jobs: tuple[tuple[str, str, str], ...]) -> dict:
    """The ColocateResult's data() for this choice (what `collsim colocate --json` prints)."""
    return colocate_request(machine, list(jobs), _folder()).run().data()


def _place(url: UrlState, devices: tuple[str, str]) -> None:
    """The one-click placements: two jobs on `devices`."""
    st.session_state[url.key("jobs")] = 2
    for k, spec in enumerate(devices):
        st.session_state[url.key(f"j{k}_dev")] = spec


def several_jobs_section(url: UrlState) -> None:
    st.markdown(
        "Two jobs on one machine each get their own GPUs, but their collectives can still cross the same links: a "
        "node's NIC, a switch's port. Here each job is one collective on the devices you give it (rank r on the r-th "
        "device listed); the jobs run together in the event engine, so flows of both jobs on one link share it, and "
        "each job also runs alone on the same devices. The slowdown is together / alone - 1.")
    c = st.columns([3, 1])
    machine = c[0].text_input("machine", key=url.text("colo_machine", DEFAULT_MACHINE),
                              help="devices as `collsim topologies` numbers them. The default has one NIC per node; "
                                   "dgx-h100 gives every GPU its own NIC, and these placements do not slow each other "
                                   "there")
    count = c[1].number_input(f"jobs (2..{MAX_PAGE_JOBS})", 2, MAX_PAGE_JOBS, key=url.integer("jobs", 2, MAX_PAGE_JOBS, 2))
    b = st.columns(2)
    b[0].button("two jobs sharing every node (and its NIC)", key="whatif.shared", on_click=_place, args=(url, SHARED))
    b[1].button("two jobs on disjoint nodes", key="whatif.disjoint", on_click=_place, args=(url, DISJOINT))
    jobs = []
    for k in range(int(count)):
        c = st.columns([2, 1, 3])
        op = c[0].selectbox(f"job {k + 1}: collective", JOB_OPS, key=url.choice(f"j{k}_op", JOB_OPS))
        size = c[1].text_input(f"job {k + 1}: size", key=url.text(f"j{k}_size", "64MiB"))
        devices = c[2].text_input(f"job {k + 1}: devices (0-15, 0,2,4 or 0-3,8-11)",
                                  key=url.text(f"j{k}_dev", SHARED[k] if k < len(SHARED) else ""))
        jobs.append((op, size, devices))
    url.show_notes()
    with friendly():
        data = _run(machine, tuple(jobs))
        rows = pd.DataFrame(job_rows(data))
        times = rows.melt(id_vars=["job"], value_vars=["alone (ms)", "together (ms)"], var_name="run", value_name="ms")
        st.plotly_chart(px.bar(times, x="job", y="ms", color="run", barmode="group",
                               title=f"each job's step alone and together on {data['topology']} (lower is better)"),
                        key="whatif.colocate")
        st.dataframe(rows, hide_index=True, key="whatif.colocate_table",
                     column_config={"slowdown (%)": st.column_config.NumberColumn(format="%.1f")})
        links = link_rows(data)
        if links:
            st.markdown("**Links where the jobs meet** (each job's bytes on it; busy: all of them at its bandwidth), "
                        "the busiest first:")
            st.dataframe(pd.DataFrame(links), hide_index=True, key="whatif.colocate_links")
        else:
            st.info("No link carried bytes of two jobs: the jobs do not meet, and neither slows the other.")
        st.caption("Same numbers: write each job's program and run `collsim colocate --topology " + machine.strip()
                   + " " + " ".join(f"{r['program']}@{r['devices']}" for r in job_rows(data))
                   + "` (docs/programs.md, Several jobs on one machine).")
