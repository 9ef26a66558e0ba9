"""The Streamlit app, run by Streamlit's own test runner (the real script, real widgets)."""

from pathlib import Path

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

SCRIPT = str(Path(__file__).resolve().parents[2] / "app" / "streamlit_app.py")


def _app() -> AppTest:
    at = AppTest.from_file(SCRIPT, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    return at


def test_app_renders_every_tab_without_errors():
    at = _app()
    assert [t.label for t in at.tabs] == ["Step through", "Cost curves", "What-if hardware"]
    assert not at.error
    assert "steps" in at.caption[0].value


def test_bad_bandwidth_shows_a_clear_error():
    at = _app()
    at.text_input(key="cost-bw").set_value("-3GB/s").run()
    assert any("bandwidth" in e.value for e in at.error)


def test_changing_the_algorithm_redraws():
    at = _app()
    at.selectbox(key="step-op").set_value("allgather").run()
    at.slider(key="step-ranks").set_value(5).run()
    assert not at.exception and not at.error
    assert "4 steps" in at.caption[0].value  # ring allgather on 5 ranks: p-1 steps
