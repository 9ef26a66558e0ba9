"""The app as a person sees it: a Streamlit server and headless Chromium, shared by benchmarks/app_latency.py and
tests/app/test_app_browser.py (one way to start them, one meaning of "interactive")."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
EXCEPTION = "[data-testid='stException']"
# Streamlit marks its root with the script's state: interactive once the run has finished and nothing is queued
IDLE = ("() => { const a = document.querySelector(\"[data-testid='stApp']\");"
        " return !!a && a.getAttribute('data-test-script-state') === 'notRunning'; }")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def streamlit_server(start_s: float = 60.0) -> Iterator[str]:
    """A Streamlit server of the app on a free local port; yields its URL, stops it on exit."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "app" / "streamlit_app.py"),
                             "--server.headless", "true", "--server.port", str(port), "--server.address", "127.0.0.1",
                             "--browser.gatherUsageStats", "false"], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + start_s
        while True:
            try:
                urllib.request.urlopen(url + "/_stcore/health", timeout=1)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"streamlit did not start within {start_s:.0f} s") from None
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


@contextmanager
def chromium() -> Iterator[object]:
    """Headless Chromium (Debian's) through Playwright."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def wait_interactive(page, text: str | None = None, figures: int = 0, timeout_ms: int = 120_000) -> None:
    """Until `text` is shown, at least `figures` plotly figures are drawn and Streamlit's script is idle."""
    if text:
        page.get_by_text(text).first.wait_for(state="attached", timeout=timeout_ms)
    if figures:
        page.wait_for_function(f"() => document.querySelectorAll('.js-plotly-plot .main-svg').length >= {figures}",
                               timeout=timeout_ms)
    page.wait_for_function(IDLE, timeout=timeout_ms)
