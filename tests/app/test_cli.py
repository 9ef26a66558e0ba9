"""The core commands as a user runs them: real subprocesses, exit codes, one clear line on bad input."""

import json
import subprocess
import sys

import pytest

from app.cli import main
from simulator.algorithms import names_for


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app.cli", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.slow
@pytest.mark.parametrize("args,field", [
    (["cost", "--op", "allreduc", "--ranks", "8"], "op"),
    (["cost", "--op", "allreduce", "--algo", "rings", "--ranks", "8"], "algo"),
    (["cost", "--op", "allreduce", "--ranks", "0"], "ranks"),
    (["cost", "--op", "allreduce", "--ranks", "-3"], "ranks"),
    (["cost", "--op", "allreduce", "--ranks", "8", "--size", "12XB"], "size"),
    (["cost", "--op", "allreduce", "--ranks", "8", "--bandwidth=-1GB/s"], "bandwidth"),
    (["cost", "--op", "allreduce", "--ranks", "8", "--gamma", "abc"], "gamma"),
    (["cost", "--op", "allreduce", "--algo", "hierarchical", "--ranks", "12", "--group", "5"], "group"),
    (["check", "--op", "allgather", "--algo", "ring", "--ranks", "0"], "ranks"),
    (["check", "--op", "allreduce", "--algo", "ring", "--ranks", "4", "--size", "6"], "size"),
])
def test_bad_input_is_one_clear_line(args, field):
    done = _run(*args)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"collsim: error: {field}:"), done.stderr
    assert "Traceback" not in done.stderr


def test_cost_json_has_the_promised_fields_and_matches_the_ring_formula():
    done = _run("cost", "--op", "allreduce", "--algo", "ring", "--ranks", "8", "--size", "1MiB",
                "--alpha", "2us", "--bandwidth", "25GB/s", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    n, p = 2**20, 8
    want = 2 * (p - 1) * 2e-6 + 2 * (p - 1) / p * n / 25e9  # REFERENCE.md ring allreduce
    assert data["time_s"] == pytest.approx(want)
    assert data["algbw_GBps"] == pytest.approx(n / want / 1e9)
    assert data["busbw_GBps"] == pytest.approx(n / want / 1e9 * 2 * (p - 1) / p)
    assert data["lower_bound_s"] == pytest.approx(3 * 2e-6 + 2 * (p - 1) / p * n / 25e9)


def test_cost_compares_every_algorithm_when_algo_is_left_out(capsys):
    assert main(["cost", "--op", "allgather", "--ranks", "12", "--size", "64KiB", "--json"]) == 0
    names = {r["algorithm"] for r in json.loads(capsys.readouterr().out)["results"]}
    assert names == set(names_for("allgather")) >= {"ring", "recursive_doubling", "bruck", "direct", "pat", "pair"}


def test_check_all_passes_and_lists_refusals_without_failing(capsys):
    assert main(["check", "--all", "--op", "allreduce", "--ranks", "4-6", "--group", "5", "--json"]) == 0
    results = json.loads(capsys.readouterr().out)["results"]
    grouped = ("hierarchical", "rails", "nccl_tree")  # the algorithms that take --group
    for name in grouped:
        hier = {r["ranks"]: r["status"] for r in results if r["algorithm"] == name}
        assert hier == {4: "refused", 5: "pass", 6: "refused"}
    assert all(r["status"] == "pass" for r in results if r["algorithm"] not in grouped)


@pytest.mark.slow
def test_help_reads_well():
    done = _run("--help")
    assert done.returncode == 0
    for command in ("algorithms", "check", "cost", "simulate", "verify", "fit", "import-msccl", "app"):
        assert command in done.stdout
    assert "nccl-tests" in _run("cost", "--help").stdout  # what SIZE means
