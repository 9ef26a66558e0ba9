"""`collsim colocate --topology SPEC jobs.yaml`: a file's `jobs:` section read into the same ColocateRequest as
PROGRAM@DEVICES arguments (collsim/colocate.py jobs_from_file)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from collsim.colocate import ColocateRequest, jobs_from_file
from simulator.errors import CollsimError
from simulator.program import load_program

S = 100_000_000
RING2 = {"world": 2, "groups": {"all": [0, 1]},
         "ranks": {"0-1": [{"op": "allreduce", "group": "all", "size": S, "dtype": "float32"}]}}
SPEC = "cluster:nodes=2,gpus=2,nic=node,nics=1,bw=50GB/s,lat=1us"


def _jobs_file(tmp_path: Path, jobs: list) -> str:
    (tmp_path / "progs").mkdir(exist_ok=True)
    (tmp_path / "progs" / "ring.yaml").write_text(yaml.safe_dump(RING2))
    path = tmp_path / "jobs.yaml"
    path.write_text(yaml.safe_dump({"jobs": jobs}))
    return str(path)


def test_jobs_file_is_the_command_lines_jobs(tmp_path):
    path = _jobs_file(tmp_path, [{"program": "progs/ring.yaml", "devices": "0,2"}, {"program": "progs/ring.yaml",
                                                                                      "devices": [1, 3]}])
    ring = str(tmp_path / "progs" / "ring.yaml")
    assert jobs_from_file(path) == (f"{ring}@0,2", f"{ring}@1,3")  # programs relative to the jobs file
    # two 2-rank rings of 100 MB sharing one NIC per node: alone 2 (4 us + 1 ms), together 2 (4 us + 2 ms)
    # (tests/simulator/test_colocate.py works it out hop by hop)
    rows = ColocateRequest(SPEC, jobs_from_file(path)).run().data()["jobs"]
    assert [r["slowdown"] for r in rows] == pytest.approx([4.008 / 2.008 - 1] * 2, rel=1e-9)


@pytest.mark.parametrize("jobs, words", [
    ([{"program": "progs/ring.yaml", "devices": "0-1"}], "expected a list of 2 to 64 jobs"),
    ([{"program": "progs/ring.yaml"}, {"program": "progs/ring.yaml", "devices": "2-3"}],
     "jobs\\[0\\]: .*expected a mapping of exactly program and devices"),
    ([{"program": 7, "devices": "0-1"}, {"program": "progs/ring.yaml", "devices": "2-3"}], "jobs\\[0\\].program: 7"),
    ([{"program": "progs/ring.yaml", "devices": "0-1"}, {"program": "progs/ring.yaml", "devices": True}],
     "jobs\\[1\\].devices: True; expected devices such as 0-15"),
])
def test_bad_jobs_file(tmp_path, jobs, words):
    with pytest.raises(CollsimError, match=words):
        jobs_from_file(_jobs_file(tmp_path, jobs))


def test_a_jobs_file_is_no_program(tmp_path):
    path = _jobs_file(tmp_path, [{"program": "progs/ring.yaml", "devices": "0-1"}] * 2)
    with pytest.raises(CollsimError, match="jobs: a file of jobs .* is run by collsim colocate"):
        load_program(path)
