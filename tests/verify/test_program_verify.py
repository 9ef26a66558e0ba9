"""verify --program on real gloo process groups: deadlocks end in time naming every rank's pending call, swaps are caught.

Process start-up dominates on two shared cores, so only a few small programs run here; the
static checker's corpus (tests/program_corpus.py, checked in tests/simulator/test_program_corpus.py) covers the rest.
"""

import multiprocessing
import os
import textwrap
import time

import pytest
import yaml
from program_corpus import CORPUS

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)

from app.cli import main  # noqa: E402
from simulator.program import check_program, program_from_dict  # noqa: E402
from verify.launch import _LAST_PIDS as LAST_WORLD_PIDS  # noqa: E402 (pids of the last local world: none may outlive it)
from verify.program import verify_program  # noqa: E402

TIMEOUT = 3.0
START_UP = 60.0  # allowance for spawning and initialising the ranks on a loaded machine
# real gloo worlds: slow, and one at a time on one xdist worker (--dist loadgroup)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("processes")]


def prog(name):
    return program_from_dict(yaml.safe_load(textwrap.dedent(CORPUS[name][0])), source=name)


def no_stray_processes():
    assert not multiprocessing.active_children()
    for pid in list(LAST_WORLD_PIDS):
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def assert_names_each(message, waits):
    """Every rank's pending call, in rank order; a rank may add '(a peer left)' when the first to time out exits first."""
    parts = message.split(" s: ", 1)[1].strip().split("; ")
    assert len(parts) == len(waits)
    for part, wait in zip(parts, waits):
        assert part in (wait, wait + " (a peer left)"), message


def test_cli_reports_every_ranks_pending_call_within_the_timeout(tmp_path, capsys):
    path = tmp_path / "swap.yaml"
    path.write_text(textwrap.dedent(CORPUS["cross-group-swap"][0]))
    start = time.monotonic()
    assert main(["verify", "--program", str(path), "--timeout", str(TIMEOUT)]) == 1
    assert time.monotonic() - start < START_UP + TIMEOUT
    out = capsys.readouterr().out
    assert out.startswith(f"{path}: hang: no progress for 3 s: ") and out.count("\n") == 1
    assert_names_each(out, ["rank 0 waits in allreduce#1 (group dp)", "rank 1 waits in allgather#1 (group tp)"])
    no_stray_processes()


@pytest.mark.parametrize("name, pending", [
    ("three-rank-ring", "rank 0 waits in allreduce#1 (group a); rank 1 waits in allreduce#1 (group b); "
                        "rank 2 waits in allreduce#1 (group c)"),
    ("event-between-streams", "rank 0 waits in allgather#1 (group tp); rank 1 waits in allreduce#1 (group dp)"),
])
def test_deadlocks_end_in_time_naming_each_rank(name, pending):
    start = time.monotonic()
    summary = verify_program(prog(name), timeout=TIMEOUT)
    assert time.monotonic() - start < START_UP + TIMEOUT
    assert not summary["passed"]
    assert summary["error"].startswith("hang: no progress for 3 s: ")
    assert_names_each(summary["error"], pending.split("; "))
    no_stray_processes()


SOUND = """
world: 3
groups: {all: [0, 1, 2], pair: [0, 2], dp: [0, 1]}
ranks:
  0:
    - &ar {op: allreduce, group: all, size: 4KiB, name: g}
    - &ag {op: allgather, group: all, size: 12KiB, dtype: float32}
    - &rs {op: reduce_scatter, group: all, size: 12KiB, redop: max}
    - &bc {op: broadcast, group: all, size: 1KiB, root: 1}
    - &a2a {op: alltoall, group: all, size: 1200B, dtype: int32}
    - &ga {op: gather, group: all, size: 1200B, dtype: int32, root: 2}
    - &sc {op: scatter, group: all, size: 1200B, dtype: int32, root: 0}
    - {op: compute, time: 1ms, stream: c}
    - {op: reduce, group: pair, size: 8B, root: 2, redop: prod}
    - {op: send, peer: 1, size: 64B, name: x_out}  # a send and its recv meet by position; their names may differ
    # same shape, different tensors on the two ranks: completes, with wrong data
    - {op: allreduce, group: dp, size: 4KiB, name: grad_a}
    - {op: allreduce, group: dp, size: 4KiB, name: grad_b}
  1: [*ar, *ag, *rs, *bc, *a2a, *ga, *sc, {op: recv, peer: 0, size: 64B, name: x_in},
      {op: allreduce, group: dp, size: 4KiB, name: grad_b}, {op: allreduce, group: dp, size: 4KiB, name: grad_a}]
  2: [*ar, *ag, *rs, *bc, *a2a, *ga, *sc, {op: reduce, group: pair, size: 8B, root: 2, redop: prod}]
"""


def test_every_kind_of_call_is_checked_and_swapped_same_shaped_calls_give_wrong_data():
    """One world (start-up is the slow part): every other call's result is right; the swapped pair completes, wrongly."""
    program = program_from_dict(yaml.safe_load(SOUND), source="sound")
    assert [p.kind for p in check_program(program)] == ["mismatch", "mismatch"]  # the checker names the swap (corpus: named-swap)
    summary = verify_program(program, timeout=30.0)
    assert [r["status"] for r in summary["ranks"]] == ["ok", "ok", "ok"]  # nothing hangs: that is the danger
    # receiving buffers checked: 7 collectives + the swapped 2 on ranks 0-1; gather and reduce on their root; the recv
    assert [r["checked"] for r in summary["ranks"]] == [8, 9, 8]
    assert summary["error"] == ('wrong data: rank 0 in allreduce#1 (group dp, "grad_a"), allreduce#2 (group dp, "grad_b"); '
                                'rank 1 in allreduce#1 (group dp, "grad_b"), allreduce#2 (group dp, "grad_a")')
    no_stray_processes()


def test_a_generated_pipeline_step_runs_on_real_groups():
    """Scenario output is a runnable program: 1F1B sends and receives on their own streams, joined by events."""
    from simulator.program.scenarios import build_spec, generate

    program = generate(build_spec("pp", "llama2-7b", "h100", 2, microbatches=2))
    summary = verify_program(program, timeout=30.0)
    assert summary["passed"], summary.get("error")
    # stage 0 receives 2 gradients, stage 1 receives 2 activations
    assert [r["checked"] for r in summary["ranks"]] == [2, 2]
    no_stray_processes()
