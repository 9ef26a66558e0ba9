"""A measured or fitted link profile (alpha, bandwidth, gamma) saved as an editable YAML/JSON file.

Calibration (`collsim calibrate`) and log fitting (`collsim fit`) write one. It reaches a machine (closed
forms, the engine's links and message regimes) only through simulator.profile_adapter, which states what
alpha means per message, how it is split over a route's links and how segments are chosen by size.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

from .cost import LinkModel
from .errors import CollsimError
from .fileio import atomic_write

__all__ = ["LinkProfile", "Segment", "atomic_write", "load_profile"]  # atomic_write lives in fileio; kept here for old imports


@dataclass(frozen=True)
class Segment:
    """A size range [min_bytes, max_bytes) with its own alpha and bandwidth (a protocol regime)."""

    min_bytes: int
    max_bytes: int | None
    alpha_s: float
    bandwidth_Bps: float


@dataclass(frozen=True)
class LinkProfile:
    """Alpha (s), bandwidth (B/s) and gamma (s/B), where they came from, and optional per-size segments."""

    alpha_s: float
    bandwidth_Bps: float
    gamma_s_per_byte: float = 0.0
    source: str = ""
    segments: tuple[Segment, ...] = ()
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_number("alpha_s", self.alpha_s, allow_zero=True)
        _check_number("bandwidth_Bps", self.bandwidth_Bps, allow_zero=False)
        _check_number("gamma_s_per_byte", self.gamma_s_per_byte, allow_zero=True)

    @property
    def model(self) -> LinkModel:
        """The top-level alpha and bandwidth as a LinkModel (per size, with segments: ProfileAdapter.link_model)."""
        return LinkModel.from_bandwidth(self.alpha_s, self.bandwidth_Bps, self.gamma_s_per_byte)

    def to_dict(self) -> dict:
        """Plain data for YAML/JSON."""
        data = asdict(self)
        data["segments"] = [asdict(s) for s in self.segments]
        return data

    def save(self, path: str | Path) -> None:
        """Write YAML (or JSON for a .json name) atomically."""
        path = Path(path)
        text = json.dumps(self.to_dict(), indent=2) if path.suffix == ".json" else yaml.safe_dump(
            {"collsim_profile": 1, **self.to_dict()}, sort_keys=False)
        atomic_write(path, text)


def _check_number(name: str, value, allow_zero: bool) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise CollsimError(f"profile: {name} must be a number, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise CollsimError(f"profile: {name} is {value}; expected a number {'>= 0' if allow_zero else '> 0'}")


def load_profile(path: str | Path) -> LinkProfile:
    """Read a profile file written by collsim (or by hand), with errors naming the file and the field."""
    path = Path(path)
    try:
        text = path.read_text()
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except json.JSONDecodeError as exc:
        raise CollsimError(f"profile: {path} line {exc.lineno}: not valid JSON: {exc.msg}") from None
    except OSError as exc:
        raise CollsimError(f"profile: cannot read {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise CollsimError(f"profile: {path} is not valid YAML/JSON: {exc}") from None
    if not isinstance(data, dict) or "alpha_s" not in data or "bandwidth_Bps" not in data:
        raise CollsimError(f"profile: {path} needs the fields alpha_s and bandwidth_Bps")
    try:
        segments = tuple(Segment(int(s["min_bytes"]), None if s.get("max_bytes") is None else int(s["max_bytes"]),
                                 float(s["alpha_s"]), float(s["bandwidth_Bps"])) for s in data.get("segments") or ())
        return LinkProfile(float(data["alpha_s"]), float(data["bandwidth_Bps"]), float(data.get("gamma_s_per_byte", 0.0)),
                           str(data.get("source", "")), segments, dict(data.get("meta") or {}))
    except (TypeError, ValueError, KeyError) as exc:
        raise CollsimError(f"profile: {path}: {exc}") from None
