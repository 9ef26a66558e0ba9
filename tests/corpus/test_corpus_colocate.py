"""Bad jobs for `collsim colocate` (issue 24 item 4): each refused with one line naming the field, the bad value and
what is accepted, before any engine run; and the accepted command line's text and JSON."""

from __future__ import annotations

import json

import pytest

import app.cli  # noqa: F401  (imported once here, so each forked case starts warm)

from .harness import Case, run_case, run_cli

RING = "world: 2\ngroups: {all: [0, 1]}\nranks:\n  0-1: [{op: allreduce, group: all, size: 100MB, dtype: float32}]\n"
MISMATCH = ("world: 2\ngroups: {all: [0, 1]}\nranks:\n  0: [{op: allreduce, group: all, size: 1MB}]\n"
            "  1: [{op: allreduce, group: all, size: 2MB}]\n")
MACHINE = "cluster:nodes=2,gpus=2,nic=node,nics=1,bw=50GB/s,lat=1us"  # 4 devices
FILES = {"a.yaml": RING, "b.yaml": RING, "bad.yaml": MISMATCH}
# 64 ranks x 130 all-reduces: 130 x 2 x 64 x 63 = 1,048,320 estimated transfers a job, 2,096,640 for two: over 2M
MANY = "world: 64\ngroups: {all: 0-63}\nranks:\n  0-63:\n" + "    - {op: allreduce, group: all, size: 1MB}\n" * 130


def _case(tag: str, jobs: list[str], field: str, value: str | None, accepted: str | None,
          extra: list[str] | None = None) -> Case:
    return Case(f"colocate-{tag}", ["colocate", "--topology", MACHINE, *jobs, *(extra or [])], field, value, accepted,
                dict(FILES), timeout_s=5.0)


CASES = [
    _case("devices-overlap", ["a.yaml@0-1", "b.yaml@1-2"], "job b.yaml@1-2", "device 1 is also job a.yaml@0-1's",
          "expected each device in one job"),
    _case("device-twice-in-job", ["a.yaml@0,0", "b.yaml@2-3"], "job a.yaml@0,0", "device 0 is listed twice",
          "expected each device once"),
    _case("count-not-world", ["a.yaml@0", "b.yaml@1-3"], "job a.yaml@0", "1 devices for a program of 2 ranks",
          "expected as many devices as its ranks (2)"),
    _case("device-out-of-range", ["a.yaml@0-1", "b.yaml@2,9"], "job b.yaml@2,9", "device 9 is not on the machine",
          "expected devices 0..3"),
    _case("device-range-huge", ["a.yaml@0-1", "b.yaml@2-999999999"], "job b.yaml@2-999999999", "device 999999999",
          "expected devices 0..3"),
    _case("device-range-reversed", ["a.yaml@1-0", "b.yaml@2-3"], "job a.yaml@1-0", "cannot read devices '1-0'",
          "expected a device, a range such as 0-15 or a list such as 0,2,4"),
    _case("devices-not-numbers", ["a.yaml@0-1", "b.yaml@gpu2"], "job b.yaml@gpu2", "'gpu2'", "a range such as 0-15"),
    _case("no-at", ["a.yaml@0-1", "b.yaml"], "job", "'b.yaml'", "expected PROGRAM@DEVICES"),
    _case("no-devices", ["a.yaml@0-1", "b.yaml@"], "job", "'b.yaml@'", "expected PROGRAM@DEVICES"),
    _case("one-job", ["a.yaml@0-1"], "jobs", "1 given", "expected 2 to 64 jobs"),
    _case("missing-file", ["a.yaml@0-1", "nothere.yaml@2-3"], "job nothere.yaml@2-3", "no file 'nothere.yaml'",
          "expected a program file"),
    _case("mismatched-program", ["a.yaml@0-1", "bad.yaml@2-3"], "job bad.yaml@2-3", "group all call #1: rank 0 calls "
          "allreduce 1000000B bfloat16 but rank 1 calls allreduce 2000000B", "(size differs)"),
    _case("max-work-all-jobs", ["a.yaml@0-1", "b.yaml@2-3"], "jobs", "6 ranks, group members and operations in the "
          "programs before b.yaml", "the limit of 6 for all jobs together", ["--max-work", "6"]),
    _case("max-work-left", ["a.yaml@0-1", "b.yaml@2-3"], "b.yaml", "6 ranks, group members and operations",
          "over the limit of 2", ["--max-work", "8"]),
    _case("top-negative", ["a.yaml@0-1", "b.yaml@2-3"], "top", "-1", "expected an integer >= 0", ["--top=-1"]),
    _case("algo-unknown", ["a.yaml@0-1", "b.yaml@2-3"], "allreduce", "nosuch", None, ["--algo", "allreduce=nosuch"]),
    Case("colocate-too-many-transfers", ["colocate", "--topology", "ideal:128", "m.yaml@0-63", "m.yaml@64-127"], "jobs",
         "about 2,096,640 transfers", "over the limit of 2,000,000", {"m.yaml": MANY}, timeout_s=5.0),
    Case("colocate-topology-unknown", ["colocate", "--topology", "nosuch:9", "a.yaml@0-1", "b.yaml@2-3"], "topology",
         "nosuch", None, dict(FILES), timeout_s=5.0),
    Case("colocate-topology-missing", ["colocate", "a.yaml@0-1", "b.yaml@2-3"], "--topology", None, "required",
         dict(FILES), timeout_s=5.0),
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_colocate(case, tmp_path):
    result = run_case(case, tmp_path)
    assert result.status == 2, (result.status, result.last_line)


def test_case_ids_are_unique():
    ids = [case.id for case in CASES]
    assert len(ids) == len(set(ids))


def test_colocate_text_and_json(tmp_path):
    """Two 2-rank rings of 100 MB sharing each node's one NIC (tests/simulator/test_colocate.py works it by hand):
    2.008 ms alone, 4.008 ms together, slowdown 4.008 / 2.008 - 1 = 99.6%; 100 MB of each job on the NIC's links."""
    for name, text in FILES.items():
        (tmp_path / name).write_text(text)
    jobs = ["a.yaml@0,2", "b.yaml@1,3"]
    out = run_cli(["colocate", "--topology", MACHINE, *jobs], tmp_path)
    assert out.status == 0, out.stderr
    assert out.stdout.count("2.008 ms  4.008 ms     99.6%") == 2 and "n0nic->leaf0" in out.stdout
    assert "100.0 MB" in out.stdout
    data = json.loads(run_cli(["colocate", "--topology", MACHINE, *jobs, "--json"], tmp_path).stdout)
    assert [j["slowdown"] for j in data["jobs"]] == pytest.approx([4.008 / 2.008 - 1] * 2, rel=1e-9)
    assert {x["link"] for x in data["shared_links"]} >= {"n0nic->leaf0", "leaf0->n1nic"}
