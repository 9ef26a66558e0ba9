"""Step through: watch an algorithm move chunks, one step at a time, on a machine, next to the engine's timeline."""

from __future__ import annotations

import streamlit as st

from app.stepper import MAX_CHUNKS, MAX_RANKS, grid_fits_html, grid_html, legend_html
from app.ui.common import algorithm_params, cached_step_model, friendly
from app.ui.urlstate import UrlState
from simulator.algorithms import names_for
from simulator.collective import OPS
from simulator.ops import SPECS

st.header("Step through an algorithm")
st.markdown(
    "A collective is many point-to-point messages in a fixed order. Pick one and step through it: the **grid** shows "
    "what every rank's buffer holds after each step (letters are ranks, digits are chunks, `A0+B0` is a sum), the "
    "**graph** shows where this step's messages travel, and the **timeline** is the event engine running the very "
    "same schedule on that machine.")

SCRATCH_NOTE = {
    ("alltoall", "bruck"): "slot i of a rank's scratch holds a block travelling i ranks forward from where it started; "
                           "in step k every slot with bit k set moves 2^k ranks on (two halves, columns 0..p-1 and "
                           "p..2p-1, take turns so a rank never overwrites a slot it is sending). Only blocks still in "
                           "transit are shown; a block's last hop lands it in the output grid above.",
    None: "what a rank keeps aside to add in or pass on in a later step (not part of the result); cells already used "
          "for the last time are shown empty.",
}
url = UrlState("step")
c = st.columns([1.1, 1.4, 1.4, 1.1, 1.1])
op = c[0].selectbox("collective", OPS, key=url.choice("op", OPS, "allreduce"))
algo = c[1].selectbox("algorithm", names_for(op), key=url.choice("algo", names_for(op), "ring"))
ranks = c[2].slider(f"ranks (1..{MAX_RANKS})", 1, MAX_RANKS, key=url.integer("p", 1, MAX_RANKS, 4))
topology = c[3].text_input("topology", key=url.text("topo", "ring"),
                           help="ring, switch, ideal, torus (ranks filled in), torus:4x4, cluster:nodes=2,gpus=4, "
                                "fat_tree:hosts=8,leaf=4, a preset such as dgx-h100 or dgx-h100:nodes=2")
size = c[4].text_input("size for the engine", key=url.text("size", "1MiB"), help="64KiB, 1MiB, 1GB ... (float32)")
params = algorithm_params(url, op, algo, ranks, max_chunks=MAX_CHUNKS)
root = 0
if SPECS[op].rooted:
    root = st.number_input(f"root (0..{ranks - 1})", 0, ranks - 1, key=url.integer("root", 0, ranks - 1, 0))
url.show_notes()

with friendly():
    model = cached_step_model(op, algo, ranks, tuple(sorted(params.items())), root, topology, size)
    n = model.num_steps
    step_key = url.integer("s", 0, n, 0)
    play_key = "step.playing"

    def _move(delta: int) -> None:
        st.session_state[step_key] = min(max(st.session_state[step_key] + delta, 0), n)
        st.session_state[play_key] = False

    def _stop() -> None:
        st.session_state[play_key] = False

    def _play() -> None:
        if st.session_state[step_key] >= n:
            st.session_state[step_key] = 0
        st.session_state[play_key] = not st.session_state.get(play_key, False)
        st.session_state["step.ticked"] = False  # the first tick comes a second after pressing play

    playing = bool(st.session_state.get(play_key, False)) and n > 0
    # play sits outside the fragment: its click reruns the page, which re-declares the fragment with a timer
    st.button("pause" if playing else "▶ play", on_click=_play, key="step.play", disabled=n == 0,
              help="advance one step a second; prev, next or the slider pause it")

    @st.fragment(run_every=1.0 if playing else None)
    def step_view() -> None:
        if playing and not st.session_state.get(play_key):
            st.rerun()  # paused by prev/next/slider inside the fragment: redraw the page to stop the timer
        if st.session_state.get(play_key) and st.session_state.get("step.ticked"):
            st.session_state[step_key] = min(st.session_state[step_key] + 1, n)
        st.session_state["step.ticked"] = bool(st.session_state.get(play_key))
        b = st.columns([1, 1, 7])
        b[0].button("◀ prev", on_click=_move, args=(-1,), key="step.prev", disabled=n == 0)
        b[1].button("next ▶", on_click=_move, args=(1,), key="step.next", disabled=n == 0)
        if n > 0:
            b[2].slider("step", 0, n, key=step_key, label_visibility="collapsed", on_change=_stop)
        i = st.session_state[step_key]
        stepper = model.stepper
        figs = model.view(i)
        st.subheader(f"Step {i} of {n} — " + (f"phase: {stepper.phases[i]}" if i else "start"))
        if model.trace is not None:
            st.caption(f"{len(model.stepper.schedule.network_transfers())} messages in {n} steps; the engine took "
                       f"{model.trace.time * 1e6:.4g} us for {size} on {model.topology.name}.")
        sentences = figs["sentences"]
        _grid(figs, stepper, i, "out")
        if stepper.scratch:
            st.markdown("**Scratch buffer**: " + SCRATCH_NOTE.get((op, algo), SCRATCH_NOTE[None]))
            _grid(figs, stepper, i, "scratch")
        st.markdown(legend_html(ranks, figure=not grid_fits_html(stepper)), unsafe_allow_html=True)
        left, right = st.columns([3, 2])
        with left:
            st.markdown("**What moves in this step**")
            st.markdown("\n".join(f"- {s}" for s in sentences[:10]))
            if len(sentences) > 10:
                with st.expander(f"{len(sentences) - 10} more"):
                    st.markdown("\n".join(f"- {s}" for s in sentences[10:]))
        if model.trace is None:  # a bad topology or size: its error line where the engine's pictures go
            right.error(model.engine_error)
        else:
            right.plotly_chart(figs["topology"], key="step.topology", config={"displayModeBar": False})
            st.plotly_chart(figs["timeline"], key="step.timeline")
            # drawn when asked: a figure inside a closed expander is still sent and drawn at every step
            if st.toggle("timeline per link (the busiest links)", key="step.show_links"):
                st.plotly_chart(model.link_timeline, key="step.links")
        url.sync()
        if st.session_state.get(play_key) and i >= n:
            st.session_state[play_key] = False
            st.rerun()

    def _grid(figs: dict, stepper, i: int, buffer: str) -> None:
        """The buffer grid: fixed-size HTML cells up to 16 x 16, one figure (every cell in view) beyond."""
        if f"grid.{buffer}" in figs:
            st.plotly_chart(figs[f"grid.{buffer}"], key=f"step.grid.{buffer}", config={"displayModeBar": False})
        else:
            st.markdown(grid_html(stepper, i, buffer=buffer), unsafe_allow_html=True)

    step_view()
url.sync()
