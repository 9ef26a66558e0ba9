"""A measured or fitted link profile (alpha, bandwidth, gamma) saved as an editable YAML/JSON file.

Calibration (`collsim calibrate`) and log fitting (`collsim fit`) write one. It reaches a machine (closed
forms, the engine's links and message regimes) only through simulator.profile_adapter, which states what
alpha means per message, how it is split over a route's links and how segments are chosen by size.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

from .cost import LinkModel
from .errors import CollsimError
from .fileio import atomic_write

__all__ = ["LinkProfile", "Segment", "load_profile"]


@dataclass(frozen=True)
class Segment:
    """A size range [min_bytes, max_bytes) with its own alpha and bandwidth (a protocol regime)."""

    min_bytes: int
    max_bytes: int | None
    alpha_s: float
    bandwidth_Bps: float


SEGMENTS_BY = ("call", "message")


@dataclass(frozen=True)
class LinkProfile:
    """Alpha (s), bandwidth (B/s) and gamma (s/B), where they came from, and optional per-size segments.

    `segments_by` says which size picks a segment: 'call' (the collective's size, as `collsim fit` cuts an
    nccl-tests log) or 'message' (each message's own size, as `collsim calibrate --piecewise` measures them).
    """

    alpha_s: float
    bandwidth_Bps: float
    gamma_s_per_byte: float = 0.0
    source: str = ""
    segments: tuple[Segment, ...] = ()
    meta: dict = field(default_factory=dict)
    segments_by: str = "call"

    def __post_init__(self) -> None:
        _check_number("alpha_s", self.alpha_s, allow_zero=True)
        _check_number("bandwidth_Bps", self.bandwidth_Bps, allow_zero=False)
        _check_number("gamma_s_per_byte", self.gamma_s_per_byte, allow_zero=True)
        if self.segments_by not in SEGMENTS_BY:
            raise CollsimError(f"profile: segments_by is {self.segments_by!r}; expected one of {', '.join(SEGMENTS_BY)}")

    @property
    def model(self) -> LinkModel:
        """The top-level alpha and bandwidth as a LinkModel (per size, with segments: ProfileAdapter.link_model)."""
        return LinkModel.from_bandwidth(self.alpha_s, self.bandwidth_Bps, self.gamma_s_per_byte)

    def to_dict(self) -> dict:
        """Plain data for YAML/JSON."""
        data = asdict(self)
        data["segments"] = [asdict(s) for s in self.segments]
        if self.segments_by == "call":  # the default: files written before the field existed stay as they were
            del data["segments_by"]
        return data

    def dumps(self, path: str | Path) -> str:
        """The file's text: YAML, or JSON for a .json name."""
        if Path(path).suffix == ".json":
            return json.dumps(self.to_dict(), indent=2)
        return yaml.safe_dump({"collsim_profile": 1, **self.to_dict()}, sort_keys=False)

    def save(self, path: str | Path) -> None:
        """Write YAML (or JSON for a .json name) atomically."""
        atomic_write(path, self.dumps(path))


def _check_number(name: str, value, allow_zero: bool) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise CollsimError(f"profile: {name} must be a number, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise CollsimError(f"profile: {name} is {value}; expected a number {'>= 0' if allow_zero else '> 0'}")


PROFILE_KEYS = ("collsim_profile", "alpha_s", "bandwidth_Bps", "gamma_s_per_byte", "source", "segments", "meta", "segments_by")
SEGMENT_KEYS = ("min_bytes", "max_bytes", "alpha_s", "bandwidth_Bps")


def load_profile(path: str | Path) -> LinkProfile:
    """Read a profile file written by collsim (or by hand), with errors naming the file, the field, the value and what is accepted."""
    from .readfile import read_data

    data = _fields(read_data(path, "profile"), PROFILE_KEYS, ("alpha_s", "bandwidth_Bps"), path, "")
    raw_segments = data.get("segments") or []
    if not isinstance(raw_segments, list):
        raise CollsimError(f"profile: {path}: segments is {raw_segments!r}; expected a list of "
                           "{min_bytes, max_bytes, alpha_s, bandwidth_Bps}")
    segments = tuple(_segment(seg, path, f"segments[{i}] ") for i, seg in enumerate(raw_segments))
    meta = data.get("meta") or {}
    if not isinstance(meta, dict) or not isinstance(data.get("source", ""), str):
        bad = "meta" if not isinstance(meta, dict) else "source"
        raise CollsimError(f"profile: {path}: {bad} is {data[bad]!r}; expected {'a mapping' if bad == 'meta' else 'text'}")
    gamma = _number(data, "gamma_s_per_byte", path, "") if "gamma_s_per_byte" in data else 0.0
    by = data.get("segments_by", "call")
    if by not in SEGMENTS_BY:
        raise CollsimError(f"profile: {path}: segments_by is {by!r}; expected one of {', '.join(SEGMENTS_BY)}")
    return LinkProfile(float(_number(data, "alpha_s", path, "")), float(_number(data, "bandwidth_Bps", path, "")), float(gamma),
                       data.get("source", ""), segments, dict(meta), by)


def _fields(entry, accepted: tuple[str, ...], required: tuple[str, ...], path, where: str) -> dict:
    """`entry` when it is a mapping with every required key and no unknown one."""
    if not isinstance(entry, dict):
        raise CollsimError(f"profile: {path}: {where or 'the file'} holds {type(entry).__name__} {str(entry)[:40]!r}; "
                           f"expected a mapping with {', '.join(required)}")
    missing = [k for k in required if k not in entry]
    if missing:
        raise CollsimError(f"profile: {path}: {where}needs the fields {', '.join(required)}; {missing[0]!r} is missing")
    unknown = [k for k in entry if k not in accepted]
    if unknown:
        raise CollsimError(f"profile: {path}: {where}unknown field {unknown[0]!r}; expected {', '.join(accepted)}")
    return entry


def _number(entry: dict, key: str, path, where: str, integer: bool = False, minimum: int = 0):
    """entry[key] as a finite number >= minimum, or for bandwidth_Bps a number > 0 where inf means no per-byte cost
    (what `collsim fit` writes for a flat segment); text such as '1e-6' is read as a number."""
    value = entry[key]
    if isinstance(value, str) and not integer:  # YAML reads 1e-6 (no dot) as text
        try:
            value = float(value)
        except ValueError:
            pass
    ok = not isinstance(value, bool) and isinstance(value, int if integer else (int, float))
    bandwidth = key == "bandwidth_Bps"
    if not ok or not (math.isfinite(value) or (bandwidth and value > 0)) or value < minimum or (bandwidth and value == 0):
        accepted = "a number > 0 (.inf: no per-byte cost)" if bandwidth else \
            f"{'an integer' if integer else 'a finite number'} >= {minimum}"
        raise CollsimError(f"profile: {path}: {where}{key} is {value!r}; expected {accepted}")
    return value


def _segment(seg, path, where: str) -> Segment:
    _fields(seg, SEGMENT_KEYS, SEGMENT_KEYS[:1] + SEGMENT_KEYS[2:], path, where)
    hi = None if seg.get("max_bytes") is None else _number(seg, "max_bytes", path, where, integer=True, minimum=1)
    lo = _number(seg, "min_bytes", path, where, integer=True)
    if hi is not None and hi <= lo:
        raise CollsimError(f"profile: {path}: {where}max_bytes {hi} is not above min_bytes {lo}; expected min_bytes < max_bytes")
    return Segment(lo, hi, float(_number(seg, "alpha_s", path, where)), float(_number(seg, "bandwidth_Bps", path, where)))
