"""Printing results on the command line: JSON on stdout and progress bars on stderr (the text itself: simulator/render.py)."""

from __future__ import annotations

import sys
from typing import Any

from simulator.render import json_text


def emit_json(data: Any) -> None:
    """Print JSON to stdout (non-finite floats become null)."""
    print(json_text(data))


def progress(iterable, total: int | None = None, desc: str = "", enabled: bool = True):
    """A progress bar on stderr when it is a terminal and the job is long enough to need one."""
    if not enabled or not sys.stderr.isatty():
        return iterable
    from tqdm import tqdm

    return tqdm(iterable, total=total, desc=desc, leave=False, file=sys.stderr)
