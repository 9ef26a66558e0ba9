"""MSCCL algorithm XML in and out: a file read as a collsim schedule, checked and simulated (`collsim import-msccl`),
and a registered algorithm written as a file that imports back to the same transfers (`collsim export-msccl`).

Limits: the XML's size is capped where it is read (simulator/formats/msccl.py); an exported schedule is built at
one size, as `collsim check` builds one (the request's Footprint counts its transfers)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from simulator.algorithms import build_schedule
from simulator.collective import Collective
from simulator.engine import simulate
from simulator.errors import CollsimError
from simulator.formats.msccl import PLACEMENTS, check_msccl, export_msccl, import_msccl, read_msccl, roundtrip
from simulator.render import table
from simulator.topology import parse_topology
from simulator.units import format_size, parse_size

from .limits import Footprint, Limits
from .request import OutputFile, Request, Result

PLACEMENT_CHOICES = ("auto",) + PLACEMENTS


def _placement(value: str) -> None:
    if value not in PLACEMENT_CHOICES:
        raise CollsimError(f"placement: {value!r}; expected one of {', '.join(PLACEMENT_CHOICES)}")


@dataclass(frozen=True)
class MscclImportRequest(Request):
    """The MSCCL file at `path` imported at `size` (text; None: the smallest that cuts into its chunks) and `placement`
    ('auto': out-of-place where the file allows it); `check` proves every placement asked on numpy buffers;
    `simulate` times it on `topology` (a SPEC)."""

    path: str
    size: str | None = None
    dtype: str = "float32"
    placement: str = "auto"
    check_data: bool = False
    simulate: bool = False
    topology: str | None = None
    limits: Limits = Limits()  # transfers and memory the request may take
    algo: Any = field(init=False, repr=False, compare=False)  # the file read (formats.msccl.MscclAlgo)
    nbytes: int | None = field(init=False, repr=False, compare=False)

    def check(self) -> None:
        Footprint("import-msccl", topology=self.topology).bound(self.limits)
        if self.simulate and not self.topology:
            raise CollsimError("topology: --simulate needs --topology SPEC, e.g. switch:8")
        _placement(self.placement)
        object.__setattr__(self, "algo", read_msccl(self.path))
        object.__setattr__(self, "nbytes", parse_size(self.size, "size") if self.size else None)

    def run(self) -> MscclImportResult:
        algo, chosen = self.algo, None if self.placement == "auto" else self.placement
        wanted = algo.placements if self.check_data and chosen is None else [chosen or algo.placements[0]]
        imports = [import_msccl(algo, self.nbytes, self.dtype, pl) for pl in wanted]
        checks = [check_msccl(imp) for imp in imports] if self.check_data else []
        topology = parse_topology(self.topology) if self.simulate else None
        sims = [simulate(imp.schedule, topology) for imp in imports] if topology is not None else []
        rows = [_import_row(imp, checks[k] if checks else None, sims[k] if sims else None, self.topology)
                for k, imp in enumerate(imports)]
        return MscclImportResult(self, imports, checks, rows, bool(sims))


def _import_row(imp, check, trace, topology: str | None) -> dict:
    """One placement's summary: size, transfers, depth, and the check's and the simulation's outcome when asked."""
    s = imp.schedule
    row = {"placement": imp.placement, "bytes": s.collective.nbytes, "dtype": s.collective.dtype,
           "chunk_elems": imp.chunk_elems, "transfers": len(s.transfers), "network": imp.network_transfers,
           "local": len(s.transfers) - imp.network_transfers, "depth": s.num_steps,
           "bytes_sent_max": int(s.bytes_sent_per_rank().max()) if s.transfers else 0,
           "folded_copies": imp.folded_copies, "buffered_sends": imp.buffered_sends, "snapshots": imp.snapshots}
    if check is not None:
        row.update(check_ok=check.ok, check=check.message)
    if trace is not None:
        row.update(time_s=trace.time, algbw_GBps=trace.algbw / 1e9, busbw_GBps=trace.busbw / 1e9, topology=topology)
    return row


@dataclass(frozen=True)
class MscclImportResult(Result):
    """Each placement imported, its check (when asked) and its summary row (with the simulation's times)."""

    request: MscclImportRequest
    imports: list
    checks: list
    rows: list[dict]
    simulated: bool

    @property
    def status(self) -> int:
        return 1 if any(not c.ok for c in self.checks) else 0

    def data(self) -> dict[str, Any]:
        algo = self.request.algo
        return {"file": self.request.path, "name": algo.name, "op": algo.op, "coll": algo.coll, "ngpus": algo.ngpus,
                "proto": algo.proto, "nchannels": algo.nchannels, "nchunksperloop": algo.nchunksperloop,
                "placements": algo.placements, "min_bytes": algo.min_bytes, "max_bytes": algo.max_bytes,
                "steps": algo.step_count(), "passed": None if not self.checks else not self.status, "results": self.rows}

    def text(self) -> str:
        """The file's header line, one table row per placement, what the import had to fold or buffer, the checks."""
        algo, rows = self.request.algo, self.rows
        lines = [f"# {algo.source}: {algo.name!r}, {algo.coll} on {algo.ngpus} gpus, proto {algo.proto}, {algo.nchannels} "
                 f"channels, {algo.nchunksperloop} chunks per loop, {algo.step_count()} steps, declares "
                 f"{' and '.join(algo.placements)}"]
        headers = ["placement", "size", "chunk(el)", "transfers", "network", "local", "depth", "max sent/rank"]
        body = [[r["placement"], format_size(r["bytes"]), r["chunk_elems"], r["transfers"], r["network"], r["local"],
                 r["depth"], format_size(r["bytes_sent_max"])] for r in rows]
        if self.simulated:
            headers += ["time(us)", "algbw", "busbw"]
            for line, r in zip(body, rows):
                line += [r["time_s"] * 1e6, r["algbw_GBps"], r["busbw_GBps"]]
        lines.append(table(headers, body, align="lrrrrrrr" + "rrr" * self.simulated))
        lines += [note for note in map(_fold_note, self.imports) if note]
        if self.simulated:
            lines.append(f"simulated on {self.request.topology}: bandwidths in GB/s (nccl-tests definitions)")
        lines += [("PASS " if c.ok else "FAIL ") + c.message for c in self.checks]
        return "\n".join(lines)


def _fold_note(imp) -> str:
    """What importing one placement had to fold or buffer ('' when nothing)."""
    notes = []
    if imp.folded_copies:
        notes.append(f"{imp.folded_copies} local copies only rebuild the in-place view collsim's output starts with "
                     f"and were folded into it")
    if imp.buffered_sends:
        notes.append(f"{imp.buffered_sends} sends had to wait in their connection buffer"
                     + (f", {imp.snapshots} of them kept as snapshots in extra scratch" if imp.snapshots else ""))
    return f"{imp.placement}: " + "; ".join(notes) if notes else ""


@dataclass(frozen=True)
class MscclExportRequest(Request):
    """`algo` for `op` on `ranks` ranks (its parameters `params` as (name, value) pairs), built at `size` (text; None:
    24 x ranks^2 x chunks elements, which cuts evenly) and written as MSCCL XML with `placement`, `proto` and `name`;
    to `output` when given."""

    op: str
    algo: str
    ranks: int
    size: str | None = None
    dtype: str = "float32"
    root: int = 0
    params: tuple[tuple[str, Any], ...] = ()
    placement: str = "auto"
    proto: str = "Simple"
    name: str | None = None
    output: str | None = None
    limits: Limits = Limits()  # transfers and memory the request may take
    collective: Collective = field(init=False, repr=False, compare=False)

    def check(self) -> None:
        Footprint("export-msccl", self.op, self.algo, ranks=self.ranks, params=self.params).bound(self.limits)
        chunks = dict(self.params).get("chunks") or 1
        probe = Collective(self.op, self.ranks, 0, self.dtype, self.root)
        size = parse_size(self.size, "size") if self.size else 24 * self.ranks * self.ranks * chunks * probe.elem_size
        object.__setattr__(self, "collective", Collective(self.op, self.ranks, size, self.dtype, self.root))
        _placement(self.placement)
        if self.proto not in ("Simple", "LL", "LL128"):
            raise CollsimError(f"proto: {self.proto!r}; expected one of Simple, LL, LL128")

    def run(self) -> MscclExportResult:
        schedule = build_schedule(self.collective, self.algo, **dict(self.params))
        exported = export_msccl(schedule, self.placement, self.proto, self.name)
        roundtrip(schedule, exported)
        return MscclExportResult(self, exported)


@dataclass(frozen=True)
class MscclExportResult(Result):
    """The file exported (its XML, chunking and what it had to drop or warn about)."""

    request: MscclExportRequest
    exported: Any

    def lines(self) -> list[str]:
        """What was written and any warnings: on stdout once the file is in place, or on stderr beside printed XML."""
        req, coll, exp = self.request, self.request.collective, self.exported
        return ([f"{'wrote ' + req.output if req.output else 'exported'}: {req.algo} {coll.describe()}, {exp.placement}, "
                 f"{exp.nchunksperloop} chunks per loop of {exp.chunk_elems * coll.elem_size} B at this size, "
                 f"{exp.threadblocks} threadblocks, {exp.steps} steps; importing it gives back the same transfers"]
                + [f"warning: {w} (collsim reads the file regardless)" for w in exp.warnings])

    def files(self) -> list[OutputFile]:
        out = self.request.output
        return [OutputFile(out, "MSCCL XML", self.exported.xml, said="\n".join(self.lines()))] if out else []

    def data(self) -> dict[str, Any]:
        req, coll, exp = self.request, self.request.collective, self.exported
        summary = {"op": coll.op, "algorithm": req.algo, "ranks": coll.ranks, "bytes": coll.nbytes, "dtype": coll.dtype,
                   "placement": exp.placement, "nchunksperloop": exp.nchunksperloop,
                   "chunk_bytes": exp.chunk_elems * coll.elem_size, "threadblocks": exp.threadblocks,
                   "steps": exp.steps, "nops": exp.nops, "dropped_deps": exp.dropped_deps,
                   "warnings": exp.warnings, "file": req.output}
        return summary if req.output else {**summary, "xml": exp.xml}

    def text(self) -> str:
        """The XML when no file was asked (less its last newline, which printing adds back); else nothing."""
        xml = self.exported.xml
        return "" if self.request.output else xml[:-1] if xml.endswith("\n") else xml
