"""PyTorch profiler (Kineto) traces, one per rank: what each rank issued, when, and how long it ran.

What is read, and nothing else (docs/traces.md):

- `distributedInfo`: the rank, the world size, the backend and the process groups (`pg_config`: their ranks);
- the step: the span named `ProfilerStep#N` (torch.profiler's schedule writes them; `record_function` can too), else
  the whole span of the trace's events, said so;
- collective issues: the `c10d::<op>` operators (their `Input Dims` and `Input type` give the sizes), or, where the
  trace has them, `record_param_comms` (NCCL runs: `Collective name`, `In msg nelems`, `Out msg nelems`, `dtype`,
  `Process Group Ranks`), which then replace the c10d operators;
- what ran: gloo's `gloo:<op>` spans on its worker threads, paired in order with the issues (gloo runs its queue in
  issue order); their start and end on this rank;
- the step thread's busy time: the union of its `cpu_op` events (the host thread computing or launching), whose gaps
  tell when it waited.

Times are kept per rank on that rank's own clock: the ranks' trace clocks are not aligned (two processes on one
machine differ by milliseconds here), so nothing compares instants across ranks.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..collective import DTYPES
from ..errors import CollsimError
from ..readfile import read_bytes

MAX_FILE_BYTES = 64 * 2**20      # a trace file on disk (gzip or not)
MAX_TRACE_BYTES = 256 * 2**20    # its JSON once decompressed
MAX_EVENTS = 500_000             # events per trace, estimated from the text before it is parsed (about 4 s and 1 GB)
US = 1e-6                        # Kineto's ts and dur are microseconds

# c10d operator or record_param_comms name -> collsim op (names as torch writes them)
ISSUES = {
    "allreduce": "allreduce", "all_reduce": "allreduce",
    "allgather": "allgather", "all_gather": "allgather", "_allgather_base": "allgather",
    "all_gather_into_tensor": "allgather",
    "reduce_scatter": "reduce_scatter", "_reduce_scatter_base": "reduce_scatter", "reduce_scatter_tensor": "reduce_scatter",
    "broadcast": "broadcast", "reduce": "reduce", "gather": "gather", "scatter": "scatter",
}
NOT_MAPPED = ("barrier", "monitored_barrier", "allreduce_coalesced", "allgather_coalesced", "allgather_into_tensor_coalesced",
              "reduce_scatter_tensor_coalesced", "alltoall", "alltoall_base", "all_to_all", "all_to_allv", "send", "recv",
              "recv_any_source", "coalesced")
# gloo's name of what ran -> the op; gloo has no reduce-scatter and runs an all-reduce for it (torch's gloo backend)
RAN = {"all_reduce": "allreduce", "allreduce": "allreduce", "all_gather": "allgather", "allgather": "allgather",
       "reduce_scatter": "reduce_scatter", "broadcast": "broadcast", "reduce": "reduce", "gather": "gather",
       "scatter": "scatter", "barrier": "barrier", "all_to_all": "alltoall", "alltoall": "alltoall"}
ROOTED_OPS = ("broadcast", "reduce", "gather", "scatter")  # their root (a group rank) is not read: left out, reported
STAND_INS = {("reduce_scatter", "allreduce")}
DTYPE_NAMES = {"float": "float32", "c10::half": "float16", "half": "float16", "c10::bfloat16": "bfloat16",
               "bfloat16": "bfloat16", "double": "float64", "int": "int32", "long int": "int64", "long": "int64",
               "signed char": "int8", "unsigned char": "uint8", "float32": "float32", "float16": "float16",
               "float64": "float64", "int32": "int32", "int64": "int64", "int8": "int8", "uint8": "uint8"}


@dataclass
class Call:
    """One collective a rank issued, as its trace shows it. `op` is None when it cannot be mapped (`why` says)."""

    name: str                       # as the trace names it: 'c10d::allreduce_', 'record_param_comms allreduce'
    issue: float                    # seconds, this rank's clock
    op: str | None = None
    elements: int | None = None     # nccl-tests meaning: per-rank buffer for allreduce, the whole buffer otherwise
    dtype: str | None = None
    members: tuple[int, ...] | None = None
    root: int | None = None
    ran: str | None = None          # what the backend ran: 'gloo:all_reduce'
    start: float | None = None      # the run's span on this rank (seconds, this rank's clock)
    end: float | None = None
    why: str | None = None

    @property
    def nbytes(self) -> int | None:
        return self.elements * DTYPES[self.dtype] if self.elements is not None and self.dtype else None


@dataclass
class RankTrace:
    """One rank's trace: its step, the step thread's busy intervals and its collective issues."""

    path: str
    rank: int
    world: int
    backend: str
    step: str                       # the span taken as the step ('ProfilerStep#0', or 'whole trace')
    start: float
    end: float
    busy: list[tuple[float, float]] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    thread: Any = None              # the step's thread id


def read_trace(path: str | Path, step: int = 0) -> RankTrace:
    """One rank's trace file (JSON, gzip or not), bounded before it is parsed; CollsimError with one line otherwise."""
    path = Path(path)
    data = _load(path)
    events = data.get("traceEvents")
    info = data.get("distributedInfo")
    if not isinstance(events, list):
        raise CollsimError(f"trace: {path}: no traceEvents list; expected a PyTorch profiler (Kineto) trace, as "
                           "torch.profiler's export_chrome_trace writes it")
    if not isinstance(info, dict) or not _is_int(info.get("rank")) or not _is_int(info.get("world_size")):
        raise CollsimError(f"trace: {path}: no distributedInfo with rank and world_size; expected the trace of one rank "
                           "of a torch.distributed run (torch.profiler records them once the process group exists)")
    rank, world = info["rank"], info["world_size"]
    if not 1 <= world <= 1 << 20 or not 0 <= rank < world:
        raise CollsimError(f"trace: {path}: distributedInfo rank {rank!r} of world_size {world!r}; expected 0 <= rank < "
                           "world_size")
    spans = [e for e in events if isinstance(e, dict) and e.get("ph") == "X" and _is_num(e.get("ts")) and _is_num(e.get("dur"))]
    trace = _step(path, rank, world, str(info.get("backend", "?")), spans, step)
    trace.calls = _calls(spans, trace, _groups(info, world), path)
    return trace


def _load(path: Path) -> dict:
    raw = read_bytes(path, "trace", MAX_FILE_BYTES)
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = _gunzip(raw, path)
        except (OSError, EOFError, zlib.error) as exc:
            raise CollsimError(f"trace: {path}: cannot decompress ({exc}); expected a whole gzip file") from None
    if not raw.strip():
        raise CollsimError(f"trace: {path} is empty; expected a PyTorch profiler (Kineto) trace (JSON)")
    count = raw.count(b'"ph"')
    if count > MAX_EVENTS:
        raise CollsimError(f"trace: {path}: about {count:,} events, over the limit of {MAX_EVENTS:,}; expected a trace "
                           "of one or a few steps (torch.profiler's schedule with active=1)")
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        where = f" at line {exc.lineno} column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "not UTF-8"
        raise CollsimError(f"trace: {path}: not valid JSON{where} ({reason}); expected a complete trace (a truncated "
                           "file ends like this)") from None
    if not isinstance(data, dict):
        raise CollsimError(f"trace: {path}: the JSON holds a {type(data).__name__}; expected an object with traceEvents "
                           "and distributedInfo (a PyTorch profiler trace)")
    return data


def _gunzip(raw: bytes, path: Path) -> bytes:
    out = gzip.GzipFile(fileobj=io.BytesIO(raw)).read(MAX_TRACE_BYTES + 1)
    if len(out) > MAX_TRACE_BYTES:
        raise CollsimError(f"trace: {path}: over {MAX_TRACE_BYTES // 2**20} MiB once decompressed; expected a trace "
                           "of one or a few steps")
    return out


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _step(path: Path, rank: int, world: int, backend: str, spans: list[dict], index: int) -> RankTrace:
    """The step span (the index-th ProfilerStep#, by start) and its thread's busy intervals."""
    steps = sorted((e for e in spans if str(e.get("name", "")).startswith("ProfilerStep#")), key=lambda e: e["ts"])
    notes = []
    if steps:
        if index >= len(steps):
            raise CollsimError(f"step: {index} in {path}, which has {len(steps)} ProfilerStep span(s); expected 0.."
                               f"{len(steps) - 1}")
        chosen = steps[index]
        name, tid, t0, t1 = chosen["name"], chosen.get("tid"), chosen["ts"], chosen["ts"] + chosen["dur"]
    else:
        if index:
            raise CollsimError(f"step: {index} in {path}, which has no ProfilerStep span; expected 0 (the whole trace)")
        ops = [e for e in spans if e.get("cat") == "cpu_op"]
        if not ops:
            raise CollsimError(f"trace: {path}: no ProfilerStep span and no cpu_op events; expected a PyTorch profiler "
                               "trace with CPU activities")
        tid = max({e.get("tid") for e in ops}, key=lambda t: sum(e.get("tid") == t for e in ops))
        name, t0, t1 = "whole trace", min(e["ts"] for e in spans), max(e["ts"] + e["dur"] for e in spans)
        notes.append("no ProfilerStep span: the step is the whole trace, its thread the one with the most operators")
    busy = _union([(max(e["ts"], t0), min(e["ts"] + e["dur"], t1)) for e in spans
                   if e.get("tid") == tid and e.get("cat") == "cpu_op" and e["ts"] < t1 and e["ts"] + e["dur"] > t0])
    return RankTrace(str(path), rank, world, backend, name, t0 * US, t1 * US, [(a * US, b * US) for a, b in busy],
                     notes=notes, thread=tid)


def _union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[list[float]] = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def _groups(info: dict, world: int) -> tuple[int, ...] | None:
    """The members of every process group when they are all the same set (then a call without its group's name still
    has its members), else None (also when no group is listed: a sub-group's call would be taken for the world's)."""
    configs = info.get("pg_config")
    if not isinstance(configs, list) or not configs:  # an older torch: no groups named, not even the world's
        return None
    sets = {tuple(c.get("ranks") or ()) for c in configs if isinstance(c, dict)}
    return next(iter(sets)) if len(sets) == 1 and all(map(_is_int, next(iter(sets)))) else None


def _calls(spans: list[dict], trace: RankTrace, members: tuple[int, ...] | None, path: Path) -> list[Call]:
    """Every collective issue of the trace (in issue order), paired with what the backend ran."""
    params = sorted((e for e in spans if e.get("name") == "record_param_comms"), key=lambda e: e["ts"])
    named = [e for e in params if "Collective name" in (e.get("args") or {})]
    if params and not named:  # torch before 2.0 writes record_param_comms without its args: the c10d operators have them
        trace.notes.append(f"{len(params)} record_param_comms event(s) without 'Collective name' (an older torch): "
                           "calls read from the c10d operators")
    if named:
        issues = [_param_call(e) for e in params]
    else:
        issues = [_c10d_call(e, members) for e in sorted((e for e in spans if str(e.get("name", "")).startswith("c10d::")),
                                                          key=lambda e: e["ts"])]
    ran = sorted((e for e in spans if str(e.get("name", "")).startswith("gloo:")), key=lambda e: e["ts"])
    if ran and len(ran) != len(issues):
        trace.notes.append(f"{len(issues)} collective issues but {len(ran)} gloo spans: not paired, no measured times")
    elif ran:
        for call, e in zip(issues, ran):
            _pair(call, e)
    elif issues and trace.backend != "gloo":
        trace.notes.append(f"backend {trace.backend}: the run of each call (GPU kernels) is not read yet, so calls carry "
                           "no measured time")
    for call in issues:  # e.g. a TensorList argument with no gloo span to name its element type
        if call.op is not None and call.nbytes is None:
            call.why, call.op = "size or element type not in the trace", None
    return issues


def _pair(call: Call, e: dict) -> None:
    """The gloo span that ran this call: its times, its dtype where the issue had none; a different op is reported."""
    ran = RAN.get(e["name"][5:])
    call.ran, call.start, call.end = e["name"], e["ts"] * US, (e["ts"] + e["dur"]) * US
    if call.op is not None and ran != call.op and (call.op, ran) not in STAND_INS:
        call.why, call.op = f"issued as {call.name} but gloo ran {e['name']}: the traces disagree", None
        return
    if call.op is not None and call.dtype is None:  # a TensorList argument: the element type is on gloo's span
        types = (e.get("args") or {}).get("Input type") or []
        call.dtype = DTYPE_NAMES.get(str(types[0]).lower()) if types else None
    if call.op is not None and call.nbytes is None:
        call.why, call.op = "size or element type not in the trace", None


def _elements(dims: Any) -> int:
    """Elements of a tensor's dims ([4, 8]) or of a list of tensors ([[4], [4]])."""
    if isinstance(dims, list) and dims and isinstance(dims[0], list):
        return sum(_elements(d) for d in dims)
    return math.prod(int(d) for d in dims) if isinstance(dims, list) else 0


NOT_A_COLLECTIVE = "not a collective collsim maps (barrier, coalesced, all-to-all and point-to-point calls are left out)"


def _c10d_call(e: dict, members: tuple[int, ...] | None) -> Call:
    """A c10d operator: the op from its name, the size from its tensors (Input Dims, Input type)."""
    base = e["name"][len("c10d::"):].rstrip("_")
    call = Call(e["name"], e["ts"] * US, members=members)
    if base in NOT_MAPPED or base not in ISSUES:
        call.why = NOT_A_COLLECTIVE
        return call
    if members is None:
        call.why = ("process group unknown: distributedInfo lists no pg_config, or groups of different ranks, and the "
                    "call names none")
        return call
    op = ISSUES[base]
    if op in ROOTED_OPS:
        call.why = "rooted call: its root is not in the trace's c10d operator"
        return call
    args = e.get("args") or {}
    dims, types = args.get("Input Dims") or [], [str(t).lower() for t in args.get("Input type") or []]
    call.op, call.dtype = op, DTYPE_NAMES.get(types[0]) if types else None
    if base in ("_reduce_scatter_base", "reduce_scatter_tensor", "reduce_scatter"):  # (output, input(s)): the input
        call.elements = _elements(dims[1]) if len(dims) > 1 else None
    else:  # allgather: (output(s), input), the gathered buffer; allreduce_: the list of tensors
        call.elements = _elements(dims[0]) if dims else None
    return call


def _param_call(e: dict) -> Call:
    """A record_param_comms event (NCCL runs): name, sizes, dtype and the group's ranks are in its args."""
    args = e.get("args") or {}
    name = str(args.get("Collective name", "?"))
    call = Call(f"record_param_comms {name}", e["ts"] * US)
    base = name.rstrip("_")
    if base not in ISSUES:
        call.why = NOT_A_COLLECTIVE
        return call
    ranks = args.get("Process Group Ranks")
    if isinstance(ranks, str):
        try:
            ranks = json.loads(ranks)
        except json.JSONDecodeError:
            ranks = None
    dtype = DTYPE_NAMES.get(str(args.get("dtype", "")).lower())
    in_n, out_n = args.get("In msg nelems"), args.get("Out msg nelems")
    if not (isinstance(ranks, list) and ranks and all(map(_is_int, ranks))) or dtype is None or \
            not (_is_int(in_n) and _is_int(out_n)):
        call.why = "its args lack Process Group Ranks, dtype or the message sizes"
        return call
    op = ISSUES[base]
    if op in ROOTED_OPS:
        call.why = "rooted call: its root is not in record_param_comms"
        return call
    count = out_n if op == "allgather" else in_n  # allgather: the gathered buffer; reduce_scatter: the whole input
    call.op, call.dtype, call.members, call.elements = op, dtype, tuple(ranks), int(count)
    return call
