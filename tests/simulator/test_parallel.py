"""--jobs and --dask give exactly the serial results: sweeps and what-if cases run serially, in a process pool and on
a real dask.distributed LocalCluster."""

from __future__ import annotations

import json

import pytest

from simulator.errors import CollsimError
from simulator.parallel import check_jobs, run_cases
from simulator.program.whatif import StepCase, evaluate


def square(x: int) -> int:
    return x * x


def refuse_odd(x: int) -> int:
    if x % 2:
        raise CollsimError(f"case: {x} is odd")
    return x


CASES = [StepCase("ddp", "dgx-h100", gpus=2, bucket=2**30, seq_len=512),
         StepCase("tp", "dgx-h100", gpus=4, seq_len=512),
         StepCase("ddp", "dgx-h100:nodes=2,net=ib400", gpus=16, bucket=2**30, seq_len=512, algorithms=(("allreduce", "hierarchical"),))]


def test_pool_keeps_case_order_and_values():
    assert run_cases(square, range(20), jobs=2) == [x * x for x in range(20)]


def test_pool_raises_the_first_failing_case_in_case_order():
    with pytest.raises(CollsimError, match="case: 7 is odd"):
        run_cases(refuse_odd, [2, 4, 7, 1, 9], jobs=2)
    with pytest.raises(CollsimError, match="case: 3 is odd"):
        run_cases(refuse_odd, [3, 5], jobs=1)


@pytest.mark.parametrize("bad", [0, -2, True, 1.5])
def test_jobs_must_be_a_positive_integer(bad):
    with pytest.raises(CollsimError, match="jobs: .*expected an integer >= 1"):
        check_jobs(bad)


def test_whatif_cases_in_two_processes_equal_the_serial_run():
    serial = run_cases(evaluate, CASES, jobs=1)
    assert run_cases(evaluate, CASES, jobs=2) == serial
    assert all(row["step_s"] > 0 for row in serial)


@pytest.mark.slow
def test_dask_local_cluster_gives_the_serial_numbers():
    distributed = pytest.importorskip("distributed")
    from app.commands.sweep import sweep_case
    from collsim.machine import MachineSetup

    machine = MachineSetup(topology="dgx-h100:nodes=2,net=ib400")
    sweep = [(machine, 16, "allreduce", algo, size, "float32", 0, ()) for algo in ("ring", "hierarchical")
             for size in (4096, 1 << 20)]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        on_dask = run_cases(evaluate, CASES, dask=cluster.scheduler_address)
        sweep_dask = run_cases(sweep_case, sweep, dask=cluster.scheduler_address)
        with pytest.raises(CollsimError, match="case: 1 is odd"):
            run_cases(refuse_odd, [2, 1], dask=cluster.scheduler_address)
    assert on_dask == run_cases(evaluate, CASES, jobs=1)
    assert sweep_dask == run_cases(sweep_case, sweep, jobs=1)


def test_unreachable_scheduler_is_a_clear_error():
    pytest.importorskip("distributed")
    with pytest.raises(CollsimError, match="dask: cannot reach a scheduler at 'tcp://127.0.0.1:9'"):
        run_cases(square, [1, 2], dask="tcp://127.0.0.1:9")


def test_sweep_command_jobs_two_equals_serial(capsys):
    from app.cli import main

    argv = ["sweep", "--op", "allreduce", "--algo", "ring,hierarchical", "--ranks", "16", "--sizes", "1KiB:1MiB:32",
            "--topology", "dgx-h100:nodes=2", "--json"]
    assert main([*argv, "--jobs", "1"]) == 0
    serial = json.loads(capsys.readouterr().out)
    assert main([*argv, "--jobs", "2"]) == 0
    assert json.loads(capsys.readouterr().out) == serial and len(serial["rows"]) == 6  # 1 KiB, 32 KiB, 1 MiB x 2
