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
MIN_UNITLESS_BPS = 1e6  # a plain number below this (1 MB/s) is a unit left out ('--bandwidth 25'), not bytes/s
_BW_UNITS = {
    "": 1.0, "b/s": 1.0, "bps": 1.0,
    "kb/s": 1e3, "mb/s": 1e6, "gb/s": 1e9, "tb/s": 1e12,
    "kib/s": 2.0**10, "mib/s": 2.0**20, "gib/s": 2.0**30,
    "gbit/s": 1e9 / 8, "gbps": 1e9 / 8, "gbit": 1e9 / 8, "mbit/s": 1e6 / 8,
}
_NUMBER = re.compile(r"^\s*([-+]?[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Zµ/]*)\s*$")

SIZE_HELP = "a byte count such as 4096, 1e6, 64KiB, 1MB or 2GiB (KiB/MiB/GiB = powers of 2, KB/MB/GB = powers of 10)"


MAX_SIZE = 2**50  # 1PiB: larger than any buffer a run moves, small enough for exact float arithmetic
MAX_POINTS = 10000  # sizes in one range, rank counts in one list


def _split(text: str, field: str, accepted: str) -> tuple[float, str]:
    """(number, lower-case unit) of `text`; a sign is read, for the caller's range check to refuse a negative value."""
    match = _NUMBER.match(str(text))
    if not match:
        raise CollsimError(f"{field}: cannot read {text!r}; expected {accepted}")
    value = float(match.group(1))
    if not math.isfinite(value):
        raise CollsimError(f"{field}: {text!r} is too large to be a number; expected {accepted}")
    return value, match.group(2).lower()


def _finite(value: float, text, field: str, accepted: str) -> float:
    if not math.isfinite(value):
        raise CollsimError(f"{field}: {text!r} is not a finite number; expected {accepted}")
    return value


def _no_bool(value, field: str, accepted: str) -> None:
    """YAML reads true/yes/on as a bool, which Python would take as the number 1: refused."""
    if isinstance(value, bool):
        raise CollsimError(f"{field}: {value!r} is a boolean; expected {accepted}")


def parse_size(text: str | int, field: str = "size") -> int:
    """Bytes from '64KiB', '1MB', '2GiB', '1e6' or a plain integer (at most MAX_SIZE)."""
    _no_bool(text, field, SIZE_HELP)
    if isinstance(text, int):
        if text < 0:
            raise CollsimError(f"{field}: {text} is negative; expected {SIZE_HELP}")
        nbytes: float = text
    else:
        value, unit = _split(text, field, SIZE_HELP)
        if unit not in _SIZE_UNITS:
            raise CollsimError(f"{field}: unknown unit {unit!r} in {text!r}; expected {SIZE_HELP}")
        nbytes = value * _SIZE_UNITS[unit]
    if nbytes < 0:
        raise CollsimError(f"{field}: {text!r} is negative; expected {SIZE_HELP}")
    if nbytes > MAX_SIZE:
        raise CollsimError(f"{field}: {text!r} is over the largest size collsim takes, 1024TiB ({MAX_SIZE} bytes); expected {SIZE_HELP}")
    if nbytes != int(nbytes):
        raise CollsimError(f"{field}: {text!r} is not a whole number of bytes; expected {SIZE_HELP}")
    return int(nbytes)


def _factor(text: str, spec: str, field: str) -> float:
    try:
        factor = float(text)
    except ValueError:
        factor = float("nan")
    if not (math.isfinite(factor) and factor > 1):
        raise CollsimError(f"{field}: FACTOR {text!r} in {spec!r} is not a number > 1; expected START:END:FACTOR such as 1KiB:1GiB:4")
    return factor


def parse_size_range(text: str, field: str = "sizes", multiple: int = 1) -> list[int]:
    """Sizes from 'A:B' (powers of two from A to B), 'A:B:F' (factor F) or a comma list; at least one, at most MAX_POINTS.

    Sizes a range generates between its ends are rounded to a multiple of `multiple` (the element size), so that a
    range such as 1e6:1e9:1.5 never asks for a size the user did not type and the dtype cannot hold.
    """
    text = str(text)
    if ":" not in text:
        sizes = [parse_size(part.strip(), field) for part in text.split(",") if part.strip()]
        if not sizes:
            raise CollsimError(f"{field}: {text!r} names no size; expected {SIZE_HELP}, a list A,B,C or a range START:END[:FACTOR]")
        if len(sizes) > MAX_POINTS:
            raise CollsimError(f"{field}: {len(sizes)} sizes, over the limit of {MAX_POINTS}; expected fewer sizes")
        return sizes
    parts = text.split(":")
    if len(parts) not in (2, 3):
        raise CollsimError(f"{field}: {text!r} should be START:END or START:END:FACTOR, e.g. 1KiB:1GiB")
    start, end = parse_size(parts[0].strip(), field), parse_size(parts[1].strip(), field)
    factor = _factor(parts[2].strip(), text, field) if len(parts) == 3 else 2.0
    if start <= 0 or end < start:
        raise CollsimError(f"{field}: {text!r} needs 0 < START <= END, e.g. 1KiB:1GiB")
    points = math.floor(math.log(end / start) / math.log(factor) + 1e-9) + 1
    if points > MAX_POINTS:
        raise CollsimError(f"{field}: {text!r} gives about {format_count(points)} sizes, over the limit of {MAX_POINTS}; "
                           "expected a larger FACTOR or a shorter range")
    sizes = [start]
    for k in range(1, points):
        size = max(multiple, round(start * factor**k / multiple) * multiple)
        sizes.append(min(size, end))
    if end not in sizes and end <= start * factor ** (points - 1) * (1 + 1e-12):
        sizes[-1] = end
    return list(dict.fromkeys(sizes))


TIME_HELP = "a time such as 2us, 0.5ms or 3e-6s (units s, ms, us, ns)"


def parse_time(text: str | float, field: str = "alpha") -> float:
    """Seconds from '2us', '1.5ms', '3e-6s' or '0'; a Python number (from a file's numeric field) is seconds.

    Text must carry a unit: a bare '2' could mean seconds or microseconds, so it is refused (only '0' needs none).
    """
    _no_bool(text, field, TIME_HELP)
    if isinstance(text, (int, float)):
        value, unit = _finite(float(text), text, field, TIME_HELP), "s"
    else:
        value, unit = _split(text, field, TIME_HELP)
    if unit not in _TIME_UNITS:
        raise CollsimError(f"{field}: unknown time unit {unit!r} in {text!r}; expected {TIME_HELP}")
    if not unit and value != 0:
        raise CollsimError(f"{field}: {text!r} has no unit; expected a time with a unit such as 2us, 0.5ms or 3e-6s")
    seconds = value * _TIME_UNITS[unit]
    if seconds < 0:
        raise CollsimError(f"{field}: {text!r} is negative; expected a time >= 0 with a unit such as 2us")
    return seconds


def parse_bandwidth(text: str | float, field: str = "bandwidth") -> float:
    """Bytes per second from '25GB/s', '400Gbit/s', '1e10' or a plain number of B/s."""
    accepted = "a bandwidth such as 25GB/s, 400Gbit/s or 1e10 (bytes/s)"
    _no_bool(text, field, accepted)
    if isinstance(text, (int, float)):
        value, unit = _finite(float(text), text, field, accepted), ""
    else:
        value, unit = _split(text, field, accepted)
    if unit not in _BW_UNITS:
        raise CollsimError(f"{field}: unknown bandwidth unit {unit!r} in {text!r}; use B/s, GB/s, GiB/s or Gbit/s")
    bps = value * _BW_UNITS[unit]
    if not bps > 0:
        raise CollsimError(f"{field}: {text!r} must be a bandwidth > 0; expected {accepted}")
    if isinstance(text, str) and not unit and bps < MIN_UNITLESS_BPS:
        raise CollsimError(f"{field}: {text!r} has no unit, so it is {text} bytes/s; expected a bandwidth with a unit "
                           f"such as {text.strip()}GB/s or {text.strip()}Gbit/s (a plain number is bytes/s, at least "
                           f"{MIN_UNITLESS_BPS:.0e})")
    return bps


def parse_gamma(text: str | float, field: str = "gamma") -> float:
    """Seconds per reduced byte from '1e-11' or a number: finite and >= 0."""
    accepted = "seconds per byte, a finite number >= 0 such as 1e-11"
    try:
        value = float(text)
    except ValueError:
        raise CollsimError(f"{field}: cannot read {text!r}; expected {accepted}") from None
    if not math.isfinite(value):
        raise CollsimError(f"{field}: {text!r} is not finite; expected {accepted}")
    if value < 0:
        raise CollsimError(f"{field}: {text!r} is negative; expected {accepted}")
    return value


def parse_rank_range(text: str | int, field: str = "ranks") -> list[int]:
    """Rank counts from '8', '2-17' or '2,4,8' (at most MAX_POINTS of them)."""
    accepted = "a count such as 8, a range 2-17 or a list 2,4,8"
    out: list[int] = []
    for part in str(text).split(","):
        part = part.strip()
        try:
            lo, hi = (int(x) for x in part.split("-", 1)) if "-" in part[1:] else (int(part), int(part))
        except ValueError:
            raise CollsimError(f"{field}: cannot read {text!r}; expected {accepted}") from None
        if hi < lo or len(out) + hi - lo + 1 > MAX_POINTS:
            raise CollsimError(f"{field}: {part!r} in {text!r} is not a range LO-HI with LO <= HI of at most {MAX_POINTS} counts; "
                               f"expected {accepted}")
        out.extend(range(lo, hi + 1))
    if not out or min(out) < 1:
        raise CollsimError(f"{field}: {text!r} must name rank counts >= 1; expected {accepted}")
    if len(out) > MAX_POINTS:
        raise CollsimError(f"{field}: {text!r} names {len(out)} rank counts, over the limit of {MAX_POINTS}")
    return out


def format_count(count: float) -> str:
    """'2e10' for 2.1e10, '999' for 999: the order of magnitude a person compares at a glance."""
    if count < 1000:
        return f"{count:.0f}"
    mantissa, exponent = f"{count:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def format_size(nbytes: float) -> str:
    """'64KiB', '1MiB', '1000B': the shortest exact binary form, else bytes."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale and nbytes % scale == 0:
            return f"{int(nbytes // scale)}{unit}"
    return f"{int(nbytes)}B"


def size_ticks(lo: float, hi: float, most: int = 8) -> tuple[list[int], list[str]]:
    """Tick values and labels for a log axis of bytes from lo to hi: powers of two written 1KiB, 32MiB, 1GiB (never
    plotly's '1B' for a billion), every 1, 2, 5, 10 or 20 doublings, the fewest that give at most `most` ticks."""
    import math

    a = math.floor(math.log2(max(lo, 1)))
    b = math.ceil(math.log2(max(hi, lo, 1)))
    for step in (1, 2, 5, 10, 20):
        exps = [e for e in range(a, b + 1) if e % step == 0]
        if len(exps) <= most:
            break
    return [1 << e for e in exps], [format_size(1 << e) for e in exps]


def format_time(seconds: float) -> str:
    """A time with a unit a person reads at a glance."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.3f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds:.3f} s"


def unit_kind(word: str) -> str | None:
    """'size', 'time' or 'bandwidth' when `word` alone is a unit of that kind (as in '1 MiB' typed with a space)."""
    word = word.strip().lower()
    for kind, units in (("size", _SIZE_UNITS), ("time", _TIME_UNITS), ("bandwidth", _BW_UNITS)):
        if word and word in units:
            return kind
    return None
