"""The app as a person sees it: a real Streamlit server and headless Chromium (installed by .ci/run).

Every page is opened from its URL, checked for Streamlit's exception element and photographed (into
pytest's tmp_path, or into $COLLSIM_SCREENSHOTS when set, e.g. docs/img for docs/app.md); on the Step
through page the play button must advance the step by itself. The server and browser fixtures are in
tests/app/conftest.py; tests/app/test_lessons_browser.py walks every lesson.
"""

import os
import re
from pathlib import Path

import pytest

from benchmarks.app_browser import CHROMIUM, EXCEPTION, wait_interactive

playwright = pytest.importorskip("playwright.sync_api", reason="playwright is in the dev extra")
if CHROMIUM is None:
    pytest.skip("no chromium on PATH (.ci/run installs Debian's chromium)", allow_module_level=True)

pytestmark = pytest.mark.slow  # a real Streamlit server and Chromium: about 4 minutes
# url path (with a query string, as a teacher would link it) -> text the page shows once drawn
PAGES = {
    "?lesson=b": "Lesson (b)",
    "step?op=allreduce&algo=ring&p=8&topo=ring&size=1MiB&s=4": "Step 4 of 14",
    "cost?op=allreduce&p=8&sizes=1KiB:1GiB:4": "Crossovers:",
    "contention?topo=switch&op=allreduce&algo=ring&p=8&size=64MiB&late=3&delay=50&load=50": "Busiest links",
    "whatif": "What-if hardware",
    "whatif?kind=a+training+step&scenario=fsdp&m0=dgx-h100:nodes%3D2&m1=hgx-b200:nodes%3D2": "exposed comm",
    "step?op=alltoall&algo=bruck&p=8&topo=ring&s=2": "Scratch buffer",
    "reality": "Model vs reality",
    "doctor?log=04_h100_p5_1node_8gpu_allreduce_awsbatch.txt": "Doctor",
}
# screenshots of a second view of a page get their own name (docs/app.md shows app_step.png)
SHOT_NAMES = {"whatif?kind": "app_whatif_step.png", "step?op=alltoall&algo=bruck": "app_step_bruck.png"}


def _photograph(page, path: Path) -> None:
    """A screenshot down to the end of the page's content (Streamlit scrolls inside its own block)."""
    height = page.evaluate("() => { const m = document.querySelector('[data-testid=\"stMainBlockContainer\"]');"
                           " return m ? m.getBoundingClientRect().bottom : 0; }")
    size = page.viewport_size
    bottom = min(int(height) + 20, size["height"]) if height else size["height"]
    page.screenshot(path=str(path), clip={"x": 0, "y": 0, "width": size["width"], "height": max(bottom, 400)})


def _shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("COLLSIM_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.mark.parametrize("path", list(PAGES))
def test_every_page_opens_from_its_link_without_an_exception(server, browser, tmp_path, path):
    page = browser.new_page(viewport={"width": 1400, "height": 2400})  # Streamlit scrolls inside: a tall window shows all
    page.goto(f"{server}/{path}")
    page.get_by_text(PAGES[path]).first.wait_for(timeout=90000)
    if not path.startswith("?"):
        page.locator(".js-plotly-plot").first.wait_for(timeout=60000)
    page.wait_for_timeout(1500)  # let the figures finish drawing
    assert page.locator(EXCEPTION).count() == 0
    name = next((v for k, v in SHOT_NAMES.items() if path.startswith(k)),
                "app_" + (path.split("?")[0] or "lessons") + ".png")
    _photograph(page, _shots(tmp_path) / name)
    assert (_shots(tmp_path) / name).stat().st_size > 10_000
    if path.startswith("step"):
        grid = page.locator(".buffer-grid td.cell")
        scratch = 8 * 16 if "bruck" in path else 0  # Bruck's scratch grid: 8 ranks x 2 x 8 slots
        assert grid.count() == 8 * 8 + scratch  # 8 ranks x 8 chunks, each cell at its fixed size
        box = grid.first.bounding_box()
        assert box and box["width"] >= 60
    page.close()


def test_play_advances_the_step_by_itself(server, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1100})
    page.goto(f"{server}/step?op=allreduce&algo=ring&p=4&topo=ring&size=1MiB&s=0")
    page.get_by_text("Step 0 of 6").first.wait_for(timeout=90000)
    page.locator(".js-plotly-plot").first.wait_for(timeout=60000)
    page.wait_for_timeout(1000)  # the first run has finished drawing
    page.get_by_role("button", name="▶ play").click()
    page.get_by_role("button", name="pause").wait_for(timeout=30000)
    page.get_by_text(re.compile(r"Step [2-6] of 6")).first.wait_for(timeout=45000)  # two ticks without a click
    assert page.locator(EXCEPTION).count() == 0
    page.close()


def test_a_link_restores_the_lesson_and_the_check_works(server, browser, tmp_path):
    page = browser.new_page(viewport={"width": 1400, "height": 2400})
    page.goto(f"{server}/?lesson=c")
    page.get_by_text("Lesson (c)").first.wait_for(timeout=90000)
    page.get_by_label(re.compile("your answer")).fill("3")  # recursive doubling on 8 ranks: log2(8) steps
    page.get_by_label(re.compile("your answer")).press("Enter")
    page.get_by_role("button", name="Check my prediction").click()
    page.get_by_text("Right.").first.wait_for(timeout=30000)
    page.locator(".js-plotly-plot").first.wait_for(timeout=60000)  # the live figure, revealed by the check
    page.wait_for_timeout(1500)
    assert page.locator(EXCEPTION).count() == 0
    _photograph(page, _shots(tmp_path) / "app_lesson_checked.png")
    page.close()


def _table(page) -> list[dict]:
    """The page's first table as the browser shows it (its accessible copy of the grid), one dict per row."""
    found = page.evaluate("""() => { const t = document.querySelector("[data-testid='stDataFrame'] table");
        return {heads: [...t.querySelectorAll("thead th")].map(c => c.textContent),
                rows: [...t.querySelectorAll("tbody tr")].map(r => [...r.querySelectorAll("td")].map(c => c.textContent))}; }""")
    return [dict(zip(found["heads"], row)) for row in found["rows"]]


def test_whatif_shows_nccl_picks_and_the_link_keeps_the_timing(server, browser):
    from simulator.nccl.predict import predict
    from simulator.topology import parse_topology
    from simulator.units import format_size

    page = browser.new_page(viewport={"width": 1400, "height": 2400})
    page.goto(f"{server}/whatif")
    page.get_by_text("NCCL algorithm").first.wait_for(state="attached", timeout=90000)  # the default: NCCL's picks
    page.wait_for_function("() => document.querySelectorAll(\"[data-testid='stDataFrame'] tbody tr\").length == 12")
    assert "timed=NCCL" in page.url
    shown = {(r["machine"], r["op"], r["size"]): (r["NCCL algorithm"], r["protocol"], r["channels"]) for r in _table(page)}
    sizes = [64 << 10, 16 << 20, 1 << 30]
    for machine in ("dgx-h100:nodes=2", "hgx-b200:nodes=2"):
        for op in ("allreduce", "allgather"):
            for want in predict(parse_topology(machine), op, sizes):
                assert shown[(machine, op, format_size(want.bytes))] == (want.nccl_algo, want.proto, str(want.channels))
    page.get_by_text("best collsim algorithm (links only)", exact=True).click()
    page.wait_for_url(re.compile(r"timed=best"), timeout=60000)
    page.get_by_text("best algorithm", exact=True).first.wait_for(state="attached", timeout=60000)
    link = page.url
    page.close()
    page = browser.new_page(viewport={"width": 1400, "height": 2400})
    page.goto(link)  # a new session from the link: the timing choice comes back with it
    page.locator(".js-plotly-plot").first.wait_for(timeout=90000)
    page.get_by_text("best algorithm", exact=True).first.wait_for(state="attached", timeout=60000)
    assert page.get_by_role("radio", name="best collsim algorithm (links only)").is_checked()
    assert "NCCL algorithm" not in _table(page)[0]


ROWS_SHOWN = "() => document.querySelectorAll(\"[data-testid='stDataFrame'] tbody tr\").length > 0"


def test_whatif_step_is_timed_as_nccl_runs_it_and_the_link_keeps_the_timing(server, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 2400})
    page.goto(f"{server}/whatif?kind=a+training+step")
    page.get_by_text("--timing nccl").first.wait_for(state="attached", timeout=90000)  # presets NCCL knows: its timing
    page.wait_for_function(ROWS_SHOWN)
    assert "step_timed=NCCL" in page.url
    assert all(r["calls timed"].endswith(" NCCL") for r in _table(page))
    page.get_by_text("collsim algorithms (links only)", exact=True).click()
    page.wait_for_url(re.compile(r"step_timed=collsim"), timeout=60000)
    page.get_by_text("--timing links").first.wait_for(state="attached", timeout=60000)
    link = page.url
    page.close()
    page = browser.new_page(viewport={"width": 1400, "height": 2400})
    page.goto(link)  # a new session from the link: the timing choice comes back with it
    page.get_by_text("--timing links").first.wait_for(state="attached", timeout=90000)
    page.wait_for_function(ROWS_SHOWN)
    assert page.get_by_role("radio", name="collsim algorithms (links only)").is_checked()
    assert {r["calls timed"] for r in _table(page)} == {"links"}


def test_reality_predicts_the_logs_machine_and_a_link_keeps_another_preset(server, browser):
    """The default log (07, one HGX B200 node: the page used to open on 01, its worst) gets collsim predict on its own
    preset; a typed preset rides in the link."""
    from urllib.parse import parse_qs, urlparse

    page = browser.new_page(viewport={"width": 1400, "height": 2400})
    page.goto(f"{server}/reality")
    page.get_by_text(re.compile(r"^collsim predict on hgx-b200 \(nothing fitted\): .*median \|error\|")).first.wait_for(
        timeout=90000)
    page.locator(".js-plotly-plot .legendtext", has_text="collsim predict on hgx-b200").first.wait_for(timeout=60000)
    assert parse_qs(urlparse(page.url).query)["preset"] == ["hgx-b200"]
    box = page.get_by_role("textbox", name=re.compile("machine preset"))
    box.fill("dgx-h100")
    box.press("Enter")
    page.locator(".js-plotly-plot .legendtext", has_text="collsim predict on dgx-h100").first.wait_for(timeout=90000)
    for _ in range(50):  # the page writes its widgets into the link after drawing
        if parse_qs(urlparse(page.url).query).get("preset") == ["dgx-h100"]:
            break
        page.wait_for_timeout(200)
    link = page.url
    assert parse_qs(urlparse(link).query)["preset"] == ["dgx-h100"]
    assert page.locator(EXCEPTION).count() == 0
    page.close()
    page = browser.new_page(viewport={"width": 1400, "height": 2400})
    page.goto(link)
    page.locator(".js-plotly-plot .legendtext", has_text="collsim predict on dgx-h100").first.wait_for(timeout=90000)
    assert page.get_by_role("textbox", name=re.compile("machine preset")).input_value() == "dgx-h100"
    assert page.get_by_text(re.compile(r"^collsim predict on dgx-h100 \(nothing fitted\)")).count() >= 1
    assert page.locator(EXCEPTION).count() == 0
    page.close()


def _box(page, selector: str) -> dict:
    box = page.locator(selector).first.bounding_box()
    assert box, f"{selector} is not drawn"
    return box


def test_no_deploy_button(server, browser):
    """Streamlit's toolbar offered 'Deploy' (publishing to Streamlit's cloud): the toolbar is minimal."""
    page = browser.new_page(viewport={"width": 1400, "height": 1100})
    page.goto(f"{server}/?lesson=a")
    wait_interactive(page, "Lesson (a)")
    assert page.get_by_role("button", name="Deploy").count() == 0
    assert page.locator("[data-testid='stAppDeployButton']").count() == 0
    page.close()


def test_step_through_at_32_ranks_shows_the_whole_grid_and_the_legend_clear_of_the_ranks(server, browser):
    """p=32: the grid showed about 12 x 15 of its 32 x 32 cells, and the timeline's legend sat on ranks 0 and 1."""
    page = browser.new_page(viewport={"width": 1400, "height": 2400})
    page.goto(f"{server}/step?op=allreduce&algo=ring&p=32&topo=ring&size=1MiB&s=3")
    wait_interactive(page, "Step 3 of 62", figures=3)
    assert page.locator(".buffer-grid").count() == 0 and page.locator(EXCEPTION).count() == 0
    grid = page.locator(".js-plotly-plot").first
    area = grid.locator(".nsewdrag").first.bounding_box()  # the heatmap's plotting area: all 32 x 32 cells
    assert area and area["width"] >= 32 * 25 and area["height"] >= 32 * 18
    assert area["x"] + area["width"] <= 1400  # in view, not scrolled
    timeline = page.locator(".js-plotly-plot", has_text="engine timeline").first
    legend = timeline.locator(".legend").first.bounding_box()
    plot = timeline.locator(".nsewdrag").first.bounding_box()
    assert legend and plot and legend["y"] + legend["height"] <= plot["y"] + 1  # above the rows, not on them
    page.get_by_role("button", name="next ▶").click()
    wait_interactive(page, "Step 4 of 62")
    page.close()


def test_cost_explorer_legend_is_not_clipped(server, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 2400})
    page.goto(f"{server}/cost?op=allreduce&p=8&sizes=1KiB:1GiB:4&topo=dgx-h100")
    wait_interactive(page, "Crossovers:", figures=1)
    figure = page.locator(".js-plotly-plot").first
    svg = figure.locator(".main-svg").first.bounding_box()
    legend = figure.locator(".legend").first.bounding_box()
    assert svg and legend and legend["y"] + legend["height"] <= svg["y"] + svg["height"] + 1
    scrollbar = figure.locator(".legend .scrollbar").first
    assert scrollbar.count() == 0 or (scrollbar.bounding_box() or {"height": 0})["height"] == 0  # every entry in view
    page.close()
