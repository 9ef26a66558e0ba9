"""Several jobs on one machine, as the What-if page asks it: each job one collective of a size on the devices given,
written as a program file (docs/programs.md), and the ColocateRequest `collsim colocate` builds from the same files."""

from __future__ import annotations

from pathlib import Path

from collsim.colocate import ColocateRequest, parse_devices
from simulator.errors import CollsimError
from simulator.program import dump_program, program_from_dict

from .inputs import size_input
from .whatif_model import machine_ranks

JOB_OPS = ("allreduce", "allgather", "reduce_scatter", "alltoall")  # collectives without a root
MAX_PAGE_JOBS = 4
# dgx-h100 gives every GPU its own NIC, and a leaf's uplinks outrun its NICs: no placement slows a job there. One NIC
# per node (docs/programs.md's second colocate example) makes jobs on the same nodes share it and the leaf's links.
DEFAULT_MACHINE = "cluster:nodes=4,gpus=8,nic=node,nics=1"
SHARED = ("0-3,8-11,16-19,24-27", "4-7,12-15,20-23,28-31")  # half of every node each: they share each node's NIC
DISJOINT = ("0-15", "16-31")  # nodes 0-1 and nodes 2-3: no link carries both


def job_program(op: str, nbytes: int, ranks: int) -> dict:
    """A program of one `op` of `nbytes` over all its `ranks` (the form a program file holds)."""
    if op not in JOB_OPS:
        raise CollsimError(f"collective: {op!r}; expected one of {', '.join(JOB_OPS)}")
    return {"world": ranks, "groups": {"all": f"0-{ranks - 1}"},
            "ranks": {f"0-{ranks - 1}": [{"op": op, "group": "all", "size": nbytes}]}}


def write_job(folder: Path, op: str, nbytes: int, ranks: int) -> Path:
    """The job's program file in `folder`, named by what it holds (written once, atomically)."""
    path = Path(folder) / f"{op}-{nbytes}B-{ranks}ranks.yaml"
    if not path.is_file():
        dump_program(program_from_dict(job_program(op, nbytes, ranks)), path)
    return path


def colocate_request(machine: str, jobs: list[tuple[str, str, str]], folder: Path) -> ColocateRequest:
    """The request `collsim colocate --topology MACHINE FILE@DEVICES ...` makes for jobs (collective, size, devices),
    each job's program written to `folder`; a bad field is refused in one line naming its job."""
    devices = machine_ranks(machine)  # the page's bounds on the machine first
    if not 2 <= len(jobs) <= MAX_PAGE_JOBS:
        raise CollsimError(f"jobs: {len(jobs)} given; expected 2..{MAX_PAGE_JOBS} on this page")
    placed, owner = [], {}
    for k, (op, size, spec) in enumerate(jobs, 1):
        ranks = parse_devices(spec, devices, f"job {k} devices")
        if len(ranks) < 2:
            raise CollsimError(f"job {k} devices: {spec!r} is one device; expected two or more for a collective")
        for d in ranks:  # the request refuses this too, naming the job by its file; the page names it by number
            if owner.setdefault(d, k) != k:
                raise CollsimError(f"job {k} devices: device {d} is also job {owner[d]}'s; expected each device in one job")
        path = write_job(folder, op, size_input(size, f"job {k} size"), len(ranks))
        placed.append(f"{path}@{spec.strip()}")
    return ColocateRequest(topology=machine.strip(), jobs=tuple(placed))


def job_rows(data: dict) -> list[dict]:
    """The page's table of jobs from the result's data(): times in ms, slowdown in %."""
    return [{"job": f"job {k}", "program": Path(r["program"]).name, "ranks": r["ranks"],
             "devices": r["job"].rpartition("@")[2], "alone (ms)": r["alone_s"] * 1e3,
             "together (ms)": r["together_s"] * 1e3, "slowdown (%)": 100 * r["slowdown"]}
            for k, r in enumerate(data["jobs"], 1)]


def link_rows(data: dict) -> list[dict]:
    """The links where the jobs meet from the result's data(): each job's MB on it and its busy time."""
    return [{"link": x["link"], "bandwidth (GB/s)": x["bandwidth_Bps"] / 1e9,
             **{f"job {k} (MB)": b / 1e6 for k, b in enumerate(x["bytes"], 1)}, "busy (ms)": x["busy_s"] * 1e3}
            for x in data["shared_links"]]
