"""One training step (DDP, FSDP, TP, PP, EP, hybrid) of a model preset generated as an editable program of collectives:
`collsim scenario`.

Limits: simulator/program/scenarios.py build_spec refuses a layout, batch or model outside its plausible bounds
(scenarios.BOUNDS) from the numbers alone, before any operation is generated."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from simulator.errors import CollsimError
from simulator.program import Program
from simulator.program.loader import MAX_WORK, program_work
from simulator.program.scenarios import DDP_BUCKET, StepSpec, build_spec, generate
from simulator.render import table
from simulator.units import format_size, format_time, parse_size

from .request import OutputFile, Request, Result

PROGRAM_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class ScenarioRequest(Request):
    """`scenario` of `model` on `gpus` GPUs of `gpu` (`gpus_per_node` a node), with the parallel degrees (None: the
    scenario's default), FSDP/SP, MFU and batch; `bucket` the DDP gradient bucket (text or bytes); `out` a .yaml, .yml
    or .json path to write the program to."""

    scenario: str
    gpus: int
    model: str = "llama2-7b"
    gpu: str = "h100"
    gpus_per_node: int = 8
    tp: int | None = None
    pp: int | None = None
    ep: int | None = None
    fsdp: bool = False
    sp: bool = False
    mfu: float = 0.4
    micro_batch: int = 1
    microbatches: int | None = None
    seq_len: int | None = None
    bucket: str | int = format_size(DDP_BUCKET)
    out: str | None = None
    spec: StepSpec = field(init=False, repr=False, compare=False)

    def check(self) -> None:
        bucket = self.bucket if isinstance(self.bucket, int) else parse_size(self.bucket, "bucket")
        spec = build_spec(self.scenario, self.model, self.gpu, self.gpus, self.gpus_per_node, self.tp, self.pp, self.ep,
                          self.fsdp, self.sp, self.mfu, self.micro_batch, self.microbatches, self.seq_len, bucket)
        if self.out and not self.out.lower().endswith(PROGRAM_SUFFIXES):
            raise CollsimError(f"out: {self.out!r}; expected a .yaml, .yml or .json path")
        object.__setattr__(self, "spec", spec)

    def run(self) -> ScenarioResult:
        return ScenarioResult(self, generate(self.spec))


@dataclass(frozen=True)
class ScenarioResult(Result):
    """The program generated, summarised by rank 0's operations."""

    request: ScenarioRequest
    program: Program = field(repr=False)

    def files(self) -> list[OutputFile]:
        from simulator.program import dump_program

        out = self.request.out
        if not out:
            return []
        work = program_work(self.program)
        said = (f"# wrote {out}; check it with: collsim lint-program {out}" if work <= MAX_WORK else
                f"# wrote {out}; {work:,} ranks, group members and operations are over the {MAX_WORK:,} that "
                f"lint-program and run-program read by default; check it with: collsim lint-program {out} "
                f"--max-work {work}")
        return [OutputFile(out, "program", lambda path: dump_program(self.program, path), said=said)]

    def _rank0(self) -> tuple[Counter, float]:
        ops0 = self.program.ops(0)
        return Counter(op.op for op in ops0), sum(op.seconds for op in ops0 if op.op == "compute")

    def data(self) -> dict[str, Any]:
        req, spec = self.request, self.request.spec
        lay = spec.layout
        kinds, compute = self._rank0()
        return {"scenario": req.scenario, "model": spec.model.name, "params": spec.model.params, "gpu": spec.gpu.name,
                "gpus": lay.gpus, "tp": lay.tp, "pp": lay.pp, "dp": lay.dp, "ep": lay.ep, "fsdp": spec.fsdp, "sp": spec.sp,
                "microbatches": spec.microbatches, "groups": len(self.program.groups), "rank0_ops": dict(kinds),
                "rank0_compute_s": compute, "out": req.out}

    def text(self) -> str:
        spec = self.request.spec
        lay = spec.layout
        kinds, compute = self._rank0()
        return "\n".join([
            f"# {self.request.scenario}: {spec.model.name} ({spec.model.params / 1e9:.2f}B params) on {lay.gpus} x "
            f"{spec.gpu.name}, tp {lay.tp} x pp {lay.pp} x dp {lay.dp}{f' (ep {lay.ep})' if lay.ep > 1 else ''}"
            f"{', FSDP' if spec.fsdp else ''}{', SP' if spec.sp else ''}; {spec.microbatches} micro-batch(es) of "
            f"{spec.micro_batch} x {spec.seq_len} tokens; {len(self.program.groups)} process groups",
            f"# rank 0: {format_time(compute)} of compute at MFU {spec.mfu:g}",
            table(["operation", "count on rank 0"], sorted(kinds.items()))])
