"""How the command line shows a request's result: its text or its JSON on stdout, its files written."""

from __future__ import annotations

from collsim.request import Result
from simulator.fileio import atomic_write, say_written

from .output import emit_json


def show(result: Result, as_json: bool) -> int:
    """Write the result's files (all at the end of the run, or none: app/cli.py), print it, and say what was written
    once it is (simulator/fileio.py say_written); the result's exit status."""
    files = result.files()
    for out in files:
        if callable(out.content):
            out.content(out.path)
        else:
            atomic_write(out.path, out.content)
    if as_json:
        emit_json(result.data())
        return result.status
    text = result.text()
    if text:  # a result whose files are the answer (draw) says only that they were written
        print(text)
    for line in filter(None, (out.line() for out in files)):
        say_written(line)
    return result.status
