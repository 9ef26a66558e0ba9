"""The app as a person sees it: a real Streamlit server and headless Chromium (installed by .ci/run)."""

import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
playwright = pytest.importorskip("playwright.sync_api", reason="playwright is in the dev extra")
if CHROMIUM is None:
    pytest.skip("no chromium on PATH (.ci/run installs Debian's chromium)", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "app" / "streamlit_app.py"),
                             "--server.headless", "true", "--server.port", str(port), "--server.address", "127.0.0.1",
                             "--browser.gatherUsageStats", "false"], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(120):
        try:
            urllib.request.urlopen(url + "/_stcore/health", timeout=1)
            break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("streamlit did not start within 60 s")
    yield url
    proc.terminate()
    proc.wait(10)


def test_person_sees_the_picture_and_the_cost_curves(server, tmp_path):
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        page = browser.new_page(viewport={"width": 1400, "height": 1200})
        page.goto(server)
        page.get_by_text("6 steps, 24 messages").wait_for(timeout=60000)
        picture = page.locator("img[src*='svg'], img[src^='data:image/svg'], [data-testid='stImage'] img").first
        picture.wait_for(timeout=30000)
        box = picture.bounding_box()
        assert box and box["width"] > 600 and box["height"] > 150
        page.get_by_role("tab", name="Cost curves").click()
        page.locator(".js-plotly-plot").first.wait_for(timeout=30000)
        assert page.locator(".js-plotly-plot").count() >= 2
        page.screenshot(path=str(tmp_path / "app.png"), full_page=True)
        browser.close()
