"""What every command checks before it starts work: numeric options in range, output paths writable.

The CLI calls `preflight(args)` once the arguments are parsed. Output options are found by their flag (OUTPUT_FLAGS)
when the parser is built, so a command with an output option gets the check without code of its own.
"""

from __future__ import annotations

import argparse
import math

from simulator.errors import CollsimError
from simulator.fileio import check_outputs

OUTPUT_FLAGS = ("--output", "--trace", "--export", "--csv", "--out", "--nccl-log", "--write-log", "--html")
# (command, option dest) -> (the format written, the extensions accepted); a name with no extension is taken as it is
_CSV, _CHROME, _NCCL_LOG = ("CSV", (".csv",)), ("a Chrome trace (JSON)", (".json",)), ("an nccl-tests log (text)", (".txt", ".log"))
_PROFILE = ("YAML (JSON for a .json name)", (".yaml", ".yml", ".json"))
OUTPUT_FORMATS: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = {
    ("draw", "output"): ("SVG", (".svg",)),
    ("simulate", "trace"): _CHROME,
    ("simulate", "export"): ("JSON (CSV rows for a .csv name)", (".csv", ".json")),
    ("sweep", "csv"): _CSV,
    ("sweep", "nccl_log"): _NCCL_LOG,
    ("scenario", "out"): _PROFILE,
    ("import-trace", "out"): _PROFILE,
    ("run-program", "trace"): _CHROME,
    ("scale", "html"): ("HTML", (".html", ".htm")),
    ("doctor", "html"): ("HTML", (".html", ".htm")),
    ("verify", "csv"): _CSV,
    ("verify", "nccl_log"): _NCCL_LOG,
    ("calibrate", "out"): _PROFILE,
    ("compare", "csv"): _CSV,
    ("compare", "trace"): _CHROME,
    ("fit", "out"): _PROFILE,
    ("nccl-model", "write_log"): _NCCL_LOG,
    ("predict", "nccl_log"): _NCCL_LOG,
    ("predict", "csv"): ("an NCCL tuner-plugin CSV", (".csv", ".conf")),
    ("export-msccl", "output"): ("MSCCL XML", (".xml",)),
}
# option dest -> (smallest, largest or None, what it is); checked whenever the option is given as a number
INT_RANGES: dict[str, tuple[int, int | None, str]] = {
    "ranks": (1, None, "a rank count"),
    "chunks": (1, None, "a number of pieces"),
    "group": (1, None, "ranks per group"),
    "root": (0, None, "a rank"),
    "seed": (0, 2**63 - 1, "a seed"),
    "elements": (1, None, "an element count"),
    "port": (1, 65535, "a TCP port"),
    "iters": (1, None, "an iteration count"),
    "warmup": (0, None, "an iteration count"),
    "segments": (1, 64, "a number of size ranges"),
    "gpus": (1, None, "a GPU count"),
    "nodes": (1, None, "a node count"),
    "nics": (1, None, "a NIC count"),
    "channels": (1, None, "a channel count"),
    "header_bytes": (0, None, "a byte count"),
}
POSITIVE_FLOATS = ("timeout", "budget", "nvls_efficiency")


def output_fields(parser: argparse.ArgumentParser) -> dict[str, str]:
    """dest -> field name of the parser's output options."""
    return {a.dest: max(a.option_strings, key=len).lstrip("-") for a in parser._actions
            if set(a.option_strings) & set(OUTPUT_FLAGS)}


def check_ranges(args: argparse.Namespace) -> None:
    """Refuse an integer option out of its range, or a non-finite or non-positive time/efficiency."""
    for dest, (low, high, what) in INT_RANGES.items():
        value = getattr(args, dest, None)
        if isinstance(value, int) and not isinstance(value, bool) and (value < low or (high is not None and value > high)):
            span = f"{low}..{high}" if high is not None else f">= {low}"
            raise CollsimError(f"{dest.replace('_', '-')}: {value} is not {what}; expected an integer {span}")
    for dest in POSITIVE_FLOATS:
        value = getattr(args, dest, None)
        if isinstance(value, float) and not (math.isfinite(value) and value > 0):
            raise CollsimError(f"{dest.replace('_', '-')}: {value} is not a positive number; expected a finite number > 0")
    ranks, root = getattr(args, "ranks", None), getattr(args, "root", None)
    if isinstance(ranks, int) and isinstance(root, int) and root >= ranks:
        raise CollsimError(f"root: {root} is not a rank of {ranks}; expected 0..{ranks - 1}")


def check_not_empty(args: argparse.Namespace) -> None:
    """Refuse an option or argument given as '' (which would otherwise fall back to a default, or read '.')."""
    outputs, accepted = getattr(args, "_outputs", {}), getattr(args, "_accepted", {})
    for dest, value in vars(args).items():
        if isinstance(value, str) and not value.strip() and dest not in outputs and not dest.startswith("_"):
            expected = accepted.get(dest, "a value, see the command's --help")
            raise CollsimError(f"{dest.replace('_', '-')}: {value!r} is empty; expected {expected}")


def preflight(args: argparse.Namespace) -> None:
    """Every check above (the request-size limits are the requests' own: collsim/limits.py)."""
    check_not_empty(args)
    check_ranges(args)
    fields = getattr(args, "_outputs", {})
    command = getattr(args, "_command", "")
    formats = {field: OUTPUT_FORMATS[command, dest] for dest, field in fields.items() if (command, dest) in OUTPUT_FORMATS}
    check_outputs({field: getattr(args, dest, None) for dest, field in fields.items()}, formats)
