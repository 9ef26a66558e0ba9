"""PyTorch profiler traces of a real run -> a program of collectives: `collsim import-trace FILE... --out p.yaml`.

One trace per rank (simulator/traces/kineto.py reads them); the program (simulator/traces/program.py) holds each
rank's step as compute spans on `main` and its collective calls on `comm`, with their groups, sizes, order and
measured times, for `collsim run-program` (`--timing measured` replays the calls as they ran; a preset machine with
`--topology` times them there instead). What could not be mapped is listed, never dropped silently."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from simulator.errors import CollsimError
from simulator.program.loader import dump_program, program_from_dict
from simulator.render import table
from simulator.traces.chakra_io import is_chakra
from simulator.traces.kineto import read_trace
from simulator.traces.program import Imported, Survey, build, check_ranks, survey
from simulator.units import format_size, format_time

from .chakra import import_chakra
from .request import OutputFile, Request, Result

MAX_FILES = 4096  # ranks' traces in one import
OUT_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class ImportTraceRequest(Request):
    """`files`: one Kineto JSON trace per rank (.json or .json.gz); `step`: which ProfilerStep span (0 = the first);
    `compute_scale`: every compute span x this factor (calls keep their measured times); `out`: the program file.
    Chakra execution traces (<prefix>.<rank>.et, gzip or not) instead: collsim/chakra.py, `comm_groups` ASTRA-sim's
    comm-group file naming their process groups' ranks."""

    files: tuple[str, ...]
    out: str | None = None
    step: int = 0
    compute_scale: float = 1.0
    comm_groups: str | None = None

    def check(self) -> None:
        if not self.files:
            raise CollsimError("files: none given; expected one trace file per rank (rank0.json.gz rank1.json.gz ...)")
        if len(self.files) > MAX_FILES:
            raise CollsimError(f"files: {len(self.files):,} traces; expected at most {MAX_FILES:,} (one per rank)")
        if isinstance(self.step, bool) or not isinstance(self.step, int) or self.step < 0:
            raise CollsimError(f"step: {self.step!r}; expected an integer >= 0 (0 = the first ProfilerStep span)")
        scale = self.compute_scale
        if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not (math.isfinite(scale) and scale > 0):
            raise CollsimError(f"compute-scale: {scale!r}; expected a factor > 0, e.g. 0.01 for compute 100 times faster")
        if self.out is not None and not self.out.lower().endswith(OUT_SUFFIXES):
            raise CollsimError(f"out: {self.out!r}; expected a program file name ending in {', '.join(OUT_SUFFIXES)}")
        self._check_format()

    def _check_format(self) -> None:
        """All traces PyTorch profiler JSON, or all Chakra (.et); what applies to one kind only is refused for the other."""
        chakra = [f for f in self.files if is_chakra(f)]
        if chakra and len(chakra) < len(self.files):
            other = next(f for f in self.files if not is_chakra(f))
            raise CollsimError(f"files: {chakra[0]!r} is a Chakra trace but {other!r} is not; expected one kind of trace "
                               "for every rank (all .et, or all PyTorch profiler .json/.json.gz)")
        if chakra and self.step != 0:
            raise CollsimError(f"step: {self.step}; Chakra traces hold one step, expected no --step with .et files")
        if not chakra and self.comm_groups is not None:
            raise CollsimError(f"comm-groups: {self.comm_groups!r}; ASTRA-sim's comm-group file names the process groups "
                               "of Chakra traces; expected .et files with it (PyTorch traces name their groups)")

    def run(self) -> Result:
        if is_chakra(self.files[0]):
            return import_chakra(self.files, self.out, self.comm_groups, float(self.compute_scale))
        traces = [read_trace(f, self.step) for f in self.files]
        if self.out is None and check_ranks(traces, partial=True):
            return TraceSurveyResult(self, survey(traces))
        imported = build(traces, float(self.compute_scale))
        program = program_from_dict(imported.program, source=self.out or "imported program")  # the loader's checks
        return ImportTraceResult(self, imported, dump_program(program, None) if self.out is None or
                                 not self.out.lower().endswith(".json") else None, program)


@dataclass(frozen=True)
class ImportTraceResult(Result):
    request: ImportTraceRequest
    imported: Imported
    yaml_text: str | None
    program: Any

    def text(self) -> str:
        imp, req = self.imported, self.request
        spans = ", ".join(f"rank {r} {format_time(s)}" for r, s in sorted(imp.measured_step_s.items()))
        late = ", ".join(f"rank {r} {format_time(s)}" for r, s in sorted(imp.skew_s.items()) if s > 0)
        lines = [f"# {len(req.files)} trace(s), world {imp.program['world']}: {len(imp.calls)} calls on rank 0's step; "
                 f"measured step {format_time(imp.step_s)} (first start to last end; each rank's span: {spans}"
                 + (f"; late starts: {late}" if late else "") + ")"]
        if imp.calls:
            lines.append(table(["call", "op", "group", "size", "dtype", "measured", "ran as"],
                               [[c["index"], c["op"], c["group"], format_size(c["bytes"]), c["dtype"],
                                 format_time(c["time_s"]) if c["time_s"] is not None else "-", c["ran"] or "-"]
                                for c in imp.calls], "rlllrrl"))
        for u in imp.unmapped:
            lines.append(f"# not mapped: rank {u['rank']}: {u['count']} x {u['name']}: {u['why']}")
        lines += [f"# note: {n}" for n in imp.notes]
        if not imp.unmapped:
            lines.append("# every collective of the step is in the program")
        return "\n".join(lines)

    def data(self) -> dict[str, Any]:
        imp = self.imported
        return {"files": list(self.request.files), "out": self.request.out, "world": imp.program["world"],
                "step_s": imp.step_s, "rank_step_s": {str(r): s for r, s in sorted(imp.measured_step_s.items())},
                "late_start_s": {str(r): s for r, s in sorted(imp.skew_s.items())}, "calls": imp.calls,
                "unmapped": imp.unmapped, "notes": imp.notes, "compute_scale": self.request.compute_scale}

    def files(self) -> list[OutputFile]:
        out = self.request.out
        if out is None:
            return []
        content = self.yaml_text if self.yaml_text is not None else (lambda path: dump_program(self.program, path))
        return [OutputFile(out, "program", content, f"collsim run-program {out} --timing measured")]


def _members(members: list[int], world: int) -> str:
    """A group's ranks, short: 'world', '0-7' or '0,2,4'."""
    if len(members) == world:
        return "world"
    if members == list(range(members[0], members[0] + len(members))):
        return f"{members[0]}-{members[-1]}"
    return ",".join(map(str, members))


@dataclass(frozen=True)
class TraceSurveyResult(Result):
    """Traces of some ranks of a world (no --out): what each rank's step holds; no program is built."""

    request: ImportTraceRequest
    survey: Survey

    def text(self) -> str:
        sv = self.survey
        missing = ", ".join(map(str, sv.missing[:8])) + (", ..." if len(sv.missing) > 8 else "")
        lines = [f"# {len(self.request.files)} trace(s) of a world of {sv.world}, missing rank(s) {missing}: no program "
                 f"(a collective needs all its members' traces); {len(sv.calls)} call(s) map"]
        if sv.calls:
            lines.append(table(["rank", "call", "op", "group", "size", "dtype", "issued as"],
                               [[c["rank"], c["index"], c["op"], _members(c["members"], sv.world), format_size(c["bytes"]),
                                 c["dtype"], c["issued"]] for c in sv.calls], "rrllrll"))
        lines += [f"# not mapped: rank {u['rank']}: {u['count']} x {u['name']}: {u['why']}" for u in sv.unmapped]
        return "\n".join(lines + [f"# note: {n}" for n in sv.notes])

    def data(self) -> dict[str, Any]:
        sv = self.survey
        return {"files": list(self.request.files), "world": sv.world, "missing": sv.missing, "calls": sv.calls,
                "unmapped": sv.unmapped, "notes": sv.notes, "program": None}
