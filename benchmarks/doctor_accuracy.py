"""`collsim doctor` on every bundled nccl-tests log (on the machine it came from, simulator/nccl/log_presets.py) and on
copies made deliberately unhealthy: its expected busbw against the measured one at sizes >= 64 MiB, its verdict, and
the cause it names first. Prints the table and writes it into docs/doctor.md (between the doctor-accuracy markers).

    PYTHONPATH=. python -m benchmarks.doctor_accuracy [--no-docs] [LOG_PREFIX ...]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from statistics import median
from typing import NamedTuple

from collsim.doctor import LARGE, DoctorRequest, DoctorResult
from simulator.formats.nccl_tests import ResultRow, format_log, parse_log
from simulator.nccl.log_presets import CASES, preset_of

from .docs_block import replace_block

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "tests" / "data" / "nccl-tests"
DOC = ROOT / "docs" / "doctor.md"
GOAL = 0.15  # expected busbw within 15% of measured at >= 64 MiB on a healthy machine


def degraded_copy(text: str, source: str, new_time: Callable[[int, float, float], float]) -> str:
    """The log with each row's out-of-place time replaced by new_time(bytes, seconds, busbw GB/s), its in-place time
    scaled alike, re-printed by simulator/formats/nccl_tests.py format_log (algbw, busbw from the new time). The
    original's comment lines naming the machine (source, device list) are kept, so that the machine can be inferred."""
    log = parse_log(text, source)
    rows = []
    for r in log.rows:
        scale = new_time(r.bytes, r.out.time_s, r.out.busbw_GBps) / r.out.time_s if r.out.time_s > 0 else 1.0
        inplace = r.inplace.time_s * scale if r.inplace is not None else None
        rows.append(ResultRow(r.bytes, r.count, r.dtype, r.redop, -1 if r.root is None else r.root, r.out.time_s * scale,
                              inplace))
    kept = [line for line in text.splitlines()[:80] if line.lstrip().startswith("#") and
            ("source" in line.lower() or " on " in line)]
    return "\n".join(kept) + "\n" + format_log(log.op, log.ranks, rows, title=f"degraded copy of {source}")


def slower(factor: float, at_least: int = 0, at_most: int = 1 << 62) -> Callable[[int, float, float], float]:
    """Times `factor` times longer for sizes in [at_least, at_most]."""
    return lambda size, seconds, busbw: seconds * factor if at_least <= size <= at_most else seconds


def capped(rate_GBps: float) -> Callable[[int, float, float], float]:
    """busbw capped at `rate_GBps` (the time a row at a higher busbw would take at that rate)."""
    return lambda size, seconds, busbw: seconds * busbw / rate_GBps if busbw > rate_GBps else seconds


class Degraded(NamedTuple):
    """A copy of a bundled log made unhealthy, and words the first cause the doctor names must contain."""

    name: str
    log: str  # prefix of a bundled log
    change: Callable[[int, float, float], float]
    cause: str


DEGRADED = (
    Degraded("inter-node busbw halved at >= 64 MiB", "03_", slower(2.0, LARGE), "GPUDirect RDMA off"),
    Degraded("busbw capped at one 100G EFA port (12.5 GB/s)", "03_", capped(12.5), "one NIC"),
    Degraded("busbw capped at one 200G TCPXO NIC (25 GB/s)", "01_", capped(25.0), "one NIC"),
    Degraded("small sizes (<= 1 MiB) 10x slower", "04_", slower(10.0, 0, 1 << 20), "LL / LL128"),
    Degraded("every size 1.35x slower (clocks)", "07_", slower(1.35), "every size slow alike"),
    Degraded("intra-node busbw halved at >= 64 MiB", "07_", slower(2.0, LARGE), "peer-to-peer off"),
)


def bundled(prefix: str) -> Path:
    return next(LOGS.glob(f"{prefix}*.txt"))


def run_healthy(prefix: str) -> DoctorResult:
    path = bundled(prefix)
    return DoctorRequest(str(path), preset=preset_of(path.name)).run()


def run_degraded(case: Degraded) -> DoctorResult:
    path = bundled(case.log)
    text = degraded_copy(path.read_text(encoding="utf-8", errors="replace"), path.name, case.change)
    return DoctorRequest(f"{path.name} ({case.name})", preset=preset_of(path.name), text=text).run()


def large_errors(result: DoctorResult) -> list[float]:
    """(expected - measured) / measured busbw at each size >= 64 MiB."""
    return [(p.expected_GBps - p.measured_GBps) / p.measured_GBps for p in result.points if p.bytes >= LARGE]


def _pct(values: list[float]) -> str:
    return " ".join(f"{v:+.0%}" for v in values)


def healthy_row(prefix: str) -> list[str]:
    result = run_healthy(prefix)
    errors = large_errors(result)
    large = [p for p in result.points if p.bytes >= LARGE]
    med = median(abs(e) for e in errors)
    within = sum(abs(e) <= GOAL for e in errors)
    return [prefix.rstrip("_"), f"`{result.request.machine.spec}`", f"{median(p.measured_GBps for p in large):.3g}",
            f"{median(p.expected_GBps for p in large):.3g}", _pct(errors), f"{within}/{len(errors)}", f"{med:.0%}",
            "yes" if med <= GOAL else "no", result.diagnosis.verdict]


def degraded_row(case: Degraded) -> list[str]:
    result = run_degraded(case)
    first = result.diagnosis.causes[0].name if result.diagnosis.causes else "(none)"
    return [case.log.rstrip("_"), case.name, result.diagnosis.verdict, first.split(":")[0].split(" (")[0],
            "yes" if case.cause.lower() in first.lower() else "no"]


def markdown(header: list[str], rows: list[list[str]]) -> str:
    return "\n".join(["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |" for r in rows])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prefixes", nargs="*", help="bundled logs by prefix (default: all)")
    parser.add_argument("--no-docs", action="store_true", help="print only; leave docs/doctor.md alone")
    args = parser.parse_args(argv)
    start = time.time()
    prefixes = args.prefixes or [case.prefix for case in CASES]
    healthy = [healthy_row(p if p.endswith("_") else p + "_") for p in prefixes]
    degraded = [degraded_row(case) for case in DEGRADED if not args.prefixes or case.log.rstrip("_") in
                {p.rstrip("_") for p in args.prefixes}]
    text = ("Healthy logs (each on its machine's preset): expected vs measured busbw at sizes >= 64 MiB\n\n"
            + markdown(["log", "preset", "measured busbw (median, GB/s)", "expected", "error per size (expected - measured)",
                        "sizes within 15%", "median |error|", "median within 15%", "verdict"], healthy)
            + "\n\nDegraded copies (benchmarks/doctor_accuracy.py DEGRADED): the first cause named\n\n"
            + markdown(["log", "change", "verdict", "first cause", "right"], degraded))
    print(text)
    print(f"\n({time.time() - start:.0f} s)")
    if not args.no_docs and not args.prefixes:
        replace_block(DOC, "doctor-accuracy", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
