"""A program of collectives run on the engine: step time, overlap, rank 0's calls and the critical path
(`collsim run-program FILE`). The program is read, and its machine built, when the request runs (as lint-program's)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from simulator.engine import EngineOptions
from simulator.errors import CollsimError
from simulator.program import load_program
from simulator.program.loader import MAX_WORK
from simulator.program.nccl_timing import MEASURED, TIMINGS
from simulator.program.run import MODES, ProgramResult, run_program
from simulator.program.whatif import calls_timed
from simulator.render import table
from simulator.topology import Topology, ideal, parse_topology
from simulator.topology.spec import larger_preset
from simulator.units import format_time, parse_bandwidth, parse_time

from .limits import Footprint, Limits
from .request import OutputFile, Request, Result


def program_machine(spec: str | None, world: int, alpha: str | None = None, bandwidth: str | None = None) -> Topology:
    """The topology of a run (default ideal:P, 2us and 25GB/s per link), with alpha/bandwidth applied to every link."""
    topo = parse_topology(spec) if spec else ideal(world, 2e-6, 25e9)
    lat = parse_time(alpha, "alpha") if alpha else None
    bw = parse_bandwidth(bandwidth) if bandwidth else None
    if lat is not None or bw is not None:
        topo = topo.with_links(lat, bw)
    larger = larger_preset(spec, world) if spec else None
    topo.check_ranks(world, "topology", f"a topology of at least {world} devices for the program's {world} ranks"
                     + (f", such as {larger}" if larger else ""))
    return topo


@dataclass(frozen=True)
class RunProgramRequest(Request):
    """`path`: the program (.yaml, .yml or .json; `max_work` bounds what is read); `topology` a SPEC (None: ideal:P);
    `alpha`/`bandwidth` set every link's; `algorithms` (op, name) pairs for every call of an op (default ring);
    `gpus_per_node` for hierarchical groups; `ports`, `gamma` (seconds per byte) and `contention` the engine's;
    `mode` auto/exact/isolated; `timing` links, nccl or measured; `trace` a Chrome trace to write; `calls` rank 0's
    calls to list."""

    path: str
    max_work: int = MAX_WORK
    topology: str | None = None
    alpha: str | None = None
    bandwidth: str | None = None
    algorithms: tuple[tuple[str, str], ...] = ()
    gpus_per_node: int | None = None
    ports: int = 1
    gamma: float | str = 0.0
    contention: bool = True
    mode: str = "auto"
    timing: str = "links"
    trace: str | None = None
    calls: int = 12
    limits: Limits = Limits()  # transfers and memory the request may take
    options: EngineOptions = field(init=False, repr=False, compare=False)

    def check(self) -> None:
        Footprint("run-program", topology=self.topology).bound(self.limits)
        if self.calls < 0:
            raise CollsimError(f"calls: {self.calls}; expected an integer >= 0 (calls of rank 0 to list, 0 = none)")
        for name, value, accepted in (("mode", self.mode, MODES), ("timing", self.timing, (*TIMINGS, MEASURED))):
            if value not in accepted:
                raise CollsimError(f"{name}: {value!r}; expected one of {', '.join(accepted)}")
        set_links = [(name, value) for name, value in (("alpha", self.alpha), ("bandwidth", self.bandwidth)) if value]
        if self.timing == "nccl" and set_links:
            name, value = set_links[0]
            raise CollsimError(f"{name}: {value!r} with timing 'nccl': NCCL's model knows only the preset's own links; "
                               f"expected no --{name}, or timing links")
        object.__setattr__(self, "options", self._options())

    def _options(self) -> EngineOptions:
        if self.ports < 0:
            raise CollsimError(f"ports: {self.ports}; expected an integer >= 1, or 0 for unlimited")
        try:
            gamma = float(self.gamma)
        except ValueError:
            raise CollsimError(f"gamma: {self.gamma!r} is not a number; expected seconds per byte such as 1e-11") from None
        options = EngineOptions(gamma=gamma, ports=self.ports, contention=self.contention)
        options.check(1, ideal(1, 0.0, 1.0))
        return options

    def run(self) -> RunProgramResult:
        """Read the program, build its machine and run it (simulator.program.run.ProgramDeadlock if it cannot finish)."""
        program = load_program(self.path, self.max_work)
        topology = program_machine(self.topology, program.world, self.alpha, self.bandwidth)
        result = run_program(program, topology, self.options, dict(self.algorithms), self.gpus_per_node,
                             mode=self.mode, timing=self.timing)
        return RunProgramResult(self, topology.name, result)


def _timed_note(totals: dict) -> str:
    """How the calls were timed, for the header line (nothing for links)."""
    if totals["timing"] == "nccl":
        return f"; calls timed {calls_timed(totals)} (NCCL: as collsim predict times them)"
    if totals["timing"] == MEASURED:
        timed = totals["timed"]
        rest = sum(timed.values()) - timed.get(MEASURED, 0)
        return f"; calls timed: {timed.get(MEASURED, 0)} at their measured time, {rest} on the links"
    return ""


@dataclass(frozen=True)
class RunProgramResult(Result):
    """The run of the program on the machine named `topology`."""

    request: RunProgramRequest
    topology: str
    result: ProgramResult = field(repr=False)

    def data(self) -> dict[str, Any]:
        return {"file": self.request.path, "topology": self.topology, "ok": True, **self.result.summary()}

    def files(self) -> list[OutputFile]:
        trace = self.request.trace
        return [OutputFile(trace, "Chrome trace", self.result.to_chrome, said=f"# wrote {trace}")] if trace else []

    def text(self) -> str:
        """The totals, rank 0's first calls and the critical path."""
        result, t = self.result, self.result.totals()
        ranks = result.program.meta.get("represents", result.program.world)  # a symmetric run runs rank 0 for all
        lines = [f"# {self.request.path}: {ranks} ranks on {self.topology}; {t['mode']} run, {t['transfers']:,} transfers, "
                 f"{t['events']:,} events" + _timed_note(t),
                 table(["step", "compute", "communication", "exposed", "rank"],
                       [[format_time(t["step_s"]), format_time(t["compute_s"]), format_time(t["comm_s"]),
                         format_time(t["exposed_s"]), t["rank"]]])]
        rows = [[o["label"], o["algorithm"] or "", format_time(o["start"]), format_time(o["end"]),
                 format_time(o["end"] - o["start"])]
                for o in result.collectives() if o["rank"] == 0 and o["end"] is not None][:max(self.request.calls, 0)]
        if rows:
            lines += ["# rank 0's calls", table(["call", "algorithm", "start", "end", "time"], rows)]
        return "\n".join(lines + self._critical_path())

    def _critical_path(self) -> list[str]:
        path = self.result.critical_path()
        if not path:
            return []
        comp = sum(x["end_s"] - x["start_s"] for x in path if x["kind"] == "compute")
        comm = sum(x["end_s"] - x["start_s"] for x in path if x["kind"] != "compute")
        return [f"# critical path: {len(path)} segments, {format_time(comp)} of compute, {format_time(comm)} of "
                f"communication; the last {min(len(path), 8)}:",
                table(["what", "kind", "from", "to", "links"],
                      [[s["what"], s["kind"], format_time(s["start_s"]), format_time(s["end_s"]),
                        ", ".join(s.get("links", []))[:60]] for s in path[-8:]])]
