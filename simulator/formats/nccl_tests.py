"""nccl-tests result tables: read them as found in the wild, and write collsim results in the same format.

The reader accepts launcher prefixes ('0: ', '[1,0]<stdout>:', 'host: '), interleaved NCCL INFO
and other noise, the old format (no root column, an 'error' column instead of '#wrong'),
'N/A' in '#wrong', missing headers and footers, and times printed with any precision. It infers
the collective and the rank count from the numbers (redop and root columns, size/count ratio,
busbw/algbw ratio) and uses the text around the table only to break ties. A malformed result
row is a CollsimError naming its line number; a file with no result rows says it is not a log.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from ..collective import OPS, REDUCING, ROOTED, TOTAL_SIZE_OPS, busbw_factor, normalize_op
from ..errors import CollsimError
from ..fileio import atomic_write
from ..ops import ALIASES, SPECS
from ..readfile import read_bytes

# nccl-tests type names (and collsim's) -> bytes per element.
TYPE_SIZES = {
    "int8": 1, "uint8": 1, "char": 1, "f8e4m3": 1, "f8e5m2": 1, "fp8_e4m3": 1, "fp8_e5m2": 1,
    "half": 2, "float16": 2, "bfloat16": 2, "bf16": 2,
    "int32": 4, "uint32": 4, "int": 4, "float": 4, "float32": 4,
    "int64": 8, "uint64": 8, "double": 8, "float64": 8,
}
REDUCTIONS = ("sum", "prod", "max", "min", "avg", "premulsum")
MAX_COLUMN_VALUE = 2**53  # sizes, counts and roots above this are not exact in float64: refused

_PREFIXES = (
    re.compile(r"^\s*\[\d+,\d+\]<(?:stdout|stderr)>:\s?"),   # Open MPI --tag-output
    re.compile(r"^\s*\d+:\s"),                                # srun --label
    re.compile(r"^[A-Za-z0-9_.\-]+:\s"),                      # pdsh / clush 'host: '
)
_AVG = re.compile(r"#\s*Avg bus bandwidth\s*:\s*(\S+)", re.IGNORECASE)
_NRANKS = re.compile(r"\bnranks\s*[:=]?\s*(\d+)\b", re.IGNORECASE)
_DEVICE = re.compile(r"^#\s*Rank\s+(\d+)\b")
_OP_WORD = re.compile(r"[A-Za-z_]+")
# GPU families a log's comment lines name (device lines '# Rank 0 ... NVIDIA H100 80GB HBM3', a '# hardware:' note):
# family -> pattern, checked on each comment line. GB200/GB300 are B200/B300 dies (with a Grace CPU).
GPU_FAMILIES = {
    "b300": r"B300", "b200": r"B200", "h200": r"H200", "h100": r"H100|H800", "a100": r"A100|A800",
    "v100": r"V100", "rtx4090": r"RTX\s*4090", "mi300x": r"MI300X?", "mi250": r"MI250X?",
}
_GPU_FAMILY = re.compile("|".join(f"(?P<{k}>{v})" for k, v in GPU_FAMILIES.items()), re.IGNORECASE)
_OP_SPELLINGS = {**{name: name for name in SPECS}, **ALIASES}  # the specs' names and accepted spellings
# Layouts: (has root column, uses old 'error' column) -> columns per result row for 1 or 2 placements.
_NEW, _OLD = "new", "old"
_COLUMNS = {(_NEW, 2): 13, (_OLD, 2): 12, (_NEW, 1): 9, (_OLD, 1): 8}
_COLUMN_NAMES = {
    _NEW: "size count type redop root, then time algbw busbw #wrong per placement",
    _OLD: "size count type redop, then time algbw busbw error per placement",
}


@dataclass(frozen=True)
class Timing:
    """One placement's measurement: seconds, GB/s (1e9 B/s) as printed, and the validation column."""

    time_s: float
    algbw_GBps: float
    busbw_GBps: float
    wrong: int | None = None       # '#wrong' count; None for 'N/A' or the old format
    error: float | None = None     # old format's 'error' column (max abs error); None otherwise


@dataclass(frozen=True)
class LogRow:
    """One result line: sizes and type, then the out-of-place and (when printed) in-place timings."""

    line: int
    bytes: int
    count: int
    dtype: str
    redop: str
    root: int | None
    out: Timing
    inplace: Timing | None = None

    def timing(self, placement: str = "out") -> Timing:
        """The out-of-place ('out') or in-place ('in') timing, or the faster of the two ('min')."""
        if placement == "out" or self.inplace is None:
            return self.out
        if placement == "in":
            return self.inplace
        return min(self.out, self.inplace, key=lambda t: t.time_s)


@dataclass(frozen=True)
class NcclTestsLog:
    """A parsed log: its rows, the inferred collective and rank count, and where each came from."""

    source: str
    rows: tuple[LogRow, ...]
    op: str
    ranks: int
    op_source: str
    ranks_source: str
    layout: str
    avg_busbw_GBps: float | None = None
    avg_busbw_line: int | None = None
    header: dict = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    gpu: GpuNamed | None = None  # the GPU family its comment lines name, where they name exactly one

    @property
    def dtype(self) -> str:
        """The element type of the rows ('mixed' if they differ)."""
        types = {r.dtype for r in self.rows}
        return types.pop() if len(types) == 1 else "mixed"

    @property
    def mean_busbw_GBps(self) -> float:
        """Mean bus bandwidth over all rows and both placements (what '# Avg bus bandwidth' reports)."""
        values = [t.busbw_GBps for r in self.rows for t in (r.out, r.inplace) if t is not None]
        return sum(values) / len(values)

    def measurements(self, placement: str = "out") -> list[tuple[int, float]]:
        """(bytes, seconds) per row with a positive size and time, for the chosen placement."""
        if placement not in ("out", "in", "min"):
            raise CollsimError(f"placement: {placement!r} is not one of out, in, min")
        return [(r.bytes, r.timing(placement).time_s) for r in self.rows
                if r.bytes > 0 and r.timing(placement).time_s > 0]


class GpuNamed(NamedTuple):
    """The GPU family a log names, the line that names it and how (e.g. 'b200', 1, 'B200')."""

    family: str
    line: int
    text: str


def gpu_named(lines: Iterable[str]) -> GpuNamed | None:
    """The GPU family (GPU_FAMILIES) a log ran on: from its device list ('# Rank 0 ... NVIDIA H100 80GB HBM3') when
    it has one, else from the first comment line that names one family (a line naming several says nothing sure)."""
    first = None
    for number, raw in enumerate(lines, start=1):
        line = _strip_prefix(raw).strip()
        families = {m.lastgroup: m.group() for m in _GPU_FAMILY.finditer(line)} if line.startswith("#") else {}
        if len(families) != 1:
            continue
        family, text = families.popitem()
        named = GpuNamed(family, number, text)
        if _DEVICE.match(line):
            return named
        first = first or named
    return first


# ---- reading ---------------------------------------------------------------------------------

def read_log(path: str | Path, op: str | None = None, ranks: int | None = None) -> NcclTestsLog:
    """Parse an nccl-tests log file; `op` and `ranks` override what would be inferred."""
    data = read_bytes(path, "log")
    # Noise around the table (host names, NCCL INFO) may be in any encoding: undecodable bytes become U+FFFD, and a
    # result row holding one is refused as garbled by the row parser.
    return parse_log(data.decode("utf-8", errors="replace"), str(path), op=op, ranks=ranks)


def parse_log(text: str, source: str = "<log>", op: str | None = None, ranks: int | None = None) -> NcclTestsLog:
    """Parse the text of an nccl-tests log (see the module docstring for what is accepted)."""
    if op is not None:
        op = normalize_op(op)
    if ranks is not None and (isinstance(ranks, bool) or not isinstance(ranks, int) or ranks < 1):
        raise CollsimError(f"ranks: {ranks!r} is not a rank count; expected an integer >= 1")
    if _BUSBW_TABLE.search(text):
        return parse_busbw_table(text, source, op, ranks)
    state = _Scan(source)
    for number, raw in enumerate(text.splitlines(), start=1):
        state.feed(number, raw)
    if not state.rows:
        what = "has an nccl-tests column header but no result rows" if state.layout else (
            "is not an nccl-tests log: no result rows (lines of size, count, type, redop, time, algbw, busbw) found")
        if state.pending:
            what += f"; {str(state.pending).removeprefix(f'log: {source} ')}"
        raise CollsimError(f"log: {source} {what}")
    inferred_op, inferred_ranks, op_source, ranks_source, notes = _infer(state, op, ranks)
    return NcclTestsLog(source, tuple(state.rows), inferred_op, inferred_ranks, op_source, ranks_source,
                        state.layout or state.row_layout or _NEW, state.avg, state.avg_line, state.header,
                        tuple(state.notes + notes), gpu_named(text.splitlines()))


def _strip_prefix(line: str) -> str:
    body = line.strip("\r\n\x00")
    if body.lstrip().startswith("#") or _first_is_int(body):
        return body
    for prefix in _PREFIXES:
        match = prefix.match(body)
        if match:
            rest = body[match.end():]
            if rest.lstrip().startswith("#") or _first_is_int(rest):
                return rest
    return body


def _first_is_int(text: str) -> bool:
    parts = text.split(None, 1)
    return bool(parts) and parts[0].isdigit() and parts[0].isascii()


class _Scan:
    """Line-by-line state of the parser."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.rows: list[LogRow] = []
        self.layout: str | None = None          # from the column header
        self.placements: int | None = None
        self.row_layout: str | None = None      # from the first row, when no header was seen
        self.avg: float | None = None
        self.avg_line: int | None = None
        self.header: dict = {}
        self.hints: list[str] = []
        self.nranks: list[int] = []
        self.device_ranks: set[int] = set()
        self.devices_elided = False
        self.notes: list[str] = []
        self.pending: CollsimError | None = None

    def where(self, number: int) -> str:
        return f"log: {self.source} line {number}"

    def feed(self, number: int, raw: str) -> None:
        line = _strip_prefix(raw)
        stripped = line.strip()
        if not stripped:
            return
        if stripped.startswith("#"):
            self.comment(number, stripped)
        elif _first_is_int(stripped):
            try:
                row = self.row(number, stripped.split())
            except CollsimError as exc:
                if self.rows or self.layout:
                    raise
                self.pending = self.pending or exc  # before any header or row: maybe not a log at all
                return
            if self.pending:
                raise self.pending  # a log after all: its first malformed row is the error
            self.rows.append(row)
        else:
            if stripped == "...":
                self.devices_elided = True
            self.noise(stripped)

    def noise(self, text: str) -> None:
        for match in _NRANKS.finditer(text):
            self.nranks.append(int(match.group(1)))
        self.hints.extend(_op_words(text))

    def comment(self, number: int, text: str) -> None:
        avg = _AVG.match(text)
        if avg:
            try:
                self.avg = float(avg.group(1))
            except ValueError:
                raise CollsimError(f"{self.where(number)}: cannot read the average bus bandwidth {_clip(avg.group(1))}; "
                                   "expected a number") from None
            self.avg_line = number
            return
        words = text.lstrip("#").split()
        lower = [w.lower() for w in words]
        if "size" in lower and "count" in lower and "type" in lower:
            self.layout = _NEW if "root" in lower else _OLD
            self.placements = max(1, sum(1 for w in lower if w == "time"))
            if "error" in lower and "root" in lower:
                self.notes.append(f"line {number}: header has both 'root' and 'error' columns")
            return
        device = _DEVICE.match(text)
        if device:
            self.device_ranks.add(int(device.group(1)))
            return
        if "nthread" in lower and "ngpus" in lower:
            for key in ("nThread", "nGpus", "minBytes", "maxBytes"):
                if key in words and words.index(key) + 1 < len(words):
                    self.header[key] = words[words.index(key) + 1]
            return
        self.noise(text)

    def row(self, number: int, tokens: list[str]) -> LogRow:
        layout, placements = self._layout_for(number, len(tokens))
        fixed = 5 if layout == _NEW else 4
        size = _integer(tokens[0], "size", self.where(number))
        count = _integer(tokens[1], "count", self.where(number))
        dtype, redop = tokens[2], tokens[3]
        if dtype.lower() not in TYPE_SIZES:
            raise CollsimError(f"{self.where(number)}: unknown type {_clip(dtype)} in the type column; expected one of "
                               f"{', '.join(sorted(TYPE_SIZES))}")
        if not re.fullmatch(r"[A-Za-z_]+", redop):
            raise CollsimError(f"{self.where(number)}: {_clip(redop)} in the redop column is not an operation name "
                               "(sum, prod, max, min, avg or none)")
        root = _integer(tokens[4], "root", self.where(number), allow_negative=True) if layout == _NEW else None
        timings = [self._timing(number, tokens[fixed + 4 * i: fixed + 4 * i + 4], layout) for i in range(placements)]
        elem = TYPE_SIZES[dtype.lower()]
        if count and size % (count * elem):
            raise CollsimError(f"{self.where(number)}: size {size} B is not a whole multiple of count {count} x "
                               f"{elem} B ({dtype}); the size and count columns disagree")
        return LogRow(number, size, count, dtype, redop, root, timings[0], timings[1] if placements > 1 else None)

    def _layout_for(self, number: int, ntokens: int) -> tuple[str, int]:
        if self.layout is not None:
            expected = _COLUMNS[(self.layout, self.placements if self.placements in (1, 2) else 2)]
            if ntokens != expected:
                raise CollsimError(f"{self.where(number)}: a result row with {ntokens} columns; the header above "
                                   f"announces {expected} ({_COLUMN_NAMES[self.layout]})")
            return self.layout, 1 if expected in (8, 9) else 2
        for (layout, placements), columns in _COLUMNS.items():
            if ntokens == columns:
                if self.row_layout and self.row_layout != layout:
                    raise CollsimError(f"{self.where(number)}: a row of {ntokens} columns after rows in the {self.row_layout} "
                                       f"layout ({_COLUMN_NAMES[self.row_layout]})")
                self.row_layout = layout
                return layout, placements
        raise CollsimError(f"{self.where(number)}: a line starting with a byte count has {ntokens} columns; an nccl-tests "
                           f"row has 13 ({_COLUMN_NAMES[_NEW]}) or 12 in the old format ({_COLUMN_NAMES[_OLD]})")

    def _timing(self, number: int, cells: list[str], layout: str) -> Timing:
        where = self.where(number)
        time_us = _number(cells[0], "time (us)", where)
        algbw = _number(cells[1], "algbw (GB/s)", where)
        busbw = _number(cells[2], "busbw (GB/s)", where)
        check = cells[3]
        wrong = error = None
        if check.upper() != "N/A":
            if layout == _NEW:
                wrong = _integer(check, "#wrong", where)
            else:
                error = _number(check, "error", where)
        return Timing(time_us * 1e-6, algbw, busbw, wrong, error)


def _integer(text: str, column: str, where: str, allow_negative: bool = False) -> int:
    if re.fullmatch(r"-?\d+" if allow_negative else r"\d+", text):
        if len(text) <= 20 and abs(int(text)) <= MAX_COLUMN_VALUE:
            return int(text)
        raise CollsimError(f"{where}: {_clip(text)} in the {column} column is too large; expected at most "
                           f"{MAX_COLUMN_VALUE} (2^53)")
    accepted = "an integer" if allow_negative else "a whole number >= 0"
    raise CollsimError(f"{where}: {_clip(text)} in the {column} column is not {accepted}")


def _clip(text: str) -> str:
    """repr of a cell, cut to 40 characters so one bad cell cannot flood the message."""
    return repr(text) if len(text) <= 40 else repr(text[:40]) + f"... ({len(text)} characters)"


def _number(text: str, column: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not math.isfinite(value) or value < 0:
        raise CollsimError(f"{where}: {_clip(text)} in the {column} column is not a finite number >= 0")
    return value


def _op_words(text: str) -> list[str]:
    found = []
    for word in _OP_WORD.findall(text.lower()):
        word = word[:-5] if word.endswith("_perf") else word
        if word in _OP_SPELLINGS:
            found.append(_OP_SPELLINGS[word])
    return found


# ---- busbw tables (a torch.distributed benchmark's payload / busbw / algbw) --------------------

_BUSBW_TABLE = re.compile(r"^#\s*payload\s+busbw_GBps\s+algbw_GBps\s*$", re.MULTILINE)
_TABLE_RANKS = re.compile(r"=\s*(\d+)\s+ranks\b")


def parse_busbw_table(text: str, source: str = "<log>", op: str | None = None, ranks: int | None = None) -> NcclTestsLog:
    """A busbw table (tests/data/nccl-tests/17_*: '# payload busbw_GBps algbw_GBps' then 'SIZE BUSBW ALGBW' rows,
    as stas00/ml-engineering's all_reduce_bench.py prints them) as a log: float32, time = size / algbw (GB = 1e9 B,
    nccl-tests' arithmetic). The collective and the rank count come from the first comment line ('= N ranks')
    unless given; each row's busbw / algbw must be that collective's factor at that rank count."""
    from ..units import parse_size

    lines = text.splitlines()
    first = lines[0] if lines else ""
    op = op or next(iter(_op_words(first)), None)
    found = _TABLE_RANKS.search(first)
    ranks = ranks or (int(found.group(1)) if found else None)
    if op is None or ranks is None:
        raise CollsimError(f"log: {source} is a busbw table whose first line names no collective or no '= N ranks'; "
                           "expected e.g. '# 4 nodes x 8 B200 = 32 ranks, all_reduce ...'")
    factor, rows = busbw_factor(op, ranks), []
    for number, raw in enumerate(lines, start=1):
        cells = raw.split()
        if not cells or raw.lstrip().startswith("#"):
            continue
        where = f"log: {source} line {number}"
        if len(cells) != 3:
            raise CollsimError(f"{where}: {_clip(raw.strip())}; expected 'SIZE BUSBW_GBPS ALGBW_GBPS'")
        size = parse_size(cells[0], f"{where}: payload")
        busbw, algbw = _number(cells[1], "busbw_GBps", where), _number(cells[2], "algbw_GBps", where)
        if algbw <= 0:
            raise CollsimError(f"{where}: algbw_GBps {cells[2]!r}; expected a bandwidth > 0 (time = size / algbw)")
        if abs(busbw - algbw * factor) > 0.0051 * (1 + factor):
            raise CollsimError(f"{where}: busbw {busbw} is not algbw {algbw} x {factor:g} ({op} on {ranks} ranks)")
        rows.append(LogRow(number, size, size // 4, "float32", "sum", None, Timing(size / (algbw * 1e9), algbw, busbw)))
    if not rows:
        raise CollsimError(f"log: {source} is a busbw table with no rows; expected 'SIZE BUSBW_GBPS ALGBW_GBPS' lines")
    return NcclTestsLog(source, tuple(rows), normalize_op(op), ranks, "first line", "first line", "busbw table",
                        gpu=gpu_named(lines))


# ---- inference -------------------------------------------------------------------------------

def _infer(state: _Scan, op: str | None, ranks: int | None) -> tuple[str, int, str, str, list[str]]:
    rows, notes = state.rows, []
    redops = {r.redop.lower() for r in rows}
    roots = {r.root for r in rows}
    ratios = {r.bytes // (r.count * TYPE_SIZES[r.dtype.lower()]) for r in rows if r.count > 0}
    if len(ratios) > 1:
        raise CollsimError(f"log: {state.source} lines {rows[0].line}-{rows[-1].line}: rows disagree on "
                           f"size / (count x type size) ({sorted(ratios)}); "
                           "is this several tests in one file? Split it, one test per file")
    ratio = ratios.pop() if ratios else None
    if op is not None:
        candidates, op_source = [op], "given (--op)"
    else:
        candidates = [o for o in OPS if _plausible(o, redops, roots, ratio)]
        op_source = "inferred from the numbers"
    header_ranks = _header_ranks(state)
    fits = []
    for cand in candidates:
        p, how = _ranks_for(cand, rows, ratio, ranks, header_ranks)
        if p is not None and _consistent(cand, p, rows):
            fits.append((cand, p, how))
    if not fits:
        return _no_fit(state, op, ranks, candidates, rows, ratio, header_ranks)
    if len(fits) > 1:
        hinted = [f for f in fits if f[0] in state.hints]
        if len({f[0] for f in hinted}) == 1:
            fits, op_source = hinted[:1], "the text around the table names it (" + hinted[0][0] + ")"
        else:
            options = ", ".join(f"{o} (p={p})" for o, p, _ in fits)
            raise CollsimError(f"log: {state.source} lines {rows[0].line}-{rows[-1].line}: the numbers fit several "
                               f"collectives: {options}; say which with --op")
    chosen_op, p, ranks_source = fits[0]
    if header_ranks and header_ranks[0] != p:
        notes.append(f"the header says {header_ranks[0]} ranks ({header_ranks[1]}) but the numbers say {p}")
    if state.device_ranks and len(state.device_ranks) != p:
        elided = " (the device list is elided)" if state.devices_elided else ""
        notes.append(f"the device list names {len(state.device_ranks)} ranks{elided}; the numbers say {p}")
    return chosen_op, p, op_source, ranks_source, notes


def _plausible(op: str, redops: set[str], roots: set[int | None], ratio: int | None) -> bool:
    """Whether the redop, root and size/count columns allow this op."""
    if redops <= {"none"} and op in REDUCING:
        return False
    if redops and redops <= set(REDUCTIONS) and op not in REDUCING:
        return False
    known_roots = {r for r in roots if r is not None}
    if known_roots and all(r < 0 for r in known_roots) and op in ROOTED:
        return False
    if known_roots and all(r >= 0 for r in known_roots) and op not in ROOTED:
        return False
    if ratio is not None:
        if ratio == 1 and op in TOTAL_SIZE_OPS:
            return False
        if ratio > 1 and op not in TOTAL_SIZE_OPS:
            return False
    return True


def _header_ranks(state: _Scan) -> tuple[int, str] | None:
    if state.nranks:
        return max(set(state.nranks), key=state.nranks.count), "'nranks' in the text"
    if state.device_ranks and not state.devices_elided:
        return len(state.device_ranks), "the '# Rank' device list"
    return None


def _ranks_for(op: str, rows: Sequence[LogRow], ratio: int | None, given: int | None,
               header: tuple[int, str] | None) -> tuple[int | None, str]:
    """The rank count for `op`: given, else size/count, else busbw/algbw, else the header."""
    if given is not None:
        return given, "given (--ranks)"
    if ratio is not None and ratio > 1 and op in TOTAL_SIZE_OPS:
        return ratio, "size / (count x type size)"
    pairs = [(t.algbw_GBps, t.busbw_GBps) for r in rows for t in (r.out, r.inplace)
             if t is not None and t.algbw_GBps > 0 and math.isfinite(t.algbw_GBps) and math.isfinite(t.busbw_GBps)]
    algbw = sum(a for a, _ in pairs)
    if algbw >= 0.05:
        factor = sum(b for _, b in pairs) / algbw
        if op == "allreduce" and factor < 1.999:
            p = 2.0 / (2.0 - factor)
        elif op in TOTAL_SIZE_OPS and factor < 0.999:
            p = 1.0 / (1.0 - factor)
        else:
            p = None
        if p is not None and 1.5 <= p < 1e6:
            return int(round(p)), "busbw / algbw"
    if header is not None:
        return header[0], header[1]
    return None, ""


def _consistent(op: str, p: int, rows: Sequence[LogRow]) -> bool:
    """Every row's busbw equals algbw x nccl-tests' factor for (op, p), within the printed rounding."""
    return p >= 1 and _first_mismatch(op, p, rows) is None


def _first_mismatch(op: str, p: int, rows: Sequence[LogRow]) -> LogRow | None:
    """The first row whose busbw is not algbw x the factor of (op, p), or None."""
    factor = busbw_factor(op, p)
    for row in rows:
        for t in (row.out, row.inplace):
            if t is not None and abs(t.busbw_GBps - t.algbw_GBps * factor) > 0.0051 * (1 + factor) + 1e-9:
                return row
    return None


def _no_fit(state, op, ranks, candidates, rows, ratio, header_ranks):
    span = f"lines {rows[0].line}-{rows[-1].line}"
    if not candidates:
        raise CollsimError(f"log: {state.source} {span}: the redop/root/count columns match no collective; say it with --op")
    for cand in candidates:
        p, _ = _ranks_for(cand, rows, ratio, ranks, header_ranks)
        if p is None or p < 1:
            continue
        bad = _first_mismatch(cand, p, rows)
        where = f" (first at line {bad.line}: busbw {bad.out.busbw_GBps} vs algbw {bad.out.algbw_GBps})" if bad else ""
        others = f"; also not {', '.join(c for c in candidates if c != cand)}" if len(candidates) > 1 else ""
        raise CollsimError(f"log: {state.source}: busbw / algbw in the rows does not match {cand} on {p} ranks "
                           f"(nccl-tests factor {busbw_factor(cand, p):.4f}){where}{others}; check --op and --ranks")
    raise CollsimError(f"log: {state.source} {span}: cannot tell the rank count of this "
                       f"{' or '.join(candidates)} log; say it with --ranks (and --op)")


# ---- writing ---------------------------------------------------------------------------------

class ResultRow(NamedTuple):
    """What the writer needs per size: the nccl-tests columns and the measured or simulated seconds."""

    bytes: int
    count: int
    dtype: str
    redop: str
    root: int
    time_s: float
    inplace_time_s: float | None = None
    wrong: int | None = 0
    inplace_wrong: int | None = 0


def format_time_us(time_s: float) -> str:
    """A time in microseconds the way nccl-tests prints it (2, 1 or 0 decimals as it grows)."""
    usec = time_s * 1e6
    if usec >= 10000.0:
        return f"{usec:7.0f}"
    if usec >= 100.0:
        return f"{usec:7.1f}"
    return f"{usec:7.2f}"


def format_log(op: str, ranks: int, rows: Iterable[ResultRow | Sequence], title: str = "collsim") -> str:
    """An nccl-tests style table (with header and '# Avg bus bandwidth' footer) for collsim results.

    algbw and busbw are computed from the printed (rounded) time, so reading the text back and
    writing it again gives the same text.
    """
    op = normalize_op(op)
    factor = busbw_factor(op, ranks)
    rows = [r if isinstance(r, ResultRow) else ResultRow(*r) for r in rows]
    both = bool(rows) and all(r.inplace_time_s is not None for r in rows)
    lines = [f"# {title}: nccl-tests format, op {op}, nranks {ranks}",
             "#" + " " * 62 + "out-of-place" + (" " * 23 + "in-place" if both else ""),
             "#       size         count      type   redop    root     time   algbw   busbw #wrong"
             + ("     time   algbw   busbw #wrong" if both else ""),
             "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
             + ("            (us)  (GB/s)  (GB/s)" if both else "")]
    busbws = []
    for row in rows:
        _check_result_row(row, both)
        cells = f"{row.bytes:12d}  {row.count:12d}  {row.dtype:>8s}  {row.redop:>6s}  {row.root:6d}"
        placements = [(row.time_s, row.wrong)] + ([(row.inplace_time_s, row.inplace_wrong)] if both else [])
        for time_s, wrong in placements:
            printed = format_time_us(time_s)
            seconds = float(printed) * 1e-6
            algbw = row.bytes / seconds / 1e9 if seconds > 0 else 0.0
            busbw = algbw * factor
            busbws.append(busbw)
            check = "N/A" if wrong is None else str(int(wrong))
            cells += f"  {printed}  {algbw:6.2f}  {busbw:6.2f}  {check:>5s}"
        lines.append(cells)
    lines.append("# Out of bounds values : 0 OK")
    lines.append(f"# Avg bus bandwidth    : {sum(busbws) / len(busbws) if busbws else 0.0:.6g}")
    return "\n".join(lines) + "\n"


def _check_result_row(row: ResultRow, both: bool) -> None:
    for name in ("bytes", "count"):
        value = getattr(row, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise CollsimError(f"{name}: {value!r} is not a whole number >= 0")
    times = [row.time_s] + ([row.inplace_time_s] if both else [])
    for t in times:
        if not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0:
            raise CollsimError(f"time_s: {t!r} is not a time in seconds >= 0")
    if str(row.dtype).lower() not in TYPE_SIZES:
        raise CollsimError(f"dtype: {row.dtype!r} is not an nccl-tests type; expected one of {', '.join(sorted(TYPE_SIZES))}")


def write_log(path: str | Path, op: str, ranks: int, rows: Iterable[ResultRow | Sequence], title: str = "collsim") -> None:
    """Write `format_log(...)` to a file atomically."""
    atomic_write(path, format_log(op, ranks, rows, title))


def nccl_type_name(dtype: str) -> str:
    """The name nccl-tests prints for a collsim dtype (float32 -> float, float16 -> half)."""
    return {"float32": "float", "float16": "half", "float64": "double"}.get(dtype, dtype)


def log_paths(path: str, algorithms: list[str]) -> dict[str, Path]:
    """Where each algorithm's log goes: PATH itself for one algorithm; PATH with '-ALGO' before the suffix for each of
    several."""
    base = Path(path)
    if len(algorithms) == 1:
        return {algorithms[0]: base}
    return {name: base.with_name(f"{base.stem}-{name}{base.suffix}") for name in algorithms}


def result_row(nbytes: int, count: int, dtype: str, redop: str, root: int, time_s: float, wrong: int | None = 0) -> ResultRow:
    """One row in nccl-tests' columns (type names as nccl-tests prints them)."""
    return ResultRow(int(nbytes), int(count), nccl_type_name(dtype), redop, int(root), float(time_s), None, wrong)
