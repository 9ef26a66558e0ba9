"""Saving collsim results (sweep, verify) as nccl-tests logs, one file per algorithm."""

from __future__ import annotations

from pathlib import Path

from simulator.formats.nccl_tests import ResultRow, nccl_type_name, write_log


def log_paths(path: str, algorithms: list[str]) -> dict[str, Path]:
    """PATH itself for one algorithm; PATH with '-ALGO' before the suffix for each of several."""
    base = Path(path)
    if len(algorithms) == 1:
        return {algorithms[0]: base}
    return {name: base.with_name(f"{base.stem}-{name}{base.suffix}") for name in algorithms}


def save_logs(path: str, op: str, ranks: int, rows: dict[str, list[ResultRow]], title: str) -> list[Path]:
    """Write each algorithm's rows as an nccl-tests log that `collsim fit` reads back; return the paths."""
    written = []
    for name, target in log_paths(path, list(rows)).items():
        write_log(target, op, ranks, rows[name], title=f"{title}, algorithm {name}")
        written.append(target)
    return written


def result_row(nbytes: int, count: int, dtype: str, redop: str, root: int, time_s: float, wrong: int | None = 0) -> ResultRow:
    """One row in nccl-tests' columns (type names as nccl-tests prints them)."""
    return ResultRow(int(nbytes), int(count), nccl_type_name(dtype), redop, int(root), float(time_s), None, wrong)
