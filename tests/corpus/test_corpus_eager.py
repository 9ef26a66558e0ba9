"""Bad values of `--eager SIZE` (eager sends below a size, SimGrid SMPI's send-is-detached-thresh), refused in one line
naming the field; and the accepted flag changing what simulate reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .harness import Case, run_case, run_cli

SIM = ["simulate", "--op", "broadcast", "--algo", "binomial", "--ranks", "4", "--size", "1KiB",
       "--topology", "switch:4", "--alpha", "1us", "--bandwidth", "10GB/s", "--header-bytes", "16"]
SWEEP = ["sweep", "--op", "allreduce", "--algo", "ring", "--ranks", "4", "--sizes", "1KiB:4KiB"]

CASES = [
    Case("simulate-eager-unit", [*SIM, "--eager", "64QB"], "eager", "64QB", "KiB"),
    Case("simulate-eager-negative", [*SIM, "--eager", "-1"], "eager", "-1", "negative"),
    Case("simulate-eager-fraction", [*SIM, "--eager", "1.5"], "eager", "1.5", "whole number of bytes"),
    Case("sweep-eager-text", [*SWEEP, "--eager", "big"], "eager", "big"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_eager_is_refused_cleanly(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path)


def test_eager_sends_overlap_a_binomial_broadcasts_first_sends(tmp_path: Path) -> None:
    """Rendezvous: root -> 2 then root -> 1 and 2 -> 3, two steps of 2 us + 1040 B / 10 GB/s = 2.104 us each.
    Eager (SMPI's default): both root sends start at once and share its link (2 us + 2080 B / 10 GB/s), then
    2 -> 3 alone: 2.208 + 2.104 = 4.312 us (SMPI 3.32 gives 4.3144 us: tests/data/simgrid/smpi_cluster_eager.csv)."""
    times = []
    for extra in ([], ["--eager", "64KiB"]):
        result = run_cli([*SIM, *extra, "--json"], tmp_path)
        assert result.status == 0, result.stderr
        data = json.loads(result.stdout)
        times.append(data["time_s"])
        assert data["options"]["eager_bytes"] == (65536 if extra else 0)
    assert times[0] == pytest.approx(4.208e-6, rel=1e-9)
    assert times[1] == pytest.approx(4.312e-6, rel=1e-9)


def test_latency_weighted_reaches_the_engine(tmp_path: Path) -> None:
    result = run_cli([*SIM, "--latency-weighted", "--eager", "64KiB", "--json"], tmp_path)
    assert result.status == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["options"]["latency_weighted"] is True
    assert data["time_s"] == pytest.approx(4.312e-6, rel=1e-9)  # a switch: every route has the same latency
