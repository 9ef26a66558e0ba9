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


def _pool(fn: Callable, cases: list, jobs: int, bar) -> list:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    context = multiprocessing.get_context("forkserver" if sys.platform.startswith("linux") else "spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        futures = {pool.submit(fn, case): i for i, case in enumerate(cases)}
        out: list[Any] = [None] * len(cases)
        errors: dict[int, BaseException] = {}
        for future in as_completed(futures):
            i = futures[future]
            try:
                out[i] = future.result()
            except CollsimError as exc:
                errors[i] = exc
            if bar:
                bar.update()
        if errors:
            raise errors[min(errors)]
        return out


def _dask(fn: Callable, cases: list, address: str, desc: str) -> list:
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise CollsimError("dask: the 'distributed' package is not installed; expected `pip install distributed` "
                           "(or collsim[all])") from None
    if not isinstance(address, str) or not address.strip():
        raise CollsimError(f"dask: {address!r} is not a scheduler address; expected HOST:PORT such as tcp://127.0.0.1:8786")
    try:
        client = Client(address.strip(), timeout="10s", set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise CollsimError(f"dask: cannot reach a scheduler at {address!r} ({type(exc).__name__}); expected the address of "
                           "a running Dask scheduler such as tcp://127.0.0.1:8786") from None
    bar = _bar(len(cases), desc)
    try:
        futures = client.map(fn, cases, pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        out: list[Any] = [None] * len(cases)
        errors: dict[int, BaseException] = {}
        for future in as_completed(futures):
            i = index[future.key]
            try:
                out[i] = future.result()
            except CollsimError as exc:
                errors[i] = exc
            if bar:
                bar.update()
        if errors:
            raise errors[min(errors)]
        return out
    finally:
        if bar:
            bar.close()
        client.close()
