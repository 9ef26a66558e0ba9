"""Requests too big to run, refused up front with an estimate and the option that raises the limit.

Two limits, both options of the commands that build schedules or start processes: --max-transfers (transfers in
the schedules a request builds, default 5e7) and --max-memory (memory the run is estimated to take, default 8GiB).
Transfers are counted on the real builders at small rank counts (at most 32, one chunk) and extrapolated to the
requested rank count and --chunks, so the estimate is right in order of magnitude for every registered algorithm.
"""

from __future__ import annotations

import argparse
import math
import re

from simulator.algorithms import all_specs, build_schedule, get, names_for
from simulator.collective import Collective, normalize_op
from simulator.errors import CollsimError
from simulator.units import parse_rank_range, parse_size, parse_size_range

DEFAULT_MAX_TRANSFERS = "5e7"
DEFAULT_MAX_MEMORY = "8GiB"
PROCESS_BYTES = 200 * 2**20  # one torch.distributed rank process before its buffers
BUFFERS = 4  # copies of a rank's buffer a numpy check holds: input, output, expected, scratch
SVG_CELL_BYTES = 200  # one drawn element of one rank at one step
LINK_BYTES = 2048  # one link of a built topology (graph, routes, arrays)
SMALL = 64  # rank counts and chunks up to this never need an estimate


def add_limit_args(parser: argparse.ArgumentParser) -> None:
    """--max-transfers and --max-memory, documented in the command's --help."""
    parser.add_argument("--max-transfers", default=DEFAULT_MAX_TRANSFERS, metavar="N",
                        help=f"refuse up front a request whose schedules would have more transfers than N, all sizes and "
                             f"algorithms together (default {DEFAULT_MAX_TRANSFERS})")
    parser.add_argument("--max-memory", default=DEFAULT_MAX_MEMORY, metavar="SIZE",
                        help=f"refuse up front a request estimated to need more memory than SIZE (default {DEFAULT_MAX_MEMORY})")


def about(count: float) -> str:
    """'2e10' for 2.1e10: the order of magnitude a person compares at a glance."""
    if count < 1000:
        return f"{count:.0f}"
    mantissa, exponent = f"{count:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def _max_transfers(args: argparse.Namespace) -> float:
    text = str(args.max_transfers)
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (math.isfinite(value) and value >= 1):
        raise CollsimError(f"max-transfers: cannot read {text!r}; expected a count >= 1 such as 5e7")
    return value


def _int_ranks(args: argparse.Namespace) -> int | None:
    value = getattr(args, "ranks", None)
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        return max(parse_rank_range(value))
    return None


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
    spec = get(op, algo)
    takes_chunks = any(p.name == "chunks" for p in spec.params)
    params = {"chunks": 1} if takes_chunks else {}
    if group is not None and any(p.name == "group" for p in spec.params):
        params["group"] = group
    candidates = sorted({p for p in range(2, 33)} | ({group * k for k in range(1, 5)} if group else set()))
    samples: list[tuple[int, int]] = []
    for p in reversed([p for p in candidates if p <= ranks]):
        if spec.refusal(p) or (samples and p > samples[0][0] // 2):
            continue
        try:
            schedule = build_schedule(Collective(op, p, 8 * p * p, "int8"), algo, **params)
        except CollsimError:
            continue
        samples.append((p, max(len(schedule), 1)))
        if len(samples) == 2:
            break
    if not samples:
        return None
    scale = chunks if takes_chunks else 1
    (p2, t2) = samples[0]
    if p2 == ranks or len(samples) == 1:
        return t2 * (ranks / p2) ** 2 * scale
    (p1, t1) = samples[1]
    exponent = min(max(math.log(t2 / t1) / math.log(p2 / p1), 1.0), 3.0)
    whole = round(exponent)
    if abs(exponent - whole) < 0.15:  # p - 1 and p(p - 1) terms: the power is 1 or 2, a little more at small p
        exponent = whole
    return t2 * (ranks / p2) ** exponent * scale


def check_transfers(command: str, args: argparse.Namespace) -> None:
    """Refuse a request whose schedules would have more transfers than --max-transfers."""
    ranks = _int_ranks(args)
    chunks = getattr(args, "chunks", None) or 1
    if ranks is None or (ranks <= SMALL and chunks <= SMALL):
        return
    limit = _max_transfers(args)
    total = 0.0
    for op, algo in _algorithms(args):
        if get(op, algo).refusal(ranks):
            continue
        total += estimate_transfers(op, algo, ranks, chunks, getattr(args, "group", None)) or 0.0
    sizes = _size_count(command, args)
    total *= sizes
    if total > limit:
        asked = f"--ranks {args.ranks}" + (f" --chunks {args.chunks}" if getattr(args, "chunks", None) else "")
        per = f" ({sizes} sizes)" if sizes > 1 else ""
        raise CollsimError(f"{command} {asked}: about {about(total)} transfers{per}, over the limit of {about(limit)}; "
                           "--max-transfers raises it")


def _size_count(command: str, args: argparse.Namespace) -> int:
    """Schedules a command builds per (algorithm, rank count): one per size for check, sweep and verify."""
    text = {"check": getattr(args, "size", None), "verify": getattr(args, "sizes", None),
            "sweep": getattr(args, "size", None) or getattr(args, "sizes", None)}.get(command)
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
    """Refuse a request estimated to need more than --max-memory: buffers checked on numpy, processes started, SVG drawn."""
    ranks = _int_ranks(args)
    if command in ("check", "verify") and ranks is not None:
        text = args.size if command == "check" else args.sizes
        biggest = max(parse_size_range(text, "size" if command == "check" else "sizes"))
        processes = ranks * PROCESS_BYTES if command == "verify" and not _torchrun() else 0
        nbytes = processes + ranks * biggest * BUFFERS
        flag = "--size" if command == "check" else "--sizes"
        refuse_memory(command, f"{flag} {text} --ranks {args.ranks}", nbytes,
                      f"{ranks} ranks x {human(biggest)} x {BUFFERS} buffers" + (f" + {ranks} processes" if processes else ""),
                      args)
    elif command in ("calibrate", "compare") and ranks is not None and not getattr(args, "measured", None):
        refuse_memory(command, f"--ranks {ranks}", ranks * PROCESS_BYTES, f"{ranks} processes of about 200MiB", args)
    elif command == "draw" and ranks is not None:
        elements = args.elements if args.elements is not None else 2 * ranks
        steps = 2 * ranks * (getattr(args, "chunks", None) or 1)
        refuse_memory(command, f"--elements {elements} --ranks {ranks}", float(elements) * ranks * steps * SVG_CELL_BYTES,
                      "elements x ranks x steps of picture", args)
    for flag, spec in (("--topology", getattr(args, "topology", None)), ("", getattr(args, "spec", None))):
        links = estimate_links(str(spec)) if spec else None
        if links is not None:
            refuse_memory(command, f"{flag} {spec}".strip(), links * LINK_BYTES, f"about {about(links)} links", args)
    if command in ("simulate", "sweep") and not getattr(args, "topology", None) and ranks is not None:
        refuse_memory(command, f"--ranks {ranks}", float(ranks) * ranks * LINK_BYTES,
                      f"ideal:{ranks} has about {about(float(ranks) * ranks)} links", args)


def _torchrun() -> bool:
    import os

    return "WORLD_SIZE" in os.environ and "LOCAL_RANK" in os.environ


_SIZES = re.compile(r"^\s*\d+(\s*x\s*\d+)*\s*$")


def estimate_links(spec: str) -> float | None:
    """About how many links a builder or preset SPEC makes, from its numbers alone (None for files and unknown names)."""
    from simulator.topology import PRESETS
    from simulator.topology.spec import BUILDERS

    name, _, rest = spec.partition(":")
    name = name.strip().lower().replace("-", "_")
    if name not in BUILDERS and name not in PRESETS:
        return None
    devices = 1
    for i, part in enumerate(p.strip() for p in rest.split(",") if p.strip()):
        key, eq, value = part.partition("=")
        text = value if eq else key
        if (not eq and i == 0) or key.strip().lower() in ("nodes", "gpus", "hosts"):
            if _SIZES.match(text):
                for number in text.split("x"):
                    devices *= int(number)
    if name in PRESETS:
        devices *= 8
    return float(devices) * devices if name == "ideal" else 8.0 * devices
