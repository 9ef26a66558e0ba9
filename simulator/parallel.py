"""Run independent cases in parallel: serially, in a pool of processes (--jobs), or on a Dask cluster (--dask).

`run_cases(fn, cases)` returns `[fn(c) for c in cases]` in the order given, whatever ran where: `fn` must be a
module-level function (it is pickled to the workers) and each case a picklable value. Results are the serial
ones exactly, because each case is computed the same way in a fresh call. A progress bar goes to stderr when
it is a terminal. A case's CollsimError comes back as itself, and the first one (in case order) is raised.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
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
    jobs = min(check_jobs(jobs), max(1, len(cases)))
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


def _dask(fn: Callable, cases: list, address: str, desc: str) -> list:
    import importlib.util

    if importlib.util.find_spec("distributed") is None:
        raise CollsimError("dask: the 'distributed' package is not installed; expected `pip install distributed` "
                           "(or collsim[all])")
    if not isinstance(address, str) or not address.strip():
        raise CollsimError(f"dask: {address!r} is not a scheduler address; expected HOST:PORT such as tcp://127.0.0.1:8786")
    _probe(address)
    from distributed import Client, as_completed

    try:
        client = Client(address.strip(), timeout="3s", set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise _unreachable(address, exc) from None
    bar = _bar(len(cases), desc)
    try:
        futures = client.map(_indexed, [(fn, i, c) for i, c in enumerate(cases)], pure=False)
        out: list[Any] = [None] * len(cases)
        errors: dict[int, str] = {}
        with client.as_current():
            for future in as_completed(futures):
                i, ok, value = future.result()
                if ok:
                    out[i] = value
                else:
                    errors[i] = value
                if bar:
                    bar.update()
        if errors:
            raise CollsimError(errors[min(errors)])
        return out
    finally:
        if bar:
            bar.close()
        client.close()
