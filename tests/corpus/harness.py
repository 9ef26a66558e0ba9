"""A table-driven runner for bad-input cases of the `collsim` command line.

Each `Case` names an argv (without the leading `collsim`), the files to write into its own working
directory first, and what the one-line refusal must say. `run_case(case, tmp_path)` runs it and asserts,
for every case:

- the exit status is non-zero;
- stderr holds no "Traceback", and its last line is one line starting with "collsim: error:" (or
  argparse's "collsim COMMAND: error:") that contains `field` (case-insensitive) and, when given,
  `value` and `accepted` (verbatim);
- no file in the working directory was created, changed or removed, every path in `outputs` is absent
  afterwards (or, with `preexisting=True`, was pre-created with sentinel content and is unchanged);
- it finished within `timeout_s` (10 s; past it the whole process group is killed and the case fails);
- it stayed under 2 GiB: in fork mode RLIMIT_AS is set to the child's VmSize at fork + 2 GiB, and in both
  modes the peak RSS (from wait4) above the starting RSS must stay under 2 GiB;
- no process is left behind: the command runs as the leader of a new session, and its process group
  must hold no running process once it has exited (leftovers are killed, and the case fails; zombies
  that wait for init to reap them have exited and do not count);
- no temporary file or directory is left: TMPDIR points at a fresh empty directory that must still be
  empty afterwards.

Two modes. 'fork' (default, fast): fork the pytest process; the child starts a session, chdirs to the
case directory, sets TMPDIR and the memory limit, sends fds 0/1/2 to /dev/null and two files, calls
`app.cli.main(argv)` and leaves with `os._exit(status)` (argparse's SystemExit gives the status; any
other exception prints its traceback and exits 70, which the traceback check then reports).
'subprocess': the child execs `python -m app.cli ARGV` with this checkout first on PYTHONPATH, for
cases that need a fresh interpreter (torch, worker processes, signals). `signal=(SIGNUM, DELAY_S)`
sends SIGNUM to the command's process (not its group) DELAY_S seconds after it starts.

`run_cli(argv, workdir, ...)` runs any command line the same way and returns a `Result`, for tests of
accepted inputs.
"""

from __future__ import annotations

import os
import re
import resource
import signal as _signal
import sys
import time
from dataclasses import dataclass
from dataclasses import field as _field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 10.0
MEMORY_LIMIT = 2 * 2**30
SENTINEL = b"collsim corpus sentinel: must stay unchanged\n"
ERROR_LINE = re.compile(r"^collsim(?: [\w-]+)*: error: ")


@dataclass(frozen=True)
class Case:
    """One bad input and what its refusal must say."""

    id: str
    argv: list[str]
    field: str  # the error line must name it (case-insensitive)
    value: str | None = None  # the error line must quote it
    accepted: str | None = None  # the error line must contain it (what is accepted, or the limit)
    files: dict[str, bytes | str] = _field(default_factory=dict)  # written into the case directory first
    outputs: list[str] = _field(default_factory=list)  # paths the command would write
    preexisting: bool = False  # pre-create `outputs` with sentinel content (they must stay unchanged)
    mode: str = "fork"  # 'fork' or 'subprocess'
    signal: tuple[int, float] | None = None  # (signal number, seconds after start) sent to the command
    timeout_s: float = TIMEOUT_S

    @property
    def command(self) -> str:
        """The subcommand, for counting cases."""
        return self.argv[0] if self.argv else "(none)"


@dataclass
class Result:
    """What one run did."""

    status: int  # exit status, or -N when killed by signal N
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool
    peak_rss_above_start: int  # bytes
    leftover_processes: list[str]  # 'PID command line' of each process still in the group (then killed)
    leftover_tmp: list[str]
    cpu_seconds: float = 0.0  # user + system time of the command's process (its waited-for children included)

    @property
    def last_line(self) -> str:
        lines = [line for line in self.stderr.splitlines() if line.strip()]
        return lines[-1] if lines else ""


def _rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def _vm_size() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _child(argv: list[str], workdir: Path, tmpdir: Path, out: Path, err: Path, mode: str) -> None:
    """In the forked child: never returns."""
    status = 70
    try:
        os.setsid()
        os.chdir(workdir)
        os.environ["TMPDIR"] = str(tmpdir)
        fd_in = os.open(os.devnull, os.O_RDONLY)
        fd_out = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        fd_err = os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd_in, 0)
        os.dup2(fd_out, 1)
        os.dup2(fd_err, 2)
        _signal.signal(_signal.SIGINT, _signal.default_int_handler)  # not ignored, even under a background shell
        if mode == "subprocess":
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
            os.execve(sys.executable, [sys.executable, "-m", "app.cli", *argv], env)
        import tempfile

        tempfile.tempdir = None  # recomputed from TMPDIR
        limit = _vm_size() + MEMORY_LIMIT
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        sys.stdin = open(0, closefd=False)  # noqa: SIM115
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
        _signal.signal(_signal.SIGTERM, _signal.SIG_DFL)
        from app.cli import main

        try:
            status = int(main(argv) or 0)
        except SystemExit as exc:
            code = exc.code
            status = code if isinstance(code, int) else (0 if code is None else 1)
    except BaseException:  # noqa: BLE001 - reported through stderr and the exit status
        import traceback

        traceback.print_exc()
        status = 70
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(status)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _group_members(pgid: int) -> list[str]:
    """'PID command line' of every process in the group (for the failure message)."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                members.append(f"{entry} [{fields[0]}] {cmd.strip()[:200]}")
        except (OSError, IndexError, ValueError):
            continue
    return members


def _running(members: list[str]) -> list[str]:
    """Members that have not exited (a zombie, '[Z]', has: it only waits for init to reap it)."""
    return [m for m in members if " [Z] " not in m]


def run_cli(argv: list[str], workdir: Path, tmpdir: Path | None = None, mode: str = "fork",
            timeout_s: float = TIMEOUT_S, signal: tuple[int, float] | None = None) -> Result:
    """Run `collsim ARGV` in `workdir` with TMPDIR=`tmpdir` (a fresh one beside workdir if None)."""
    workdir = Path(workdir)
    if tmpdir is None:
        tmpdir = workdir.parent / f"{workdir.name}-tmp"
        tmpdir.mkdir(exist_ok=True)
    logs = workdir.parent / f"{workdir.name}-logs"
    logs.mkdir(exist_ok=True)
    out, err = logs / "stdout", logs / "stderr"
    if mode == "fork":
        import app.cli  # noqa: F401  - imported once here, so that every forked child starts with it loaded
    start_rss = _rss_bytes() if mode == "fork" else 0
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(argv, workdir, tmpdir, out, err, mode)
    status, rusage, timed_out, signalled = None, None, False, False
    while True:
        done, wait_status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            status, rusage = os.waitstatus_to_exitcode(wait_status), usage
            break
        elapsed = time.monotonic() - start
        if signal is not None and not signalled and elapsed >= signal[1]:
            os.kill(pid, signal[0])
            signalled = True
        if elapsed > timeout_s:
            timed_out = True
            os.killpg(pid, _signal.SIGKILL)
            _, wait_status, rusage = os.wait4(pid, 0)
            status = os.waitstatus_to_exitcode(wait_status)
            break
        time.sleep(0.005)
    seconds = time.monotonic() - start
    leftover: list[str] = []
    deadline = time.monotonic() + 0.5  # grace for children that are already exiting
    while _group_alive(pid) and _running(_group_members(pid)):
        if time.monotonic() > deadline:
            leftover = _running(_group_members(pid))
            os.killpg(pid, _signal.SIGKILL)
            break
        time.sleep(0.01)
    return Result(status=status, stdout=out.read_text(errors="replace"), stderr=err.read_text(errors="replace"),
                  seconds=seconds, timed_out=timed_out, peak_rss_above_start=rusage.ru_maxrss * 1024 - start_rss,
                  leftover_processes=leftover, leftover_tmp=sorted(os.listdir(tmpdir)),
                  cpu_seconds=rusage.ru_utime + rusage.ru_stime)


def _snapshot(root: Path) -> dict[str, tuple[int, bytes | None]]:
    """Every path under root with its mode and (for files) content."""
    snap = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        snap[str(path.relative_to(root))] = (st.st_mode, path.read_bytes() if path.is_file() and not path.is_symlink() else None)
    return snap


def prepare(case: Case, tmp_path: Path) -> tuple[Path, Path]:
    """The case directory with its files and pre-existing outputs, and an empty TMPDIR."""
    workdir, tmpdir = tmp_path / "work", tmp_path / "tmp"
    workdir.mkdir()
    tmpdir.mkdir()
    for name, content in case.files.items():
        path = workdir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    if case.preexisting:
        for name in case.outputs:
            path = workdir / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(SENTINEL)
    return workdir, tmpdir


def run_case(case: Case, tmp_path: Path) -> Result:
    """Run one bad-input case and assert everything the module docstring lists."""
    workdir, tmpdir = prepare(case, tmp_path)
    before = _snapshot(workdir)
    result = run_cli(case.argv, workdir, tmpdir, mode=case.mode, timeout_s=case.timeout_s, signal=case.signal)
    shown = f"collsim {' '.join(repr(a) if not a or ' ' in a else a for a in case.argv)}\nstderr:\n{result.stderr[-3000:]}"
    assert not result.timed_out, f"ran past {case.timeout_s} s and was killed: {shown}"
    assert "Traceback" not in result.stderr, f"traceback: {shown}"
    assert result.status != 0, f"exit status 0 for bad input: {shown}\nstdout:\n{result.stdout[-2000:]}"
    last = result.last_line
    assert ERROR_LINE.match(last), f"last stderr line is not 'collsim: error: ...': {shown}"
    assert case.field.lower() in last.lower(), f"error does not name {case.field!r}: {last}"
    if case.value is not None:
        assert case.value in last, f"error does not quote {case.value!r}: {last}"
    if case.accepted is not None:
        assert case.accepted in last, f"error does not say {case.accepted!r}: {last}"
    assert result.peak_rss_above_start < MEMORY_LIMIT, f"peak RSS {result.peak_rss_above_start / 2**30:.1f} GiB above start: {shown}"
    assert not result.leftover_processes, f"processes left behind (killed now): {result.leftover_processes}: {shown}"
    assert not result.leftover_tmp, f"left in TMPDIR: {result.leftover_tmp}: {shown}"
    after = _snapshot(workdir)
    assert after == before, f"files changed: {sorted(set(after) ^ set(before)) or 'contents'}: {shown}"
    for name in case.outputs:
        path = Path(name) if os.path.isabs(name) else workdir / name
        if not name or (not os.path.isabs(name) and os.path.normpath(name) in before):
            continue  # '' or a path that existed before (a directory target): the snapshot covers it
        if case.preexisting:
            assert path.read_bytes() == SENTINEL, f"{name} was changed: {shown}"
        else:
            assert not os.path.lexists(path), f"{name} was written: {shown}"
    return result


def count_by_command(cases: list[Case]) -> dict[str, int]:
    """How many cases each subcommand has, in first-seen order."""
    counts: dict[str, int] = {}
    for case in cases:
        counts[case.command] = counts.get(case.command, 0) + 1
    return counts
