"""Starting worlds of P processes: local (torch.multiprocessing, gloo or NCCL) or under torchrun (env://).

Every wait inside a world has a timeout; when a rank times out, or when no rank makes progress
for longer than the timeout, the world is torn down (SIGTERM, then SIGKILL) and the caller gets
one CollsimError naming the stuck rank, its step and the peer it waited for. SIGTERM or SIGINT to
the parent tears the world down too (and removes its temporary directory) before the parent goes;
a rank whose parent is gone exits on its own.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import signal
import tempfile
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from simulator.errors import CollsimError

from .board import COLLECTIVE, FINISHED, Board, blame

BACKENDS = ("gloo", "nccl")
_LAST_PIDS: list[int] = []  # pids of the last local world started (tests check that none outlives it)
GRACE_S = 3.0  # extra seconds the parent allows beyond the per-wait timeout before it declares a hang
ORPHAN_POLL_S = 0.5  # how often a rank checks that its parent is still there


class HangError(RuntimeError):
    """A rank waited longer than the timeout for a peer."""

    def __init__(self, rank: int, step: int, transfer: int, peer: int, what: str, timeout: float):
        self.rank, self.step, self.transfer, self.peer, self.what, self.timeout = rank, step, transfer, peer, what, timeout
        super().__init__(f"rank {rank} timed out after {timeout:g} s at step {step} (transfer #{transfer}) "
                         f"waiting {what} rank {peer}")


@dataclass
class World:
    """What a job running on one rank knows about its world."""

    rank: int
    ranks: int
    backend: str
    timeout: float
    board: Board
    local_rank: int = 0

    @property
    def device(self):
        """The torch device this rank's tensors live on."""
        import torch

        return torch.device("cuda", self.local_rank) if self.backend == "nccl" else torch.device("cpu")

    def collective(self, fn: Callable[[], Any]) -> Any:
        """Run a native collective call, marked on the board so a hang inside it is named."""
        self.board.set(self.rank, COLLECTIVE)
        out = fn()
        self.board.beat(self.rank)
        return out


def check_backend(backend: str, ranks: int) -> None:
    """Raise a clear error when the backend cannot run `ranks` local processes here."""
    if backend not in BACKENDS:
        raise CollsimError(f"backend: unknown backend {backend!r}; expected one of {', '.join(BACKENDS)}")
    if backend == "nccl":
        import torch

        have = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if have < ranks:
            raise CollsimError(f"backend: nccl needs one GPU per rank; {ranks} ranks asked, {have} GPUs visible "
                               f"(use --backend gloo on CPU)")


def in_torchrun() -> bool:
    """True when this process was started by torchrun (RANK and WORLD_SIZE in the environment)."""
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ and "MASTER_ADDR" in os.environ


def _init(backend: str, rank: int, ranks: int, init_method: str, timeout: float) -> None:
    import torch
    import torch.distributed as dist

    warnings.filterwarnings("ignore", category=FutureWarning, module="torch")  # renamed-API notices in every rank's stderr
    torch.set_num_threads(1)  # P processes share the cores; intra-op threads would fight each other
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)) % max(torch.cuda.device_count(), 1))
    dist.init_process_group(backend, init_method=init_method, rank=rank, world_size=ranks, timeout=timedelta(seconds=timeout))


def _child(job, rank: int, ranks: int, backend: str, init_method: str, timeout: float, results, array, args) -> None:
    """Entry point of one spawned rank: initialise, run the job, report, exit without lingering."""
    board = Board(ranks, array)
    _exit_when_orphaned(os.getppid())
    try:
        _init(backend, rank, ranks, init_method, timeout)
        board.beat(rank)
        out = job(World(rank, ranks, backend, timeout, board, local_rank=rank), *args)
        board.set(rank, FINISHED)
        results.put(("ok", rank, out))
        import torch.distributed as dist

        dist.destroy_process_group()
    except HangError as exc:
        results.put(("hang", rank, str(exc)))
    except CollsimError as exc:
        results.put(("error", rank, str(exc)))
    except BaseException as exc:  # report anything to the parent rather than dying silently
        tail = "".join(traceback.format_exception(exc)[-3:]).strip().replace("\n", " | ")
        text = str(exc).lower()
        # a timeout or a peer's closed connection is a consequence of a hang or a crash elsewhere
        consequence = ("timed out", "timeout", "connection closed", "connection reset", "pair closure", "read error",
                       "broken pipe", "socket closed")
        kind = "hang" if any(k in text for k in consequence) else "error"
        results.put((kind, rank, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''} [{tail[-400:]}]"))
    finally:
        results.close()
        results.join_thread()
        os._exit(0)  # a broken process group can block in its destructor; the parent has what it needs


def _exit_when_orphaned(parent: int) -> None:
    """Exit this rank as soon as its parent is gone (killed, say, by SIGKILL), rather than when its waits time out."""
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(ORPHAN_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="collsim-orphan-watch", daemon=True).start()


class _Terminated(BaseException):
    """SIGTERM arrived while a local world ran."""


@contextmanager
def _unwind_on_signals() -> Iterator[None]:
    """While a world runs, SIGTERM and SIGINT unwind this process, so its ranks are stopped and its files removed,
    instead of ending it on the spot. Afterwards SIGINT goes on as KeyboardInterrupt and SIGTERM is delivered again
    to the handler there was before (by default: the process ends of it). Only the main thread can do this."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []

    def unwind(signum, frame) -> None:
        if caught:  # already unwinding: let the clean-up finish
            return
        caught.append(signum)
        raise KeyboardInterrupt if signum == signal.SIGINT else _Terminated()

    previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    for s, handler in previous.items():
        if handler is not signal.SIG_IGN:
            signal.signal(s, unwind)
    try:
        yield
    except _Terminated:
        pass
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)
    if caught == [signal.SIGTERM]:
        os.kill(os.getpid(), signal.SIGTERM)
        raise CollsimError("verify: stopped by SIGTERM; every rank was stopped")  # reached only where a handler lets us live


def run_local(job: Callable[..., Any], ranks: int, backend: str = "gloo", timeout: float = 30.0, args: tuple = ()) -> list[Any]:
    """Run `job(world, *args)` on `ranks` fresh local processes; return each rank's result (rank order).

    `job` must be a module-level function (it is pickled by name). A rank that fails, times out
    or dies makes this raise CollsimError after every process is gone.
    """
    check_backend(backend, ranks)
    if timeout <= 0:
        raise CollsimError(f"timeout: {timeout} s; expected a number of seconds > 0")
    ctx = mp.get_context("spawn")
    with _unwind_on_signals(), tempfile.TemporaryDirectory(prefix="collsim-verify-") as tmp:
        results = ctx.Queue()
        array = ctx.Array("q", ranks * 5, lock=False)
        board = Board(ranks, array)
        init_method = f"file://{os.path.join(tmp, 'store')}"
        procs = [ctx.Process(target=_child, args=(job, r, ranks, backend, init_method, timeout, results, array, args),
                             daemon=True, name=f"collsim-rank{r}") for r in range(ranks)]
        _LAST_PIDS.clear()
        try:
            for proc in procs:
                proc.start()
                _LAST_PIDS.append(proc.pid)
            outcome = _collect(procs, results, board, timeout)
        finally:
            _stop([proc for proc in procs if proc.pid is not None])
            results.close()
    return outcome


def _collect(procs, results, board: Board, timeout: float) -> list[Any]:
    """Gather every rank's result, or raise once one fails, dies or the world stops making progress."""
    ranks = len(procs)
    done: dict[int, Any] = {}
    failures: dict[int, tuple[str, str]] = {}
    last_beats, last_change = board.beats(), time.monotonic()
    while len(done) < ranks:
        try:
            kind, rank, payload = results.get(timeout=0.2)
        except queue.Empty:
            now = time.monotonic()
            beats = board.beats()
            if beats != last_beats:
                last_beats, last_change = beats, now
            dead = [p for r, p in enumerate(procs) if r not in done and p.exitcode not in (None, 0)]
            if dead:
                failures.update({int(p.name.removeprefix("collsim-rank")): ("error", f"died with exit code {p.exitcode}") for p in dead})
                break
            if now - last_change > timeout + GRACE_S + 60.0 * (max(last_beats) == 0):  # first beat waits for startup
                failures[-1] = ("hang", f"no rank made progress for {timeout + GRACE_S:g} s")
                break
            continue
        if kind == "ok":
            done[rank] = payload
            continue
        failures[rank] = (kind, payload)
        deadline = time.monotonic() + min(GRACE_S, timeout)  # let the other ranks report what they saw
        while time.monotonic() < deadline and len(done) + len(failures) < ranks:
            try:
                kind, rank, payload = results.get(timeout=0.1)
            except queue.Empty:
                continue
            if kind == "ok":
                done[rank] = payload
            else:
                failures[rank] = (kind, payload)
        break
    if failures:
        raise CollsimError(_diagnose(failures, board))
    return [done[r] for r in range(ranks)]


def _diagnose(failures: dict[int, tuple[str, str]], board: Board) -> str:
    """One line: a rank's own error first (others time out because of it), else the root of the hang from the board."""
    errors = {r: msg for r, (kind, msg) in failures.items() if kind == "error" and r >= 0}
    if errors:
        rank = min(errors)
        return f"rank {rank}: {errors[rank]}"
    hangs = {r: msg for r, (kind, msg) in failures.items() if kind == "hang"}
    if hangs:
        cause = blame(board)
        first = hangs[min(hangs)] if min(hangs) >= 0 else next(iter(hangs.values()))
        return f"hang: {cause}" if cause else f"hang: {first}"
    rank = min(failures)
    return f"rank {rank}: {failures[rank][1]}"


def _stop(procs) -> None:
    """Terminate, then kill, then reap every process of the world."""
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    deadline = time.monotonic() + 3.0
    for proc in procs:
        proc.join(max(0.0, deadline - time.monotonic()))
    for proc in procs:
        if proc.is_alive():
            proc.kill()
            proc.join(2.0)


def run_torchrun(job: Callable[..., Any], backend: str = "gloo", timeout: float = 30.0, args: tuple = ()) -> tuple[int, Any]:
    """Run `job` in this process as one rank of a torchrun world (env:// init); return (rank, result)."""
    rank, ranks = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    try:
        check_backend(backend, int(os.environ.get("LOCAL_WORLD_SIZE", local_rank + 1)))
    except CollsimError as exc:
        raise CollsimError(f"rank {rank}: {exc}") from None
    _init(backend, rank, ranks, "env://", timeout)
    try:
        out = job(World(rank, ranks, backend, timeout, Board(ranks), local_rank=local_rank), *args)
    except HangError as exc:
        raise CollsimError(f"hang: {exc}") from None
    import torch.distributed as dist

    dist.destroy_process_group()
    return rank, out
