"""Adding an algorithm is one file: the bidirectional ring lives in one module, touches no other, and works everywhere."""

import subprocess
import sys
from pathlib import Path

import pytest

from simulator.algorithms import build_schedule, get
from simulator.collective import Collective
from simulator.cost import ENGINE, LinkModel, estimate
from simulator.engine import EngineOptions, simulate
from simulator.semantics import check
from simulator.topology.builders import ring

ROOT = Path(__file__).resolve().parents[2]
MODULE = ROOT / "simulator" / "algorithms" / "bidirectional_ring.py"


def test_the_algorithm_is_one_short_file_named_nowhere_else():
    assert len(MODULE.read_text().splitlines()) < 40
    naming = [path.relative_to(ROOT).as_posix() for package in ("simulator", "app", "verify")
              for path in sorted((ROOT / package).rglob("*.py")) if "bidirectional_ring" in path.read_text()]
    assert naming == ["simulator/algorithms/bidirectional_ring.py"]


@pytest.mark.parametrize("p", [1, 2, 3, 5, 8, 13])
@pytest.mark.parametrize("size", [0, 13, 4100])
def test_it_is_proven_on_numpy(p, size):
    assert check(build_schedule(Collective("allgather", p, size, "int8"), "bidirectional_ring")).ok


def test_two_ports_halve_the_bandwidth_term_on_a_ring():
    """Hand count: p-1 steps, each a message of n/(2p) bytes in each direction at once."""
    p, n = 8, 64 * 2**20
    topo = ring(p)
    latency, bandwidth = float(topo.latency[0]), float(topo.bandwidth[0])
    sched = build_schedule(Collective("allgather", p, n), "bidirectional_ring")
    two = simulate(sched, topo, EngineOptions(ports=2)).time
    assert two == pytest.approx((p - 1) * (latency + n / (2 * p) / bandwidth), rel=1e-9)


def test_without_a_closed_form_cost_uses_the_engine():
    assert get("allgather", "bidirectional_ring").cost is None
    est = estimate("allgather", "bidirectional_ring", 4, [4096], LinkModel.from_bandwidth(1e-6, 1e9))
    assert est.method == ENGINE
    # one port: the two directions' messages of a step go one after the other
    assert est.times[0] == pytest.approx(3 * 2 * (1e-6 + 512 / 1e9), rel=1e-9)


def test_cli_lists_and_checks_it():
    out = subprocess.run([sys.executable, "-m", "app.cli", "check", "--op", "allgather", "--algo", "bidirectional_ring",
                          "--ranks", "1-6", "--size", "0,24,4100"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "6 passed, 0 failed" in out.stdout
