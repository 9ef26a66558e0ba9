"""Rewrite one generated block of a docs page, between `<!-- NAME:begin -->` and `<!-- NAME:end -->`."""

from __future__ import annotations

from pathlib import Path

from simulator.fileio import atomic_write


def replace_block(doc: Path, name: str, text: str) -> None:
    """Replace what lies between NAME's markers in `doc` with `text` (atomically; the rest is kept)."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    page = doc.read_text(encoding="utf-8")
    start, stop = page.index(begin) + len(begin), page.index(end)
    atomic_write(doc, page[:start] + "\n" + text + "\n" + page[stop:])


def current_block(doc: Path, name: str, default: str) -> str:
    """What lies between NAME's markers in `doc` now (stripped), or `default` when the file or the markers are missing:
    for a page generated whole that holds another benchmark's block."""
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    page = doc.read_text(encoding="utf-8") if doc.exists() else ""
    if begin not in page or end not in page:
        return default
    return page[page.index(begin) + len(begin):page.index(end)].strip("\n")
