"""The shape every request and result has.

A request is a frozen dataclass: `__post_init__` calls `check()`, which refuses a bad or too large question with a
CollsimError naming the field, the value and what is accepted, by arithmetic on the request alone (nothing expanded,
built or allocated first). So a request that exists is one `run()` will answer. A result renders itself: `text()` as
the command line prints it, `data()` as JSON-ready plain data, `files()` as the files the request asked for, which a face
writes all at once, or none (simulator/fileio.py all_or_nothing).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple


class OutputFile(NamedTuple):
    """A file a request asked for: where, what it is and how to use it (for the line that says it was written), and its
    content: the text, or a function that writes it to the path it is given with simulator.fileio.atomic_write.
    `said` replaces that line where a command has its own ('# wrote PATH' in sweep's commented tables); `quiet` drops it."""

    path: str
    what: str
    content: str | Callable[[str], object]
    note: str = ""
    said: str = ""
    quiet: bool = False  # nothing is said once it is written (a command whose output never said so)

    def line(self) -> str:
        """What the command line says once the file is written ('' when quiet)."""
        if self.quiet:
            return ""
        return self.said or f"wrote {self.what}: {self.path}" + (f" ({self.note})" if self.note else "")


class Result:
    """What a request answers; `status` is the command line's exit status for it (0: the answer is a success)."""

    status: int = 0

    def text(self) -> str:
        raise NotImplementedError

    def data(self) -> dict[str, Any]:
        raise NotImplementedError

    def files(self) -> list[OutputFile]:
        """Output files asked for by the request (none by default)."""
        return []


class Request:
    """A question, checked and bounded when it is built (subclasses are frozen dataclasses)."""

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """Refuse a bad or too large request (CollsimError), before any work."""

    def run(self) -> Result:
        raise NotImplementedError
