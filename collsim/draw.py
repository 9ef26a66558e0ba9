"""An SVG picture of an algorithm, step by step: every rank's buffer after each step, coloured by the ranks whose data
it holds, computed by running the schedule on symbolic data (simulator/diagram.py): `collsim draw`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from simulator.algorithms import build_schedule
from simulator.collective import Collective
from simulator.diagram import render_svg
from simulator.schedule import Schedule
from simulator.units import parse_size

from .limits import Footprint, Limits
from .request import OutputFile, Request, Result


@dataclass(frozen=True)
class DrawRequest(Request):
    """`elements` in the drawn int8 buffer (default 2 per rank); `params` are the algorithm's parameters as (name,
    value) pairs; the picture is written to `output`."""

    op: str
    algo: str
    ranks: int
    output: str
    elements: int | str | None = None
    root: int = 0
    params: tuple[tuple[str, Any], ...] = ()
    limits: Limits = Limits()  # transfers and memory the request may take
    collective: Collective = field(init=False, repr=False, compare=False)

    def check(self) -> None:
        Footprint("draw", self.op, self.algo, ranks=self.ranks, params=self.params, elements=self.elements, picture=True).bound(self.limits)
        elements = self.elements if self.elements is not None else 2 * self.ranks
        coll = Collective(self.op, self.ranks, parse_size(elements, "elements"), "int8", root=self.root)
        object.__setattr__(self, "collective", coll)

    def run(self) -> DrawResult:
        return DrawResult(self, build_schedule(self.collective, self.algo, **dict(self.params)))


@dataclass(frozen=True)
class DrawResult(Result):
    """The schedule drawn; the picture is the file (nothing else is printed but the line that says it was written)."""

    request: DrawRequest
    schedule: Schedule = field(repr=False)

    def messages(self) -> int:
        return len(self.schedule.network_transfers())

    def data(self) -> dict[str, Any]:
        req, coll = self.request, self.request.collective
        return {"output": req.output, "op": coll.op, "algorithm": req.algo, "ranks": coll.ranks, "elements": coll.count,
                "steps": self.schedule.num_steps, "messages": self.messages()}

    def text(self) -> str:
        return ""

    def files(self) -> list[OutputFile]:
        path = self.request.output
        return [OutputFile(path, "SVG", render_svg(self.schedule),
                           said=f"wrote {path}: {self.schedule.num_steps} steps, {self.messages()} messages")]
