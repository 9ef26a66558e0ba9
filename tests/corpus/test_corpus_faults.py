"""Faults during a run (issue 21): a Dask scheduler or worker lost mid-sweep, bad --dask addresses, --jobs far above
the cores, a full disk, two runs writing one file, an output that is a symlink or has the wrong extension, SIGTERM and
SIGINT mid-sweep. Each ends in one line (or does the right thing), with no traceback, no partial file and no process
left behind; the failures run on real processes, a real Dask cluster and a real full device or file-size limit."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from simulator.errors import CollsimError
from simulator.parallel import cap_jobs, run_cases

from .harness import REPO_ROOT, Case, run_case, run_cli

distributed = pytest.importorskip("distributed")

PY = sys.executable
# 21 cases of about 0.7 s each (256 ranks on 32 nodes): a sweep that is still running when a fault is injected
SLOW_SWEEP = ["sweep", "--op", "allreduce", "--algo", "ring", "--ranks", "256", "--sizes", "1KiB:1GiB:2",
              "--topology", "dgx-h100:nodes=32"]
FAST_SWEEP = ["sweep", "--op", "allreduce", "--algo", "ring", "--ranks", "8", "--sizes", "1KiB:4KiB:2"]
CLUSTER = """
import sys, time
from distributed import LocalCluster
with LocalCluster(n_workers=int(sys.argv[1]), threads_per_worker=1, processes=False, protocol="tcp",
                  host="127.0.0.1", dashboard_address=None) as cluster:
    print(cluster.scheduler_address, flush=True)
    time.sleep(120)
"""


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(REPO_ROOT))


class Cluster:
    """A Dask scheduler (and `workers` worker threads) in a process of its own session, to be killed at will."""

    def __init__(self, workers: int = 1):
        self.proc = subprocess.Popen([PY, "-c", CLUSTER, str(workers)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     start_new_session=True, text=True, env=_env())
        self.address = self.proc.stdout.readline().strip()
        assert self.address.startswith("tcp://"), "the cluster did not start"

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


@pytest.fixture(scope="module")
def cluster():
    """A real LocalCluster: one worker process, in the test's process group (not the command's)."""
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as local:
        yield local.scheduler_address


@pytest.mark.slow
def test_scheduler_killed_mid_sweep_is_one_line_and_no_file(tmp_path):
    lost = Cluster()
    try:
        timer = threading.Timer(5.0, lost.kill)  # imports take ~2 s on a loaded machine, the sweep ~15 s of work
        timer.start()
        case = Case("scheduler-lost", [*SLOW_SWEEP, "--dask", lost.address, "--csv", "out.csv"], field="dask",
                    value=repr(lost.address), accepted="expected a Dask cluster that stays up for the whole run",
                    outputs=["out.csv"], mode="subprocess", timeout_s=15)
        result = run_case(case, tmp_path)
        timer.join()
    finally:
        lost.kill()
    assert "lost the scheduler" in result.last_line and len(result.stderr.splitlines()) == 1
    assert result.seconds < 5.0 + 3.0, f"{result.seconds:.1f} s: the loss took more than 3 s to report"


@pytest.mark.slow
def test_worker_killed_mid_run_fails_once_no_worker_is_left(monkeypatch):
    """A worker process (no nanny to restart it) killed mid-run: once the scheduler has had no worker for
    NO_WORKERS_S the run fails in one CollsimError instead of waiting forever."""
    from app.commands.sweep import sweep_case
    from simulator import parallel

    monkeypatch.setattr(parallel, "NO_WORKERS_S", 2.0)
    with distributed.LocalCluster(n_workers=0, dashboard_address=None, processes=False, protocol="tcp",
                                  host="127.0.0.1") as scheduler:
        worker = subprocess.Popen([PY, "-m", "distributed.cli.dask_worker", scheduler.scheduler_address, "--no-nanny",
                                   "--nthreads", "1", "--no-dashboard"], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, start_new_session=True, env=_env())
        try:
            with distributed.Client(scheduler.scheduler_address, set_as_default=False) as client:
                client.wait_for_workers(1, timeout=30)
            threading.Timer(2.0, os.killpg, (worker.pid, signal.SIGKILL)).start()
            start = time.monotonic()
            with pytest.raises(CollsimError, match="dask: lost the scheduler or its workers at .*no worker for 2 s"):
                run_cases(sweep_case, _slow_cases(), dask=scheduler.scheduler_address)
            assert time.monotonic() - start < 2.0 + 2.0 + 4.0  # kill, grace, polling and teardown
        finally:
            worker.kill()
            worker.wait()


@pytest.mark.slow
def test_frozen_scheduler_mid_run_is_lost_after_answer_s(monkeypatch):
    """SIGSTOP on the scheduler's process: its TCP connection stays open, so only a question that gets no answer
    tells; the run fails once the scheduler has been silent for ANSWER_S."""
    from app.commands.sweep import sweep_case
    from simulator import parallel

    monkeypatch.setattr(parallel, "ANSWER_S", 2.0)
    frozen = Cluster()
    try:
        threading.Timer(1.5, os.killpg, (frozen.proc.pid, signal.SIGSTOP)).start()
        start = time.monotonic()
        with pytest.raises(CollsimError, match="mid-run [(]the scheduler did not answer for 2 s[)]"):
            run_cases(sweep_case, _slow_cases(), dask=frozen.address)
        assert time.monotonic() - start < 1.5 + 1.0 + 2.0 + 3.0  # freeze, poll, silence, closing
    finally:
        frozen.kill()


def _slow_cases() -> list[tuple]:

    from collsim.machine import MachineSetup

    machine = MachineSetup(topology="dgx-h100:nodes=32")
    return [(machine, 256, "allreduce", "ring", 1 << k, "float32", 0, ()) for k in range(10, 31)]


BAD_ADDRESSES = [
    ("port-not-a-number", "tcp://foo:bar", "is not a scheduler address"),
    ("port-out-of-range", "tcp://127.0.0.1:70000", "port 1..65535"),
    ("unknown-scheme", "http://127.0.0.1:8786", "is not a scheduler address"),
    ("in-process-address", "inproc://192.0.2.2/1/1", "is not a scheduler address"),
    ("nothing-listening", "tcp://127.0.0.1:9", "cannot reach a scheduler"),
    ("tls-without-its-settings", "tls://127.0.0.1:9", "cannot connect to a scheduler"),  # Client() raises TypeError
]


@pytest.mark.parametrize("name, address, words", BAD_ADDRESSES, ids=[b[0] for b in BAD_ADDRESSES])
def test_bad_dask_address_is_one_line_without_a_late_traceback(tmp_path, name, address, words):
    """In a fresh interpreter, so that a Client left half-built would print its __del__ traceback at exit."""
    case = Case(name, [*FAST_SWEEP, "--dask", address, "--csv", "out.csv"], field="dask", value=repr(address),
                accepted="tcp://127.0.0.1:8786", outputs=["out.csv"], mode="subprocess")
    result = run_case(case, tmp_path)
    assert words in result.last_line and len(result.stderr.splitlines()) == 1


def test_dask_help_says_the_cluster_must_be_trusted(tmp_path):
    for command in ("sweep", "whatif", "scale"):
        out = run_cli([command, "--help"], tmp_path).stdout
        assert "Only a cluster you trust" in " ".join(out.split()) and "unpickled" in out, command


def test_jobs_above_the_cores_is_capped_with_one_note(capsys):
    cores = len(os.sched_getaffinity(0))
    pids = run_cases(_pid, range(40), jobs=10000)
    assert 1 <= len(set(pids)) <= cores  # never more worker processes than cores
    assert capsys.readouterr().err.count("collsim: note: jobs: 10000 capped at") == 1
    assert cap_jobs(10000, 142) == cores and cap_jobs(10000, 1) == 1 and cap_jobs(None, 142) == cores


def _pid(_: int) -> int:
    time.sleep(0.01)
    return os.getpid()


@pytest.mark.parametrize("jobs, cases", [(10000, 3), (3, 1)])
def test_sweep_says_in_one_line_when_jobs_is_capped(tmp_path, jobs, cases):
    cores = len(os.sched_getaffinity(0))
    sizes = "1KiB:4KiB:2" if cases == 3 else "1KiB"  # 1 KiB, 2 KiB, 4 KiB or 1 KiB alone; one algorithm
    result = run_cli([*FAST_SWEEP[:-2], "--sizes", sizes, "--jobs", str(jobs), "--json"], tmp_path, mode="subprocess")
    assert result.status == 0, result.stderr
    use = min(jobs, cores, cases)
    notes = [line for line in result.stderr.splitlines() if "capped" in line]
    why = f"the {cores} core{'s' * (cores > 1)} this process may use" if use == cores else f"{cases} case{'s' * (cases > 1)}"
    assert notes == [f"collsim: note: jobs: {jobs} capped at {use} ({why})"]


@pytest.mark.parametrize("jobs", [[], ["--jobs", "1"]], ids=["left-out", "one"])
def test_no_note_when_jobs_is_left_out_or_fits(tmp_path, jobs):
    result = run_cli([*FAST_SWEEP, *jobs, "--json"], tmp_path, mode="subprocess")
    assert result.status == 0 and result.stderr == ""


def _run_limited(argv: list[str], cwd: Path, fsize: int | None = None, stdout=subprocess.PIPE) -> subprocess.CompletedProcess:
    """The CLI in a fresh process, with RLIMIT_FSIZE at `fsize` bytes: a write past it fails with EFBIG (Python ignores
    SIGXFSZ), as a write on a full disk fails with ENOSPC."""
    def limit() -> None:
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    return subprocess.run([PY, "-m", "app.cli", *argv], cwd=cwd, env=_env(), preexec_fn=limit, stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=60)


def test_a_write_past_the_file_size_limit_is_one_line_and_leaves_the_old_file(tmp_path):
    draw = ["draw", "--op", "allreduce", "--algo", "ring", "--ranks", "16", "-o", "ring.svg"]
    (tmp_path / "ring.svg").write_text("old")
    done = _run_limited(draw, tmp_path, fsize=4096)  # the SVG is ~100 KiB
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines() == ["collsim: error: output: cannot write 'ring.svg': File too large; expected a "
                                        "writable file path with room for it"]
    assert "wrote" not in done.stdout  # never claimed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ring.svg"] and (tmp_path / "ring.svg").read_text() == "old"
    done = _run_limited(draw, tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("wrote ring.svg: ")
    assert "<svg" in (tmp_path / "ring.svg").read_text()[:200]


ON_TINY_DISK = """
mount -t tmpfs -o size=64k tmpfs disk || exit 99
echo old > disk/ring.svg
"$PY" -m app.cli draw --op allreduce --algo ring --ranks 16 -o disk/ring.svg > out.txt 2> err.txt
echo $? > rc.txt
ls -A disk > ls.txt
cp disk/ring.svg kept.txt
"$PY" -m app.cli simulate --op allreduce --algo ring --ranks 7 --size 1MiB --trace disk/t.json \
    --export disk/x.json > out2.txt 2> err2.txt
echo $? > rc2.txt
ls -A disk > ls2.txt
"""


def test_a_real_full_filesystem_is_one_line_and_no_file(tmp_path):
    """A 64 KiB tmpfs in a private mount namespace (unshare: nothing to unmount, nothing seen outside); skipped
    where namespaces or mounts are not allowed."""
    (tmp_path / "disk").mkdir()
    done = subprocess.run(["unshare", "-Urm", "sh", "-c", ON_TINY_DISK], cwd=tmp_path, env=dict(_env(), PY=PY),
                          capture_output=True, text=True, timeout=120)
    if done.returncode == 99 or not (tmp_path / "rc.txt").exists():
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()[:200]}")
    read = lambda name: (tmp_path / name).read_text()  # noqa: E731
    assert read("rc.txt").strip() == "2" and read("err.txt").splitlines() == [
        "collsim: error: output: cannot write 'disk/ring.svg': No space left on device; expected a writable file path "
        "with room for it"]
    assert "wrote" not in read("out.txt") and read("ls.txt").split() == ["ring.svg"] and read("kept.txt") == "old\n"
    # the trace (48 KB) fits in the 60 KB left, the export after it (22 KB) does not: neither is written
    assert read("rc2.txt").strip() == "2" and read("err2.txt").splitlines() == [
        "collsim: error: output: cannot write 'disk/x.json': No space left on device; expected a writable file path "
        "with room for it"]
    assert read("ls2.txt").split() == ["ring.svg"] and "wrote" not in read("out2.txt")


def test_stdout_on_a_full_device_is_one_line_and_writes_no_file(tmp_path):
    """/dev/full: every write fails with ENOSPC. The table is printed before the CSV is written, so no CSV."""
    with open("/dev/full", "w") as full:
        done = _run_limited([*FAST_SWEEP, "--csv", "out.csv"], tmp_path, stdout=full)
    assert done.returncode == 2 and "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    assert done.stderr.splitlines() == ["collsim: error: output: cannot write the results: No space left on device "
                                        "(ENOSPC); expected a disk with room for them"]
    assert list(tmp_path.iterdir()) == []


def _cpu_seconds(pid: int) -> float:
    """CPU seconds a running process has used (/proc/PID/stat utime + stime); 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.slow
def test_two_sweeps_on_one_csv_the_later_one_refuses(tmp_path):
    """A slow sweep checks out.csv at its start; a fast one started later writes it first; the slow one must then
    refuse, naming the file, and leave the fast one's rows (it would otherwise silently replace them)."""
    def start(argv: list[str]) -> subprocess.Popen:
        return subprocess.Popen([PY, "-m", "app.cli", *argv, "--csv", "out.csv", "--jobs", "1"], cwd=tmp_path,
                                env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    slow = start(SLOW_SWEEP[:-4] + ["--sizes", "1MiB:1GiB:2", "--topology", "dgx-h100:nodes=32"])  # 11 cases, ~8 s
    deadline = time.monotonic() + 60
    while _cpu_seconds(slow.pid) < 1.5 and slow.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)  # past its imports (~0.3 s of CPU) and output checks: it is simulating, whatever the load
    fast = start(FAST_SWEEP)
    fast_out, fast_err = fast.communicate(timeout=60)
    slow_out, slow_err = slow.communicate(timeout=60)
    assert fast.returncode == 0, fast_err
    assert slow.returncode == 2, f"the slow sweep did not refuse:\n{slow_err}"
    assert slow_err.splitlines() == ["collsim: error: csv: 'out.csv' was changed by another process while this run "
                                     "worked; not overwritten and no output file written; expected an output file no "
                                     "other run writes meanwhile (run again, or give another path)"]
    rows = (tmp_path / "out.csv").read_text().splitlines()
    assert [r.split(",")[1] for r in rows[1:]] == ["1024", "2048", "4096"]  # the fast sweep's sizes, not 1..64 MiB
    assert "wrote" not in slow_out and sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]


def test_sequential_runs_still_replace_the_file(tmp_path):
    for sizes in ("1KiB:4KiB:2", "1KiB:16KiB:4"):
        assert run_cli([*FAST_SWEEP[:-2], "--sizes", sizes, "--csv", "out.csv", "--jobs", "1"], tmp_path).status == 0
    assert len((tmp_path / "out.csv").read_text().splitlines()) == 1 + 3


def test_output_through_a_symlink_writes_the_target_and_keeps_the_link(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "real.csv").write_text("old\n")
    (tmp_path / "link.csv").symlink_to("data/real.csv")
    (tmp_path / "dangling.csv").symlink_to("data/new.csv")
    for link in ("link.csv", "dangling.csv"):
        result = run_cli([*FAST_SWEEP, "--csv", link, "--jobs", "1"], tmp_path)
        assert result.status == 0, result.stderr
        assert (tmp_path / link).is_symlink() and f"# wrote {link}" in result.stdout
    assert (tmp_path / "data" / "real.csv").read_text().startswith("algorithm,")
    assert (tmp_path / "data" / "new.csv").read_text() == (tmp_path / "data" / "real.csv").read_text()
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == ["new.csv", "real.csv"]  # no temporary left


EXTENSION_CASES = [
    Case("simulate-export-txt", ["simulate", "--op", "allreduce", "--algo", "ring", "--ranks", "4", "--size", "1KiB",
                                 "--export", "x.txt"], field="export", value="'x.txt'", accepted=".csv, .json",
         outputs=["x.txt"]),
    Case("calibrate-out-txt", ["calibrate", "--out", "x.txt"], field="out", value="'x.txt'", accepted=".yaml, .yml, .json",
         outputs=["x.txt"]),
    Case("draw-output-png", ["draw", "--op", "allreduce", "--algo", "ring", "--ranks", "4", "-o", "x.png"],
         field="output", value="'x.png'", accepted=".svg", outputs=["x.png"]),
    Case("sweep-csv-json", [*FAST_SWEEP, "--csv", "rows.json"], field="csv", value="'rows.json'", accepted=".csv",
         outputs=["rows.json"]),
    Case("sweep-nccl-log-csv", [*FAST_SWEEP, "--nccl-log", "log.csv"], field="nccl-log", value="'log.csv'",
         accepted=".txt, .log", outputs=["log.csv"]),
    Case("predict-csv-txt", ["predict", "--preset", "dgx-h100", "--size", "4KiB", "--csv", "tuner.txt"], field="csv",
         value="'tuner.txt'", accepted=".csv, .conf", outputs=["tuner.txt"]),
    Case("export-msccl-json", ["export-msccl", "--op", "allreduce", "--algo", "ring", "--ranks", "4", "-o", "x.json"],
         field="output", value="'x.json'", accepted=".xml", outputs=["x.json"]),
    Case("scale-html-json", ["scale", "ddp", "--gpus", "8:16", "--html", "chart.json"], field="html",
         value="'chart.json'", accepted=".html, .htm", outputs=["chart.json"]),
    Case("scenario-out-txt", ["scenario", "ddp", "--gpus", "8", "--out", "p.txt"], field="out", value="'p.txt'",
         accepted=".yaml, .yml, .json", outputs=["p.txt"]),
    Case("existing-file-kept", [*FAST_SWEEP, "--csv", "rows.txt"], field="csv", value="'rows.txt'", accepted=".csv",
         outputs=["rows.txt"], preexisting=True),
]


@pytest.mark.parametrize("case", EXTENSION_CASES, ids=[c.id for c in EXTENSION_CASES])
def test_output_extension_must_match_the_format_written(case, tmp_path):
    result = run_case(case, tmp_path)
    assert "but the file written is" in result.last_line


def test_every_output_option_has_its_format():
    """A new output option must say which extensions it writes (app/preflight.py OUTPUT_FORMATS)."""
    import argparse

    from app.cli import _leaves, build_parser
    from app.preflight import OUTPUT_FORMATS, output_fields

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    missing = [(name, dest) for name, choice in _leaves(sub) for dest in output_fields(choice)
               if (name, dest) not in OUTPUT_FORMATS]
    assert not missing
    assert len(OUTPUT_FORMATS) >= 18


def test_an_output_without_an_extension_is_still_written(tmp_path):
    result = run_cli([*FAST_SWEEP, "--csv", "rows", "--jobs", "1"], tmp_path)
    assert result.status == 0 and (tmp_path / "rows").read_text().startswith("algorithm,")


SIGNALS = [(signal.SIGTERM, "terminated (SIGTERM)", 143), (signal.SIGINT, "interrupted (SIGINT)", 130)]


@pytest.mark.slow
@pytest.mark.parametrize("signum, words, status", SIGNALS, ids=["SIGTERM", "SIGINT"])
@pytest.mark.parametrize("where", ["jobs", "dask"])
def test_signal_mid_sweep_stops_within_a_second(tmp_path, cluster, signum, words, status, where):
    """The harness checks no process is left in the command's group (the pool's workers) and no output file."""
    delay = 5.0  # past the imports (~2 s on a loaded machine) and well into the sweep (~15 s of work)
    parallel = ["--jobs", "2"] if where == "jobs" else ["--dask", cluster]
    case = Case(f"{where}-{signum.name}", [*SLOW_SWEEP, *parallel, "--csv", "out.csv"], field=words.split()[0],
                accepted="no output file written", outputs=["out.csv"], mode="subprocess", signal=(signum, delay),
                timeout_s=15)
    result = run_case(case, tmp_path)
    assert words in result.last_line and result.status == status
    assert result.seconds - delay < 1.0 + 0.5, f"{result.seconds - delay:.2f} s after the signal"  # 0.5 s: load
    if where == "dask":  # the cluster's workers are not ours to stop, but the scheduler must drop the run's tasks
        with distributed.Client(cluster, set_as_default=False) as client:
            deadline = time.monotonic() + 3.0
            while client.run_on_scheduler(_task_count) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert client.run_on_scheduler(_task_count) == 0


def _task_count(dask_scheduler) -> int:
    return len(dask_scheduler.tasks)
