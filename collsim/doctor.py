"""`collsim doctor LOG`: read a user's nccl-tests log, find the machine it ran on (or take --preset), set what NCCL
should reach there per size (PredictRequest) next to what was measured, and say where and why it falls short: the
regime (latency-bound small sizes, bandwidth-bound large ones, the link class between nodes), the likely causes ranked
with the numbers behind each, and what to try. A gap within the model's own measured error on that machine class is
not called a fault (MODEL_ERROR; docs/doctor.md)."""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from statistics import median
from typing import Any

from simulator.collective import busbw_factor
from simulator.errors import CollsimError
from simulator.formats.nccl_tests import NcclTestsLog, parse_log
from simulator.nccl.predict import OPS
from simulator.readfile import read_bytes
from simulator.render import table
from simulator.topology.presets import MACHINE_PRESETS, NETWORKS, PRESET_GPUS, PRESETS
from simulator.topology.spec import larger_preset, preset_gpus
from simulator.units import format_size

from .predict import PredictRequest
from .request import Request, Result

LARGE = 64 << 20  # sizes judged for bandwidth (the bandwidth-bound regime on every bundled machine)
SMALL = (1 << 10, 64 << 10)  # sizes judged for latency (NCCL's LL / LL128 regime)
SMALL_SIZES = 3  # at most this many small sizes are predicted (spread over SMALL)
DEFAULT_ERROR = 0.15  # the model's error on a machine class no bundled log says otherwise about (docs/accuracy.md goal)
# The model's measured error at >= 64 MiB where it is larger than DEFAULT_ERROR: preset name and nodes > 1 -> (median
# |busbw error|, where it was measured). benchmarks/doctor_accuracy.py prints these numbers; a gap within them is
# the model's, not the machine's.
MODEL_ERROR = {
    ("dgx-a100", True): (0.75, "log 06 (CoreWeave A100, 4 x 8, IB + SHARP): predict is 72-92% above the measured busbw "
                               "at every size >= 64 MiB (docs/accuracy.md)"),
}
LATENCY_LIMIT = 4.0  # small sizes this many times slower than expected are a latency fault (the model's worst: 3.3x, log 01)
HALF = (0.35, 0.65)  # a large-size ratio in this band reads as half the expected rate
# GPU family -> its default preset, and text in a log's comments that names a more exact machine (checked in order).
FAMILY_PRESET = {"a100": "dgx-a100", "h100": "dgx-h100", "h200": "dgx-h200", "b200": "hgx-b200", "b300": "hgx-b300",
                 "rtx4090": "rtx4090-pcie", "mi300x": "mi300x"}
HINTS = (
    (re.compile(r"\bp4de?\b", re.I), "p4de"), (re.compile(r"\bp5(\.48xlarge)?\b", re.I), "p5"),
    (re.compile(r"\bp6-b200\b", re.I), "p6-b200"), (re.compile(r"a3[- ]?mega|tcpxo", re.I), "a3-mega"),
    (re.compile(r"\bgb200\b", re.I), "gb200-nvl4"),
)
_HOST = re.compile(r"#\s*Rank\s+(\d+)\b.*?\bon\s+(\S+)\s+device\b")
_GDR_OFF = re.compile(r"\bGDR 0\b|NCCL_NET_GDR_LEVEL=(0|LOC)\b")
_PROTO_SET = re.compile(r"NCCL_PROTO\s*(?:=|set by environment to)\s*(\S+)", re.I)


# ---- the machine -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Machine:
    """The preset spec a log is judged on and how it was chosen."""

    spec: str
    how: str


def infer_machine(log: NcclTestsLog, text: str) -> Machine:
    """The nearest preset: the GPU the log names (its device list or header), a machine its comments name (p5, p4de,
    A3 Mega, GB200 ...), and the node count from the hosts of its device list, else ranks / GPUs per node."""
    if log.gpu is None or log.gpu.family not in FAMILY_PRESET:
        raise CollsimError(f"preset: {log.source} names no GPU collsim has a preset for (its device list or header); "
                           "expected --preset SPEC, e.g. p5:nodes=2 (`collsim topologies`)")
    family = log.gpu.family
    comments = "\n".join(line for line in text.splitlines() if "#" in line)
    hinted = [name for pattern, name in HINTS if pattern.search(comments) and PRESET_GPUS.get(name) == family]
    name = hinted[0] if hinted else FAMILY_PRESET[family]
    preset = PRESETS[name]
    hosts = _hosts(text)
    if len(hosts) == log.ranks:  # a complete device list
        nodes, counted = len(set(hosts.values())), f"{len(set(hosts.values()))} hosts in its device list"
    else:
        nodes = max(1, -(-log.ranks // preset.gpus_per_node))
        counted = f"{log.ranks} ranks / {preset.gpus_per_node} GPUs per node"
    if nodes > 1 and not preset.multinode:
        raise CollsimError(f"preset: {log.source} ran on {nodes} nodes of {family.upper()} GPUs, but {name} is one node; "
                           "expected --preset SPEC naming a multi-node machine (`collsim topologies`)")
    if name == "gb200-nvl4" and log.ranks > 4 * 18:
        name, nodes = "gb200-nvl72", 1
    spec = name if nodes == 1 else f"{name}:nodes={nodes}"
    why = f"comments name {name}" if hinted else f"default preset of {family.upper()}"
    others = [n for n, g in PRESET_GPUS.items() if g == family and n != name and n in PRESETS]
    return Machine(spec, f"inferred: GPU {log.gpu.text} (line {log.gpu.line}), {why}, {nodes} node(s) from {counted}"
                   + (f"; other presets of this GPU: {', '.join(others)} (--preset)" if others else ""))


def _hosts(text: str) -> dict[int, str]:
    """Rank -> host, from the log's device list ('#  Rank  0 Group 0 Pid 1 on HOST device 0 ...')."""
    return {int(m.group(1)): m.group(2) for m in map(_HOST.search, text.splitlines()) if m}


# ---- the request -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DoctorRequest(Request):
    """`log`: an nccl-tests log file (or, with `text`, the name of an uploaded one); `preset`: the machine (default:
    inferred from the log, infer_machine)."""

    log: str
    preset: str | None = None
    text: str | None = None
    parsed: NcclTestsLog = field(init=False, repr=False, compare=False)
    machine: Machine = field(init=False, repr=False, compare=False)
    log_text: str = field(init=False, repr=False, compare=False)
    predict: PredictRequest = field(init=False, repr=False, compare=False)

    def check(self) -> None:
        text = self.text if self.text is not None else read_bytes(self.log, "log").decode("utf-8", errors="replace")
        parsed = parse_log(text, self.log)  # as read_log reads a file
        if parsed.op not in OPS:
            raise CollsimError(f"op: {self.log} is a {parsed.op} log; the doctor covers {', '.join(OPS)}")
        sizes = judged_sizes(parsed)
        if not sizes:
            raise CollsimError(f"log: {self.log} has no timed row of a size >= {format_size(SMALL[0])}; expected a sweep "
                               "such as nccl-tests -b 8 -e 8G -f 2")
        if self.preset is not None and not self.preset.strip():
            raise CollsimError("preset: '' names no machine; expected a preset SPEC such as p5:nodes=2 (`collsim topologies`)")
        try:
            machine = _given(self.preset, parsed) if self.preset else infer_machine(parsed, text)
            request = PredictRequest(machine.spec, op=parsed.op, sizes=tuple(sizes), ranks=parsed.ranks,
                                     nccl_version=_nccl_version(text))
        except CollsimError as exc:  # the spec's own parser names the field 'topology': here it is --preset
            message = str(exc)
            raise CollsimError("preset:" + message.removeprefix("topology:") if message.startswith("topology:")
                               else message) from None
        for name, value in (("parsed", parsed), ("machine", machine), ("log_text", text), ("predict", request)):
            object.__setattr__(self, name, value)

    def run(self) -> DoctorResult:
        req = self.predict
        rows = _predicted(req.preset, req.op, req.sizes, req.ranks, req.nccl_version)
        measured = {r.bytes: r.out for r in self.parsed.rows if r.out.time_s > 0}
        factor = busbw_factor(req.op, req.ranks) / 1e9  # nccl-tests' busbw in GB/s: bytes / time x factor
        points = [Point(p.bytes, measured[p.bytes].busbw_GBps, p.bytes / p.time_s * factor, measured[p.bytes].time_s,
                        p.time_s, p.proto, p.nccl_algo) for p in rows]
        return DoctorResult(self, points, diagnose(self, points))


def _given(spec: str, log: NcclTestsLog) -> Machine:
    """The machine --preset names, refused in the doctor's words when it is no preset or too small for the log."""
    name = spec.partition(":")[0].strip()
    if name not in MACHINE_PRESETS and not os.path.exists(name):
        raise CollsimError(f"preset: unknown preset {name!r}; expected one of {', '.join(MACHINE_PRESETS)} (NAME[:nodes=N]), "
                           "or a calibrated preset file")
    gpus = preset_gpus(spec)
    if gpus is not None and gpus < log.ranks:
        raise CollsimError(f"preset: {spec} has {gpus} GPUs but {log.source} ran on {log.ranks} ranks; expected a machine "
                           f"of at least {log.ranks} GPUs" + (f", e.g. {larger_preset(spec, log.ranks)}"
                                                             if larger_preset(spec, log.ranks) else ""))
    family = PRESET_GPUS.get(name)
    named = log.gpu.family if log.gpu is not None else None
    mismatch = f"; note: the log ran on {log.gpu.text} GPUs, the preset has {family.upper()}" if (
        family and named and family != named) else ""
    return Machine(spec, "given" + mismatch)


def _nccl_version(text: str) -> str | None:
    """The NCCL release a log names ('NCCL version 2.21.5'), when it is one predict has tables for."""
    match = re.search(r"NCCL version (2\.(\d+)\.\d+)", text)
    return match.group(1) if match and int(match.group(2)) >= 19 else None


def judged_sizes(log: NcclTestsLog) -> list[int]:
    """The sizes predicted: every one >= LARGE (else the two largest), and up to SMALL_SIZES in SMALL."""
    sizes = sorted({r.bytes for r in log.rows if r.out.time_s > 0 and r.bytes >= SMALL[0]})
    large = [s for s in sizes if s >= LARGE] or sizes[-2:]
    small = [s for s in sizes if SMALL[0] <= s <= SMALL[1] and s not in large]
    step = max(1, math.ceil(len(small) / SMALL_SIZES))
    return sorted(set(small[::step][:SMALL_SIZES]) | set(large))


@lru_cache(maxsize=32)
def _predicted(spec: str, op: str, sizes: tuple[int, ...], ranks: int, version: str | None) -> tuple:
    """predict's rows (kept per question: the app and the tests ask the same one for copies of a log)."""
    return tuple(PredictRequest(spec, op=op, sizes=sizes, ranks=ranks, nccl_version=version).run().rows)


# ---- the diagnosis -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Point:
    """One size: measured and expected busbw (GB/s), times (s), and NCCL's pick there."""

    bytes: int
    measured_GBps: float
    expected_GBps: float
    measured_s: float
    expected_s: float
    proto: str
    algo: str

    @property
    def ratio(self) -> float:
        """Measured over expected busbw (1: as NCCL should reach)."""
        return self.expected_s / self.measured_s


@dataclass(frozen=True)
class Cause:
    """A likely cause: its name, how well the numbers fit it (0..1), the evidence and what to try."""

    name: str
    score: float
    evidence: str
    tries: tuple[str, ...]


@dataclass(frozen=True)
class Diagnosis:
    verdict: str  # healthy | within model error | slow
    regime: str
    model_error: float
    model_error_source: str
    large_ratio: float
    small_ratio: float | None
    causes: tuple[Cause, ...]


def model_error(spec: str) -> tuple[float, str]:
    """The model's measured busbw error at >= 64 MiB on this machine class, and where it was measured."""
    name, _, args = spec.partition(":")
    multi = "nodes=" in args and not re.search(r"nodes=1\b", args)
    return MODEL_ERROR.get((name.strip(), multi), (DEFAULT_ERROR, "the median busbw error at >= 64 MiB is within it on "
                                                   "every bundled log but 06; docs/doctor.md"))


def diagnose(request: DoctorRequest, points: list[Point]) -> Diagnosis:
    """Where the log falls short of the expectation and the causes that fit, best first."""
    large = [p for p in points if p.bytes >= LARGE] or points[-2:]
    small = [p for p in points if p.bytes <= SMALL[1] and p not in large]
    tol, source = model_error(request.machine.spec)
    large_ratio = median(p.ratio for p in large)
    small_ratio = median(p.ratio for p in small) if small else None
    slow_large = large_ratio < 1 - tol
    slow_small = small_ratio is not None and small_ratio < 1 / LATENCY_LIMIT
    causes: list[Cause] = []
    if slow_large:
        causes += _bandwidth_causes(request, large, large_ratio, small_ratio)
    if slow_small and not slow_large:
        causes.append(_latency_cause(request, small, small_ratio))
    causes.sort(key=lambda c: -c.score)
    if causes:
        verdict = "slow"
    elif large_ratio < 1 - DEFAULT_ERROR:
        verdict = "within model error"
    else:
        verdict = "healthy"
    regime = _regime(request, slow_large, slow_small)
    return Diagnosis(verdict, regime, tol, source, large_ratio, small_ratio, tuple(causes))


def _regime(request: DoctorRequest, slow_large: bool, slow_small: bool) -> str:
    """Where the log falls short: the bandwidth-bound sizes (and the link class that sets them) or the latency-bound ones."""
    if slow_large:
        nodes, _, _, net = _topology_facts(request)
        links = f"the {net} links between {nodes} nodes" if nodes > 1 else "the links inside the node"
        return f"bandwidth-bound sizes (>= 64 MiB), set by {links},"
    return "latency-bound sizes (<= 64 KiB)" if slow_small else "none"


def _topology_facts(request: DoctorRequest) -> tuple[int, int | None, float | None, str]:
    """Nodes, NICs per node, one NIC's rate (GB/s) and the network's name of the machine judged."""
    origin = request.predict.topology.origin
    preset, nodes, net = (origin.preset, origin.nodes, origin.net) if origin is not None else (None, 1, None)
    machine = preset.machine if preset is not None else None
    nics = machine.nics_per_node if machine is not None else None
    rate = NETWORKS[net][0] / 1e9 if net in NETWORKS else None
    return nodes, nics, rate, net or "network"


def _bandwidth_causes(request: DoctorRequest, large: list[Point], ratio: float, small_ratio: float | None) -> list[Cause]:
    """The causes that fit large sizes slower than expected beyond the model's error."""
    nodes, nics, rate, net = _topology_facts(request)
    plateau = median(p.measured_GBps for p in large)
    expected = median(p.expected_GBps for p in large)
    text = request.log_text
    causes = []
    if nodes > 1 and nics and rate:
        one = max(rate, expected / nics)
        fit = _closeness(plateau, one) if plateau <= 2 * one else 0.0
        if fit > 0:
            causes.append(Cause("one NIC carries the inter-node traffic (a NIC down, or NCCL_IB_HCA / NCCL_SOCKET_IFNAME "
                                "naming one)", 0.6 + 0.4 * fit,
                                f"busbw plateaus at {plateau:.1f} GB/s at >= 64 MiB; one {net} NIC carries {rate:.1f} GB/s "
                                f"and the machine has {nics} per node, for {expected:.0f} GB/s expected",
                                ("check every NIC is up: ibstat / ibv_devinfo (fi_info -p efa on AWS), `NCCL_DEBUG=INFO` "
                                 "lists the NET/IB devices NCCL opened", "unset NCCL_IB_HCA / NCCL_SOCKET_IFNAME, or list "
                                 "every NIC in it")))
    if HALF[0] <= ratio <= HALF[1]:
        gdr_off = bool(_GDR_OFF.search(text))
        across = nodes > 1
        name = ("GPUDirect RDMA off: the NIC reads GPU memory through host memory (NCCL_NET_GDR_LEVEL)" if across else
                "GPU peer-to-peer off: traffic staged through host memory over PCIe (NCCL_P2P_LEVEL / NCCL_P2P_DISABLE)")
        evidence = f"measured busbw is {ratio:.2f}x the expected at >= 64 MiB ({plateau:.0f} of {expected:.0f} GB/s)"
        if gdr_off:
            evidence += "; the log's NCCL INFO lines say GDR 0"
        tries = (("NCCL_NET_GDR_LEVEL=SYS (or PHB), NCCL_DEBUG=INFO: 'GDR 1' on every connection; load nvidia-peermem",)
                 if across else ("NCCL_P2P_LEVEL=SYS, NCCL_DEBUG=INFO: 'via P2P' rather than 'via SHM'; check ACS/IOMMU",))
        causes.append(Cause(name, 0.5 + 0.4 * _closeness(ratio, 0.5) + (0.1 if gdr_off else 0.0), evidence, tries))
    if small_ratio is not None and small_ratio < 1 - DEFAULT_ERROR:
        uniform = _closeness(small_ratio, ratio)
        causes.append(Cause("every size slow alike: GPU clocks or power capped, or a slower link class than the preset's "
                            "(NVLink lanes down, PCIe generation / width)", 0.3 + 0.5 * uniform,
                            f"small sizes reach {small_ratio:.2f}x and large ones {ratio:.2f}x of the expected busbw",
                            ("nvidia-smi -q -d CLOCK,POWER (clocks under load), nvidia-smi nvlink -s (links and speed), "
                             "lspci -vv (LnkSta)",)))
    if not causes:
        causes.append(Cause("bandwidth below NCCL's expectation, no single cause fits", 0.2,
                            f"measured busbw is {ratio:.2f}x the expected at >= 64 MiB ({plateau:.0f} of "
                            f"{expected:.0f} GB/s)", ("NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH,TUNING: the "
                                                     "rings, trees and transports NCCL built",)))
    return causes


def _latency_cause(request: DoctorRequest, small: list[Point], ratio: float) -> Cause:
    """Small sizes far slower than NCCL's LL / LL128 latency while large ones are fine."""
    worst = min(small, key=lambda p: p.ratio)
    proto = _PROTO_SET.search(request.log_text)
    evidence = (f"at {format_size(worst.bytes)} NCCL would pick {worst.algo} {worst.proto} in "
                f"{worst.expected_s * 1e6:.1f} us; measured {worst.measured_s * 1e6:.1f} us ({1 / worst.ratio:.1f}x); "
                f"small sizes median {1 / ratio:.1f}x slower, large sizes as expected")
    if proto:
        evidence += f"; the log sets NCCL_PROTO {proto.group(1)}"
    return Cause("latency: LL / LL128 never picked (NCCL_PROTO), or launch overhead per call (no CUDA graphs, "
                 "a proxy or plugin latency)", 0.5 + 0.5 * min(1.0, (1 / ratio) / (2 * LATENCY_LIMIT)), evidence,
                 ("unset NCCL_PROTO (or NCCL_PROTO=LL,LL128,Simple); nccl-tests -G 1 (CUDA graphs) to take launch cost out",
                  "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING: the protocol NCCL picked per size"))


def _closeness(value: float, target: float) -> float:
    """1 when value == target, falling to 0 at a factor of 2 either way."""
    if value <= 0 or target <= 0:
        return 0.0
    return max(0.0, 1 - abs(math.log2(value / target)))


# ---- the result --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DoctorResult(Result):
    request: DoctorRequest
    points: list[Point]
    diagnosis: Diagnosis

    def tuner_command(self) -> str:
        req = self.request.predict
        return (f"collsim predict --preset {req.preset} --op {req.op} --ranks {req.ranks} --size 1KiB:16GiB "
                "--csv tuner.csv, then NCCL_TUNER_PLUGIN=<NCCL's ext-tuner example> NCCL_TUNER_CONFIG_FILE=tuner.csv")

    def verdict_line(self) -> str:
        d = self.diagnosis
        if d.verdict == "healthy":
            return (f"healthy: busbw at >= 64 MiB is {d.large_ratio:.2f}x what NCCL should reach here, within the model's "
                    f"error ({d.model_error:.0%})")
        if d.verdict == "within model error":
            return (f"no fault found: busbw at >= 64 MiB is {d.large_ratio:.2f}x the expectation, a gap within the model's "
                    f"own error on this machine class ({d.model_error:.0%}: {d.model_error_source}); low confidence")
        return f"slow: {d.regime} fall short of what NCCL should reach here; likely causes, best first:"

    def text(self) -> str:
        req, d = self.request, self.diagnosis
        lines = [f"# collsim doctor {req.log}", f"# {req.parsed.op} on {req.parsed.ranks} ranks; machine {req.machine.spec} "
                 f"({req.machine.how})",
                 f"# model confidence: its busbw is within {d.model_error:.0%} of measured on this machine class "
                 f"({d.model_error_source})",
                 table(["size", "measured busbw", "expected busbw", "measured/expected", "NCCL pick"],
                       [[format_size(p.bytes), f"{p.measured_GBps:.2f}", f"{p.expected_GBps:.2f}", f"{p.ratio:.2f}",
                         f"{p.algo} {p.proto}"] for p in self.points], "lrrrl"),
                 self.verdict_line()]
        for i, cause in enumerate(d.causes, start=1):
            lines += [f"{i}. {cause.name} (fit {cause.score:.2f})", f"   evidence: {cause.evidence}"]
            lines += [f"   try: {t}" for t in cause.tries]
        if d.causes:
            lines.append(f"then compare with NCCL's picks for this machine as a tuner file: {self.tuner_command()}")
        return "\n".join(lines)

    def data(self) -> dict[str, Any]:
        req, d = self.request, self.diagnosis
        return {"log": req.log, "op": req.parsed.op, "ranks": req.parsed.ranks, "preset": req.machine.spec,
                "preset_source": req.machine.how, "verdict": d.verdict, "regime": d.regime,
                "model_error": d.model_error, "model_error_source": d.model_error_source,
                "large_ratio": d.large_ratio, "small_ratio": d.small_ratio,
                "points": [{"bytes": p.bytes, "measured_busbw_GBps": p.measured_GBps, "expected_busbw_GBps": p.expected_GBps,
                            "measured_s": p.measured_s, "expected_s": p.expected_s, "algorithm": p.algo, "protocol": p.proto}
                           for p in self.points],
                "causes": [{"cause": c.name, "score": c.score, "evidence": c.evidence, "try": list(c.tries)}
                           for c in d.causes],
                "tuner": self.tuner_command()}
