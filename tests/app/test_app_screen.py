"""What the app shows on screen (issue 23): each test is one defect a person saw in a browser, checked on the page's
own elements with Streamlit's test runner (expected values by hand)."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("streamlit")

from tests.app_pages import charts, open_page, values  # noqa: E402


def _ok(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


@pytest.fixture(scope="module")
def step32():
    """Step through, ring allreduce on 32 ranks with 8 chunks per block, at step 5."""
    at = open_page("views/step.py", {"op": "allreduce", "algo": "ring", "p": "32", "chunks": "8", "topo": "ring",
                                     "size": "1MiB", "s": "5"})
    _ok(at)
    return at


def _figure(at, title_start: str) -> dict:
    return next(c for c in charts(at) if c["layout"].get("title", {}).get("text", "").startswith(title_start))


def _grid(at) -> dict:
    return next(c for c in charts(at) if c["data"][0]["type"] == "heatmap")


def test_a_32_rank_grid_shows_every_cell_and_no_cut_label():
    """The HTML grid showed about 12 x 15 of 32 x 32 cells and cut 'L10+M10+N10' to 'L10+M10+N'."""
    at = open_page("views/step.py", {"op": "allreduce", "algo": "ring", "p": "32", "topo": "ring", "s": "5"})
    _ok(at)
    assert not any("buffer-grid" in m.value for m in at.markdown)
    grid = _grid(at)
    assert grid["layout"]["xaxis"]["range"] == [-0.5, 31.5]  # every column in view, none scrolled away
    ticks = grid["layout"]["yaxis"]["ticktext"]
    assert len(ticks) == 32 and ticks[0].startswith("rank 0 (A)") and ticks[31].startswith("rank 31 (f)")
    text = grid["data"][0]["text"]
    assert len(text) == 32 and all(len(row) == 32 for row in text)
    # after 5 ring steps a partial sum holds at most 6 ranks' data (its own and 5 received, by hand); 32 px cells
    # cannot hold 'Σ0..5' (6 characters x 7 px), so such a cell reads '6' and its hover has the whole label
    counts = [(int(t), r, c) for r, row in enumerate(text) for c, t in enumerate(row) if t.isdigit()]
    top, r, c = max(counts)
    assert top == 6 and re.search(r"Σ\d+\.\.\d+ ", grid["data"][0]["customdata"][r][c])
    assert all(len(t) * 7 <= 1030 / 32 for row in text for t in row)  # whatever is written fits its cell
    assert text[0][0] == "A0"  # short labels are shown whole


def test_eight_pieces_per_block_are_all_in_view(step32):
    grid = _grid(step32)
    assert grid["layout"]["xaxis"]["range"] == [-0.5, 255.5]  # 32 blocks x 8 pieces
    assert len(grid["data"][0]["customdata"]) == 32 and len(grid["data"][0]["customdata"][0]) == 256
    assert {t for row in grid["data"][0]["text"] for t in row} == {""}  # 4 px cells: nothing cut, hover tells


def test_what_moves_says_each_transfer_once_with_its_pieces(step32):
    """With chunks=8 'What moves' repeated one sentence 8 times: 32 senders in a ring step, each sentence once."""
    listed = [m.value for m in step32.markdown if m.value.startswith("- Rank")]
    sentences = [line for block in listed for line in block.splitlines()]
    assert len(sentences) == 32 and len(set(sentences)) == 32
    assert all(s.endswith(", in 8 pieces.") for s in sentences)


def test_the_timeline_legend_sits_above_the_ranks(step32):
    """The legend was drawn inside the plot, over ranks 0 and 1: now above the plotting area."""
    timeline = _figure(step32, "engine timeline")
    legend = timeline["layout"]["legend"]
    assert legend["yanchor"] == "bottom" and legend["y"] >= 1.0
    assert timeline["layout"]["title"]["y"] > legend["y"] - 1 + 0.9  # the title is above the legend, not on it
    # one bar per rank per step: ring allreduce on 32 ranks has 2 x 31 steps (by hand)
    ends = sum(1 for t in timeline["data"] for y in values(t["y"]) if y is not None)  # a bar: a segment, two ends
    assert ends == 2 * 32 * 62 and all(t["mode"] == "lines" for t in timeline["data"])


def test_the_step_arrows_are_a_few_traces_not_hundreds_of_annotations(step32):
    topo = next(c for c in charts(step32) if c["layout"].get("title", {}).get("text", "").startswith("step 5"))
    assert not topo["layout"].get("annotations")
    arrows = [t for t in topo["data"] if t.get("marker", {}).get("symbol") == "arrow"]
    heads = sum(1 for t in arrows for s in values(t["marker"]["size"]) if s)
    assert heads == 32  # 32 ranks each send to their ring neighbour, the 8 pieces drawn as one arrow


def test_a_16_rank_grid_keeps_its_readable_html_cells():
    at = open_page("views/step.py", {"op": "allreduce", "algo": "ring", "p": "16", "topo": "ring", "s": "3"})
    _ok(at)
    grid = next(m.value for m in at.markdown if "buffer-grid" in m.value)
    assert len(re.findall(r'class="cell k', grid)) == 16 * 16


def test_a_topology_typo_shows_its_error_and_keeps_the_grid():
    """A typo in the topology blanked the whole Step through page: the grid and sentences need no topology."""
    at = open_page("views/step.py", {"op": "allreduce", "algo": "ring", "p": "4", "topo": "rnig", "s": "1"})
    assert not at.exception
    assert len(at.error) == 1 and "topology" in at.error[0].value and "'rnig'" in at.error[0].value
    assert any("buffer-grid" in m.value for m in at.markdown)
    assert sum(1 for m in at.markdown if m.value.startswith("- Rank")) == 1  # what moves in step 1
    assert not charts(at)  # no engine picture from a topology that does not exist


def test_a_cost_topology_typo_keeps_the_closed_forms():
    at = open_page("views/cost.py", {"op": "allreduce", "p": "8", "sizes": "1KiB:1GiB:4", "topo": "dgx-h1OO"})
    assert not at.exception
    assert len(at.error) == 1 and "engine points on" in at.error[0].value
    figure = charts(at)[0]
    assert figure["data"] and not any("engine on" in t.get("name", "") for t in figure["data"])


def test_cost_explorer_names_each_model_and_says_why_markers_leave_the_lines():
    """On a preset, engine markers sat far below the slider's closed-form lines with nothing saying why."""
    at = open_page("views/cost.py", {"op": "allreduce", "p": "8", "sizes": "1KiB:1GiB:4", "topo": "dgx-h100"})
    _ok(at)
    figure = charts(at)[0]
    names = [t["name"] for t in figure["data"]]
    assert "ring: closed form" in names and any(n.startswith("ring: engine on dgx-h100") for n in names)
    title = figure["layout"]["title"]["text"]
    assert "alpha 2us, 25GB/s" in title and "not the sliders" in title
    # every legend entry has its 26 px: the legend is not clipped (was 520 px for 21 entries; the browser test measures it)
    assert figure["layout"]["height"] >= 200 + 26 * len(names)


def test_byte_axes_read_kib_mib_gib():
    """Plotly wrote 1e9 bytes as '1B' (a billion): the size axes carry their own B/KiB/MiB/GiB ticks."""
    at = open_page("views/cost.py", {"op": "allreduce", "p": "8", "sizes": "1KiB:1GiB:4", "topo": ""})
    axis = charts(at)[0]["layout"]["xaxis"]
    assert axis["ticktext"] == ["1KiB", "32KiB", "1MiB", "32MiB", "1GiB"]  # 2^10, 2^15, ... 2^30: every 5 doublings
    assert values(axis["tickvals"]) == [1 << 10, 1 << 15, 1 << 20, 1 << 25, 1 << 30]


def test_model_vs_reality_opens_on_a_log_the_model_meets_its_goal_on():
    """It opened on log 01 (A3 Mega, 36.5% median error, docs/accuracy.md): the first look is now log 07 (8.1%)."""
    at = open_page("views/reality.py")
    _ok(at)
    assert at.selectbox(key="reality.log").value.startswith("07_b200_hgx_1node")
    assert at.text_input(key="reality.preset").value == "hgx-b200"
    axis = next(c for c in charts(at) if c["layout"]["title"]["text"] == "measured against predicted")["layout"]["xaxis"]
    assert all(t.endswith(("B", "KiB", "MiB", "GiB")) for t in axis["ticktext"])  # never plotly's '10B' for 1e10


@pytest.mark.slow
def test_stopping_the_app_is_quiet():
    """SIGTERM to `collsim app` printed 'collsim: error: terminated (SIGTERM)': a stop asked for is not an error."""
    import signal
    import subprocess
    import sys
    import time
    import urllib.request
    from pathlib import Path

    from benchmarks.app_browser import free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "app.cli", "app", "--headless", "--port", str(port)],
                            cwd=Path(__file__).resolve().parents[2], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1)
                break
            except OSError:
                time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "error" not in err.lower(), err


def test_scale_html_is_small_its_colours_match_its_legend_and_its_ticks_are_the_gpu_counts(tmp_path):
    """`collsim scale --html` was 4.8 MB (plotly.js inside), its step-time panel used other colours than its legend,
    and its log axis read '7 8 9 10 2 3'."""
    import json
    import re

    from app.cli import main

    html = tmp_path / "scale.html"
    assert main(["scale", "ddp", "--gpus", "8:32", "--algos", "ring,hierarchical", "--jobs", "1", "--mode", "isolated",
                 "--html", str(html)]) == 0
    text = html.read_text()
    assert len(text) < 100_000 and "cdn.plot.ly" in text
    spec = json.loads(re.search(r"Plotly\.newPlot\(\s*\"[^\"]+\",\s*(\[.*?\]),\s*\{", text, re.S).group(1))
    colours = {}
    for trace in spec:
        colours.setdefault(trace["legendgroup"], set()).add(trace["line"]["color"])
    assert len(colours) == 2 and all(len(c) == 1 for c in colours.values())  # one colour per row kind, both panels
    assert len({next(iter(c)) for c in colours.values()}) == 2
    assert '"ticktext":["8","16","32"]' in text.replace(" ", "")  # the GPU counts, not '7 8 9 10 2 3'


def test_a_two_node_dgx_draws_each_nic_beside_its_gpu_and_nothing_on_top_of_another():
    """dgx-h100:nodes=2 drew its 8 NICs per node as a column of squares 0.3 apart, next to the wrong GPUs."""
    import itertools
    import math

    from app.topofig import layout
    from simulator.topology import parse_topology

    topo = parse_topology("dgx-h100:nodes=2")
    pos = layout(topo)
    names = topo.node_names
    gpus = [i for i, k in enumerate(topo.node_kinds) if k == "gpu"]
    for i, name in enumerate(names):
        m = re.fullmatch(r"n(\d)nic(\d)", name)
        if m:
            nearest = min(gpus, key=lambda g: math.dist(pos[g], pos[i]))
            assert names[nearest] == f"n{m.group(1)}g{m.group(2)}"  # NIC k serves GPU k of its node
    xs, ys = [p[0] for p in pos.values()], [p[1] for p in pos.values()]
    span = max(max(xs) - min(xs), max(ys) - min(ys))
    closest = min(math.dist(a, b) for a, b in itertools.combinations(pos.values(), 2))
    assert closest / span >= 0.07  # at 500 px wide, centres at least 35 px apart: a 26 px GPU and a 10 px square fit


def test_a_machine_typo_on_what_if_keeps_the_other_machines():
    at = open_page("views/whatif.py", {"m0": "switch:8", "m1": "swtich:8", "sizes": "1MiB",
                                       "timed": "best collsim algorithm (links only)",
                                       "ops": "allreduce"})
    assert not at.exception
    assert len(at.error) == 1 and "'swtich:8'" in at.error[0].value
    (figure,) = charts(at)
    assert {t["name"] for t in figure["data"]} == {"switch:8"}  # machine A still drawn
    assert figure["layout"]["yaxis"]["dtick"] == 1  # one tick per decade


def test_size_ticks_are_powers_of_two_in_binary_units():
    from simulator.units import size_ticks

    assert size_ticks(4096, 16384) == ([4096, 8192, 16384], ["4KiB", "8KiB", "16KiB"])  # every doubling fits
    # 64 KiB .. 1 GiB is 15 doublings: every second one, 8 ticks
    assert size_ticks(65536, 1 << 30)[1] == ["64KiB", "256KiB", "1MiB", "4MiB", "16MiB", "64MiB", "256MiB", "1GiB"]
    values, labels = size_ticks(8, 8 << 30)  # 31 doublings: every fifth one (2^5, 2^10, ... 2^30)
    assert labels == ["32B", "1KiB", "32KiB", "1MiB", "32MiB", "1GiB"] and len(values) <= 8
