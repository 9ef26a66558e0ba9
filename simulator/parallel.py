"""Run independent cases in parallel: serially, in a pool of processes (--jobs), or on a Dask cluster (--dask).

`run_cases(fn, cases)` returns `[fn(c) for c in cases]` in the order given, whatever ran where: `fn` must be a
module-level function (it is pickled to the workers) and each case a picklable value. Results are the serial
ones exactly, because each case is computed the same way in a fresh call. A progress bar goes to stderr when
it is a terminal. A case's CollsimError comes back as itself, and the first one (in case order) is raised.

Faults end in one CollsimError, never a traceback: a bad --jobs or --dask address (checked before any work), a
scheduler that cannot be reached or is lost mid-run, a cluster left without a worker for NO_WORKERS_S. --jobs is
capped at the cores and at the cases, with a note on stderr. On SIGINT/SIGTERM the pool is terminated (the Dask
client disconnects, and the scheduler drops the run's tasks). Results from Dask are unpickled here: --dask must point
at a cluster the user trusts.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any

from .errors import CollsimError


def default_jobs() -> int:
    """All cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def check_jobs(jobs: int | None) -> int:
    """The number of processes to use: `jobs`, or every core when None; an error for anything below 1."""
    if jobs is None:
        return default_jobs()
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise CollsimError(f"jobs: {jobs!r}; expected an integer >= 1 (processes), or leave it out for every core")
    return jobs


def check_parallel(jobs: int | None, dask: str | None) -> None:
    """Refuse a bad --jobs or --dask before a command starts its work."""
    check_jobs(jobs)
    if dask is not None:
        check_dask_address(dask)


def cap_jobs(jobs: int | None, cases: int) -> int:
    """The processes to start for `cases` cases: `jobs` (every core when None), at most one per core and per case.

    A `jobs` given above that is capped with a one-line note on stderr (more processes than cores only cost memory:
    each is a copy of this one)."""
    cores = default_jobs()
    wanted = check_jobs(jobs)
    use = max(1, min(wanted, cores, cases))
    if jobs is not None and use < wanted:
        why = f"the {cores} core{'s' * (cores != 1)} this process may use" if use == cores else f"{cases} case{'s' * (cases != 1)}"
        print(f"collsim: note: jobs: {jobs} capped at {use} ({why})", file=sys.stderr)
    return use


def _bar(total: int, desc: str):
    if not sys.stderr.isatty() or total < 2:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, leave=False, file=sys.stderr)


def run_cases(fn: Callable[[Any], Any], cases: Sequence[Any], jobs: int | None = 1, dask: str | None = None,
              desc: str = "cases") -> list[Any]:
    """fn(case) for every case, in order: serially (jobs 1), in `jobs` processes, or on the Dask scheduler at `dask`."""
    cases = list(cases)
    if dask is not None:
        return _dask(fn, cases, dask, desc)
    jobs = cap_jobs(jobs, len(cases))
    bar = _bar(len(cases), desc)
    try:
        if jobs == 1:
            out = []
            for case in cases:
                out.append(fn(case))
                if bar:
                    bar.update()
            return out
        return _pool(fn, cases, jobs, bar)
    finally:
        if bar:
            bar.close()


def _worker_init() -> None:
    """Workers leave SIGINT to the parent and die quietly on SIGTERM (the parent terminates them when it stops)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _indexed(job: tuple) -> tuple[int, bool, Any]:
    fn, i, case = job
    try:
        return i, True, fn(case)
    except CollsimError as exc:
        return i, False, str(exc)


def _pool(fn: Callable, cases: list, jobs: int, bar) -> list:
    import multiprocessing

    context = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    pool = context.Pool(jobs, initializer=_worker_init)
    try:
        out: list[Any] = [None] * len(cases)
        errors: dict[int, str] = {}
        for i, ok, value in pool.imap_unordered(_indexed, [(fn, i, c) for i, c in enumerate(cases)]):
            if ok:
                out[i] = value
            else:
                errors[i] = value
            if bar:
                bar.update()
        pool.close()
        pool.join()
    except BaseException:
        pool.terminate()  # interrupted: no worker outlives the command
        pool.join()
        raise
    if errors:
        raise CollsimError(errors[min(errors)])
    return out


def _unreachable(address: str, exc: Exception) -> CollsimError:
    return CollsimError(f"dask: cannot reach a scheduler at {address!r} ({type(exc).__name__}); expected the address of "
                        "a running Dask scheduler such as tcp://127.0.0.1:8786")


def _probe(address: str) -> None:
    """Refuse at once a tcp:// (or bare HOST:PORT) address where nothing listens: Dask's client retries a refused
    connection for its whole timeout, after a second of imports. Other protocols are left to Dask."""
    import socket
    from urllib.parse import urlsplit

    text = address.strip()
    try:
        parts = urlsplit(text if "://" in text else f"tcp://{text}")
        host, port = parts.hostname, parts.port
    except ValueError:
        return  # Dask says what is wrong with it
    if parts.scheme != "tcp" or not host or port is None:
        return
    try:
        socket.create_connection((host, port), timeout=3).close()
    except OSError as exc:
        raise _unreachable(address, exc) from None


NO_WORKERS_S = 30.0  # a scheduler without a worker for this long fails the run instead of waiting forever
POLL_S = 1.0
CONNECT_S = 3  # seconds to reach the scheduler
ANSWER_S = 20.0  # a scheduler that does not answer a question for this long is lost


def _dask(fn: Callable, cases: list, address: str, desc: str) -> list:
    """The cases on the scheduler at `address`; any loss of the scheduler or its workers is one CollsimError."""
    address = check_dask_address(address)
    _probe(address)
    with _quiet_dask():
        client = _connect(address)
        try:
            return _gather(client, fn, cases, desc)
        except _lost_errors() as exc:
            raise CollsimError(f"dask: lost the scheduler or its workers at {address!r} mid-run ({_reason(exc)}); "
                               "no output written; expected a Dask cluster that stays up for the whole run") from None
        finally:
            _close(client)


def _connect(address: str):
    """A Client of the scheduler at `address`, or one CollsimError; a Client that failed half-way is shut quietly."""
    from distributed import Client

    client = Client.__new__(Client)
    try:
        client.__init__(address, timeout=f"{CONNECT_S}s", set_as_default=False)
    except BaseException as exc:  # whatever the cluster's side raises, the run stops in one line
        _abandon(client)
        if not isinstance(exc, Exception):  # SIGINT, SIGTERM: the caller's to report
            raise
        what = "reach" if isinstance(exc, (OSError, TimeoutError)) else "connect to"
        raise CollsimError(f"dask: cannot {what} a scheduler at {address!r} ({_reason(exc)}); expected the address of "
                           "a running Dask scheduler such as tcp://127.0.0.1:8786") from None
    return client


def _abandon(client) -> None:
    """Mark a half-built Client closed and stop its event loop: its __del__ would otherwise try to close it at exit,
    wait 6 s for a connection that never was, and print a traceback."""
    with suppress(Exception):
        client.status = "closed"
        client._loop_runner.stop()


def check_dask_address(address: object) -> str:
    """`address` stripped, or an error for anything that is not SCHEME://HOST:PORT of a network scheduler."""
    accepted = "expected a scheduler address HOST:PORT such as tcp://127.0.0.1:8786"
    try:
        from distributed.comm import get_address_host_port, parse_address
    except ImportError:
        raise CollsimError("dask: the 'distributed' package is not installed; expected `pip install distributed` "
                           "(or collsim[all])") from None
    if not isinstance(address, str) or not address.strip():
        raise CollsimError(f"dask: {address!r} is not a scheduler address; {accepted}")
    address = address.strip()
    try:
        scheme = parse_address(address)[0]
        port = get_address_host_port(address)[1]
    except (ValueError, TypeError) as exc:
        raise CollsimError(f"dask: {address!r} is not a scheduler address ({' '.join(str(exc).split())}); {accepted}") from None
    if scheme == "inproc" or not 1 <= port <= 65535:
        raise CollsimError(f"dask: {address!r} is not a scheduler address (scheme {scheme}, port {port}); {accepted} "
                           "(port 1..65535)")
    return address


def _lost_errors() -> tuple[type[BaseException], ...]:
    """What the client raises when the scheduler or the workers go away (a case's own error comes back as a value)."""
    from concurrent.futures import CancelledError

    from distributed.scheduler import KilledWorker

    return CancelledError, KilledWorker, OSError, TimeoutError, _NoWorkers, _Silent


class _NoWorkers(Exception):
    """The scheduler has had no worker for NO_WORKERS_S."""


class _Silent(Exception):
    """The scheduler has not answered for ANSWER_S (frozen, or the network to it is down)."""


def _reason(exc: BaseException) -> str:
    """The exception in a few words (distributed's cancellation messages repeat themselves for every future)."""
    text = " ".join(str(exc).split())
    if "scheduler-connection-lost" in text:
        return "the connection to the scheduler was lost"
    if isinstance(exc, (_NoWorkers, _Silent)):
        return text
    return f"{type(exc).__name__}: {text[:160]}" if text else type(exc).__name__


def _gather(client, fn: Callable, cases: list, desc: str) -> list:
    """Submit every case, collect the results as they finish; a case's CollsimError is raised after all have run."""
    futures = client.map(_indexed, [(fn, i, c) for i, c in enumerate(cases)], pure=False)
    out: list[Any] = [None] * len(cases)
    errors: dict[int, str] = {}
    bar = _bar(len(cases), desc)
    try:
        _collect(client, set(futures), out, errors, bar)
    finally:
        if bar:
            bar.close()
    if errors:
        raise CollsimError(errors[min(errors)])
    return out


def _collect(client, pending: set, out: list, errors: dict[int, str], bar) -> None:
    """Wait for every pending future, filling `out` (or `errors`) by case index; watch that workers remain."""
    from distributed import wait

    idle_since = None
    with client.as_current():
        while pending:
            try:
                done, pending = wait(pending, timeout=POLL_S, return_when="FIRST_COMPLETED")
            except TimeoutError:
                idle_since = _watch_workers(client, idle_since)
                continue
            for future in done:
                i, ok, value = future.result()
                if ok:
                    out[i] = value
                else:
                    errors[i] = value
                if bar:
                    bar.update()


def _watch_workers(client, idle_since: float | None) -> float | None:
    """Ask the scheduler for its workers (a scheduler silent for ANSWER_S is lost); return when it first had none
    (None while it has one); _NoWorkers once that lasts NO_WORKERS_S."""
    import time

    try:
        info = client.sync(client.scheduler.identity, n_workers=-1, callback_timeout=ANSWER_S)
    except TimeoutError:
        raise _Silent(f"the scheduler did not answer for {ANSWER_S:g} s") from None
    if info.get("workers"):
        return None
    now = time.monotonic()
    if idle_since is not None and now - idle_since > NO_WORKERS_S:
        raise _NoWorkers(f"no worker for {NO_WORKERS_S:g} s")
    return now if idle_since is None else idle_since


def _close(client) -> None:
    """Disconnect (the scheduler drops this run's tasks) without waiting long for a scheduler that is gone."""
    try:
        client.close(timeout=1)
    except Exception:  # noqa: BLE001 - the run's own outcome is already decided; closing is best effort
        pass


@contextmanager
def _quiet_dask() -> Iterator[None]:
    """Silence distributed's logging (its reconnect and shutdown messages) while this run talks to the cluster."""
    import logging

    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)  # distributed sets its loggers' levels itself, so a level on one would not do
    try:
        yield
    finally:
        logging.disable(previous)
