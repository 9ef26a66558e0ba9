"""Several jobs on one machine: `collsim colocate --topology SPEC a.yaml@0-15 b.yaml@16-31`.

Each job is a program (docs/programs.md) and the devices its ranks run on, in order. The jobs run together on the
engine as one program (simulator/program/colocate.py; exact mode, so their collectives share the machine's links) and
each runs alone on the same devices; the result gives each job's step alone and together, its slowdown
(together / alone - 1) and the links where the jobs meet, with the bytes each job put on them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulator.errors import CollsimError
from simulator.program import load_program
from simulator.program.colocate import Colocated, Job, colocate
from simulator.program.loader import MAX_WORK, program_work
from simulator.program.run import AUTO_LIMIT, estimate_transfers
from simulator.readfile import read_data
from simulator.render import table
from simulator.topology import parse_topology
from simulator.topology.model import Topology
from simulator.units import format_time

from .limits import Footprint, Limits
from .request import Request, Result

MAX_JOBS = 64
MAX_TRANSFERS = AUTO_LIMIT  # estimated transfers of the jobs together: the exact runs run-program's auto mode allows
JOB_FORM = "PROGRAM@DEVICES such as a.yaml@0-15 or b.yaml@16,17,18,19"
_RANGE = re.compile(r"\s*(\d{1,9})\s*(?:-\s*(\d{1,9})\s*)?")


def parse_devices(text: str, devices: int, where: str) -> tuple[int, ...]:
    """'0-15', '0,2,4' or '0-3,8-11' as device numbers, each checked against the machine's `devices` before any
    range is expanded, each at most once."""
    spans = []
    for part in text.split(","):
        m = _RANGE.fullmatch(part)
        lo, hi = (int(m.group(1)), int(m.group(2) or m.group(1))) if m else (0, -1)
        if hi < lo:
            raise CollsimError(f"{where}: cannot read devices {text!r}; expected a device, a range such as 0-15 or a "
                               "list such as 0,2,4")
        if hi >= devices:
            raise CollsimError(f"{where}: device {hi} is not on the machine; expected devices 0..{devices - 1}")
        spans.append(range(lo, hi + 1))
    out = tuple(d for span in spans for d in span)
    if len(set(out)) != len(out):
        seen: set[int] = set()
        dup = next(d for d in out if d in seen or seen.add(d))
        raise CollsimError(f"{where}: device {dup} is listed twice; expected each device once")
    return out


JOBS_FIELDS = ("jobs", "name", "description")
JOB_FIELDS = ("program", "devices")


def jobs_from_file(path: str) -> tuple[str, ...]:
    """A jobs file's `jobs:` as PROGRAM@DEVICES strings (the command line's form), programs relative to the file."""
    data = read_data(path, "jobs")
    if not isinstance(data, dict) or "jobs" not in data:
        raise CollsimError(f"jobs: {path}: no jobs section; expected a mapping with jobs: [{{program: a.yaml, devices: 0-15}}, "
                           "...]")
    unknown = [k for k in data if k not in JOBS_FIELDS]
    if unknown:
        raise CollsimError(f"jobs: {path}: unknown field {unknown[0]!r}; expected {', '.join(JOBS_FIELDS)}")
    items = data["jobs"]
    if not isinstance(items, list) or not 2 <= len(items) <= MAX_JOBS:
        raise CollsimError(f"jobs: {path}: jobs: {_short(items)}; expected a list of 2 to {MAX_JOBS} jobs, each "
                           "{program: FILE, devices: 0-15}")
    return tuple(_job_of(item, k, path) for k, item in enumerate(items))


def _job_of(item: Any, k: int, path: str) -> str:
    where = f"jobs: {path}: jobs[{k}]"
    if not isinstance(item, dict) or sorted(item) != sorted(JOB_FIELDS):
        raise CollsimError(f"{where}: {_short(item)}; expected a mapping of exactly program and devices, e.g. "
                           "{program: a.yaml, devices: 0-15}")
    program, devices = item["program"], item["devices"]
    if not isinstance(program, str) or not program.strip():
        raise CollsimError(f"{where}.program: {_short(program)}; expected a program file name (.yaml, .yml or .json)")
    if isinstance(devices, list) and devices and all(isinstance(d, int) and not isinstance(d, bool) for d in devices):
        devices = ",".join(map(str, devices))
    elif isinstance(devices, int) and not isinstance(devices, bool):
        devices = str(devices)
    if not isinstance(devices, str) or not devices.strip():
        raise CollsimError(f"{where}.devices: {_short(devices)}; expected devices such as 0-15, 0,2,4 or [0, 1, 2, 3]")
    return f"{Path(path).parent / program}@{devices}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(frozen=True)
class ColocateRequest(Request):
    """`jobs`: PROGRAM@DEVICES each (rank r of the program on the r-th device listed); `topology`: the machine;
    `algorithms`: (op, name) pairs for every call of an op (default ring); `max_work` bounds the programs read together
    (ranks + group members + operations); `top`: shared links listed."""

    topology: str
    jobs: tuple[str, ...]
    algorithms: tuple[tuple[str, str], ...] = ()
    max_work: int = MAX_WORK
    top: int = 8
    limits: Limits = Limits()  # transfers and memory the request may take
    machine: Topology = field(init=False, repr=False, compare=False)
    placements: tuple[tuple[str, tuple[int, ...]], ...] = field(init=False, repr=False, compare=False)

    def check(self) -> None:
        Footprint("colocate", topology=self.topology).bound(self.limits)
        for name, value, low in (("max-work", self.max_work, 1), ("top", self.top, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise CollsimError(f"{name}: {value!r}; expected an integer >= {low}")
        if not 2 <= len(self.jobs) <= MAX_JOBS:
            raise CollsimError(f"jobs: {len(self.jobs)} given; expected 2 to {MAX_JOBS} jobs, each {JOB_FORM}")
        machine = parse_topology(self.topology)
        object.__setattr__(self, "machine", machine)
        object.__setattr__(self, "placements", self._placements(machine.num_devices))

    def _placements(self, devices: int) -> tuple[tuple[str, tuple[int, ...]], ...]:
        """(program file, devices) per job; a device given to two jobs is refused."""
        out, owner = [], {}
        for job in self.jobs:
            path, at, spec = str(job).rpartition("@")
            if not at or not path.strip() or not spec.strip():
                raise CollsimError(f"job: {job!r}; expected {JOB_FORM}")
            placed = parse_devices(spec, devices, f"job {job}")
            for d in placed:
                if d in owner:
                    raise CollsimError(f"job {job}: device {d} is also job {owner[d]}'s; expected each device in one job")
                owner[d] = job
            out.append((path, placed))
        return tuple(out)

    def run(self) -> ColocateResult:
        jobs, work = [], 0
        for k, (path, devices) in enumerate(self.placements):
            if work >= self.max_work:
                raise CollsimError(f"jobs: {work:,} ranks, group members and operations in the programs before {path}, "
                                   f"the limit of {self.max_work:,} for all jobs together; expected smaller programs, "
                                   "or --max-work raises the limit")
            if not Path(path).is_file():
                raise CollsimError(f"job {self.jobs[k]}: no file {path!r}; expected a program file (.yaml, .yml or .json)")
            program = load_program(path, self.max_work - work)  # what the jobs before left of the limit
            work += program_work(program)
            if program.world != len(devices):
                raise CollsimError(f"job {self.jobs[k]}: {len(devices)} devices for a program of {program.world} ranks; "
                                   f"expected as many devices as its ranks ({program.world})")
            jobs.append(Job(self.jobs[k], program, devices))
        estimate = sum(estimate_transfers(job.program) for job in jobs)
        if estimate > MAX_TRANSFERS:
            raise CollsimError(f"jobs: about {estimate:,} transfers to run together, over the limit of {MAX_TRANSFERS:,} "
                               "(every call expanded into its schedule); expected smaller programs (fewer ranks, "
                               "buckets or layers)")
        return ColocateResult(self, colocate(jobs, self.machine, algorithms=dict(self.algorithms)))


@dataclass(frozen=True)
class ColocateResult(Result):
    request: ColocateRequest
    run: Colocated = field(repr=False)

    def rows(self) -> list[dict[str, Any]]:
        """Per job: its program, devices, ranks, step alone and together, slowdown (together / alone - 1)."""
        together, slowdowns = self.run.steps_together(), self.run.slowdowns()
        out = []
        for k, job in enumerate(self.run.jobs):
            alone = self.run.alone[k].step_time
            out.append({"job": self.request.jobs[k], "program": self.request.placements[k][0], "ranks": job.program.world,
                        "devices": list(job.devices), "alone_s": alone, "together_s": together[k],
                        "slowdown": slowdowns[k]})
        return out

    def data(self) -> dict[str, Any]:
        return {"topology": self.request.machine.name, "jobs": self.rows(),
                "shared_links": self.run.shared_links(self.request.top)}

    def text(self) -> str:
        req, n = self.request, len(self.run.jobs)
        lines = [f"# {n} jobs on {req.machine.name}, run together (every call expanded, sharing links) and each alone "
                 "on its devices"]
        lines.append(table(["#", "job", "ranks", "alone", "together", "slowdown"],
                           [[k + 1, r["job"], r["ranks"], format_time(r["alone_s"]), format_time(r["together_s"]),
                             f"{100 * r['slowdown']:.1f}%"] for k, r in enumerate(self.rows())], "rlrrrr"))
        links = self.run.shared_links(req.top)
        if not links:
            lines.append("# no link carried bytes of two jobs: the jobs do not meet")
            return "\n".join(lines)
        lines.append(f"# links where the jobs meet, the busiest first ({len(links)} shown; busy: all their bytes at the link's "
                     "bandwidth)")
        lines.append(table(["link", "bandwidth", *[f"job {k + 1}" for k in range(n)], "busy"],
                           [[x["link"], f"{x['bandwidth_Bps'] / 1e9:g} GB/s", *[f"{b / 1e6:,.1f} MB" for b in x["bytes"]],
                             format_time(x["busy_s"])] for x in links], "lr" + "r" * n + "r"))
        return "\n".join(lines)
