"""Step-by-step pictures of a schedule: each rank's buffer after every step, and the messages of each step.

The picture is computed, not drawn by hand: the schedule is executed on symbolic buffers where each
element carries the set of ranks whose data it holds (a bitmask), so a block's colour shows how far
the reduction or the gathering has come.
"""

from __future__ import annotations

import colorsys
from dataclasses import dataclass
from xml.sax.saxutils import escape

import numpy as np

from simulator import interpret
from simulator.errors import CollsimError
from simulator.interpret import Contributors, initial_state
from simulator.ops import SPECS
from simulator.schedule import Schedule

MAX_RANKS = 16
MAX_ELEMENTS = 64
# Ops whose pictures make sense: every element of 'out' has one meaning on all ranks (not alltoall's pairs).
DRAWABLE_OPS = tuple(name for name, spec in SPECS.items() if spec.send != "pairs")


@dataclass
class StepState:
    """Contributor bitmasks of every rank's 'out' buffer after a step, and the transfers of that step."""

    masks: np.ndarray  # (ranks, count) uint64
    transfers: list


def symbolic_states(schedule: Schedule) -> list[StepState]:
    """Run the schedule on contributor bitmasks; one state before any step, then one after each step."""
    coll = schedule.collective
    p = coll.ranks
    if p > MAX_RANKS:
        raise CollsimError(f"ranks: {p} is too many to draw; pictures take at most {MAX_RANKS} ranks")
    if coll.spec.send == "pairs":
        raise CollsimError(f"op: {coll.op} pictures are not supported yet (each element has its own destination); "
                           f"draw {', '.join(DRAWABLE_OPS)}")
    values = Contributors(p)
    outs = lambda state: np.stack([state[r]["out"] for r in range(p)])
    states = [StepState(outs(initial_state(schedule, values)), [])]
    interpret.run(schedule, values,
                  after_step=lambda step, moved, state: states.append(StepState(outs(state), [t for t in moved if not t.local])))
    return states


def _rank_color(rank: int, p: int) -> str:
    r, g, b = colorsys.hls_to_rgb(rank / max(p, 1), 0.72, 0.65)
    return f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}"


def _mask_color(mask: int, p: int) -> str:
    """White: nothing yet; a rank's own colour: one rank's data; deeper blue: more ranks reduced in."""
    if mask == 0:
        return "#ffffff"
    k = bin(mask).count("1")
    if k == 1:
        return _rank_color(mask.bit_length() - 1, p)
    lightness = 0.85 - 0.6 * (k - 1) / max(p - 1, 1)
    r, g, b = colorsys.hls_to_rgb(0.61, lightness, 0.6)
    return f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}"


def render_svg(schedule: Schedule, title: str | None = None) -> str:
    """An SVG: rows are ranks, columns are steps; arrows are the messages sent in each step."""
    coll = schedule.collective
    states = symbolic_states(schedule)
    if coll.count > MAX_ELEMENTS:
        raise CollsimError(f"elements: {coll.count} elements are too many to draw; use at most {MAX_ELEMENTS}")
    p, count = coll.ranks, max(coll.count, 1)
    cell_w, row_h, bar_h, gap = max(6, 120 // count), 44, 22, 70
    col_w = cell_w * count + gap
    left, top = 70, 60
    width = left + col_w * len(states) + 20
    height = top + row_h * p + 70
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
           'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#333"/></marker></defs>',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{left}" y="22" font-size="15" font-weight="bold">{escape(title or _title(schedule))}</text>']
    for s, state in enumerate(states):
        x0 = left + s * col_w
        label = "start" if s == 0 else f"after step {s}"
        out.append(f'<text x="{x0}" y="{top - 10}" fill="#555">{label}</text>')
        for r in range(p):
            y = top + r * row_h
            for e in range(coll.count):
                mask = int(state.masks[r, e])
                out.append(f'<rect class="cell" data-rank="{r}" data-step="{s}" data-mask="{mask}" x="{x0 + e * cell_w}" y="{y}" '
                           f'width="{cell_w}" height="{bar_h}" fill="{_mask_color(mask, p)}" stroke="#999" stroke-width="0.5"/>')
        for t in state.transfers:
            xa, xb = x0 - gap + 4, x0 - 6
            ya, yb = top + t.src * row_h + bar_h / 2, top + t.dst * row_h + bar_h / 2
            colour = "#c0392b" if t.reduce else "#333"
            out.append(f'<line class="msg" data-src="{t.src}" data-dst="{t.dst}" data-step="{s}" x1="{xa}" y1="{ya}" '
                       f'x2="{xb}" y2="{yb}" stroke="{colour}" stroke-width="1.3" marker-end="url(#arrow)" opacity="0.8"/>')
    for r in range(p):
        out.append(f'<text x="10" y="{top + r * row_h + 15}">rank {r}</text>')
    ly = top + row_h * p + 20
    out.append(f'<text x="{left}" y="{ly}" fill="#333">Each bar is one rank\'s buffer ({coll.count} elements). '
               'Pastel: one rank\'s data (its colour); blue, deeper as more ranks are reduced in; white: nothing yet.</text>')
    out.append(f'<text x="{left}" y="{ly + 18}" fill="#333">Arrows: messages of that step '
               '(black: copied at the receiver, red: reduced into what it holds).</text>')
    out.append("</svg>")
    return "\n".join(out)


def _title(schedule: Schedule) -> str:
    coll = schedule.collective
    params = ", ".join(f"{k}={v}" for k, v in schedule.params.items() if v is not None)
    return f"{coll.op} / {schedule.algorithm}" + (f" ({params})" if params else "") + f", {coll.ranks} ranks"
