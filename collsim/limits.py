"""Requests too big to run, refused when they are built, with an estimate and the limit that would have to be raised.

Every request that builds schedules, machines or processes describes what its run holds, a `Footprint` (its own
values, in the words of the command line that asks it), and refuses it in `check()` against its `Limits` (default
DEFAULT_MAX_TRANSFERS and DEFAULT_MAX_MEMORY; the CLI passes --max-transfers and --max-memory through). So a request
built from Python with the defaults refuses the same huge inputs, with the same message, as the command line.

Two limits: transfers in the schedules a request builds, all sizes and algorithms together, and the memory the run is
estimated to take. Transfers are counted on the real builders at small rank counts (at most 32, one chunk) and
extrapolated to the requested rank count and chunks, so the estimate is right in order of magnitude for every
registered algorithm; a range or list of rank counts is summed from one fit per algorithm, never built. The rank count
is the request's, or where it runs on every device by default (simulate, sweep) the devices its topology names.
Memory counts the buffers a check holds, the processes verify and calibrate start, the topology's links and the
largest schedule while it is checked or simulated (bytes per transfer measured, below). Nothing is expanded before it
is counted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from simulator.algorithms import all_specs, build_schedule, get, names_for
from simulator.collective import Collective, normalize_op
from simulator.errors import CollsimError
from simulator.topology.spec import spec_devices
from simulator.units import format_count as about
from simulator.units import parse_rank_range, parse_size, parse_size_range

DEFAULT_MAX_TRANSFERS = "5e7"
DEFAULT_MAX_MEMORY = "8GiB"
PROCESS_BYTES = 200 * 2**20  # one torch.distributed rank process before its buffers
BUFFERS = 4  # copies of a rank's buffer a numpy check holds: input, output, expected, scratch
SVG_CELL_BYTES = 200  # one drawn element of one rank at one step
LINK_BYTES = 2048  # one link of a built topology (graph, routes, arrays)
SMALL = 64  # rank counts and chunks up to this never need an estimate
# Peak resident bytes per transfer of a request's largest schedule, measured by benchmarks/transfer_memory.py: fresh
# `python -m app.cli` processes, peak RSS from os.wait4 (ru_maxrss), slope of the least-squares line through three runs
# of NCCL's ring allreduce (2p(p - 1) transfers), so that the interpreter and imports fall in the intercept; 2 shared
# cores, load 0.6 -> 5.0. check --size 4100 at p = 600, 900, 1200 (0.72M, 1.62M, 2.88M transfers: 586, 1286, 2113
# MiB): 738 B (schedule and semantics check). simulate --topology switch:p at p = 1024, 1448, 2048 (2.10M, 4.19M,
# 8.38M transfers: 592, 1140, 2262 MiB): 279 B (schedule and engine). Under 1M transfers the engine also keeps Python
# lists (about 600 B a transfer at p = 400), but such a run stays under 1 GiB.
CHECK_TRANSFER_BYTES = 740
ENGINE_TRANSFER_BYTES = 280


def read_limit(value: object, field: str, example: str) -> float:
    """A limit's value ('5e7', '2000000', 5e7) as a finite count >= 1, or one line naming `field`."""
    text = str(value)
    try:
        count = float(text)
    except ValueError:
        count = float("nan")
    if not (math.isfinite(count) and count >= 1):
        raise CollsimError(f"{field}: cannot read {text!r}; expected a count >= 1 such as {example}")
    return count


@dataclass(frozen=True)
class Limits:
    """How big a request may be: `transfers` in its schedules (a count, or text such as '5e7') and `memory` its run
    is estimated to take (bytes, or text such as '8GiB'); both checked when the limits are built."""

    transfers: str | float = DEFAULT_MAX_TRANSFERS
    memory: str | int = DEFAULT_MAX_MEMORY

    def __post_init__(self) -> None:
        self.max_transfers()
        self.max_memory()

    def max_transfers(self) -> float:
        return read_limit(self.transfers, "max-transfers", "5e7")

    def max_memory(self) -> int:
        return parse_size(str(self.memory), "max-memory")


@dataclass(frozen=True)
class Footprint:
    """What one run of a request holds, as the limits count it: the request's values as its command line names them
    (they appear in the refusal), and what the run keeps of them."""

    command: str  # 'check', 'simulate', 'topology show': the refusal starts with it
    op: str | None = None
    algo: str | None = None  # a name or a comma list; None: every algorithm of `op`
    every: bool = False  # every registered algorithm (of `op`, if given)
    ranks: int | str | None = None  # as given: a count, a range '2-9' or a list '2,4,8'
    topology: str | None = None  # --topology SPEC
    spec: str | None = None  # a SPEC given as an argument (topology show)
    devices: int | None = None  # without `ranks`: every device of a topology built already
    params: tuple[tuple[str, Any], ...] = ()  # the algorithms' parameters as (name, value) pairs: chunks, group
    size_flag: str = ""  # '--size', '--sizes': the option the schedules' sizes come from
    sizes: str | None = None  # their text (None: one size)
    elements: int | str | None = None  # drawn elements (None: 2 per rank)
    ranks_from_topology: bool = False  # without `ranks`, every device of `topology` (else of ideal:P)
    buffers: bool = False  # every rank's numpy buffers at the largest size (BUFFERS copies)
    processes: bool = False  # a torch.distributed process per rank
    torchrun: bool = False  # the processes were started by torchrun (not counted with the buffers)
    picture: bool = False  # an SVG of elements x ranks x steps
    transfer_bytes: int = 0  # bytes per transfer of the largest schedule while it is checked or simulated
    jobs: int | None = None  # with `workers`: processes each holding a schedule at once (None: every core)
    workers: bool = False
    dask: bool = False  # cases run on a Dask cluster: one schedule per worker machine

    @property
    def chunks(self) -> int | None:
        return dict(self.params).get("chunks")

    @property
    def group(self) -> int | None:
        return dict(self.params).get("group")

    def bound(self, limits: Limits) -> None:
        """Refuse the run when it is over `limits` (transfers first, then memory)."""
        check_transfers(self, limits)
        check_memory(self, limits)


def request_ranks(fp: Footprint) -> list[int] | None:
    """The rank counts a request runs at: its ranks (a count, range or list), else for simulate and sweep (which
    default to every device) the devices of its topology when its numbers say how many; None when neither tells."""
    if isinstance(fp.ranks, int):
        return [fp.ranks]
    if isinstance(fp.ranks, str):
        return parse_rank_range(fp.ranks)
    if not fp.ranks_from_topology:
        return None
    devices = spec_devices(fp.topology) if fp.topology else fp.devices
    return [devices] if devices else None


def _asked(fp: Footprint, ranks: list[int]) -> str:
    """How the request named its ranks: '--ranks 5000', or '--topology switch:4096 (4096 ranks)'."""
    if fp.ranks is not None:
        return f"--ranks {fp.ranks}"
    return f"--topology {fp.topology} ({max(ranks)} ranks)"


def _algorithms(fp: Footprint) -> list[tuple[str, str]]:
    """(op, algorithm) pairs the request names; unknown names are left to the request's own error."""
    try:
        if fp.every:
            op = normalize_op(fp.op) if fp.op else None
            return [(s.op, s.name) for s in all_specs() if op is None or s.op == op]
        if not fp.op:
            return []
        op = normalize_op(fp.op)
        names = [n.strip() for n in fp.algo.split(",") if n.strip()] if fp.algo else names_for(op)
        return [(op, get(op, n).name) for n in names]
    except CollsimError:
        return []


def estimate_transfers(op: str, algo: str, ranks: int, chunks: int = 1, group: int | None = None) -> float | None:
    """About how many transfers `algo` has on `ranks` ranks cut into `chunks` (None when no small case builds)."""
    fit = _fit(op, algo, ranks, group)
    if fit is None:
        return None
    p2, t2, exponent, takes_chunks = fit
    return t2 * (ranks / p2) ** exponent * (chunks if takes_chunks else 1)


def _candidates(group: int | None) -> list[int]:
    """The rank counts schedules are sampled at: 2..32, and 1..4 groups."""
    return sorted(set(range(2, 33)) | ({group * k for k in range(1, 5)} if group else set()))


@lru_cache(maxsize=256)
def _fit(op: str, algo: str, ranks: int, group: int | None) -> tuple[int, int, float, bool] | None:
    """(p2, t2, exponent, takes chunks): transfers ~ t2 (p / p2) ** exponent from the two largest sampled schedules up
    to `ranks` (one chunk); None when none builds."""
    spec = get(op, algo)
    takes_chunks = any(p.name == "chunks" for p in spec.params)
    samples = _samples(op, algo, min(ranks, _candidates(group)[-1]), group)
    if not samples:
        return None
    (p2, t2) = samples[0]
    if p2 == ranks or len(samples) == 1:
        return p2, t2, 2.0, takes_chunks
    (p1, t1) = samples[1]
    exponent = min(max(math.log(t2 / t1) / math.log(p2 / p1), 1.0), 3.0)
    whole = round(exponent)
    if abs(exponent - whole) < 0.15:  # p - 1 and p(p - 1) terms: the power is 1 or 2, a little more at small p
        exponent = whole
    return p2, t2, exponent, takes_chunks


@lru_cache(maxsize=256)
def _samples(op: str, algo: str, most: int, group: int | None) -> tuple[tuple[int, int], ...]:
    """(ranks, transfers) of the schedules built at the two largest sampled rank counts up to `most` (one chunk)."""
    spec = get(op, algo)
    params = {"chunks": 1} if any(p.name == "chunks" for p in spec.params) else {}
    if group is not None and any(p.name == "group" for p in spec.params):
        params["group"] = group
    samples: list[tuple[int, int]] = []
    for p in reversed([p for p in _candidates(group) if p <= most]):
        if spec.refusal(p) or (samples and p > samples[0][0] // 2):
            continue
        try:
            schedule = build_schedule(Collective(op, p, 8 * p * p, "int8"), algo, **params)
        except CollsimError:
            continue
        samples.append((p, max(len(schedule), 1)))
        if len(samples) == 2:
            break
    return tuple(samples)


def request_transfers(fp: Footprint, ranks: list[int]) -> tuple[float, float]:
    """(all schedules together, the largest one) of the request's algorithms at its rank counts, at one size: each
    algorithm fitted once, at the largest rank count, and its curve summed over the others."""
    chunks = fp.chunks or 1
    total = largest = 0.0
    for op, algo in _algorithms(fp):
        spec = get(op, algo)
        fit = _fit(op, algo, max(ranks), fp.group)
        if fit is None:
            continue
        p2, t2, exponent, takes_chunks = fit
        scale = t2 * (chunks if takes_chunks else 1) / p2**exponent
        counts = [p**exponent for p in ranks if not spec.refusal(p)]
        total += scale * sum(counts)
        largest = max(largest, scale * max(counts, default=0.0))
    return total, largest


def check_transfers(fp: Footprint, limits: Limits) -> None:
    """Refuse a request whose schedules would have more transfers than the limit: every algorithm at every rank count
    and size, counted from a few small schedules before anything is built (its machine first: one is built first)."""
    limit = limits.max_transfers()
    ranks = request_ranks(fp)
    check_machine(fp, limits, ranks)
    chunks = fp.chunks or 1
    if ranks is None or (max(ranks) <= SMALL and chunks <= SMALL):
        return
    sizes = _size_count(fp)
    total = request_transfers(fp, ranks)[0] * sizes
    if total > limit:
        asked = _asked(fp, ranks) + (f" --chunks {fp.chunks}" if fp.chunks else "")
        per = f" ({sizes} sizes)" if sizes > 1 else ""
        raise CollsimError(f"{fp.command} {asked}: about {about(total)} transfers{per}, over the limit of {about(limit)}; "
                           "--max-transfers raises it")


def _size_count(fp: Footprint) -> int:
    """Schedules a request builds per (algorithm, rank count): one per size where it names sizes."""
    return len(parse_size_range(fp.sizes, "sizes")) if fp.sizes else 1


def refuse_memory(fp: Footprint, asked: str, nbytes: float, how: str, limits: Limits) -> None:
    """Refuse when `nbytes` is over the memory limit."""
    limit = limits.max_memory()
    if nbytes > limit:
        raise CollsimError(f"{fp.command} {asked}: about {human(nbytes)} of memory ({how}), over the limit of "
                           f"{human(limit)}; --max-memory raises it")


def human(nbytes: float) -> str:
    """'15TiB', '976GiB', '200MiB': three significant digits in the largest binary unit that fits."""
    for unit, scale in (("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g}{unit}"
    return f"{nbytes:.0f}B"


def check_memory(fp: Footprint, limits: Limits) -> None:
    """Refuse a request estimated to need more memory than the limit: buffers and schedules checked on numpy,
    processes started, SVG drawn, the machine built and the schedules simulated on it."""
    ranks = request_ranks(fp)
    if fp.buffers and ranks is not None:
        _check_buffers(fp, limits, ranks)
    elif fp.processes and ranks is not None:
        refuse_memory(fp, f"--ranks {max(ranks)}", max(ranks) * PROCESS_BYTES,
                      f"{max(ranks)} processes of about 200MiB", limits)
    elif fp.picture and ranks is not None:
        p = max(ranks)
        elements = fp.elements if fp.elements is not None else 2 * p
        steps = 2 * p * (fp.chunks or 1)
        refuse_memory(fp, f"--elements {elements} --ranks {p}", float(parse_size(elements, "elements")) * p * steps
                      * SVG_CELL_BYTES, "elements x ranks x steps of picture", limits)
    check_machine(fp, limits, ranks, schedules=True)


def _check_buffers(fp: Footprint, limits: Limits, ranks: list[int]) -> None:
    """Every rank's buffers at the largest size (with the processes and the schedule, where the request has them)."""
    biggest = max(parse_size_range(fp.sizes, fp.size_flag.lstrip("-")))
    p = max(ranks)
    processes = p * PROCESS_BYTES if fp.processes and not fp.torchrun else 0
    nbytes = processes + p * biggest * BUFFERS
    how = f"{p} ranks x {human(biggest)} x {BUFFERS} buffers" + (f" + {p} processes" if processes else "")
    schedule, what = _schedule_memory(fp, ranks)
    refuse_memory(fp, f"{fp.size_flag} {fp.sizes} --ranks {fp.ranks}", nbytes + schedule,
                  how + (f" + {what}" if what else ""), limits)


def check_machine(fp: Footprint, limits: Limits, ranks: list[int] | None, schedules: bool = False) -> None:
    """The topology a request builds (its topology or spec), and with `schedules` simulate's ideal:P and the largest
    schedule simulated on the machine too. Without, it runs before the transfer count: a machine is built first."""
    spec = fp.topology or fp.spec
    links = estimate_links(spec) if spec else None
    if spec is None and fp.devices is None and fp.ranks_from_topology and ranks is not None and schedules:
        spec, links = f"ideal:{max(ranks)}", float(max(ranks)) ** 2
    schedule, what = _schedule_memory(fp, ranks) if schedules else (0.0, "")
    if links is None and not schedule:
        return
    parts = ([f"{spec} has about {about(links)} links"] if links is not None else []) + ([what] if what else [])
    given = [f"--ranks {fp.ranks}"] if fp.ranks is not None else []
    if fp.topology:
        given.append(f"--topology {fp.topology}" + ("" if given or ranks is None else f" ({max(ranks)} ranks)"))
    elif fp.spec:
        given.append(fp.spec)
    refuse_memory(fp, " ".join(given), (links or 0.0) * LINK_BYTES + schedule, " + ".join(parts), limits)


def _schedule_memory(fp: Footprint, ranks: list[int] | None) -> tuple[float, str]:
    """Bytes the largest schedule of the request takes while it is checked or simulated, times the processes that
    hold one each; (0, '') where the request holds no schedule, and for requests too small to matter."""
    per = fp.transfer_bytes
    if not per or ranks is None or (max(ranks) <= SMALL and (fp.chunks or 1) <= SMALL):
        return 0.0, ""
    transfers = request_transfers(fp, ranks)[1]
    workers = _workers(fp)
    how = f"about {about(transfers)} transfers x {per}B" + (f" x {workers} processes" if workers > 1 else "")
    return workers * transfers * per, how


def _workers(fp: Footprint) -> int:
    """Processes that simulate at the same time: `jobs` (every core by default), at most one per case."""
    if not fp.workers or fp.dask:
        return 1
    from simulator.parallel import check_jobs

    cases = len(_algorithms(fp)) * _size_count(fp)
    return max(1, min(check_jobs(fp.jobs), cases))


def estimate_links(spec: str) -> float | None:
    """About how many links a builder or preset SPEC makes, from its numbers alone (None for files and unknown names)."""
    devices = spec_devices(spec)
    if devices is None:
        return None
    return float(devices) * devices if spec.partition(":")[0].strip().lower() == "ideal" else 8.0 * devices
