"""MSCCL algorithm XML in and out: read a file into a collsim Schedule, check it, export any Schedule.

    imp = load_msccl("allreduce.xml")             # MscclImport: .schedule, .placement, .chunk_elems, ...
    report = check_msccl(imp)                     # semantics check plus MSCCL's own output coverage
    xml = export_msccl(schedule).xml              # and load_msccl() of that file gives the same transfers

The format, the step types and how buffers and chunks map onto collsim are described in
simulator/formats/msccl_xml.py, msccl_import.py, msccl_export.py and docs/msccl.md.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ..errors import CollsimError
from ..schedule import Schedule
from ..semantics import check
from .msccl_export import MscclExport, export_msccl
from .msccl_import import PLACEMENTS, MscclImport, collective_for, default_size, import_msccl
from .msccl_xml import STEP_TYPES, MscclAlgo, parse_msccl, read_msccl


@dataclass(frozen=True)
class MscclCheck:
    """Outcome of checking one imported placement."""

    placement: str
    ok: bool
    message: str


def load_msccl(path: str | Path, size: int | None = None, dtype: str = "float32", placement: str | None = None) -> MscclImport:
    """Read an MSCCL XML file and lower it to a Schedule."""
    return import_msccl(read_msccl(path), size, dtype, placement)


def check_msccl(imp: MscclImport, seed: int = 0) -> MscclCheck:
    """The semantics check of the imported schedule, failing too where MSCCL itself never writes part of the result."""
    if imp.unwritten:
        return MscclCheck(imp.placement, False, f"{imp.placement}: " + "; ".join(imp.unwritten[:3]))
    result = check(imp.schedule, seed=seed)
    return MscclCheck(imp.placement, result.ok, f"{imp.placement}: {result.message}")


def transfer_difference(a: Schedule, b: Schedule) -> str | None:
    """None when two schedules hold the same transfers (src, dst, copy or reduce, pieces; empty pieces ignored), else what differs."""
    def bag(s: Schedule) -> Counter:
        out: Counter = Counter()
        for t in s.transfers:
            pieces = tuple(pc for pc in t.pieces if pc.count)
            if pieces:
                out[(t.src, t.dst, t.reduce, pieces)] += 1
        return out

    left, right = bag(a), bag(b)
    if left == right:
        return None
    only_a, only_b = left - right, right - left
    first = next(iter(only_a or only_b))
    side = "only in the first" if only_a else "only in the second"
    return (f"{sum(only_a.values())} transfers only in the first, {sum(only_b.values())} only in the second; e.g. "
            f"{first[0]}->{first[1]} {'reduce' if first[2] else 'copy'} of {len(first[3])} pieces from {first[3][0]} is {side}")


def roundtrip(schedule: Schedule, exported: MscclExport) -> MscclImport:
    """Import what was exported (same size and dtype) and raise unless it gives back the same transfers."""
    coll = schedule.collective
    imp = import_msccl(parse_msccl(exported.xml, "exported"), coll.nbytes, coll.dtype, exported.placement)
    diff = transfer_difference(schedule, imp.schedule)
    if diff:
        raise CollsimError(f"export: importing the exported file does not give back {schedule.algorithm}'s transfers: {diff}")
    return imp


__all__ = ["PLACEMENTS", "STEP_TYPES", "MscclAlgo", "MscclCheck", "MscclExport", "MscclImport", "check_msccl",
           "collective_for", "default_size", "export_msccl", "import_msccl", "load_msccl", "parse_msccl", "read_msccl",
           "roundtrip", "transfer_difference"]
