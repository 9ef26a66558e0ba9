"""One training step of a scenario on one machine: the question `collsim whatif` and `collsim scale` ask for each
machine, and the app's What-if page for each machine it shows."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from simulator.errors import CollsimError
from simulator.program.presets import get_gpu, get_model
from simulator.program.run import MODES
from simulator.program.scenarios import SCENARIOS
from simulator.program.whatif import StepCase, check_case_timing, evaluate

from .request import Request, Result


@dataclass(frozen=True)
class StepRequest(StepCase, Request):
    """A StepCase (simulator/program/whatif.py: its fields and their defaults), checked when it is built."""

    def check(self) -> None:
        _one_of("scenario", self.scenario, SCENARIOS)
        get_model(self.model)
        if self.gpu:
            get_gpu(self.gpu)
        _one_of("mode", self.mode, MODES)
        if not (isinstance(self.mfu, (int, float)) and math.isfinite(self.mfu) and 0 < self.mfu <= 1):
            raise CollsimError(f"mfu: {self.mfu}; expected a utilisation in (0, 1], e.g. 0.4")
        if self.ports < 0:
            raise CollsimError(f"ports: {self.ports}; expected an integer >= 1, or 0 for unlimited")
        for name in ("gpus", "tp", "pp", "ep", "microbatches", "seq_len"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise CollsimError(f"{name.replace('_', '-')}: {value}; expected an integer >= 1 (or leave it out for the default)")
        for name in ("micro_batch", "bucket"):
            if getattr(self, name) < 1:
                raise CollsimError(f"{name.replace('_', '-')}: {getattr(self, name)}; expected an integer >= 1")
        if self.trace_ranks < 0:
            raise CollsimError(f"trace-ranks: {self.trace_ranks}; expected an integer >= 1")
        check_case_timing(self)

    def run(self) -> StepResult:
        return StepResult(evaluate(self))


def _one_of(field: str, value: str, accepted) -> None:
    if value not in accepted:
        raise CollsimError(f"{field}: {value!r}; expected one of {', '.join(accepted)}")


@dataclass(frozen=True)
class StepResult(Result):
    """One row of the what-if table (simulator/program/whatif.py evaluate)."""

    row: dict[str, Any]

    def data(self) -> dict[str, Any]:
        return dict(self.row)

    def text(self) -> str:
        r = self.row
        return (f"{r['label']}: {r['scenario']} {r['model']} on {r['gpus']} {r['gpu']}: step {r['step_s'] * 1e3:.3f} ms, "
                f"compute {r['compute_s'] * 1e3:.3f} ms, exposed communication {r['exposed_s'] * 1e3:.3f} ms")
