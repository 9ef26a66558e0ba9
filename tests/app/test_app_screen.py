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
    bars = sum(len(values(t["y"])) for t in timeline["data"])
    assert bars == 32 * 62


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
