"""Bad inputs of the commands made requests last (verify, calibrate, compare, scenario, nccl-model, the msccl
commands, topology, algorithms; issue 21), refused by the request before any work, in one line.

A bandwidth with no unit (`--bandwidth 3`, `--nic-bw 100`, `bw=100`) was silently 3 or 100 bytes/s: the kind of
silent acceptance `--alpha 2` was (2 seconds); a plain number is still bytes/s from 1e6 up. `verify --nccl-log` with
`--no-time` was refused only after every rank had run. `verify --program` read a whole program (a 4.5 MB file: about
2.5 s) before refusing a world over 32 local processes; the world is now read from the file's head. Accepted inputs
beside the refusals are tested at the end.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .harness import Case, run_case, run_cli

COST = ["cost", "--op", "allreduce", "--ranks", "8"]
VERIFY = ["verify", "--ranks", "2", "--op", "allreduce", "--algo", "ring", "--sizes", "64"]
COMPARE = ["compare", "--op", "allreduce", "--algo", "ring", "--ranks", "2", "--alpha", "2us"]
OPS = 100_000  # operations of the big programs: a 4.5 MB file


def _big_program(world: int, json_form: bool = False) -> str:
    """A program of OPS all-reduces on every rank of `world`, written as dump_program writes it (world first)."""
    if json_form:
        ops = ",".join(['{"op":"allreduce","group":"g","size":"1MiB"}'] * OPS)
        return f'{{"world":{world},"groups":{{"g":"0-{world - 1}"}},"ranks":{{"0-{world - 1}":[{ops}]}}}}\n'
    return (f"world: {world}\ngroups: {{g: \"0-{world - 1}\"}}\nranks:\n  0-{world - 1}:\n"
            + "    - {op: allreduce, group: g, size: 1MiB}\n" * OPS)


def bad(id: str, argv: list[str], field: str, value: str | None = None, accepted: str | None = None, **kw) -> Case:
    return Case(id, argv, field, value, accepted, **kw)


NO_UNIT = "has no unit"
CASES = [
    bad("cost-bandwidth-no-unit", [*COST, "--bandwidth", "3"], "bandwidth", "'3'", "such as 3GB/s"),
    bad("compare-bandwidth-no-unit", [*COMPARE, "--bandwidth", "25"], "bandwidth", "'25'", NO_UNIT),
    bad("nccl-model-nic-bw-no-unit", ["nccl-model", "--nodes", "2", "--nic-bw", "100"], "nic-bw", "'100'",
        "such as 100GB/s or 100Gbit/s"),
    bad("nccl-model-bus-bw-no-unit", ["nccl-model", "--bus-bw", "370"], "bus-bw", "'370'", NO_UNIT),
    bad("topology-bw-no-unit", ["topology", "show", "switch:8,bw=100"], "bw", "'100'", NO_UNIT),
    bad("simulate-topology-bw-no-unit", ["simulate", "--op", "allreduce", "--algo", "ring", "--ranks", "4", "--topology",
                                         "ring:4,bw=50"], "bw", "'50'", NO_UNIT),
    bad("verify-nccl-log-no-time", [*VERIFY, "--no-time", "--nccl-log", "v.txt"], "nccl-log", "'v.txt'",
        "drop --no-time", outputs=["v.txt"], timeout_s=2.0),
    bad("verify-program-world-64-yaml", ["verify", "--program", "p.yaml", "--max-work", "1e9"], "world", "64",
        "expected at most 32", files={"p.yaml": _big_program(64)}, timeout_s=1.0),
    bad("verify-program-world-64-json", ["verify", "--program", "p.json", "--max-work", "1e9"], "world", "64",
        "expected at most 32", files={"p.json": _big_program(64, json_form=True)}, timeout_s=1.0),
    bad("verify-program-ranks-mismatch-first", ["verify", "--program", "p.yaml", "--ranks", "8", "--max-work", "1e9"],
        "ranks", "--ranks 8", "leave --ranks out", files={"p.yaml": _big_program(64)}, timeout_s=1.0),
    bad("scenario-out-extension", ["scenario", "ddp", "--gpus", "8", "--out", "x.txt"], "out", "x.txt", ".yaml",
        outputs=["x.txt"]),
    bad("export-msccl-size-uneven", ["export-msccl", "--op", "allreduce", "--algo", "ring", "--ranks", "4", "--size", "3"],
        "size", "3"),
    bad("algorithms-op-unknown", ["algorithms", "--op", "allsum"], "op", "allsum"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_request_refuses_in_one_line(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path)


def test_case_ids_are_unique() -> None:
    assert len({c.id for c in CASES}) == len(CASES)


# --- accepted inputs beside the refusals ------------------------------------------------------------------------------
def _ok(argv: list[str], tmp_path: Path) -> str:
    result = run_cli(argv, tmp_path)
    assert result.status == 0, result.stderr
    return result.stdout


def test_a_plain_bandwidth_of_a_million_bytes_per_second_or_more_is_bytes_per_second(tmp_path: Path) -> None:
    """1e10 with no unit is 10 GB/s: the ring's 1 MiB all-reduce on 8 ranks then takes, by hand,
    2 (p - 1) alpha + 2 (p - 1) / p n / B = 14 x 2 us + 1.75 x 1048576 / 1e10 s = 28 us + 183.5008 us."""
    out = json.loads(_ok([*COST, "--algo", "ring", "--size", "1MiB", "--bandwidth", "1e10", "--json"], tmp_path))
    assert out["time_s"] == pytest.approx(28e-6 + 1.75 * 1048576 / 1e10, rel=1e-12)


@pytest.mark.slow
def test_a_small_program_world_is_read_and_run_by_verify(tmp_path: Path) -> None:
    """Under 32 ranks the head's world is no refusal: a world-2 program of two all-reduces runs on gloo."""
    (tmp_path / "p.yaml").write_text("world: 2\ngroups: {g: [0, 1]}\nranks:\n  0-1: [{op: allreduce, group: g, size: 64}, "
                                     "{op: allreduce, group: g, size: 64}]\n")
    result = run_cli(["verify", "--program", "p.yaml", "--json"], tmp_path, mode="subprocess", timeout_s=120)
    assert result.status == 0, result.stderr
    assert json.loads(result.stdout)["world"] == 2
