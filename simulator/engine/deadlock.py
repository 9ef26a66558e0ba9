"""Transfers that never ran: who waits for what, as data and as one paragraph."""

from __future__ import annotations

import numpy as np

from ..errors import CollsimError
from ..schedule import Schedule
from ..trace import Trace


class DeadlockError(CollsimError):
    """A run ended with transfers that can never start; `trace` holds what did run and `report` who waits for what."""

    def __init__(self, message: str, trace: Trace, report: list[dict]):
        super().__init__(message)
        self.trace = trace
        self.report = report


def deadlock_report(schedule: Schedule, trace: Trace) -> list[dict]:
    """For each transfer that never ran: its ranks and the unfinished transfers it waits for."""
    ends = trace.end
    arrays = schedule.arrays
    ptr, idx = arrays["dep_ptr"], arrays["dep_idx"]
    report = []
    for t in trace.stuck.tolist():
        deps = idx[ptr[t]:ptr[t + 1]]
        waits = [int(d) for d in deps if np.isnan(ends[d])]
        tr = schedule.transfers[t]
        report.append({"transfer": t, "src": tr.src, "dst": tr.dst, "waits_for": waits,
                       "waits_for_ranks": sorted({schedule.transfers[w].src for w in waits} | {schedule.transfers[w].dst for w in waits})})
    return report


def format_deadlock(report: list[dict], stuck: int) -> str:
    """One paragraph naming the ranks that wait and the transfers they wait for."""
    blocked = [r for r in report if r["waits_for"]]
    ranks = sorted({r["src"] for r in report} | {r["dst"] for r in report})
    lines = [f"deadlock: {stuck} transfers can never start; ranks involved: {', '.join(map(str, ranks[:20]))}"
             + (" ..." if len(ranks) > 20 else "")]
    for r in blocked[:6]:
        waits = ", ".join(f"#{w} ({_ends_of(report, w)})" for w in r["waits_for"][:4])
        lines.append(f"  rank {r['src']} cannot send #{r['transfer']} to rank {r['dst']}: it waits for {waits}")
    if len(blocked) > 6:
        lines.append(f"  ... and {len(blocked) - 6} more")
    return "\n".join(lines)


def _ends_of(report: list[dict], tid: int) -> str:
    for r in report:
        if r["transfer"] == tid:
            return f"rank {r['src']} -> rank {r['dst']}"
    return "never started"
