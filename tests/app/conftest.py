"""The real app for the browser tests: a Streamlit server on a free port and Debian's Chromium through Playwright,
started as benchmarks/app_browser.py starts them for the latency benchmark.

Each fixture skips its test when Chromium or Playwright is missing (.ci/run installs Chromium; Playwright is in
the dev extra).
"""

import pytest

from benchmarks.app_browser import CHROMIUM, chromium, streamlit_server


@pytest.fixture(scope="module")
def server():
    """The app served by `streamlit run` on 127.0.0.1; yields its base URL."""
    try:
        with streamlit_server() as url:
            yield url
    except RuntimeError as e:  # it did not start in time
        pytest.fail(str(e))


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium (Debian's, from PATH)."""
    pytest.importorskip("playwright.sync_api", reason="playwright is in the dev extra")
    if CHROMIUM is None:
        pytest.skip("no chromium on PATH (.ci/run installs Debian's chromium)")
    with chromium() as found:
        yield found
