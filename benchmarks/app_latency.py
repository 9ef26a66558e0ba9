"""What the user of the app waits for: time-to-interactive and per-interaction time in real Chromium, and the Python
time to build each page's figures.

Browser part (issue 23): a Streamlit server and headless Chromium (Playwright), as tests/app/test_app_browser.py
starts them. After the app's first load (imports warmed), every page is opened from its link and timed until it is
interactive: its marker text shown, every plotly figure drawn, and Streamlit's script no longer running. Then each
interaction (Step through next/prev at p=16 and p=32, p=32 with 8 chunks; What-if machine A -> dgx-h100:nodes=8;
Model vs reality log change) is timed from the click to the same state. Goal: every page under 2 s, every
interaction under 1 s (on 2 cores; the load average is printed with the table).

Pages are timed twice: opened from a link in a new tab (a new Streamlit session; the tab evaluates plotly.js again),
and picked in the sidebar of one tab (what a person moving through the app waits for). Every tab after the first load
is a tab of one browser profile, as a person's tabs are: they share its HTTP cache (Streamlit serves its scripts as
immutable), so a new tab reads the 9 MB of scripts from the cache instead of downloading them again; the first load of
the app starts from an empty cache (before issue 23's second pass each tab had a profile of its own, an empty cache).

Python part: the same functions the pages call, without the browser and without Streamlit's cache (a changed widget
is a new choice); 'step (move)' is the step slider alone, with the run already built (the page caches it); the model
vs reality page's `collsim predict` column is timed on its own (the page caches it per log).
Goal (issue 11): under 0.3 s at p = 16 for every page, under 1 s at p = 32. The what-if page's default view (NCCL's
picks, as `collsim predict` times them) is measured too: predict runs NCCL's own schedules, far more transfers.

usage: python -m benchmarks.app_latency [--part browser|python|both] [--ranks 8,16,32] [--repeat 3] [--pages WORD,...]
                                        [--json PATH]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from benchmarks.build_schedules import write_json
from simulator.render import table
from simulator.units import parse_rank_range

GOAL_S = {16: 0.3, 32: 1.0}


def _step_view(model, i: int) -> object:
    """What the page builds for step i: its figures (the grid as a figure over 16 x 16) or the grid's HTML."""
    from app.stepper import grid_fits_html, grid_html

    model.__dict__.pop("_views", None)  # a new choice: nothing kept from an earlier build
    return model.view(i), grid_html(model.stepper, i) if grid_fits_html(model.stepper) else None


def _step(p: int) -> Callable[[], object]:
    from app.ui.step_model import build_step_model

    def build():
        model = build_step_model("allreduce", "ring", p, {"chunks": 1}, 0, "ring", "1MiB")
        return _step_view(model, model.num_steps // 2)
    return build


def _step_chunks(p: int) -> Callable[[], object]:
    """8 chunks per block: 8x the transfers (the grid is a figure of p x 8p cells)."""
    from app.ui.step_model import build_step_model

    def build():
        model = build_step_model("allreduce", "ring", p, {"chunks": 8}, 0, "ring", "1MiB")
        return _step_view(model, 5)
    return build


def _step_move(p: int) -> Callable[[], object]:
    from app.ui.step_model import build_step_model

    model = build_step_model("allreduce", "ring", p, {"chunks": 1}, 0, "ring", "1MiB")
    return lambda: _step_view(model, 1)


def _cost(p: int) -> Callable[[], object]:
    from app.explorer import explore, explorer_figure
    from app.ui.inputs import link_model, sizes_input
    from simulator.topology import ideal

    def build():
        model = link_model("2us", "25GB/s")
        ex = explore("allreduce", p, sizes_input("1KiB:1GiB:4"), model, {"chunks": 1}, ideal(p, 2e-6, 25e9))
        return explorer_figure(ex), explorer_figure(ex, "busbw")
    return build


def _contention(p: int) -> Callable[[], object]:
    from app.topofig import topology_figure
    from app.ui.contention_model import busiest, chrome_json, run_contention, utilisation

    def build():
        run = run_contention("switch", "allreduce", "ring", p, "64MiB", {"chunks": 1}, 0, 3, 50.0, 0.5)
        return (topology_figure(run.before.topology, p, link_values=utilisation(run.before)),
                topology_figure(run.after.topology, p, link_values=utilisation(run.after)),
                busiest(run.after), chrome_json(run.after))
    return build


def _whatif(p: int) -> Callable[[], object]:
    import pandas as pd
    import plotly.express as px

    from app.ui.whatif_model import whatif_rows

    def build():
        rows = pd.DataFrame(whatif_rows([f"switch:{p}", f"ring:{p}"], ["allreduce"], [65536, 16 << 20, 1 << 30]))
        return px.bar(rows, x="bytes", y="time (us)", color="machine", barmode="group")
    return build


def _whatif_one(p: int) -> Callable[[], object]:
    """One machine edited: the page caches each machine's rows, so only that machine runs again."""
    import pandas as pd
    import plotly.express as px

    from app.ui.whatif_model import machine_rows

    def build():
        rows = pd.DataFrame(machine_rows(f"switch:{p}", ["allreduce"], [65536, 16 << 20, 1 << 30]))
        return px.bar(rows, x="bytes", y="time (us)", color="machine", barmode="group")
    return build


def _whatif_presets(p: int, nccl: bool) -> Callable[[], object]:
    """The page's default collectives view (allreduce and allgather at 64 KiB, 16 MiB, 1 GiB) on two presets of p GPUs,
    timed as NCCL runs them (collsim predict, the page's default) or with the best collsim algorithm."""
    import pandas as pd
    import plotly.express as px

    from app.ui.whatif_model import nccl_rows, whatif_rows

    machines = [f"dgx-h100:nodes={max(p // 8, 1)}", f"hgx-b200:nodes={max(p // 8, 1)}"]
    ops, sizes = ["allreduce", "allgather"], [65536, 16 << 20, 1 << 30]

    def build():
        found = [r for m in machines for r in nccl_rows(m, ops, sizes)] if nccl else whatif_rows(machines, ops, sizes)
        return px.bar(pd.DataFrame(found), x="bytes", y="time (us)", color="machine", barmode="group")
    return build


def _whatif_step(p: int) -> Callable[[], object]:
    """A DDP step of llama2-7b on two machines of p GPUs (8 per node), isolated runs (the page's default)."""
    import pandas as pd
    import plotly.express as px

    from app.ui.whatif_model import step_row, step_table_row

    machines = [f"dgx-h100:nodes={max(p // 8, 1)}", f"hgx-b200:nodes={max(p // 8, 1)}"]

    def build():
        rows = pd.DataFrame([step_table_row(step_row(m, "ddp", "llama2-7b")) for m in machines])
        return px.bar(rows, x="machine", y="step (ms)"), px.bar(rows, x="machine", y="tokens/s")
    return build


def _reality(p: int) -> Callable[[], object]:
    """The log fixes p (16 ranks here, whatever p is asked)."""
    import plotly.graph_objects as go

    from app.ui.reality_model import fit_log, read_bundled, rows

    def build():
        log = read_bundled("03_h100_p5_2node_16gpu_efa_allreduce.txt")
        table_rows = rows(fit_log(log, "ring"), log, "hopper", 2)
        return go.Figure(go.Scatter(x=[r["bytes"] for r in table_rows], y=[r["measured (us)"] for r in table_rows]))
    return build


def _reality_predict(p: int) -> Callable[[], object]:
    """The page's `collsim predict` column on a log's first look (log 03, 16 ranks, whatever p is asked): the NVLS step
    fitted on the other logs, then predict at every size of the log (the page caches both per log)."""
    from app.ui.reality_model import default_preset, held_out_nvls_step, predict_log, read_bundled

    name = "03_h100_p5_2node_16gpu_efa_allreduce.txt"
    log = read_bundled(name)
    return lambda: predict_log(log, default_preset(name), held_out_nvls_step(name))


def _lesson(key: str) -> Callable[[int], Callable[[], object]]:
    """A lesson's live numbers (its p is the lesson's own)."""
    def make(p: int):
        from app import lessons

        return {"b": lessons.faster_at_4k, "d": lessons.hierarchy_times, "e": lessons.straggler_times,
                "f": lessons.program_finishes}[key]
    return make


PAGES = {"step (new choice)": _step, "step (8 chunks)": _step_chunks, "step (move)": _step_move,
         "cost explorer": _cost, "contention": _contention,
         "what-if (2 machines)": _whatif,
         "what-if (1 machine edited)": _whatif_one,
         "what-if presets, NCCL (default view)": lambda p: _whatif_presets(p, True),
         "what-if presets, best algorithm": lambda p: _whatif_presets(p, False),
         "what-if (DDP step, 2 machines)": _whatif_step, "model vs reality": _reality,
         "model vs reality, collsim predict (log 03, first look)": _reality_predict, "lesson d (engine)": _lesson("d"),
         "lesson e (engine)": _lesson("e")}


def measure(make: Callable[[int], Callable[[], object]], p: int, repeat: int) -> float:
    """Best wall time of `repeat` builds, seconds (the first build also warms imports, so it runs once before)."""
    fn = make(p)
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


# ---- the browser: what the user waits for ---------------------------------------------------------------------

BROWSER_GOAL_S = {"page": 2.0, "interaction": 1.0}
STEP = "step?op=allreduce&algo=ring&topo=ring&size=1MiB&s=0&p="
# page name -> (link, text the page shows once drawn, plotly figures it draws)
BROWSER_PAGES = {
    "lessons": ("?lesson=b", "Lesson (b)", 0),
    "step through p=8": (STEP + "8", "Step 0 of", 2),
    "step through p=16": (STEP + "16", "Step 0 of", 2),
    "step through p=32": (STEP + "32", "Step 0 of", 2),
    "step through p=32 chunks=8": (STEP + "32&chunks=8", "Step 0 of", 2),
    "cost explorer": ("cost?op=allreduce&p=8&sizes=1KiB:1GiB:4", "Crossovers:", 1),
    "contention": ("contention?topo=switch&op=allreduce&algo=ring&p=8&size=64MiB&late=3&delay=50&load=50",
                   "Busiest links", 2),
    "what-if (collectives)": ("whatif", "engine time with", 2),
    "what-if (training step)": ("whatif?kind=a+training+step", "--timing nccl", 2),
    "what-if (several jobs)": ("whatif?kind=several+jobs", "Links where the jobs meet", 1),
    "model vs reality": ("reality", "median |error|", 2),
    "doctor": ("doctor", "Doctor", 1),
}


# sidebar title -> (what the url then holds, text the page shows once drawn at its defaults, plotly figures it draws)
SIDEBAR = {"Step through": ("/step", "Step 0 of", 2), "Cost explorer": ("/cost", "Crossovers:", 1),
           "Topology and contention": ("/contention", "Busiest links", 2),
           "What-if hardware": ("/whatif", "engine time with", 2), "Model vs reality": ("/reality", "median |error|", 2),
           "Doctor": ("/doctor", "measured against expected", 1), "Lessons": ("lesson=", "Lesson (a)", 0)}


def _sidebar_switches(browser, base: str) -> dict[str, list[Took]]:
    """In one tab, as a person moves through the app: each page picked in the sidebar, timed until interactive."""
    from benchmarks.app_browser import wait_interactive

    page = browser.new_page()
    page.goto(base)
    wait_interactive(page, "Lesson (")
    out = {}
    for title, (path, text, figures) in SIDEBAR.items():
        link = page.locator("[data-testid='stSidebarNavLink']", has_text=title).first

        def switch(link=link, path=path, text=text, figures=figures):
            link.click()
            page.wait_for_url(re.compile(re.escape(path)), timeout=60_000, wait_until="commit")  # no reload: pushState
            wait_interactive(page, text, figures)
        out[f"switch to {title} (sidebar)"] = [_timed(switch, page)]
    page.close()
    return out


class Took(NamedTuple):
    """One timed action: wall seconds, the Streamlit server's CPU seconds (Python) and the seconds the tab's main thread
    was busy (the browser's JavaScript, style and layout; wall time of its tasks, so it grows with the load)."""

    wall: float
    server_cpu: float
    tab_busy: float


_SERVER: list[int] = []  # the Streamlit server's process id, once it is up


def _children_running(word: str) -> list[int]:
    """Ids of this process's children whose command line holds `word` (Linux /proc; none elsewhere)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            if ppid == os.getpid() and word.encode() in (stat.parent / "cmdline").read_bytes():
                found.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def _server_cpu() -> float:
    """CPU seconds (user + system) the Streamlit server has used; nan where /proc cannot say."""
    try:
        fields = Path(f"/proc/{_SERVER[0]}/stat").read_text().rsplit(")", 1)[1].split()
    except (IndexError, OSError):
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


_CDP: dict = {}  # page -> its DevTools session (Chromium counts a session's metrics from when it enabled them)


def _tab_busy(page) -> float:
    """Seconds the tab's renderer main thread has been busy (Chromium's TaskDuration)."""
    if page not in _CDP:
        _CDP[page] = page.context.new_cdp_session(page)
        _CDP[page].send("Performance.enable")
    metrics = _CDP[page].send("Performance.getMetrics")["metrics"]
    return next(m["value"] for m in metrics if m["name"] == "TaskDuration")


def _timed(action: Callable[[], object], page) -> Took:
    server, tab, start = _server_cpu(), _tab_busy(page), time.perf_counter()
    action()
    took = Took(time.perf_counter() - start, _server_cpu() - server, _tab_busy(page) - tab)
    print(f"  {took.wall:.2f} s (server CPU {took.server_cpu:.2f} s, tab busy {took.tab_busy:.2f} s)", file=sys.stderr,
          flush=True)
    return took


def _open(browser, base: str, name: str) -> tuple[object, Took]:
    """A new tab (a new Streamlit session) on the page, and the seconds until it was interactive."""
    from benchmarks.app_browser import wait_interactive

    link, text, figures = BROWSER_PAGES[name]
    page = browser.new_page()

    def load():
        page.goto(f"{base}/{link}")
        wait_interactive(page, text, figures)
    return page, _timed(load, page)


def _step_clicks(page, label: str, start: int, count: int) -> list[Took]:
    """Seconds from each click of `label` (next or prev) to the step it leads to being drawn and the script idle."""
    from benchmarks.app_browser import wait_interactive

    out, step = [], start
    for _ in range(count):
        step += 1 if label.startswith("next") else -1
        button = page.get_by_role("button", name=label)
        out.append(_timed(lambda b=button, k=step: (b.click(), wait_interactive(page, f"Step {k} of")), page))
    return out


def _step_interactions(browser, base: str, name: str) -> dict[str, list[Took]]:
    page, _ = _open(browser, base, name)
    nexts = _step_clicks(page, "next ▶", 0, 3)
    prevs = _step_clicks(page, "◀ prev", 3, 2)
    page.close()
    return {f"{name}: next": nexts, f"{name}: prev": prevs}


def _whatif_machine(browser, base: str) -> dict[str, list[Took]]:
    from benchmarks.app_browser import wait_interactive

    page, _ = _open(browser, base, "what-if (collectives)")
    box = page.get_by_role("textbox", name="machine A")

    def change():
        box.fill("dgx-h100:nodes=8")
        box.press("Enter")
        page.locator(".js-plotly-plot .legendtext", has_text="dgx-h100:nodes=8").first.wait_for(timeout=120_000)
        wait_interactive(page)
    took = _timed(change, page)
    page.close()
    return {"what-if: machine A -> dgx-h100:nodes=8": [took]}


def _reality_log(browser, base: str) -> dict[str, list[Took]]:
    """Model vs reality: another bundled log picked from the list."""
    from app.ui.reality_model import bundled_logs
    from benchmarks.app_browser import wait_interactive

    page, _ = _open(browser, base, "model vs reality")
    took = []
    for name in [n for n in bundled_logs() if n.startswith(("02_", "07_"))]:
        def pick(name=name):
            page.get_by_role("combobox", name=re.compile("bundled log")).click()
            page.get_by_role("option", name=name).click()
            page.get_by_text(f"{name}: ").first.wait_for(timeout=120_000)
            wait_interactive(page, figures=2)
        took.append(_timed(pick, page))
    page.close()
    return {"model vs reality: another log": took}


def _kind(key: str) -> str:
    """'page', 'interaction', or 'first load' (no goal: the server imports everything once)."""
    return "first load" if key.startswith("first load") else "page" if key.startswith(("open ", "switch ")) else \
        "interaction"


def browser_rows(repeat: int, words: list[str] | None) -> list[dict]:
    """Time-to-interactive of every page and the listed interactions, median of `repeat` (seconds)."""
    from benchmarks.app_browser import chromium, streamlit_server, wait_interactive

    def wanted(name: str) -> bool:
        return not words or any(w in name for w in words)
    found: dict[str, list[Took]] = {}
    with streamlit_server() as base, chromium() as chrome:
        _SERVER[:] = _children_running("streamlit")
        # one profile: its tabs share the HTTP cache, as a person's tabs do
        browser = chrome.new_context(viewport={"width": 1400, "height": 1100})
        page = browser.new_page()
        first = _timed(lambda: (page.goto(base), wait_interactive(page, "Lesson (")), page)
        page.close()
        found["first load of the app (not a goal)"] = [first]
        for _ in range(repeat):
            for name in filter(wanted, BROWSER_PAGES):
                page, took = _open(browser, base, name)
                page.close()
                found.setdefault(f"open {name}", []).append(took)
            for name in ("step through p=16", "step through p=32", "step through p=32 chunks=8"):
                if wanted(name):
                    for key, times in _step_interactions(browser, base, name).items():
                        found.setdefault(key, []).extend(times)
            for name, measure_one in (("sidebar", _sidebar_switches), ("what-if", _whatif_machine),
                                      ("model vs reality", _reality_log)):
                if wanted(name):
                    for key, times in measure_one(browser, base).items():
                        found.setdefault(key, []).extend(times)
    _SERVER.clear()
    _CDP.clear()
    return [{"what": key, "kind": _kind(key), "median (s)": statistics.median(t.wall for t in v),
             "min (s)": min(t.wall for t in v), "max (s)": max(t.wall for t in v),
             "server CPU (s)": statistics.median(t.server_cpu for t in v),
             "tab busy (s)": statistics.median(t.tab_busy for t in v), "runs": len(v)} for key, v in found.items()]


def print_browser(rows: list[dict], load: float) -> list[str]:
    print(f"# app in Chromium: time until interactive (median); load average {load:.2f}, {os.cpu_count()} cores; goal "
          f"< {BROWSER_GOAL_S['page']:g} s per page, < {BROWSER_GOAL_S['interaction']:g} s per interaction; the "
          "medians of the Streamlit server's CPU (Python) and how long the tab's main thread was busy (the browser's "
          "JavaScript, style, layout)")
    headers = ["what", "median (s)", "min (s)", "max (s)", "server CPU (s)", "tab busy (s)", "runs"]
    print(table(headers, [[r[h] if isinstance(r[h], str | int) else round(r[h], 2) for h in headers] for r in rows]))
    misses = [r["what"] for r in rows if r["kind"] in BROWSER_GOAL_S and r["median (s)"] > BROWSER_GOAL_S[r["kind"]]]
    print("every page and interaction within the goal" if not misses else "over the goal: " + "; ".join(misses))
    return misses


def python_rows(ranks: list[int], repeat: int, words: list[str] | None) -> list[dict]:
    rows = []
    for page, make in PAGES.items():
        if words and not any(word in page for word in words):
            continue
        rows.append({"page": page, **{f"p={p} (s)": measure(make, p, repeat) for p in ranks}})
    return rows


def print_python(rows: list[dict], ranks: list[int], repeat: int, load: float) -> list[tuple[str, int]]:
    print(f"# app latency in Python: widget change -> figures built (best of {repeat}); load average {load:.2f}, "
          f"{os.cpu_count()} cores; goal < 0.3 s at p=16, < 1 s at p=32")
    headers = list(rows[0])
    print(table(headers, [[r[h] if h == "page" else round(r[h], 4) for h in headers] for r in rows]))
    misses = [(r["page"], p) for r in rows for p in ranks if p in GOAL_S and r[f"p={p} (s)"] > GOAL_S[p]]
    print("every page within the goal" if not misses else "over the goal: " + ", ".join(f"{n} at p={p}" for n, p in misses))
    return misses


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["browser", "python", "both"], default="both",
                        help="the browser's times, the Python figure-building times, or both (default)")
    parser.add_argument("--ranks", default="8,16,32", help="rank counts of the Python part (default 8,16,32)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per case (Python: the best; browser: the median)")
    parser.add_argument("--pages", help="only the pages whose names contain one of these comma-separated words")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    args = parser.parse_args()
    words = [w.strip() for w in args.pages.split(",")] if args.pages else None
    out: dict = {"load_average_before": os.getloadavg()[0]}
    if args.part in ("browser", "both"):
        out["browser"] = browser_rows(args.repeat, words)
        out["browser_over_goal"] = print_browser(out["browser"], os.getloadavg()[0])
    if args.part in ("python", "both"):
        ranks = parse_rank_range(args.ranks)
        out["python"] = python_rows(ranks, args.repeat, words)
        if out["python"]:
            out["python_over_goal"] = print_python(out["python"], ranks, args.repeat, os.getloadavg()[0])
    out["load_average_after"] = os.getloadavg()[0]
    if args.json:
        write_json(args.json, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
