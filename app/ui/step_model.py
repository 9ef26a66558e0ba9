"""Everything the Step-through page shows for one choice, built without Streamlit (tests and benchmarks call it)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from app.figures import timeline_figure
from app.stepper import Stepper, build_stepper, grid_figure, grid_fits_html, picture_collective, step_sentences
from app.topofig import topology_figure
from app.ui.inputs import size_input, topology_input
from collsim.machine import MachineSetup
from collsim.simulate import SimulateRequest
from simulator.algorithms import build_schedule, get
from simulator.algorithms.registry import check_ranks
from simulator.errors import CollsimError
from simulator.topology.model import Topology
from simulator.trace import Trace

DTYPE = "float32"


@dataclass
class StepModel:
    """The symbolic run (grid, sentences) and the engine's run (timeline, time) of one choice."""

    stepper: Stepper
    topology: Topology | None
    trace: Trace | None
    engine_error: str = ""  # why the engine could not run (a bad topology or size): the grid is still shown

    @property
    def num_steps(self) -> int:
        return self.stepper.num_steps

    def view(self, i: int) -> dict:
        """step_figures(self, i) plus the grids as figures where they are too big for HTML, kept for the last 64 steps
        shown (next and prev revisit them; the model itself is kept per choice by the page's cache)."""
        cache = self.__dict__.setdefault("_views", {})  # shared by sessions: read once, never assumed still there
        found = cache.get(i)
        if found is None:
            found = step_figures(self, i)
            for buffer in ("out", "scratch") if self.stepper.scratch else ("out",):
                if not grid_fits_html(self.stepper, buffer):
                    found[f"grid.{buffer}"] = grid_figure(self.stepper, i, buffer)
            while len(cache) >= 64:
                cache.pop(next(iter(cache)), None)
            cache[i] = found
        return found

    @cached_property
    def link_timeline(self):
        """The busiest links' timeline: the same at every step, so built once per choice."""
        from app.figures import link_timeline_figure

        return link_timeline_figure(self.trace)


def build_step_model(op: str, algo: str, ranks: int, params: dict, root: int, topology: str, size: str,
                     gamma: float = 0.0) -> StepModel:
    """Schedule on symbols (ranks x chunks columns) and the same algorithm at `size` bytes on `topology` in the engine."""
    spec = get(op, algo)
    check_ranks(spec, ranks)
    # elements per rank block in the picture: every piece the parameters cut a block into gets its own column
    per_block = int(params.get("chunks") or 1) * int(params.get("channels") or 1) * -(-int(params.get("pipeline") or 1) // ranks)
    stepper = build_stepper(build_schedule(picture_collective(op, ranks, per_block, root), algo, **params))
    try:
        topo = topology_input(topology, ranks)
        request = SimulateRequest(op, algo, size_input(size, "size", 4), MachineSetup(topo, gamma=float(gamma)),
                                  ranks=ranks, dtype=DTYPE, root=root, params=tuple(params.items()))
        return StepModel(stepper, topo, request.run().trace)
    except CollsimError as exc:
        return StepModel(stepper, None, None, str(exc).splitlines()[0])


def step_figures(model: StepModel, i: int) -> dict:
    """The figures and text for state i: the topology with the step's transfers, the timeline, the sentences."""
    stepper = model.stepper
    p = stepper.schedule.collective.ranks
    arrows = [(m.transfer.src, m.transfer.dst, m.chunk, m.sentence) for m in stepper.moves[i] if not m.transfer.local]
    step_no = stepper.steps[i - 1] if i > 0 else None
    title = "start" if i == 0 else f"step {i}: {stepper.phases[i]}"
    if model.trace is None:
        return {"topology": None, "timeline": None, "sentences": step_sentences(stepper, i)}
    return {"topology": topology_figure(model.topology, p, arrows, title=title),
            "timeline": timeline_figure(model.trace, step_no),
            "sentences": step_sentences(stepper, i)}
