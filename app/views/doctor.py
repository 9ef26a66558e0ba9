"""Doctor: an nccl-tests log against what NCCL should reach on its machine, and why it falls short (`collsim doctor`)."""

from __future__ import annotations

import streamlit as st

from app.ui.common import friendly
from app.ui.doctor_model import FIRST, figure, request
from app.ui.reality_model import MAX_UPLOAD, bundled_logs
from app.ui.urlstate import UrlState

st.header("Doctor")
st.markdown(
    "Pick a real nccl-tests log (or upload yours): collsim finds the machine it ran on (or take the preset you name), "
    "predicts what NCCL should reach there per size, and says where the log falls short, the likely causes with the "
    "numbers behind each, and what to try. The same answer as `collsim doctor LOG [--preset SPEC]`.")


url = UrlState("doctor")
logs = bundled_logs()
c = st.columns([3, 2])
first = next((n for n in logs if n.startswith(FIRST)), logs[0] if logs else None)
log_name = c[0].selectbox("bundled log (tests/data/nccl-tests)", logs, key=url.choice("log", logs, first))
upload = c[0].file_uploader(f"or upload an nccl-tests log (at most {MAX_UPLOAD >> 20} MiB)", type=["txt", "log", "out"],
                            key="doctor.upload", max_upload_size=MAX_UPLOAD >> 20)
preset = c[1].text_input("machine preset (empty: inferred from the log)", key=url.text("preset", ""),
                         help="a machine preset such as p5:nodes=2 (`collsim topologies`)")
url.show_notes()

with friendly():
    given = (upload.name, upload.getvalue()) if upload is not None else None
    with st.spinner("running collsim predict at the log's sizes..."):  # predict's rows are kept per question (lru_cache)
        result = request(log_name, given, preset).run()
    st.subheader(result.verdict_line())
    st.plotly_chart(figure(result), key="doctor.figure")
    st.code(result.text(), language=None)
url.sync()
