"""The step pictures: what a student sees must follow from the collective's definition."""

import xml.etree.ElementTree as ET

import pytest

from app.cli import main
from app.diagram import render_svg
from simulator.algorithms import build_schedule
from simulator.collective import Collective

NS = "{http://www.w3.org/2000/svg}"


def _cells(svg: str, step: int) -> dict[tuple[int, int], int]:
    root = ET.fromstring(svg)
    cells = [c for c in root.iter(f"{NS}rect") if c.get("class") == "cell" and int(c.get("data-step")) == step]
    by_rank: dict[int, list[int]] = {}
    for c in cells:
        by_rank.setdefault(int(c.get("data-rank")), []).append(int(c.get("data-mask")))
    return {(r, e): m for r, masks in by_rank.items() for e, m in enumerate(masks)}


def test_ring_allreduce_picture_ends_fully_reduced_and_shows_every_message():
    p = 4
    s = build_schedule(Collective("allreduce", p, 2 * p, "int8"), "ring")
    svg = render_svg(s)
    root = ET.fromstring(svg)
    messages = [m for m in root.iter(f"{NS}line") if m.get("class") == "msg"]
    assert len(messages) == 2 * (p - 1) * p
    assert sum(m.get("stroke") == "#c0392b" for m in messages) == (p - 1) * p  # reduce-scatter half is red
    start, end = _cells(svg, 0), _cells(svg, 2 * (p - 1))
    assert all(mask == 1 << r for (r, _), mask in start.items())
    assert set(end.values()) == {(1 << p) - 1}


def test_allgather_picture_places_each_ranks_block():
    p = 3
    s = build_schedule(Collective("allgather", p, 2 * p, "int8"), "ring")
    end = _cells(render_svg(s), p - 1)
    for (_, e), mask in end.items():
        assert mask == 1 << (e // 2)


def test_draw_command_writes_a_file_and_refuses_big_pictures(tmp_path, capsys):
    out = tmp_path / "ring.svg"
    assert main(["draw", "--op", "allreduce", "--algo", "ring", "--ranks", "3", "-o", str(out)]) == 0
    assert out.read_text().startswith("<svg")
    assert main(["draw", "--op", "allreduce", "--algo", "ring", "--ranks", "40", "-o", str(tmp_path / "x.svg")]) == 2
    assert "at most 16" in capsys.readouterr().err
    assert not (tmp_path / "x.svg").exists()


@pytest.mark.parametrize("op", ["broadcast", "reduce", "gather", "scatter", "reduce_scatter"])
def test_every_drawable_op_renders(op):
    from simulator.algorithms import names_for

    for name in names_for(op):
        svg = render_svg(build_schedule(Collective(op, 5, 10, "int8", root=2), name))
        assert svg.count('class="cell"') > 0
