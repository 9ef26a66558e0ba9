"""A program of collectives (imported from a trace, or written by hand) on other machines: `collsim whatif --program
FILE --machines A,B`. Collectives are timed on each machine (links or NCCL); compute spans are scaled by one stated
rule: a factor given (--compute-scale), or the ratio of the GPUs' peak FLOP rates (simulator/program/presets.py GPUS:
the GPU the program ran on, --from-gpu or the program's `gpu:`, over each machine's)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from simulator.engine import EngineOptions
from simulator.errors import CollsimError
from simulator.program import load_program
from simulator.program.model import COMPUTE, Program
from simulator.program.nccl_timing import TIMINGS
from simulator.program.presets import GPUS, get_gpu
from simulator.program.run import MODES, run_program
from simulator.program.whatif import gpu_for
from simulator.render import table
from simulator.topology.spec import check_spec_name
from simulator.units import format_time

from .request import Request, Result
from .run_program import program_machine


def parse_scale(value: float | str | None) -> float | None:
    """--compute-scale: None, or a factor > 0 (a number or its text); else one line naming it."""
    if value is None:
        return None
    try:
        scale = float(value) if not isinstance(value, bool) else math.nan
    except ValueError:
        scale = math.nan
    if not (math.isfinite(scale) and scale > 0):
        raise CollsimError(f"compute-scale: {value!r}; expected a factor > 0 for every compute span, e.g. 0.5 for "
                           "compute twice as fast (or no --compute-scale: the GPUs' FLOP-rate ratio)")
    return scale


def scaled_program(program: Program, factor: float) -> Program:
    """The program with every compute span's duration multiplied by `factor` (collectives unchanged)."""
    ranks = {r: [replace(op, seconds=op.seconds * factor) if op.op == COMPUTE and op.seconds is not None else op
                 for op in ops] for r, ops in program.ranks.items()}
    return replace(program, ranks=ranks)


@dataclass(frozen=True)
class ProgramWhatifRequest(Request):
    """`path`: the program; `machines`: topology SPECs; `compute_scale`: a factor for every machine (None: the FLOP
    rule); `from_gpu`: the GPU the program's compute spans were measured on (None: the program's `gpu:`); `gpu`: the
    machines' GPU (None: each preset's); `timing`: links or nccl; `mode`: the engine's."""

    path: str
    machines: tuple[str, ...]
    compute_scale: float | str | None = None
    from_gpu: str | None = None
    gpu: str | None = None
    timing: str = "links"
    mode: str = "auto"

    def check(self) -> None:
        for machine in self.machines:
            check_spec_name(machine)
        for name, value, accepted in (("mode", self.mode, MODES), ("timing", self.timing, TIMINGS)):
            if value not in accepted:
                raise CollsimError(f"{name}: {value!r}; expected one of {', '.join(accepted)}")
        parse_scale(self.compute_scale)
        for gpu in (self.from_gpu, self.gpu):
            if gpu is not None:
                get_gpu(gpu)

    def _rule(self, program: Program, machine: str) -> tuple[float, str, str]:
        """(factor, rule, machine's GPU) for one machine."""
        scale = parse_scale(self.compute_scale)
        target = gpu_for(machine, self.gpu)
        if scale is not None:
            return scale, f"--compute-scale {scale:g}", target
        source = self.from_gpu or program.gpu
        if source is None:
            raise CollsimError(f"from-gpu: none given and {self.path} names no gpu; expected --from-gpu "
                               f"({', '.join(GPUS)}), the GPU the program ran on, or --compute-scale X")
        src, dst = get_gpu(source), get_gpu(target)
        return (src.peak_flops / dst.peak_flops, f"FLOP-rate ratio {src.name} {src.peak_flops / 1e12:g} / "
                f"{dst.name} {dst.peak_flops / 1e12:g} TFLOP/s", target)

    def run(self) -> ProgramWhatifResult:
        program = load_program(self.path)
        rows = []
        for machine in self.machines:
            factor, rule, gpu = self._rule(program, machine)
            topology = program_machine(machine, program.world)
            result = run_program(scaled_program(program, factor), topology, EngineOptions(), mode=self.mode,
                                 timing=self.timing)
            t = result.totals()
            rows.append({"machine": machine, "gpu": gpu, "compute_factor": factor, "rule": rule,
                         "step_s": t["step_s"], "compute_s": t["compute_s"], "comm_s": t["comm_s"],
                         "exposed_s": t["exposed_s"]})
        return ProgramWhatifResult(self, program.world, rows)


@dataclass(frozen=True)
class ProgramWhatifResult(Result):
    request: ProgramWhatifRequest
    world: int
    rows: list[dict]

    def text(self) -> str:
        head = (f"# {self.request.path}: {self.world} ranks on {len(self.rows)} machine(s); collectives timed "
                f"{self.request.timing}; compute spans x the factor of each row's rule")
        body = table(["machine", "gpu", "compute x", "rule", "step", "compute", "communication", "exposed"],
                     [[r["machine"], r["gpu"], f"{r['compute_factor']:.4g}", r["rule"], format_time(r["step_s"]),
                       format_time(r["compute_s"]), format_time(r["comm_s"]), format_time(r["exposed_s"])]
                      for r in self.rows], "llrlrrrr")
        return head + "\n" + body

    def data(self) -> dict[str, Any]:
        return {"program": self.request.path, "world": self.world, "timing": self.request.timing, "machines": self.rows}
