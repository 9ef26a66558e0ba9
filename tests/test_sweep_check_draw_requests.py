"""collsim's sweep, check and draw requests (collsim/sweep.py, check.py, draw.py), asked without the command line:
expected values from the ring's arithmetic, the naming rule of per-algorithm logs and the definition of a span."""

from __future__ import annotations

import pytest

from collsim.check import CheckRequest, span
from collsim.draw import DrawRequest
from collsim.machine import MachineSetup
from collsim.sweep import SweepRequest
from simulator.errors import CollsimError

ALPHA, BANDWIDTH = 2e-6, 25e9  # the default machine, ideal:P: every link 2 us and 25 GB/s


def test_sweep_times_the_ring_as_its_arithmetic_says():
    """Ring allreduce on ideal:4, one port: 2(p-1) steps, each one message of n/p bytes over one link."""
    result = SweepRequest("allreduce", ("ring",), "1KiB,4KiB", MachineSetup(), ranks=4, jobs=1).run()
    assert [r["size"] for r in result.rows] == [1024, 4096]
    for row in result.rows:
        n, p = row["size"], 4
        time_s = 2 * (p - 1) * (ALPHA + n / p / BANDWIDTH)
        assert row["time_us"] == pytest.approx(time_s * 1e6, rel=1e-9)
        assert row["algbw_GBps"] == pytest.approx(n / time_s / 1e9, rel=1e-9)
        assert row["busbw_GBps"] == pytest.approx(n / time_s / 1e9 * 2 * (p - 1) / p, rel=1e-9)
        assert (row["count"], row["redop"], row["root"]) == (n // 4, "sum", -1)
    assert result.data()["topology"] == "ideal:4"


def test_sweep_gives_each_algorithm_only_the_parameters_it_takes():
    request = SweepRequest("allreduce", ("ring", "hierarchical"), "1KiB", ranks=8, params=(("group", 4),), jobs=1)
    params = {case[3]: case[7] for case in request.cases()}
    assert params == {"ring": (), "hierarchical": (("group", 4),)}


def test_sweep_files_follow_the_log_naming_rule(tmp_path):
    request = SweepRequest("allreduce", ("ring", "binomial"), "1KiB", ranks=4, jobs=1, csv=str(tmp_path / "rows.csv"),
                           nccl_log=str(tmp_path / "log.txt"))
    files = request.run().files()
    assert [f.path for f in files] == [str(tmp_path / name) for name in ("rows.csv", "log-ring.txt", "log-binomial.txt")]
    assert [f.line() for f in files] == [f"# wrote {f.path}" for f in files]
    assert files[0].content.splitlines()[0].split(",")[:2] == ["algorithm", "size"]


@pytest.mark.parametrize("fields, words", [
    (dict(algorithms=("bogus",)), "algo: unknown algorithm 'bogus'"),
    (dict(setup=MachineSetup(stragglers=("9:2us",))), "straggler: rank 9 is not one of 0..3"),
    (dict(jobs=0), "jobs: 0"),
    (dict(sizes="1KiB:nan"), "sizes"),
])
def test_sweep_refuses_a_bad_request_when_it_is_built(fields, words):
    with pytest.raises(CollsimError, match=words):
        SweepRequest("allreduce", **{"sizes": "1KiB", "ranks": 4, **fields})


def test_span_writes_runs_of_rank_counts():
    assert span([1, 2, 3, 4, 5, 8]) == "1-5,8"
    assert span([7]) == "7"
    assert span([2, 4, 5]) == "2,4-5"
    assert span([]) == "-"


def test_check_counts_refusals_with_every_and_raises_them_without():
    """hierarchical with group 5 runs on 5 ranks only (a group divides the ranks); ring takes no group."""
    result = CheckRequest("allreduce", every=True, ranks="4-6", sizes="28", params=(("group", 5),)).run()
    hierarchical = {r["ranks"]: r["status"] for r in result.results if r["algorithm"] == "hierarchical"}
    assert hierarchical == {4: "refused", 5: "pass", 6: "refused"}
    assert {r["status"] for r in result.results if r["algorithm"] == "ring"} == {"pass"}
    assert result.status == 0 and result.data()["passed"] is True
    with pytest.raises(CollsimError, match="group"):
        CheckRequest("allreduce", "hierarchical", ranks="4", sizes="28", params=(("group", 5),)).run()


@pytest.mark.parametrize("fields, words", [
    (dict(op="broadcast", algo="binomial", ranks="2-4", root=3), "root: 3 is not a rank of 2; expected 0..1"),
    (dict(op="allreduce"), "check: give --op and --algo, or --all"),
    (dict(op="allreduce", algo="bogus"), "algo: unknown algorithm 'bogus'"),
])
def test_check_refuses_a_bad_request_when_it_is_built(fields, words):
    with pytest.raises(CollsimError, match=words):
        CheckRequest(**fields)


def test_draw_counts_the_ring_steps_and_messages(tmp_path):
    """Ring allreduce on 4 ranks: 2(p-1) = 6 steps of p = 4 messages, 24 in all; 2 elements per rank by default."""
    path = str(tmp_path / "ring.svg")
    result = DrawRequest("allreduce", "ring", 4, path).run()
    data = result.data()
    assert (data["steps"], data["messages"], data["elements"]) == (6, 24, 8)
    (picture,) = result.files()
    assert picture.line() == f"wrote {path}: 6 steps, 24 messages"
    assert "<svg" in picture.content and result.text() == ""


def test_draw_command_says_only_what_it_wrote(tmp_path, capsys):
    from app.cli import main

    path = tmp_path / "ring.svg"
    assert main(["draw", "--op", "allreduce", "--algo", "ring", "--ranks", "4", "-o", str(path)]) == 0
    assert capsys.readouterr().out == f"wrote {path}: 6 steps, 24 messages\n"
    assert path.read_text().lstrip().startswith(("<svg", "<?xml"))


def test_draw_refuses_a_bad_element_count():
    with pytest.raises(CollsimError, match="elements: -3"):
        DrawRequest("allreduce", "ring", 4, "x.svg", elements=-3)
