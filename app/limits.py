"""Requests too big to run, refused up front with an estimate and the option that raises the limit.

Each command that builds schedules, machines or processes declares what its run holds, a `Footprint`, with its
parser (`set_defaults(_footprint=...)`); the limits read that declaration, never the command's name.

Two limits, both options of the commands that build schedules or start processes: --max-transfers (transfers in
the schedules a request builds, default 5e7) and --max-memory (memory the run is estimated to take, default 8GiB).
Transfers are counted on the real builders at small rank counts (at most 32, one chunk) and extrapolated to the
requested rank count and --chunks, so the estimate is right in order of magnitude for every registered algorithm; a
range or list of rank counts is summed from one fit per algorithm, never built. The rank count is --ranks, or for
simulate and sweep (which run on every device by default) the devices --topology names. Memory counts the buffers a
check holds, the processes verify and calibrate start, the topology's links and the largest schedule while it is
checked or simulated (bytes per transfer measured, below). Nothing is expanded before it is counted.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from functools import lru_cache

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


@dataclass(frozen=True)
class Footprint:
    """What one run of a command holds, as the limits count it."""

    sizes: tuple[str, ...] = ()  # the option (first given of these) whose sizes each schedule is built at
    ranks_from_topology: bool = False  # without --ranks, every device of --topology (else of ideal:P)
    buffers: bool = False  # every rank's numpy buffers at the largest size (BUFFERS copies)
    processes: bool = False  # a torch.distributed process per rank (unless measured results are read)
    picture: bool = False  # an SVG of elements x ranks x steps
    transfer_bytes: int = 0  # bytes per transfer of the largest schedule while it is checked or simulated
    workers: bool = False  # --jobs processes each hold a schedule at once


def footprint(args: argparse.Namespace) -> Footprint:
    return getattr(args, "_footprint", None) or Footprint()


def add_limit_args(parser: argparse.ArgumentParser) -> None:
    """--max-transfers and --max-memory, documented in the command's --help."""
    parser.add_argument("--max-transfers", default=DEFAULT_MAX_TRANSFERS, metavar="N",
                        help=f"refuse up front a request whose schedules would have more transfers than N, all sizes and "
                             f"algorithms together (default {DEFAULT_MAX_TRANSFERS})")
    parser.add_argument("--max-memory", default=DEFAULT_MAX_MEMORY, metavar="SIZE",
                        help=f"refuse up front a request estimated to need more memory than SIZE (default {DEFAULT_MAX_MEMORY})")


def read_limit(value: object, field: str, example: str) -> float:
    """A limit option's value ('5e7', '2000000') as a finite count >= 1, or one line naming `field`."""
    text = str(value)
    try:
        count = float(text)
    except ValueError:
        count = float("nan")
    if not (math.isfinite(count) and count >= 1):
        raise CollsimError(f"{field}: cannot read {text!r}; expected a count >= 1 such as {example}")
    return count


def _max_transfers(args: argparse.Namespace) -> float:
    return read_limit(args.max_transfers, "max-transfers", "5e7")


def request_ranks(command: str, args: argparse.Namespace) -> list[int] | None:
    """The rank counts a request runs at: --ranks (a count, range or list), else for simulate and sweep (which default
    to every device) the devices of --topology when its numbers say how many; None when neither tells."""
    value = getattr(args, "ranks", None)
    if isinstance(value, int):
        return [value]
    if isinstance(value, str):
        return parse_rank_range(value)
    devices = spec_devices(args.topology) if footprint(args).ranks_from_topology and args.topology else None
    return [devices] if devices else None


def _asked(args: argparse.Namespace, ranks: list[int]) -> str:
    """How the request named its ranks: '--ranks 5000', or '--topology switch:4096 (4096 ranks)'."""
    if getattr(args, "ranks", None) is not None:
        return f"--ranks {args.ranks}"
    return f"--topology {args.topology} ({max(ranks)} ranks)"


def _algorithms(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(op, algorithm) pairs the request names; unknown names are left to the command's own error."""
    try:
        if getattr(args, "all", False):
            op = normalize_op(args.op) if getattr(args, "op", None) else None
            return [(s.op, s.name) for s in all_specs() if op is None or s.op == op]
        if not getattr(args, "op", None):
            return []
        op = normalize_op(args.op)
        algo = getattr(args, "algo", None)
        names = [n.strip() for n in algo.split(",") if n.strip()] if algo else names_for(op)
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


def request_transfers(args: argparse.Namespace, ranks: list[int]) -> tuple[float, float]:
    """(all schedules together, the largest one) of the request's algorithms at its rank counts, at one size: each
    algorithm fitted once, at the largest rank count, and its curve summed over the others."""
    chunks = getattr(args, "chunks", None) or 1
    group = getattr(args, "group", None)
    total = largest = 0.0
    for op, algo in _algorithms(args):
        spec = get(op, algo)
        fit = _fit(op, algo, max(ranks), group)
        if fit is None:
            continue
        p2, t2, exponent, takes_chunks = fit
        scale = t2 * (chunks if takes_chunks else 1) / p2**exponent
        counts = [p**exponent for p in ranks if not spec.refusal(p)]
        total += scale * sum(counts)
        largest = max(largest, scale * max(counts, default=0.0))
    return total, largest


def check_transfers(command: str, args: argparse.Namespace) -> None:
    """Refuse a request whose schedules would have more transfers than --max-transfers: every algorithm at every rank
    count and size, counted from a few small schedules before anything is built."""
    limit = _max_transfers(args)
    _max_memory(args)
    ranks = request_ranks(command, args)
    check_machine(command, args, ranks)
    chunks = getattr(args, "chunks", None) or 1
    if ranks is None or (max(ranks) <= SMALL and chunks <= SMALL):
        return
    sizes = _size_count(command, args)
    total = request_transfers(args, ranks)[0] * sizes
    if total > limit:
        asked = _asked(args, ranks) + (f" --chunks {args.chunks}" if getattr(args, "chunks", None) else "")
        per = f" ({sizes} sizes)" if sizes > 1 else ""
        raise CollsimError(f"{command} {asked}: about {about(total)} transfers{per}, over the limit of {about(limit)}; "
                           "--max-transfers raises it")


def _size_text(args: argparse.Namespace) -> tuple[str, str | None]:
    """(flag, text) of the sizes each schedule is built at, by the footprint (text None: one size)."""
    for dest in footprint(args).sizes:
        if getattr(args, dest, None):
            return f"--{dest}", getattr(args, dest)
    return "", None


def _size_count(command: str, args: argparse.Namespace) -> int:
    """Schedules a command builds per (algorithm, rank count): one per size where its footprint names sizes."""
    text = _size_text(args)[1]
    return len(parse_size_range(text, "sizes")) if text else 1


def _max_memory(args: argparse.Namespace) -> int:
    return parse_size(str(args.max_memory), "max-memory")


def refuse_memory(command: str, asked: str, nbytes: float, how: str, args: argparse.Namespace) -> None:
    """Refuse when `nbytes` is over --max-memory."""
    limit = _max_memory(args)
    if nbytes > limit:
        raise CollsimError(f"{command} {asked}: about {human(nbytes)} of memory ({how}), over the limit of "
                           f"{human(limit)}; --max-memory raises it")


def human(nbytes: float) -> str:
    """'15TiB', '976GiB', '200MiB': three significant digits in the largest binary unit that fits."""
    for unit, scale in (("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g}{unit}"
    return f"{nbytes:.0f}B"


def check_memory(command: str, args: argparse.Namespace) -> None:
    """Refuse a request estimated to need more than --max-memory: buffers and schedules checked on numpy, processes
    started, SVG drawn, the machine built and the schedules simulated on it."""
    _max_memory(args)
    ranks = request_ranks(command, args)
    fp = footprint(args)
    if fp.buffers and ranks is not None:
        _check_buffers(command, args, ranks)
    elif fp.processes and ranks is not None and not getattr(args, "measured", None):
        refuse_memory(command, f"--ranks {max(ranks)}", max(ranks) * PROCESS_BYTES,
                      f"{max(ranks)} processes of about 200MiB", args)
    elif fp.picture and ranks is not None:
        p = max(ranks)
        elements = args.elements if args.elements is not None else 2 * p
        steps = 2 * p * (getattr(args, "chunks", None) or 1)
        refuse_memory(command, f"--elements {elements} --ranks {p}", float(elements) * p * steps * SVG_CELL_BYTES,
                      "elements x ranks x steps of picture", args)
    check_machine(command, args, ranks, schedules=True)


def _check_buffers(command: str, args: argparse.Namespace, ranks: list[int]) -> None:
    """Every rank's buffers at the largest size (with the processes and the schedule, where the footprint has them)."""
    flag, text = _size_text(args)
    biggest = max(parse_size_range(text, flag.lstrip("-")))
    p = max(ranks)
    processes = p * PROCESS_BYTES if footprint(args).processes and not _torchrun() else 0
    nbytes = processes + p * biggest * BUFFERS
    how = f"{p} ranks x {human(biggest)} x {BUFFERS} buffers" + (f" + {p} processes" if processes else "")
    schedule, what = _schedule_memory(command, args, ranks)
    refuse_memory(command, f"{flag} {text} --ranks {args.ranks}", nbytes + schedule, how + (f" + {what}" if what else ""),
                  args)


def check_machine(command: str, args: argparse.Namespace, ranks: list[int] | None, schedules: bool = False) -> None:
    """The topology a request builds (--topology or a spec), and with `schedules` simulate's ideal:P and the largest
    schedule simulated on the machine too. Without, it runs before the transfer count: a machine is built first."""
    spec = getattr(args, "topology", None) or getattr(args, "spec", None)
    links = estimate_links(str(spec)) if spec else None
    if spec is None and footprint(args).ranks_from_topology and ranks is not None and schedules:
        spec, links = f"ideal:{max(ranks)}", float(max(ranks)) ** 2
    schedule, what = _schedule_memory(command, args, ranks) if schedules else (0.0, "")
    if links is None and not schedule:
        return
    parts = ([f"{spec} has about {about(links)} links"] if links is not None else []) + ([what] if what else [])
    given = [f"--ranks {args.ranks}"] if getattr(args, "ranks", None) is not None else []
    if getattr(args, "topology", None):
        given.append(f"--topology {args.topology}" + ("" if given or ranks is None else f" ({max(ranks)} ranks)"))
    elif getattr(args, "spec", None):
        given.append(str(args.spec))
    refuse_memory(command, " ".join(given), (links or 0.0) * LINK_BYTES + schedule, " + ".join(parts), args)


def _schedule_memory(command: str, args: argparse.Namespace, ranks: list[int] | None) -> tuple[float, str]:
    """Bytes the largest schedule of the request takes while check checks it or the engine simulates it, times the
    processes that hold one each; (0, '') for other commands and for requests too small to matter."""
    per = footprint(args).transfer_bytes
    if not per or ranks is None or (max(ranks) <= SMALL and (getattr(args, "chunks", None) or 1) <= SMALL):
        return 0.0, ""
    transfers = request_transfers(args, ranks)[1]
    workers = _workers(command, args)
    how = f"about {about(transfers)} transfers x {per}B" + (f" x {workers} processes" if workers > 1 else "")
    return workers * transfers * per, how


def _workers(command: str, args: argparse.Namespace) -> int:
    """Processes that simulate at the same time: --jobs (every core by default), at most one per case."""
    if not footprint(args).workers or getattr(args, "dask", None):
        return 1
    from simulator.parallel import check_jobs

    cases = len(_algorithms(args)) * _size_count(command, args)
    return max(1, min(check_jobs(getattr(args, "jobs", 1)), cases))


def _torchrun() -> bool:
    import os

    return "WORLD_SIZE" in os.environ and "LOCAL_RANK" in os.environ


def estimate_links(spec: str) -> float | None:
    """About how many links a builder or preset SPEC makes, from its numbers alone (None for files and unknown names)."""
    devices = spec_devices(spec)
    if devices is None:
        return None
    return float(devices) * devices if spec.partition(":")[0].strip().lower() == "ideal" else 8.0 * devices
