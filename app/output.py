"""Printing results: aligned text tables and JSON, the same data either way."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from typing import Any


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], align: str | None = None) -> str:
    """A plain aligned table; numbers right-aligned, text left-aligned unless `align` says ('l'/'r' per column)."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    if align is None:
        align = "".join("r" if rows and isinstance(rows[0][i], (int, float)) else "l" for i in range(len(headers)))

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if a == "r" else v.ljust(w) for v, w, a in zip(values, widths, align)).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in cells])


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isinf(value) or math.isnan(value):
            return str(value)
        return f"{value:.2f}" if abs(value) >= 0.01 or value == 0 else f"{value:.3g}"
    return str(value)


def emit_json(data: Any) -> None:
    """Print JSON to stdout (non-finite floats become null)."""
    print(json.dumps(_finite(data), indent=2))


def _finite(data: Any) -> Any:
    if isinstance(data, float) and not math.isfinite(data):
        return None
    if isinstance(data, dict):
        return {k: _finite(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [_finite(v) for v in data]
    return data


def progress(iterable, total: int | None = None, desc: str = "", enabled: bool = True):
    """A progress bar on stderr when it is a terminal and the job is long enough to need one."""
    if not enabled or not sys.stderr.isatty():
        return iterable
    from tqdm import tqdm

    return tqdm(iterable, total=total, desc=desc, leave=False, file=sys.stderr)
