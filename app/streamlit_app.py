"""collsim in the browser: lessons, step through, cost explorer, contention, what-if hardware, model vs reality.

Run with `collsim app` (or `streamlit run app/streamlit_app.py`). Every page keeps its state in the
URL's query string, so a link (for example to one lesson) restores the page.
"""

from __future__ import annotations

import streamlit as st

st.set_page_config(page_title="collsim", layout="wide")

PAGES = [
    st.Page("views/lessons.py", title="Lessons", url_path="lessons", default=True),
    st.Page("views/step.py", title="Step through", url_path="step"),
    st.Page("views/cost.py", title="Cost explorer", url_path="cost"),
    st.Page("views/contention.py", title="Topology and contention", url_path="contention"),
    st.Page("views/whatif.py", title="What-if hardware", url_path="whatif"),
    st.Page("views/reality.py", title="Model vs reality", url_path="reality"),
    st.Page("views/doctor.py", title="Doctor", url_path="doctor"),
]

st.sidebar.markdown("**collsim**: how GPUs talk in collectives. Every picture is computed by running the "
                    "algorithm's schedule, and every time by the event engine or a closed form.")
st.navigation(PAGES).run()
