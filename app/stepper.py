"""The step-through model: what every rank's buffer holds after each step, in symbols, and what each transfer does.

The schedule is executed on `Origins` values (simulator.interpret): every element is the set of
(rank, chunk) contributions it holds, so a cell reads "A0+B0+C0" (chunk 0 of ranks A, B and C added
together) or "Σ0..3" (chunk from ranks 0 to 3) when long. Nothing here is drawn by hand.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape

import numpy as np

from simulator.collective import Collective
from simulator.errors import CollsimError
from simulator.interpret import Origins, holding, initial_state, ranks_text, run
from simulator.schedule import Schedule, Transfer

MAX_RANKS = 32
MAX_CHUNKS = 8
MAX_COLUMNS = 256  # ranks x chunks columns in the grid
LONG = 3  # more contributions than this are written as a sum over a range


def rank_letter(rank: int) -> str:
    """A, B, ... Z, then a, b, ... (p is at most 52 in pictures)."""
    return chr(65 + rank) if rank < 26 else chr(97 + rank - 26)


def _compact(ranks: tuple[int, ...]) -> str:
    """'0..3' or '0..3,6' for a sorted tuple of ranks."""
    runs, start = [], ranks[0]
    for a, b in zip(ranks, ranks[1:] + (None,)):
        if b != a + 1:
            runs.append(f"{start}..{a}" if a > start else f"{a}")
            start = b
    return ",".join(runs)


def _held(cell: frozenset) -> dict[int, tuple[int, ...]]:
    """holding() of one cell, without building an array: chunk -> sorted ranks."""
    out: dict[int, list[int]] = {}
    for rank, chunk in cell:
        out.setdefault(chunk, []).append(rank)
    return {chunk: tuple(sorted(ranks)) for chunk, ranks in sorted(out.items())}


def cell_label(cell: frozenset, held: dict | None = None) -> str:
    """'' (nothing yet), 'A0', 'A0+B0+C0', or 'Σ0..3' (one chunk, many ranks); several chunks are joined by ' '."""
    if not cell:
        return ""
    parts = []
    for chunk, ranks in (held if held is not None else _held(cell)).items():
        if len(ranks) > LONG:
            parts.append(f"Σ{_compact(ranks)}")
        else:
            parts.append("+".join(f"{rank_letter(r)}{chunk}" for r in ranks))
    return " ".join(parts)


def cell_tooltip(cell: frozenset, held: dict | None = None) -> str:
    """Every contribution in words: 'chunk 0 from ranks 0-3'."""
    if not cell:
        return "nothing yet"
    held = held if held is not None else _held(cell)
    return "; ".join(f"chunk {c} from {ranks_text(r)}" for c, r in held.items())


class Move:
    """One transfer of a step, with the chunk it mostly carries and its sentence (both worked out when first asked
    for: a page shows one step's moves, and 32 ranks x 8 chunks make 16,000 of them)."""

    __slots__ = ("transfer", "_cells", "_held")

    def __init__(self, transfer: Transfer, cells: np.ndarray | None):
        self.transfer = transfer
        self._cells = cells  # the Origins values it carries (frozensets: never changed after the copy)
        self._held: dict[int, tuple[int, ...]] | None = None

    @property
    def held(self) -> dict[int, tuple[int, ...]]:
        """Chunk -> the ranks whose contribution the message carries."""
        if self._held is None:
            self._held = holding(self._cells) if self._cells is not None else {}
            self._cells = None
        return self._held

    @property
    def chunk(self) -> int:
        held = self.held
        return max(held, key=lambda c: len(held[c])) if held else 0

    @property
    def sentence(self) -> str:
        return sentence(self.transfer, self.held)


@dataclass
class Stepper:
    """States before any step and after each display step, the moves of each step and the phase names."""

    schedule: Schedule
    steps: list[int]                                   # display step numbers, in order
    states: list[np.ndarray]                           # (ranks, columns) object arrays of frozensets; [0] is the start
    moves: list[list[Move]] = field(default_factory=list)  # moves[i]: the transfers of steps[i - 1] (moves[0] empty)
    phases: list[str] = field(default_factory=list)     # phases[i]: phase of state i ("start" for 0)
    scratch: list[np.ndarray] = field(default_factory=list)  # the scratch buffer per state, where the schedule has one

    @property
    def num_steps(self) -> int:
        """Steps after the start state."""
        return len(self.states) - 1

    def counts(self, i: int) -> np.ndarray:
        """Contributions each cell holds after state i (0 = nothing)."""
        return np.vectorize(len, otypes=[int])(self.states[i]) if self.states[i].size else np.zeros((0, 0), int)


def picture_collective(op: str, ranks: int, chunks: int = 1, root: int = 0) -> Collective:
    """An int8 collective with `chunks` elements per rank block, so the grid has ranks x chunks columns."""
    if not 1 <= ranks <= MAX_RANKS:
        raise CollsimError(f"ranks: {ranks} is outside the step-through's range; expected 1..{MAX_RANKS}")
    if ranks * chunks > MAX_COLUMNS:
        raise CollsimError(f"chunks: {ranks} ranks x {chunks} pieces per block (chunks x channels x pipeline) is "
                           f"{ranks * chunks} columns, over the limit of {MAX_COLUMNS}; use fewer chunks or channels")
    return Collective(op, ranks, ranks * chunks, "int8", root=root)


def _out(state, p: int, width: int, buffer: str = "out") -> np.ndarray:
    grid = np.empty((p, width), dtype=object)
    grid.fill(frozenset())
    for r in range(p):
        cells = state[r].get(buffer)
        if cells is not None:
            grid[r, :len(cells)] = cells
    return grid


def build_stepper(schedule: Schedule) -> Stepper:
    """Run the schedule on symbols; record the grid after each step, each transfer's sentence and the phases."""
    coll = schedule.collective
    p = coll.ranks
    width = max([schedule.buffer_size(r, "out") for r in range(p)] + [1])
    aside = max([schedule.buffer_size(r, "scratch") for r in range(p)] + [0])
    origins = Origins(coll)
    start = initial_state(schedule, origins)
    states = [_out(start, p, width)]
    scratch = [_out(start, p, aside, "scratch")] if aside else []
    steps: list[int] = []
    moves: list[list[Move]] = [[]]
    pending: list[Move] = []

    def on_transfer(t: Transfer, payload: list) -> None:
        pending.append(Move(t, np.concatenate(payload) if payload else None))

    def after_step(step: int, moved: list, state) -> None:
        steps.append(step)
        states.append(_out(state, p, width))
        if aside:
            scratch.append(_out(state, p, aside, "scratch"))
        moves.append(pending[:])
        pending.clear()

    run(schedule, origins, after_step=after_step, on_transfer=on_transfer)
    if aside:
        scratch = _in_transit(schedule, steps, scratch)
    stepper = Stepper(schedule, steps, states, moves, scratch=scratch)
    stepper.phases = ["start"] + [phase_name(schedule, m, states[i]) for i, m in enumerate(moves[1:])]
    return stepper


def _in_transit(schedule: Schedule, steps: list[int], grids: list[np.ndarray]) -> list[np.ndarray]:
    """The scratch grids with only the cells still to be read: a cell whose next use is a read (a later step sends it
    on or adds it in) stays; one already sent on for the last time, or about to be overwritten, is shown empty."""
    events: dict[tuple[int, int], list[tuple[int, bool]]] = {}  # (rank, offset) -> (step, is a read), in step order
    for t in schedule.transfers:
        for pc in t.pieces:
            for buf, rank, off, read in ((pc.src_buf, t.src, pc.src_off, True), (pc.dst_buf, t.dst, pc.dst_off, False)):
                if buf == "scratch":
                    for j in range(off, off + pc.count):
                        events.setdefault((rank, j), []).append((t.step, read))
    for uses in events.values():
        uses.sort(key=lambda e: (e[0], not e[1]))  # within a step, reads come before writes
    out = []
    for i, grid in enumerate(grids):
        now = steps[i - 1] if i > 0 else -1
        shown = grid.copy()
        for (r, j) in zip(*np.nonzero(np.vectorize(bool, otypes=[bool])(grid))):
            later = [read for step, read in events.get((int(r), int(j)), []) if step > now]
            if not later or not later[0]:
                shown[r, j] = frozenset()
        out.append(shown)
    return out


def _chunks_text(chunks: list[int]) -> str:
    if len(chunks) == 1:
        return f"chunk {chunks[0]}"
    if chunks == list(range(chunks[0], chunks[-1] + 1)):
        return f"chunks {chunks[0]}-{chunks[-1]}"
    return "chunks " + ", ".join(map(str, chunks))


def sentence(t: Transfer, held: dict[int, tuple[int, ...]]) -> str:
    """'rank 2 sends chunk 1, holding ranks 1-2, to rank 3, which adds it in'; chunks with the same holders grouped."""
    by_holders: dict[tuple[int, ...], list[int]] = {}
    for chunk, ranks in held.items():
        by_holders.setdefault(ranks, []).append(chunk)
    what = "; ".join(f"{_chunks_text(chunks)}, holding {ranks_text(ranks)}" for ranks, chunks in by_holders.items()) \
        or "nothing"
    if t.local:
        return f"rank {t.src} {'adds' if t.reduce else 'copies'} {what}, {'into its own' if t.reduce else 'within itself'}"
    if t.reduce:
        verb = "adds it in"
    elif t.pieces and t.pieces[0].dst_buf == "scratch":
        verb = "keeps it aside (scratch) to add in"
    else:
        verb = "stores it"
    return f"rank {t.src} sends {what}, to rank {t.dst}, which {verb}"


# (name when a step reduces, name when it copies), per op; tree-shaped allreduces go up then down
_PHASES = {
    "allreduce": ("reduce-scatter", "all-gather"),
    "reduce_scatter": ("reduce-scatter", "hand results to the extra ranks"),
    "allgather": ("all-gather", "all-gather"),
    "broadcast": ("broadcast", "broadcast"),
    "reduce": ("reduce", "gather of the reduced blocks"),
    "alltoall": ("exchange", "exchange"),
    "gather": ("gather", "gather"),
    "scatter": ("scatter", "scatter"),
}
_RS_AG_ALLREDUCE = {"ring", "rabenseifner", "direct", "hierarchical", "nccl_ring"}  # reduce-scatter, then all-gather
_TREE_ALLREDUCE = {"binomial": ("reduce up the tree", "broadcast down the tree"),
                   "double_binary_tree": ("reduce up the trees", "broadcast down the trees"),
                   "recursive_doubling": ("exchange and add (recursive doubling)", "copy back to the extra ranks")}


def phase_name(schedule: Schedule, moves: list[Move], before: np.ndarray | None = None) -> str:
    """The phase a step belongs to: whether it reduces anything (over the network or locally after a receive),
    where its messages go, and for van de Geijn's broadcast whether some rank still holds nothing (`before`)."""
    net = [m.transfer for m in moves if not m.transfer.local]
    if not net:
        return "local copy"
    op = schedule.collective.op
    if op == "broadcast" and schedule.algorithm == "scatter_allgather" and before is not None:
        empty = any(not any(cell for cell in row) for row in before)
        return "scatter" if empty else "all-gather"
    if op == "allreduce" and schedule.algorithm in _TREE_ALLREDUCE:
        reduce_name, copy_name = _TREE_ALLREDUCE[schedule.algorithm]
    elif op == "allreduce" and schedule.algorithm not in _RS_AG_ALLREDUCE:
        reduce_name, copy_name = "reduce (partial sums added in)", "copy (finished sums passed on)"
    else:
        reduce_name, copy_name = _PHASES[op]
    name = reduce_name if any(m.transfer.reduce for m in moves) else copy_name
    group = schedule.params.get("group")
    if group and group < schedule.collective.ranks:
        inside = all(t.src // group == t.dst // group for t in net)
        name += " inside each group" if inside else " across groups"
    return name


def step_sentences(stepper: Stepper, i: int) -> list[str]:
    """Plain sentences for the transfers of state i's step, the phase first."""
    if i == 0:
        return ["Start: each rank holds its own input (its letter, one chunk per column)."]
    counts: dict[str, int] = {}  # the pieces of one block (chunks > 1) read alike: one sentence, counted
    for m in stepper.moves[i]:
        counts[m.sentence] = counts.get(m.sentence, 0) + 1
    return [s[0].upper() + s[1:] + (f", in {k} pieces." if k > 1 else ".") for s, k in counts.items()]


# ---- the buffer grid as HTML: fixed cell sizes, scrolls instead of squeezing -----------------------------------

_PALETTE = ["#ffffff", "#fde9c9", "#fbd38d", "#f6ad55", "#ed8936", "#dd6b20", "#c05621", "#9c4221", "#7b341e"]


def count_colour(k: int, p: int) -> str:
    """White for nothing, then warmer as more ranks' contributions are held (k of p)."""
    if k <= 0:
        return _PALETTE[0]
    if p <= 1:
        return _PALETTE[3]
    level = 1 + round((len(_PALETTE) - 2) * (k - 1) / max(p - 1, 1))
    return _PALETTE[min(level, len(_PALETTE) - 1)]


def _grid_style(cell_px: int) -> str:
    """One style block for every cell (inline styles per cell made a 32-rank, 8-chunk grid 2 MB)."""
    levels = "".join(f".buffer-grid td.k{k}{{background:{c};{'color:#fff;' if k >= 5 else ''}}}"
                     for k, c in enumerate(_PALETTE))
    return ("<style>.buffer-grid{overflow:auto;max-height:620px;border:1px solid #ddd}"
            ".buffer-grid table{border-collapse:collapse;table-layout:fixed}"
            f".buffer-grid td.cell{{width:{cell_px}px;min-width:{cell_px}px;max-width:{cell_px}px;height:26px;"
            "text-align:center;font-size:12px;color:#111;white-space:nowrap;overflow:hidden;border:1px solid #bbb}"
            ".buffer-grid td.chg{border:2px solid #1a56db}"
            f".buffer-grid th.col{{width:{cell_px}px;min-width:{cell_px}px}}"
            ".buffer-grid th.rk{text-align:left;white-space:nowrap;min-width:110px}" + levels + "</style>")


def _level(k: int, p: int) -> int:
    """Index into the palette for k contributions of p (0: nothing)."""
    return _PALETTE.index(count_colour(k, p))


def grid_html(stepper: Stepper, i: int, cell_px: int = 72, buffer: str = "out") -> str:
    """The (ranks x columns) buffer grid after state i: symbolic labels, colour by contribution count, changed cells
    outlined; fixed cell sizes, scrolling instead of squeezing. `buffer` 'scratch': the scratch buffer instead of the
    output (where the schedule has one: Bruck's alltoall keeps the blocks still travelling there)."""
    states = stepper.scratch if buffer == "scratch" else stepper.states
    grid = states[i]
    prev = states[i - 1] if i > 0 else grid
    p = stepper.schedule.collective.ranks
    received = {m.transfer.dst for m in stepper.moves[i] if not m.transfer.local}
    levels = [_level(k, p) for k in range(p + 1)]
    head = "".join(f'<th class="col">{c}</th>' for c in range(grid.shape[1]))
    rows = [f'<tr><th class="rk">rank</th>{head}</tr>']
    for r in range(grid.shape[0]):
        cells = []
        for c in range(grid.shape[1]):
            cell = grid[r, c]
            k = len(cell)
            changed = " chg" if cell != prev[r, c] else ""
            held = _held(cell)
            cells.append(f'<td class="cell k{levels[k]}{changed}" data-rank="{r}" data-count="{k}" '
                         f'title="{escape(cell_tooltip(cell, held))}">{escape(cell_label(cell, held))}</td>')
        mark = " &#9664;" if r in received else ""
        rows.append(f'<tr><th class="rk">rank {r} ({rank_letter(r)}){mark}</th>{"".join(cells)}</tr>')
    return f'{_grid_style(cell_px)}<div class="buffer-grid"><table>{"".join(rows)}</table></div>'


def legend_html(p: int, figure: bool = False) -> str:
    """The colour key: how many ranks' contributions a cell holds (`figure`: and what a number in a cell of
    grid_figure means)."""
    keys = sorted({1, max(1, p // 2), p} | ({2} if p > 2 else set()))
    swatches = "".join(f'<span style="background:{count_colour(k, p)};border:1px solid #bbb;padding:2px 8px;'
                       f'margin-right:6px;white-space:nowrap;display:inline-block;'
                       f'color:{"#fff" if count_colour(k, p) in _PALETTE[5:] else "#111"}">{k} of {p}</span>'
                       for k in keys)
    return (f'<div style="font-size:13px">Colour: ranks whose data a cell holds &nbsp; <span style="border:1px solid #bbb;'
            f'padding:2px 8px;margin-right:6px">nothing</span>{swatches} &nbsp; blue outline: changed in this step; '
            "&#9664;: rank received in this step"
            + ("; a number in a cell: how many ranks' data it holds, where its label is too long (hover for it)"
               if figure else "") + "</div>")


# ---- the buffer grid as one figure, for grids too big for readable HTML cells ----------------------------------

HTML_MAX_SIDE = 16  # ranks or columns: above this the grid is one plotly heatmap (every cell in view, one element)
CHAR_PX = 7  # width of a label character at the figure's font size


def grid_fits_html(stepper: Stepper, buffer: str = "out") -> bool:
    """Whether the grid is small enough to show as an HTML table of fixed-size cells (16 x 16 at most)."""
    grid = (stepper.scratch if buffer == "scratch" else stepper.states)[0]
    return grid.shape[0] <= HTML_MAX_SIDE and grid.shape[1] <= HTML_MAX_SIDE


def _fitting(label: str, count: int, cell_px: float) -> str:
    """The label if all of it fits the cell, else the contribution count if that fits, else nothing (hover has it)."""
    for text in (label, str(count) if count else ""):
        if len(text) * CHAR_PX <= cell_px:
            return text
    return ""


def grid_figure(stepper: Stepper, i: int, buffer: str = "out", width_px: int = 1150):
    """The grid of grid_html as one plotly heatmap: every cell in view at once, coloured as grid_html colours it,
    changed cells outlined. A cell shows its label where the whole label fits its width, else how many ranks'
    contributions it holds where that fits, else nothing; hovering shows every contribution."""
    import plotly.graph_objects as go

    states = stepper.scratch if buffer == "scratch" else stepper.states
    grid, prev = states[i], states[i - 1] if i > 0 else states[i]
    p = stepper.schedule.collective.ranks
    rows, cols = grid.shape
    levels = [_level(k, p) for k in range(p + 1)]
    cell_px = max(width_px - 120, 100) / max(cols, 1)
    z, text, hover, changed = [], [], [], []
    for r in range(rows):
        z.append([levels[len(cell)] for cell in grid[r]])
        held = [_held(cell) for cell in grid[r]]
        labels = [cell_label(cell, h) for cell, h in zip(grid[r], held)]
        text.append([_fitting(lab, len(cell), cell_px) for lab, cell in zip(labels, grid[r])])
        hover.append([f"rank {r}, column {c}: {lab or 'nothing'} ({cell_tooltip(cell, h)})"
                      for c, (lab, cell, h) in enumerate(zip(labels, grid[r], held))])
        changed += [(c, r) for c in range(cols) if grid[r, c] != prev[r, c]]
    received = {m.transfer.dst for m in stepper.moves[i] if not m.transfer.local}
    names = [f"rank {r} ({rank_letter(r)})" + (" ◀" if r in received else "") for r in range(rows)]
    n = len(_PALETTE) - 1
    # a stepped scale: level k fills [k, k+1) / (n+1) of it, so z = k (in zmin..zmax = -0.5..n+0.5) is exactly _PALETTE[k]
    scale = [[edge / (n + 1), colour] for k, colour in enumerate(_PALETTE) for edge in (k, k + 1)]
    fig = go.Figure(go.Heatmap(z=z, text=text, customdata=hover, texttemplate="%{text}", textfont=dict(size=11),
                               zmin=-0.5, zmax=n + 0.5, colorscale=scale, showscale=False, xgap=1, ygap=1,
                               hovertemplate="%{customdata}<extra></extra>"))
    if changed:
        fig.add_trace(go.Scatter(x=[c for c, _ in changed], y=[r for _, r in changed], mode="markers", hoverinfo="skip",
                                 marker=dict(symbol="square-open", size=max(min(cell_px, 22) - 2, 3),
                                             line=dict(color="#1a56db", width=2)), showlegend=False))
    fig.update_layout(height=60 + 22 * rows, margin=dict(l=10, r=10, t=30, b=10), plot_bgcolor="#dddddd",
                      xaxis=dict(side="top", title=None, tickmode="auto", nticks=min(cols, 32), showgrid=False,
                                 range=[-0.5, cols - 0.5], fixedrange=True),
                      yaxis=dict(tickmode="array", tickvals=list(range(rows)), ticktext=names, autorange="reversed",
                                 showgrid=False, fixedrange=True))
    return fig
