"""Issue 21: the limits live with the requests. A request built from Python with its defaults refuses the huge inputs
the command line refuses, with the same one-line message and estimate, by arithmetic before anything is allocated;
the command line only passes --max-transfers and --max-memory through (collsim/limits.py).

Each expected estimate below is worked out here from the algorithm's own count (NCCL's ring allreduce: 2p(p - 1)
transfers) and the limits' constants, not read from the code's output; the refusal must be within 10% of it."""

from __future__ import annotations

import re
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from app.cli import main
from collsim.check import CheckRequest
from collsim.limits import CHECK_TRANSFER_BYTES, ENGINE_TRANSFER_BYTES, LINK_BYTES, Limits
from collsim.machine import MachineSetup
from collsim.predict import PredictRequest
from collsim.program import LintRequest
from collsim.run_program import RunProgramRequest
from collsim.simulate import SimulateRequest
from collsim.sweep import SweepRequest
from simulator.errors import CollsimError

GiB, TiB = 2**30, 2**40
CPU_S = 1.0  # a refusal is arithmetic: well under a second of CPU, whatever the load
WALL_S = 5.0  # the same on a loaded 2-core machine
PEAK_BYTES = 64 * 2**20  # nothing is expanded: the refusal allocates next to nothing


def ring(p: int) -> int:
    """Transfers of NCCL's ring allreduce on p ranks (one chunk)."""
    return 2 * p * (p - 1)


HUGE_GROUP = 'world: 4\ngroups: {g: "0-100000000"}\nranks:\n  "0-3": [{op: allreduce, group: g, size: 1MiB}]\n'
SWEEP_SIZES = "4:2MiB"  # 4 B, 8 B, ... 2 MiB: 20 sizes, one schedule each


def _program(tmp: Path) -> str:
    path = tmp / "p.yaml"
    path.write_text(HUGE_GROUP)
    return str(path)


# id -> (the request, built and run from Python; its command line; what the refusal names; the estimate worked out
# here, the word after it in the message, and its unit)
CASES: dict[str, tuple[Callable[[Path], object], list[str], list[str], tuple[float, str, str] | None]] = {
    "simulate-1e6-ranks": (
        lambda tmp: SimulateRequest("allreduce", "ring", ranks=1_000_000),
        ["simulate", "--op", "allreduce", "--algo", "ring", "--ranks", "1000000"],
        ["--ranks 1000000", "over the limit of 5e7", "--max-transfers raises it"],
        (ring(1_000_000), "transfers", "")),
    "simulate-1e6-devices": (  # no ranks: every device of the topology; its links alone are refused
        lambda tmp: SimulateRequest("allreduce", "ring", setup=MachineSetup("switch:1000000")),
        ["simulate", "--op", "allreduce", "--algo", "ring", "--topology", "switch:1000000"],
        ["--topology switch:1000000 (1000000 ranks)", "--max-memory raises it"],
        (8 * 1_000_000 * LINK_BYTES, "of", "GiB")),
    "check-5000-ranks-1GiB": (
        lambda tmp: CheckRequest("allreduce", "ring", ranks="5000", sizes="1GiB"),
        ["check", "--op", "allreduce", "--algo", "ring", "--ranks", "5000", "--size", "1GiB"],
        ["--size 1GiB --ranks 5000", "5000 ranks x 1GiB x 4 buffers", "transfers x 740B", "--max-memory raises it"],
        (5000 * GiB * 4 + ring(5000) * CHECK_TRANSFER_BYTES, "of", "TiB")),
    "predict-dgx-h100-100000-nodes": (
        lambda tmp: PredictRequest("dgx-h100:nodes=100000"),
        ["predict", "--preset", "dgx-h100:nodes=100000"],
        ["ranks:", "dgx-h100:nodes=100000", f"{100_000 * 8:,} GPUs", "at most 16,384"], None),
    "lint-program-1e8-member-group": (
        lambda tmp: LintRequest(_program(tmp)).run(),
        ["lint-program", "p.yaml"],
        ["groups.g", f"{100_000_001:,} ranks", "a group cannot be larger than the world"], None),
    "run-program-1e8-member-group": (
        lambda tmp: RunProgramRequest(_program(tmp)).run(),
        ["run-program", "p.yaml"],
        ["groups.g", f"{100_000_001:,} ranks", "a group cannot be larger than the world"], None),
    "sweep-10000-jobs": (  # 20 cases, so 20 processes each hold a 1024-rank schedule: 20 x 2.1e6 transfers x 280 B
        lambda tmp: SweepRequest("allreduce", ("ring",), SWEEP_SIZES, MachineSetup("switch:1024"), jobs=10000),
        ["sweep", "--op", "allreduce", "--algo", "ring", "--sizes", SWEEP_SIZES, "--topology", "switch:1024",
         "--jobs", "10000"],
        ["--topology switch:1024 (1024 ranks)", "x 20 processes", "--max-memory raises it"],
        (20 * ring(1024) * ENGINE_TRANSFER_BYTES + 8 * 1024 * LINK_BYTES, "of", "GiB")),
}


def refusal(make: Callable[[Path], object], tmp: Path) -> tuple[str, float, float, int]:
    """(the message, CPU seconds, wall seconds, peak bytes allocated) of building (and running) a refused request."""
    tracemalloc.start()
    cpu, wall = time.process_time(), time.perf_counter()
    try:
        with pytest.raises(CollsimError) as caught:
            make(tmp)
        return str(caught.value), time.process_time() - cpu, time.perf_counter() - wall, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def estimate(message: str, word: str, unit: str) -> float:
    """The number the message gives before `word` ('about 2e12 transfers', 'about 19.6TiB of memory')."""
    found = re.search(rf"about ([0-9.e+]+)({unit}) {word}\b", message)
    assert found, message
    return float(found.group(1)) * {"": 1, "GiB": GiB, "TiB": TiB}[unit]


@pytest.mark.parametrize("case", list(CASES))
def test_a_request_built_from_python_refuses_a_huge_input_at_once(case: str, tmp_path: Path):
    make, _, named, expected = CASES[case]
    message, cpu, wall, peak = refusal(make, tmp_path)
    assert all(part in message for part in named), message
    assert cpu < CPU_S and wall < WALL_S and peak < PEAK_BYTES, (cpu, wall, peak)
    if expected is not None:
        value, word, unit = expected
        assert 0.9 * value <= estimate(message, word, unit) <= 1.1 * value, (message, value)


@pytest.mark.parametrize("case", list(CASES))
def test_the_command_line_refuses_it_with_the_same_line(case: str, tmp_path: Path, capsys, monkeypatch):
    make, argv, _, _ = CASES[case]
    message = refusal(make, tmp_path)[0]
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"collsim: error: {' '.join(message.split())}"


def test_a_request_takes_its_limits_from_python():
    """A script raises or lowers the limits as --max-transfers and --max-memory do, and they are checked the same."""
    setup = MachineSetup("switch:128")
    SimulateRequest("allreduce", "ring", setup=setup, ranks=128)  # 128 ranks: 32,512 transfers, a few MiB
    with pytest.raises(CollsimError, match=r"over the limit of 8MiB; --max-memory raises it"):
        SimulateRequest("allreduce", "ring", setup=setup, ranks=128, limits=Limits(memory="8MiB"))
    with pytest.raises(CollsimError, match=r"--ranks 1000: about 2e6 transfers, over the limit of 1e6"):
        SimulateRequest("allreduce", "ring", ranks=1000, limits=Limits(transfers=1e6))
    with pytest.raises(CollsimError, match=r"max-transfers: cannot read 'many'; expected a count >= 1"):
        Limits(transfers="many")
    with pytest.raises(CollsimError, match=r"max-memory"):
        Limits(memory="-1")


def test_the_jobs_of_a_sweep_are_what_its_memory_counts():
    """The same sweep in one process holds one schedule at a time, and is accepted."""
    request = SweepRequest("allreduce", ("ring",), SWEEP_SIZES, MachineSetup("switch:1024"), jobs=1)
    assert len(request.cases()) == 20
