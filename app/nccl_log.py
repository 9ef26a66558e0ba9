"""Saving collsim results (verify) as nccl-tests logs, one file per algorithm."""

from __future__ import annotations

from pathlib import Path

from simulator.formats.nccl_tests import ResultRow, log_paths, write_log


def save_logs(path: str, op: str, ranks: int, rows: dict[str, list[ResultRow]], title: str) -> list[Path]:
    """Write each algorithm's rows as an nccl-tests log that `collsim fit` reads back; return the paths."""
    written = []
    for name, target in log_paths(path, list(rows)).items():
        write_log(target, op, ranks, rows[name], title=f"{title}, algorithm {name}")
        written.append(target)
    return written
