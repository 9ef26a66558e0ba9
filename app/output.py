"""Printing results on the command line: JSON on stdout (the text itself: simulator/render.py; progress bars on
stderr: simulator/parallel.py run_cases)."""

from __future__ import annotations

from typing import Any

from simulator.render import json_text


def emit_json(data: Any) -> None:
    """Print JSON to stdout (non-finite floats become null)."""
    print(json_text(data))
