"""A `collsim verify` that is stopped leaves nothing behind: SIGTERM or SIGINT to the parent stops every rank and
removes the world's temporary directory; after SIGKILL the ranks exit on their own. Under torchrun without GPUs,
`--backend nccl` is one clear error per rank."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("torch.distributed")
if not Path("/proc/self/stat").exists():
    pytest.skip("needs /proc to find child processes", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
# real rank processes: slow, and run one at a time on one xdist worker (--dist loadgroup) so that their timeouts
# are not raced by each other's start-up
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("processes")]
LONG_VERIFY = ["verify", "--ranks", "2", "--op", "allreduce", "--algo", "ring", "--sizes", "1MiB", "--iters", "1000000",
               "--warmup", "0", "--budget", "1000", "--timeout", "60"]


def _parent_of(pid: int) -> int | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(text[text.rindex(")") + 2:].split()[1])  # the command name may hold spaces; fields after it do not


def _alive(pid: int) -> bool:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return text[text.rindex(")") + 2] != "Z"


def descendants(pid: int) -> set[int]:
    """Every live process below `pid`."""
    parents = {int(p.name): _parent_of(int(p.name)) for p in Path("/proc").iterdir() if p.name.isdigit()}
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _wait_for(condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up after {seconds:g} s waiting for {what}")
        time.sleep(0.1)


def start_verify(tmp_path: Path) -> tuple[subprocess.Popen, Path, set[int]]:
    """A long verify with TMPDIR in tmp_path, once both ranks are initialising their process group."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(ROOT)}
    # as from a terminal: SIGINT at its default, whatever this process inherited (an xdist worker, or a shell's
    # background job, ignores it, and an ignored SIGINT is inherited and rightly kept by verify: verify/launch.py)
    proc = subprocess.Popen([sys.executable, "-m", "app.cli", *LONG_VERIFY], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    worlds = lambda: list(tmp.glob("collsim-verify-*"))
    _wait_for(lambda: proc.poll() is not None or any((w / "store").exists() for w in worlds()), 120, "the ranks to start")
    assert proc.poll() is None, proc.communicate()
    time.sleep(1.0)
    kids = descendants(proc.pid)
    assert len(kids) >= 2, kids  # the two ranks (and multiprocessing's resource tracker)
    return proc, tmp, kids


def assert_gone_within_5_s(kids: set[int]) -> None:
    deadline = time.monotonic() + 5.0
    while any(_alive(pid) for pid in kids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [pid for pid in kids if _alive(pid)] == []


def assert_nothing_left(kids: set[int], tmp: Path) -> None:
    assert list(tmp.iterdir()) == []  # removed before the parent ended
    assert_gone_within_5_s(kids)


def test_sigterm_stops_every_rank_and_removes_the_temporary_directory(tmp_path):
    proc, tmp, kids = start_verify(tmp_path)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=15)
    assert proc.returncode == 128 + signal.SIGTERM, err  # the shell's convention, after cleanup
    assert "terminated (SIGTERM)" in err
    assert "Traceback" not in err
    assert_nothing_left(kids, tmp)


def test_sigint_stops_every_rank_and_says_so(tmp_path):
    proc, tmp, kids = start_verify(tmp_path)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=45)
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == ["collsim: verify: interrupted; every rank was stopped"]
    assert_nothing_left(kids, tmp)


def test_ranks_exit_on_their_own_when_the_parent_is_killed(tmp_path):
    proc, tmp, kids = start_verify(tmp_path)
    proc.kill()
    proc.communicate(timeout=45)
    assert_gone_within_5_s(kids)


def test_nccl_under_torchrun_without_gpus_is_one_clear_error_per_rank():
    import torch

    if torch.cuda.is_available() and torch.cuda.device_count() >= 2:
        pytest.skip("this machine has the GPUs")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2",
           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29999"}
    have = torch.cuda.device_count() if torch.cuda.is_available() else 0
    out = subprocess.run([sys.executable, "-m", "app.cli", "verify", "--backend", "nccl", "--op", "allreduce", "--algo", "ring",
                          "--sizes", "1KiB", "--no-time"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [f"collsim: error: rank 1: backend: nccl needs one GPU per rank; 2 ranks asked, "
                                               f"{have} GPUs visible (use --backend gloo on CPU)"]
