"""An expert-parallel MoE step whose all-to-all sizes come from a routing distribution (simulator/program/moe.py), as an
editable program: `collsim scenario moe`.

Limits: MoeSpec.check refuses a routing, batch or layer count outside its bounds before any operation is generated."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simulator.errors import CollsimError
from simulator.program import Program
from simulator.program.moe import MoeSpec, generate_moe, parse_routing, token_counts
from simulator.program.presets import get_gpu, get_model
from simulator.render import table
from simulator.units import format_time

from .request import OutputFile, Request, Result
from .scenario import PROGRAM_SUFFIXES


@dataclass(frozen=True)
class MoeRequest(Request):
    """`model`'s MoE layers on `gpus` GPUs of `gpu`, expert parallel over all of them (`ep` None or `gpus`), tokens routed
    by `routing` (uniform, zipf:S, or a JSON file of counts); `layers` None: all of the model's; `out` a program path."""

    gpus: int
    model: str = "llama2-7b"
    gpu: str = "h100"
    ep: int | None = None
    mfu: float = 0.4
    micro_batch: int = 1
    seq_len: int | None = None
    routing: str = "uniform"
    layers: int | None = None
    out: str | None = None
    spec: MoeSpec = field(init=False, repr=False, compare=False)

    def check(self) -> None:
        model = get_model(self.model)
        ep = self.ep or self.gpus
        if ep != self.gpus:
            raise CollsimError(f"ep: {ep}; scenario moe runs expert parallel over all {self.gpus} GPUs, expected --ep "
                               f"{self.gpus} or none")
        if self.out and not self.out.lower().endswith(PROGRAM_SUFFIXES):
            raise CollsimError(f"out: {self.out!r}; expected a .yaml, .yml or .json path")
        tokens = self.micro_batch * (self.seq_len or model.seq_len)
        spec = MoeSpec(model, get_gpu(self.gpu), ep, tokens, parse_routing(self.routing, model.experts, ep),
                       self.layers or model.layers, self.mfu)
        spec.check()
        object.__setattr__(self, "spec", spec)

    def run(self) -> MoeResult:
        spec = self.spec
        program = generate_moe(spec)
        expert_s = [sum(op.seconds for op in program.ops(r) if op.name and op.name.startswith("experts"))
                    for r in range(spec.ep)]
        return MoeResult(self, program, token_counts(spec).sum(axis=0), expert_s)


@dataclass(frozen=True)
class MoeResult(Result):
    """The program, the token copies each rank receives and each rank's expert compute (the busiest sets the wait)."""

    request: MoeRequest
    program: Program = field(repr=False)
    received: np.ndarray = field(repr=False)
    expert_s: list[float]

    def files(self) -> list[OutputFile]:
        from simulator.program import dump_program

        out = self.request.out
        if not out:
            return []
        return [OutputFile(out, "program", lambda path: dump_program(self.program, path),
                           said=f"# wrote {out}; run it with: collsim run-program {out} --topology SPEC")]

    def data(self) -> dict[str, Any]:
        spec, busiest = self.request.spec, max(self.expert_s)
        return {"scenario": "moe", "model": spec.model.name, "gpu": spec.gpu.name, "ep": spec.ep, "tokens": spec.tokens,
                "layers": spec.layers, "routing": spec.routing.name, "tokens_to_rank": [int(x) for x in self.received],
                "expert_compute_s": self.expert_s, "wait_s": [busiest - s for s in self.expert_s], "out": self.request.out,
                "rank0_ops": dict(Counter(op.op for op in self.program.ops(0)))}

    def text(self) -> str:
        spec, busiest = self.request.spec, max(self.expert_s)
        model = spec.model
        return "\n".join([
            f"# moe: {model.name} on {spec.ep} x {spec.gpu.name}, expert parallel {spec.ep} ({model.experts // spec.ep} "
            f"expert(s) per rank, top-{model.top_k}), {spec.tokens} tokens per rank, {spec.layers} layer(s), routing "
            f"{spec.routing.name}",
            table(["rank", "token copies in", "expert compute", "waits for the busiest"],
                  [[r, int(self.received[r]), format_time(s), format_time(busiest - s)] for r, s in enumerate(self.expert_s)],
                  "rrrr"),
            "# waits: the busiest rank's expert compute less this rank's (forward and backward), before communication"])
