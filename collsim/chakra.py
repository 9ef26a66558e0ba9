"""Chakra execution traces, the workload format of ASTRA-sim: `collsim import-trace rank.*.et` reads them into a program
(simulator/traces/chakra.py), `collsim export-chakra program.yaml --out-dir DIR` writes a program as one trace per rank
and ASTRA-sim's comm-group file (simulator/traces/chakra_export.py), so a program goes to ASTRA-sim and back."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulator.errors import CollsimError
from simulator.program import Program, check_program, load_program
from simulator.program.loader import MAX_WORK, dump_program, program_from_dict
from simulator.readfile import read_data
from simulator.render import table
from simulator.traces.chakra import ChakraImport, import_traces
from simulator.traces.chakra_export import export_program
from simulator.traces.chakra_io import MAX_NODES, RANK_IN_NAME, rank_of, read_et, write_et

from .request import OutputFile, Request, Result

COMM_GROUP_FILE = "comm_group.json"


def read_comm_groups(path: str | None) -> dict[str, list[int]] | None:
    """ASTRA-sim's --comm-group-configuration file: {"1": [0, 1], ...} (group number -> ranks)."""
    if path is None:
        return None
    data = read_data(path, "comm-groups")
    ok = isinstance(data, dict) and all(isinstance(v, list) and v and all(isinstance(r, int) and not isinstance(r, bool)
                                                                           and r >= 0 for r in v) for v in data.values())
    if not ok:
        raise CollsimError(f"comm-groups: {path}: not a mapping from group number to a list of ranks; expected ASTRA-sim's "
                           'comm-group file, e.g. {"1": [0, 1], "2": [2, 3]}')
    return {str(k): list(v) for k, v in data.items()}


def import_chakra(files: tuple[str, ...], out: str | None, comm_groups: str | None, scale: float) -> ChakraImportResult:
    """The traces (one per rank) as a program, checked by the program loader."""
    named = any(RANK_IN_NAME.search(Path(f).name) for f in files)  # then every file must say its rank
    traces, budget = [], MAX_NODES
    for i, path in enumerate(files):
        trace = read_et(path, rank_of(path, i, named), budget)
        budget -= len(trace.nodes)
        traces.append(trace)
    traces.sort(key=lambda t: t.rank)
    groups = read_comm_groups(comm_groups)
    imported = import_traces(traces, groups, scale)
    _check_group_ranks(groups, imported.program["world"], comm_groups)
    program = program_from_dict(imported.program, source=out or "imported program")
    problems = check_program(program)  # traces of different steps, or ranks swapped, show here
    if problems:
        imported.notes.append(f"{len(problems)} problem(s) of matching or order, the first: {problems[0].kind}: "
                              f"{problems[0].message} (collsim lint-program lists them)")
    return ChakraImportResult(files, out, imported, program)


def _check_group_ranks(groups: dict[str, list[int]] | None, world: int, path: str | None) -> None:
    for name, members in (groups or {}).items():
        bad = next((r for r in members if r >= world), None)
        if bad is not None:
            raise CollsimError(f"comm-groups: {path}: group {name}: rank {bad} is not in a world of {world} (one trace per "
                               f"rank); expected ranks 0..{world - 1}")


@dataclass(frozen=True)
class ChakraImportResult(Result):
    files_in: tuple[str, ...]
    out: str | None
    imported: ChakraImport
    program: Program = field(repr=False)

    def text(self) -> str:
        imp = self.imported
        world = imp.program["world"]
        kinds = sorted({k for c in imp.ops.values() for k in c})
        lines = [f"# {len(self.files_in)} Chakra trace(s), world {world}: {len(self.program.groups)} process group(s) "
                 f"({', '.join(f'{n} {list(m)}' for n, m in self.program.groups.items()) or 'none'})"]
        shown = sorted(imp.ops)[:8]
        lines.append(table(["rank", *kinds], [[r, *[imp.ops[r].get(k, 0) for k in kinds]] for r in shown],
                           "r" * (len(kinds) + 1)))
        if len(imp.ops) > len(shown):
            lines.append(f"# ... {len(imp.ops) - len(shown)} more ranks")
        for u in imp.unmapped:
            lines.append(f"# not mapped: rank {u['rank']}: {u['count']} x {u['name']}: {u['why']}")
        lines += [f"# note: {n}" for n in imp.notes]
        if not imp.unmapped:
            lines.append("# every node of the traces is in the program")
        return "\n".join(lines)

    def data(self) -> dict[str, Any]:
        imp = self.imported
        return {"files": list(self.files_in), "out": self.out, "format": "chakra", "world": imp.program["world"],
                "groups": {n: list(m) for n, m in self.program.groups.items()},
                "operations": {str(r): dict(c) for r, c in imp.ops.items()}, "unmapped": imp.unmapped,
                "notes": imp.notes}

    def files(self) -> list[OutputFile]:
        if self.out is None:
            return []
        text = dump_program(self.program, None) if not self.out.lower().endswith(".json") else \
            (lambda path: dump_program(self.program, path))
        return [OutputFile(self.out, "program", text, f"collsim run-program {self.out}")]


@dataclass(frozen=True)
class ExportChakraRequest(Request):
    """`path`: a program file; `out_dir`: where the traces go (<prefix>.<rank>.et, and comm_group.json); `prefix`: the
    traces' name (default: the program file's stem); `max_work` bounds the program read."""

    path: str
    out_dir: str
    prefix: str | None = None
    max_work: int = MAX_WORK

    def check(self) -> None:
        if isinstance(self.max_work, bool) or not isinstance(self.max_work, int) or self.max_work < 1:
            raise CollsimError(f"max-work: {self.max_work!r}; expected a count >= 1 such as 2000000")
        out = Path(self.out_dir)
        if out.exists() and not out.is_dir():
            raise CollsimError(f"out-dir: {self.out_dir!r} is a file; expected a directory (made when missing)")
        prefix = self.prefix if self.prefix is not None else Path(self.path).stem
        if not prefix or "/" in prefix or prefix.startswith("."):
            raise CollsimError(f"prefix: {prefix!r}; expected a file name without '/' such as 'step' (step.0.et, ...)")

    def run(self) -> ExportChakraResult:
        program = load_program(self.path, self.max_work)
        traces, groups = export_program(program)
        return ExportChakraResult(self, program, traces, groups)


@dataclass(frozen=True)
class ExportChakraResult(Result):
    request: ExportChakraRequest
    program: Program = field(repr=False)
    traces: dict = field(repr=False)
    groups: dict[str, list[int]]

    def _name(self, rank: int) -> str:
        prefix = self.request.prefix if self.request.prefix is not None else Path(self.request.path).stem
        return str(Path(self.request.out_dir) / f"{prefix}.{rank}.et")

    def text(self) -> str:
        nodes = sum(len(m) - 1 for m in self.traces.values())
        return (f"# {self.request.path}: {self.program.world} rank(s), {nodes:,} nodes, {len(self.groups)} process "
                f"group(s) (pg_name {', '.join(f'{k}={n}' for k, n in zip(self.groups, self.program.groups))})")

    def data(self) -> dict[str, Any]:
        return {"program": self.request.path, "out_dir": self.request.out_dir, "traces": [self._name(r) for r in
                self.traces], "comm_groups": self.groups, "pg_names": dict(zip(self.program.groups, self.groups))}

    def files(self) -> list[OutputFile]:
        try:
            Path(self.request.out_dir).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CollsimError(f"out-dir: cannot make {self.request.out_dir!r}: {exc.strerror or exc}; expected a "
                               "directory that can be made and written") from None
        prefix = str(Path(self.request.out_dir) / (self.request.prefix or Path(self.request.path).stem))
        out = [OutputFile(self._name(r), f"Chakra trace of rank {r}", _writer(msgs)) for r, msgs in self.traces.items()]
        out.append(OutputFile(str(Path(self.request.out_dir) / COMM_GROUP_FILE), "ASTRA-sim comm groups",
                              json.dumps(self.groups, indent=1) + "\n",
                              f"collsim import-trace {prefix}.*.et; ASTRA-sim: --workload-configuration={prefix} "
                              f"--comm-group-configuration={Path(self.request.out_dir) / COMM_GROUP_FILE}"))
        return out


def _writer(messages: list):
    return lambda path: write_et(path, messages)
