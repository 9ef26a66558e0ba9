"""Opening an app page in Streamlit's own test runner, and reading its figures (shared by the app's AppTest modules)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np

SCRIPT = str(Path(__file__).resolve().parents[1] / "app" / "streamlit_app.py")


def open_page(path: str | None, query: dict | None = None):
    """An AppTest on page `path` (None: the default page), opened as a link with `query` would open it."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(SCRIPT, default_timeout=120)
    if query and not path:
        at.query_params.update(query)
    at.run()
    if path:
        at.switch_page(path)
        at.query_params.clear()
        at.query_params.update(query or {})
        at.run()
    return at


def charts(at) -> list[dict]:
    """Every plotly figure the page drew, as plotly JSON."""
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def values(v) -> list:
    """A plotly JSON array: a list, or {'dtype', 'bdata'[, 'shape']} (base64 numpy bytes, plotly >= 6)."""
    if isinstance(v, dict) and "bdata" in v:
        array = np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"])
        if "shape" in v:
            array = array.reshape([int(n) for n in str(v["shape"]).split(",")])
        return array.tolist()
    return list(v)
