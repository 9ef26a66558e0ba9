"""Reading input files safely: a size cap, UTF-8 text, and YAML/JSON that cannot nest or expand without bound.

Every reader of a user's file (topologies, link profiles, nccl-tests logs, MSCCL XML, measured JSON)
comes through here, so a bad file gives one CollsimError line naming the kind of file, the path, the
line where that can be known, what is wrong and what is accepted:

    data = read_data(path, "topology")     # a .json name is JSON, anything else YAML (JSON is YAML too)
    text = read_text(path, "log")          # str, checked to be UTF-8 text
    raw = read_bytes(path, "msccl")        # bytes, for parsers that decode themselves (XML)

Size caps, checked before reading: MAX_INPUT_BYTES for text (logs, XML) and MAX_DATA_BYTES for YAML/JSON, whose
parsing and checking costs about 3 s of CPU per MiB (a 5 MB topology file took 12 s). The environment variable
COLLSIM_MAX_INPUT_BYTES replaces both.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import yaml

from .errors import CollsimError

MAX_INPUT_BYTES = 16 * 2**20   # logs and XML: larger files are refused before reading (a 15 MiB log fits in 4 s)
MAX_DATA_BYTES = 2 * 2**20     # YAML/JSON data files: 2 MiB holds a topology of about 25,000 links
MAX_DEPTH = 32                 # levels of nested lists/mappings in a YAML/JSON file
MAX_ITEMS = 1_000_000          # values in a YAML/JSON file, counting each use of a YAML alias
_LIMIT_ENV = "COLLSIM_MAX_INPUT_BYTES"


def input_limit(default: int = MAX_INPUT_BYTES) -> int:
    """The size cap in bytes: COLLSIM_MAX_INPUT_BYTES when set, else `default`."""
    text = os.environ.get(_LIMIT_ENV, "").strip()
    if not text:
        return default
    if not text.isdigit() or int(text) < 1:
        raise CollsimError(f"{_LIMIT_ENV}: {text!r} is not a byte count; expected an integer >= 1")
    return int(text)


def _mib(nbytes: int) -> str:
    return f"{nbytes / 2**20:.3g} MiB" if nbytes >= 2**20 else f"{nbytes} bytes"


def read_bytes(path: str | Path, what: str, cap: int = MAX_INPUT_BYTES) -> bytes:
    """The file's bytes, refused up front when it is not a regular file or is over the size cap."""
    path = Path(path)
    limit = input_limit(cap)
    try:
        # O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting forever; it is then refused below
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise CollsimError(f"{what}: {path} is not a regular file (a device, pipe or socket); expected a file path")
            if info.st_size > limit:
                raise CollsimError(f"{what}: {path} is {_mib(info.st_size)}, over the limit of {_mib(limit)} for input files; "
                                   f"set {_LIMIT_ENV} to raise it")
            data = handle.read(min(info.st_size, limit) + 1)  # no buffer of the whole cap for a small file
            if len(data) > info.st_size:  # grew since fstat (or a file that reports no size): the rest, up to the cap
                data += handle.read(limit + 1 - len(data))
    except OSError as exc:
        raise CollsimError(f"{what}: cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > limit:  # grew while reading
        raise CollsimError(f"{what}: {path} is over the limit of {_mib(limit)} for input files; set {_LIMIT_ENV} to raise it")
    return data


def decode_text(data: bytes, path: str | Path, what: str) -> str:
    """UTF-8 text (a leading BOM is dropped); binary or other encodings are refused naming the line and byte."""
    if b"\x00" in data:
        offset = data.index(b"\x00")
        raise CollsimError(f"{what}: {path} line {_line_at(data, offset)}: a NUL byte at offset {offset}: "
                           "this is a binary file; expected UTF-8 text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CollsimError(f"{what}: {path} line {_line_at(data, exc.start)}: byte 0x{data[exc.start]:02x} at offset "
                           f"{exc.start} is not UTF-8; expected UTF-8 text (save the file as UTF-8)") from None


def _line_at(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def read_text(path: str | Path, what: str, cap: int = MAX_INPUT_BYTES) -> str:
    """The file as UTF-8 text, with the size cap."""
    return decode_text(read_bytes(path, what, cap), path, what)


def read_data(path: str | Path, what: str):
    """Parsed YAML (or JSON for a .json name), with the size cap and limits on nesting and expansion."""
    path = Path(path)
    text = read_text(path, what, MAX_DATA_BYTES)
    if not text.strip():
        raise CollsimError(f"{what}: {path} is empty; expected {'JSON' if path.suffix.lower() == '.json' else 'YAML'} data")
    if path.suffix.lower() == ".json":
        return parse_json(text, path, what)
    return parse_yaml(text, path, what)


def parse_json(text: str, path: str | Path, what: str):
    """JSON text to data, refusing deep nesting and the non-JSON constants NaN and Infinity."""
    def constant(name: str):
        raise CollsimError(f"{what}: {path}: {name} is not a JSON number; expected a finite number")

    _check_brackets(text, path, what)
    try:
        data = json.loads(text, parse_constant=constant)
    except json.JSONDecodeError as exc:
        raise CollsimError(f"{what}: {path} line {exc.lineno}: not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise CollsimError(f"{what}: {path}: nested too deeply; expected at most {MAX_DEPTH} levels") from None
    check_shape(data, path, what)
    return data


def _check_brackets(text: str, path: str | Path, what: str) -> None:
    """Refuse JSON nested deeper than MAX_DEPTH before parsing it (brackets inside strings are skipped)."""
    depth, in_string, escape, line = 0, False, False, 1
    for ch in text:
        if in_string:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise CollsimError(f"{what}: {path} line {line}: nested more than {MAX_DEPTH} levels deep; "
                                   f"expected at most {MAX_DEPTH}")
        elif ch in "]}":
            depth -= 1
        if ch == "\n":
            line += 1


def parse_yaml(text: str, path: str | Path, what: str):
    """YAML text to data (safe types only), refusing deep nesting and alias expansion past MAX_ITEMS."""
    try:
        _check_events(text, path, what)
        data = yaml.load(text, Loader=_loader())
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = " ".join(str(exc.problem or exc.context or "cannot parse").split())
        raise CollsimError(f"{what}: {path}{where}: not valid YAML: {problem}") from None
    except yaml.YAMLError as exc:
        raise CollsimError(f"{what}: {path}: not valid YAML: {' '.join(str(exc).split())}") from None
    check_shape(data, path, what)
    return data


def _loader():
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _check_events(text: str, path: str | Path, what: str) -> None:
    """Walk the YAML event stream (no recursion) and refuse nesting deeper than MAX_DEPTH."""
    depth = 0
    for event in yaml.parse(text, Loader=_loader()):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise CollsimError(f"{what}: {path} line {event.start_mark.line + 1}: nested more than {MAX_DEPTH} levels "
                                   f"deep; expected at most {MAX_DEPTH}")
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1


def check_shape(data, path: str | Path, what: str) -> None:
    """Refuse data with more than MAX_ITEMS values once YAML aliases are expanded (a 'billion laughs' file)."""
    stack, count = [data], 0
    while stack:
        item = stack.pop()
        count += 1
        if count > MAX_ITEMS:
            raise CollsimError(f"{what}: {path}: more than {MAX_ITEMS:,} values once YAML aliases (*name) are expanded; "
                               f"expected at most {MAX_ITEMS:,}")
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
