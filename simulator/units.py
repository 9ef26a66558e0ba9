"""Parsing and printing of sizes, times and bandwidths: the one place strings become numbers."""

from __future__ import annotations

import math
import re

from .errors import CollsimError

_SIZE_UNITS = {
    "": 1, "b": 1,
    "k": 1000, "kb": 1000, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9, "t": 10**12, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}
_TIME_UNITS = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
_BW_UNITS = {
    "": 1.0, "b/s": 1.0, "bps": 1.0,
    "kb/s": 1e3, "mb/s": 1e6, "gb/s": 1e9, "tb/s": 1e12,
    "kib/s": 2.0**10, "mib/s": 2.0**20, "gib/s": 2.0**30,
    "gbit/s": 1e9 / 8, "gbps": 1e9 / 8, "gbit": 1e9 / 8, "mbit/s": 1e6 / 8,
}
_NUMBER = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Zµ/]*)\s*$")

SIZE_HELP = "a byte count such as 4096, 1e6, 64KiB, 1MB or 2GiB (KiB/MiB/GiB = powers of 2, KB/MB/GB = powers of 10)"


def _split(text: str, field: str, accepted: str) -> tuple[float, str]:
    match = _NUMBER.match(str(text))
    if not match:
        raise CollsimError(f"{field}: cannot read {text!r}; expected {accepted}")
    return float(match.group(1)), match.group(2).lower()


def parse_size(text: str | int, field: str = "size") -> int:
    """Bytes from '64KiB', '1MB', '2GiB', '1e6' or a plain integer."""
    if isinstance(text, int):
        if text < 0:
            raise CollsimError(f"{field}: {text} is negative; expected {SIZE_HELP}")
        return text
    value, unit = _split(text, field, SIZE_HELP)
    if unit not in _SIZE_UNITS:
        raise CollsimError(f"{field}: unknown unit {unit!r} in {text!r}; expected {SIZE_HELP}")
    nbytes = value * _SIZE_UNITS[unit]
    if not math.isfinite(nbytes) or nbytes != int(nbytes):
        raise CollsimError(f"{field}: {text!r} is not a whole number of bytes")
    return int(nbytes)


def parse_size_range(text: str, field: str = "sizes") -> list[int]:
    """Sizes from 'A:B' (powers of two from A to B), 'A:B:F' (factor F) or a comma list."""
    if ":" not in text:
        return [parse_size(part, field) for part in text.split(",") if part.strip()]
    parts = text.split(":")
    if len(parts) not in (2, 3):
        raise CollsimError(f"{field}: {text!r} should be START:END or START:END:FACTOR, e.g. 1KiB:1GiB")
    start, end = parse_size(parts[0], field), parse_size(parts[1], field)
    factor = float(parts[2]) if len(parts) == 3 else 2.0
    if start <= 0 or end < start or factor <= 1:
        raise CollsimError(f"{field}: {text!r} needs 0 < START <= END and FACTOR > 1")
    sizes, size = [], float(start)
    while size <= end * (1 + 1e-12):
        sizes.append(int(round(size)))
        size *= factor
    return sizes


def parse_time(text: str | float, field: str = "alpha") -> float:
    """Seconds from '2us', '1.5ms', '3e-6' or a plain number of seconds."""
    if isinstance(text, (int, float)):
        value, unit = float(text), ""
    else:
        value, unit = _split(text, field, "a time such as 2us, 0.5ms or 3e-6 (seconds)")
    if unit not in _TIME_UNITS:
        raise CollsimError(f"{field}: unknown time unit {unit!r} in {text!r}; use s, ms, us or ns")
    seconds = value * _TIME_UNITS[unit]
    if seconds < 0:
        raise CollsimError(f"{field}: {text!r} is negative; expected a time >= 0")
    return seconds


def parse_bandwidth(text: str | float, field: str = "bandwidth") -> float:
    """Bytes per second from '25GB/s', '400Gbit/s', '1e10' or a plain number of B/s."""
    if isinstance(text, (int, float)):
        value, unit = float(text), ""
    else:
        value, unit = _split(text, field, "a bandwidth such as 25GB/s, 400Gbit/s or 1e10 (bytes/s)")
    if unit not in _BW_UNITS:
        raise CollsimError(f"{field}: unknown bandwidth unit {unit!r} in {text!r}; use B/s, GB/s, GiB/s or Gbit/s")
    bps = value * _BW_UNITS[unit]
    if bps <= 0:
        raise CollsimError(f"{field}: {text!r} must be a bandwidth > 0")
    return bps


def parse_rank_range(text: str | int, field: str = "ranks") -> list[int]:
    """Rank counts from '8', '2-17' or '2,4,8'."""
    out: list[int] = []
    for part in str(text).split(","):
        part = part.strip()
        try:
            if "-" in part[1:]:
                lo, hi = part.split("-", 1)
                out.extend(range(int(lo), int(hi) + 1))
            else:
                out.append(int(part))
        except ValueError:
            raise CollsimError(f"{field}: cannot read {text!r}; expected a count such as 8, a range 2-17 or a list 2,4,8") from None
    if not out or min(out) < 1:
        raise CollsimError(f"{field}: {text!r} must name rank counts >= 1")
    return out


def format_size(nbytes: float) -> str:
    """'64KiB', '1MiB', '1000B': the shortest exact binary form, else bytes."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{int(nbytes // scale)}{unit}"
    return f"{int(nbytes)}B"


def format_time(seconds: float) -> str:
    """A time with a unit a person reads at a glance."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.3f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds:.3f} s"
