"""A preset calibrated to one nccl-tests log: a few physical free parameters, fitted within physical bounds.

`collsim predict` on a preset is NCCL's tuning model (algorithm, protocol, channels per size) timed
by the engine on the machine's published links. A real machine reaches less than its links'
datasheet rate and pays more per step than NCCL's tuning.cc constants (cloud fabrics: far more).
A calibration adjusts at most eight numbers, each with a physical meaning and a bound:

- `intra_efficiency`, `net_efficiency` in [0.05, 1], one per protocol (LL, LL128, Simple): the
  share of the published bandwidth of the links inside a node (NVLink, PCIe) and of the network
  links (NIC to network switch) that a protocol achieves; so a calibrated bandwidth is never above
  what the topology's links allow, and a protocol the training sizes never ran keeps 1 (the
  fit does not carry LL128's mid-size efficiency over to Simple's large sizes);
- `intra_step_s`, `net_step_s` >= 0: latency per step added to NCCL's per-step latency of the
  protocol in use (inside a node, across nodes); so a latency is never below NCCL's floor.

Everything else stays NCCL's: the protocol switch points (LL -> LL128 -> Simple) are where NCCL's
model switches for that machine, and the schedules are the ones `predict` runs. A parameter that
the log cannot see (the network on a one-node log) keeps its neutral value and is marked as not
identified.

Fitting a calibration to a log: simulator/nccl/fitting.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import yaml

from ..errors import CollsimError
from ..fileio import atomic_write
from ..topology.model import Topology
from ..topology.presets import MACHINE_PRESETS, build_preset
from ..units import parse_time
from .protocols import with_step_latency
from .tuning import PROTOCOLS, parse_nccl_version

FORMAT_VERSION = 1
PARAMS = tuple(f"{cls}_efficiency.{proto}" for cls in ("intra", "net") for proto in PROTOCOLS) + ("intra_step_s", "net_step_s")
ONES = (1.0, 1.0, 1.0)
MIN_EFFICIENCY = 0.05
MAX_STEP_S = 1e-3
FILE_KEYS = ("collsim_calibration", "preset", "nodes", "net", "nccl_version", "parameters", "identified", "fitted_to", "fit")


@dataclass(frozen=True)
class Calibration:
    """A preset's fitted free parameters (see the module docstring for their meaning and bounds)."""

    preset: str
    nodes: int = 1
    net: str | None = None
    intra_efficiency: tuple[float, ...] = ONES  # per protocol, in PROTOCOLS order (LL, LL128, Simple)
    net_efficiency: tuple[float, ...] = ONES
    intra_step_s: float = 0.0
    net_step_s: float = 0.0
    identified: tuple[str, ...] = PARAMS
    fitted_to: str = ""
    fit: dict = field(default_factory=dict)
    nccl_version: str | None = None  # the NCCL release whose latency tables the fit ran with (None: master)

    def __post_init__(self) -> None:
        if self.preset not in MACHINE_PRESETS:
            raise CollsimError(f"preset: {self.preset!r} is not a machine preset; expected one of {', '.join(MACHINE_PRESETS)}")
        parse_nccl_version(self.nccl_version)
        for name in ("intra_efficiency", "net_efficiency"):
            for proto, value in zip(PROTOCOLS, getattr(self, name)):
                if not _number(value) or not MIN_EFFICIENCY <= value <= 1.0:
                    raise CollsimError(f"{name}: {proto}: {value!r} is not an achieved share of the links' bandwidth; "
                                       f"expected a number in [{MIN_EFFICIENCY}, 1]")
        for name in ("intra_step_s", "net_step_s"):
            value = getattr(self, name)
            if not _number(value) or not 0.0 <= value <= MAX_STEP_S:
                raise CollsimError(f"{name}: {value!r} is not a latency per step added to NCCL's; "
                                   f"expected seconds in [0, {MAX_STEP_S:g}]")

    @property
    def vector(self) -> np.ndarray:
        """(1/intra_efficiency per protocol, 1/net_efficiency per protocol, intra_step_s, net_step_s): the fitted coordinates."""
        return np.array([*(1 / np.array(self.intra_efficiency)), *(1 / np.array(self.net_efficiency)),
                         self.intra_step_s, self.net_step_s])

    def with_vector(self, x: np.ndarray) -> Calibration:
        """A copy at fitted coordinates x (see `vector`)."""
        return replace(self, intra_efficiency=tuple(float(1 / v) for v in x[0:3]),
                       net_efficiency=tuple(float(1 / v) for v in x[3:6]), intra_step_s=float(x[6]), net_step_s=float(x[7]))

    def efficiency(self, proto: str) -> tuple[float, float]:
        """(intra, net) efficiency of protocol `proto`."""
        i = PROTOCOLS.index(proto)
        return self.intra_efficiency[i], self.net_efficiency[i]

    def topology(self, nodes: int | None = None, net: str | None = None) -> Topology:
        """The calibrated preset machine, on `nodes` nodes (default: the node count it was fitted on);
        links at Simple's efficiency (the bulk protocol), which `predict` replaces by its protocol's."""
        return apply(build_preset(self.preset, self.nodes if nodes is None else nodes, net or self.net), self)

    def to_dict(self) -> dict:
        """Plain data for YAML/JSON (latencies in microseconds)."""
        return {"collsim_calibration": FORMAT_VERSION, "preset": self.preset, "nodes": self.nodes, "net": self.net,
                "nccl_version": self.nccl_version,
                "parameters": {"intra_efficiency": {p: round(v, 6) for p, v in zip(PROTOCOLS, self.intra_efficiency)},
                               "net_efficiency": {p: round(v, 6) for p, v in zip(PROTOCOLS, self.net_efficiency)},
                               "intra_step_us": round(self.intra_step_s * 1e6, 6),
                               "net_step_us": round(self.net_step_s * 1e6, 6)},
                "identified": list(self.identified), "fitted_to": self.fitted_to, "fit": self.fit}

    def dumps(self, path: str | Path) -> str:
        """The file's text: YAML, or JSON for a .json name."""
        data = self.to_dict()
        return json.dumps(data, indent=2) if Path(path).suffix.lower() == ".json" else yaml.safe_dump(data, sort_keys=False)

    def save(self, path: str | Path) -> None:
        """Write YAML (or JSON for a .json name) atomically."""
        atomic_write(path, self.dumps(path))


def _number(value) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and np.isfinite(value)


def is_calibration(data) -> bool:
    """Whether file data is a calibration (rather than a topology)."""
    return isinstance(data, dict) and "collsim_calibration" in data


def calibration_from_dict(data, where: str) -> Calibration:
    """Check and read a calibration file's data; errors name the file and the field."""
    def fail(message: str) -> CollsimError:
        return CollsimError(f"calibration: {where}: {message}")

    if not isinstance(data, dict):
        raise fail("expected a mapping with collsim_calibration, preset and parameters")
    unknown = [k for k in data if k not in FILE_KEYS]
    if unknown:
        raise fail(f"unknown field {unknown[0]!r}; expected {', '.join(FILE_KEYS)}")
    if data.get("collsim_calibration") != FORMAT_VERSION:
        raise fail(f"collsim_calibration: {data.get('collsim_calibration')!r}; expected {FORMAT_VERSION}")
    nodes = data.get("nodes", 1)
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
        raise fail(f"nodes: {nodes!r} is not a node count; expected an integer >= 1")
    net = data.get("net")
    if net is not None and not isinstance(net, str):
        raise fail(f"net: {net!r}; expected a network name such as efa100")
    values = _parameters(data.get("parameters"), fail)
    identified = data.get("identified", list(PARAMS))
    if not isinstance(identified, list) or any(i not in PARAMS for i in identified):
        raise fail(f"identified: {identified!r}; expected a list of {', '.join(PARAMS)}")
    fit = data.get("fit") or {}
    if not isinstance(fit, dict):
        raise fail(f"fit: {fit!r}; expected a mapping (what the fit reported)")
    version = data.get("nccl_version")
    if version is not None and not isinstance(version, str):
        raise fail(f"nccl_version: {version!r} is not an NCCL release; expected a string such as '2.20.3', or null")
    try:
        cal = Calibration(str(data.get("preset")), nodes, net, identified=tuple(identified),
                          fitted_to=str(data.get("fitted_to", "")), fit=fit, nccl_version=version, **values)
        build_preset(cal.preset, nodes, net)
    except CollsimError as exc:
        raise fail(str(exc)) from None
    return cal


_FILE_PARAMS = {"intra_efficiency": ("intra_efficiency", None), "net_efficiency": ("net_efficiency", None),
                "intra_step_us": ("intra_step_s", 1e-6), "net_step_us": ("net_step_s", 1e-6)}

def _parameters(params, fail) -> dict:
    """The file's `parameters` mapping as Calibration keyword arguments (seconds, per-protocol tuples)."""
    if not isinstance(params, dict):
        raise fail(f"parameters: {params!r}; expected a mapping with {', '.join(_FILE_PARAMS)}")
    unknown = [k for k in params if k not in _FILE_PARAMS]
    if unknown:
        raise fail(f"parameters: unknown field {unknown[0]!r}; expected {', '.join(_FILE_PARAMS)}")
    values = {}
    for key, (name, scale) in _FILE_PARAMS.items():
        if scale is None:  # per protocol
            per = params.get(key, {})
            if not isinstance(per, dict) or any(p not in PROTOCOLS for p in per):
                raise fail(f"parameters: {key}: {per!r}; expected a mapping of {', '.join(PROTOCOLS)} to numbers in "
                           f"[{MIN_EFFICIENCY}, 1]")
            for proto, value in per.items():
                if not _number(value):
                    raise fail(f"parameters: {key}: {proto}: {value!r} is not a number; expected a number in "
                               f"[{MIN_EFFICIENCY}, 1]")
            values[name] = tuple(float(per.get(p, 1.0)) for p in PROTOCOLS)
            continue
        value = params.get(key, 0.0)
        accepted = f"expected microseconds in [0, {MAX_STEP_S * 1e6:g}] or a time such as 3us"
        if isinstance(value, str):
            try:
                seconds = parse_time(value, key)
            except CollsimError as exc:
                raise fail(f"parameters: {exc}") from None
        elif _number(value):
            seconds = float(value) * scale
        else:
            raise fail(f"parameters: {key}: {value!r} is not a number; {accepted}")
        if not 0.0 <= seconds <= MAX_STEP_S:
            raise fail(f"parameters: {key}: {value!r} is out of range; {accepted}")
        values[name] = seconds
    return values


def link_classes(topology: Topology) -> tuple[np.ndarray, np.ndarray]:
    """Boolean masks (intra, net) over the links: network links join a NIC to a switch with no GPU on it;
    links with a NIC end are neither (PCIe to the NIC); every other link is inside a node."""
    kinds = topology.node_kinds
    touches_gpu = np.zeros(topology.num_nodes, dtype=bool)
    for u, v in zip(topology.link_src.tolist(), topology.link_dst.tolist()):
        if kinds[v] == "gpu":
            touches_gpu[u] = True
    intra = np.zeros(topology.num_links, dtype=bool)
    net = np.zeros(topology.num_links, dtype=bool)
    for lid, (u, v) in enumerate(zip(topology.link_src.tolist(), topology.link_dst.tolist())):
        pair = {kinds[u], kinds[v]}
        if "nic" in pair:
            other = v if kinds[u] == "nic" else u
            net[lid] = kinds[other] == "switch" and not touches_gpu[other]
        else:
            intra[lid] = True
    return intra, net


def apply(topology: Topology, cal: Calibration, proto: str = "Simple") -> Topology:
    """A copy of a preset machine with the calibration's bandwidths (for protocol `proto`) and step latencies.

    Bandwidths are scaled by the efficiency of their class; the per-step extras are added to the
    links' latencies the way `protocols.with_step_latency` spreads a step's latency over a route
    (so `simulate` sees them too); `predict` replaces link latencies with NCCL's and adds the extras
    itself (its machine, simulator/nccl/machine.py, reads the calibration from the copy's `origin`).
    """
    intra, net = link_classes(topology)
    intra_eff, net_eff = cal.efficiency(proto)
    clone = topology._copy()
    clone.bandwidth = np.where(intra, clone.bandwidth * intra_eff, np.where(net, clone.bandwidth * net_eff, clone.bandwidth))
    clone.latency = clone.latency + with_step_latency(topology, cal.intra_step_s, cal.net_step_s).latency
    if topology.origin is not None:
        clone.origin = replace(topology.origin, calibration=cal)
    clone.name = f"{topology.name} (calibrated)"
    return clone


def for_protocol(topology: Topology, proto: str, cal: Calibration | None = None) -> Topology:
    """The machine a protocol runs on: the uncalibrated `topology` at calibration `cal`'s efficiencies for `proto`,
    or `topology` itself without one."""
    return topology if cal is None else apply(topology, cal, proto)
