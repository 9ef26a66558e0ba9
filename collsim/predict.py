"""What nccl-tests would print on a preset machine: NCCL's picks (algorithm, protocol, channels) per size, each timed
by the engine (simulator/nccl/predict.py). Asked by `collsim predict`, the app's Reality and What-if pages."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from simulator.collective import REDUCING, TOTAL_SIZE_OPS, normalize_op
from simulator.errors import CollsimError
from simulator.formats.nccl_tests import ResultRow, format_log, nccl_type_name
from simulator.nccl.machine import NcclMachine, knows, resolve
from simulator.nccl.placement import default_ranks, parse_ranks_per_node
from simulator.nccl.predict import DISCARDED, MAX_CHANNELS, OPS, check_channels, parse_algo, predict
from simulator.nccl.result import Prediction
from simulator.nccl.symmetry import check_gpus
from simulator.nccl.tuning import PROTOCOLS, parse_nccl_version, release_name
from simulator.render import table
from simulator.topology.model import Topology
from simulator.topology.spec import parse_topology, preset_gpus
from simulator.units import format_size, parse_size_range

from .request import OutputFile, Request, Result

DEFAULT_SIZES = "1MiB:8GiB"


@dataclass(frozen=True)
class PredictRequest(Request):
    """`preset` is a machine preset spec (NAME[:nodes=N,...]) or a calibrated preset file; `sizes` in nccl-tests'
    meaning, as bytes or as text ('1MiB:8GiB', '4KiB,1MiB'); ranks default to every GPU (or K per node)."""

    preset: str
    op: str = "allreduce"
    sizes: tuple[int, ...] | str = DEFAULT_SIZES
    ranks: int | None = None
    ranks_per_node: int | str | None = None
    proto: str = "auto"
    algo: str = "auto"
    channels: int | str | None = None
    nccl_version: str | None = None
    nvls_step_s: float | None = None  # replaces NVLS_STEP_FIT (the app's held-out value for a log it was fitted on)
    nccl_log: str | None = None  # also write the table here (nccl-tests format)
    csv: str | None = None  # also write the picks here (NCCL tuner-plugin CSV)
    topology: Topology = field(init=False, repr=False, compare=False)
    machine: NcclMachine | Topology = field(init=False, repr=False, compare=False)  # NCCL's machine, resolved once
    nccl_algo: str | None = field(init=False, repr=False, compare=False)  # `algo` as NCCL_ALGO names it; None: NCCL's pick

    def check(self) -> None:
        op = normalize_op(self.op)
        if op not in OPS:
            raise CollsimError(f"op: predict covers {', '.join(OPS)}; not {op}")
        self._set("op", op)
        self._set("proto", _proto(self.proto))
        self._set("nccl_algo", parse_algo(self.algo))
        self._set("channels", _channels(self.channels))
        parse_nccl_version(self.nccl_version)
        gpus = preset_gpus(self.preset)
        if gpus is not None:  # before building it
            check_gpus(gpus, f"--preset {self.preset}")
        if isinstance(self.sizes, str):
            self._set("sizes", tuple(parse_size_range(self.sizes, "size", multiple=4)))
        per_node = parse_ranks_per_node(self.ranks_per_node)
        self._set("ranks_per_node", per_node)
        if self.ranks is not None and (isinstance(self.ranks, bool) or self.ranks < 1):
            raise CollsimError(f"ranks: {self.ranks}; expected an integer >= 1")
        topology = parse_topology(self.preset)
        self._set("topology", topology)
        self._set("ranks", self.ranks or default_ranks(topology, per_node))
        # a topology NCCL's model does not know: predict says so after its own checks
        machine = resolve(topology, self.nccl_version) if knows(topology) or per_node is not None else topology
        self._set("machine", machine)
        if per_node is not None:
            machine.system(self.ranks, per_node)  # what is wrong with K, before the rank limit

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

    def forced(self) -> list[tuple[str, Any]]:
        """The options that override NCCL's own choices, as (flag, value)."""
        version = release_name(parse_nccl_version(self.nccl_version))
        given = (("--ranks-per-node", self.ranks_per_node), ("--algo", self.algo if self.nccl_algo else None),
                 ("--proto", self.proto), ("--channels", self.channels), ("--nccl-version", version))
        return [(flag, value) for flag, value in given if value is not None]

    def release(self) -> str | None:
        """The NCCL release predict used: the one asked for, else the calibration's, else None (master)."""
        return release_name(self.machine.nccl_version)

    def run(self) -> PredictResult:
        rows = predict(self.machine, self.op, list(self.sizes), ranks=self.ranks, proto=self.proto,
                       ranks_per_node=self.ranks_per_node, algo=self.nccl_algo, channels=self.channels,
                       nvls_step_s=self.nvls_step_s)
        return PredictResult(self, rows)


def _channels(value: int | str | None) -> int | None:
    if value is None:
        return None
    try:
        count = None if isinstance(value, bool) else int(value)
    except ValueError:
        count = None
    if count is None:
        raise CollsimError(f"channels: {value!r} is not a channel count; expected an integer from 1 to {MAX_CHANNELS}")
    return check_channels(count)


def _proto(text: str | None) -> str | None:
    if text is None or text == "auto":
        return None
    match = {p.lower(): p for p in PROTOCOLS}.get(str(text).lower())
    if match is None:
        raise CollsimError(f"proto: {text!r} is not a protocol; expected auto, {', '.join(PROTOCOLS)}")
    return match


@dataclass(frozen=True)
class PredictResult(Result):
    """One Prediction per size, with the request that made them."""

    request: PredictRequest
    rows: list[Prediction]

    def title(self) -> str:
        return f"collsim predict {self.request.preset}" + "".join(f" {flag} {value}" for flag, value in self.request.forced())

    def log_rows(self) -> list[ResultRow]:
        """The predictions as nccl-tests rows (out-of-place; nccl-tests' count: elements per rank)."""
        op, ranks = self.request.op, self.request.ranks
        per = 4 * (ranks if op in TOTAL_SIZE_OPS else 1)
        return [ResultRow(r.bytes, r.bytes // per, nccl_type_name("float32"), "sum" if op in REDUCING else "none", -1, r.time_s,
                          None, None) for r in self.rows]

    def text(self) -> str:
        req = self.request
        forced = req.forced()
        lines = [format_log(req.op, req.ranks, self.log_rows(), title=self.title()).rstrip("\n"),
                 "# picks (NCCL's tuning model" + (", forced: " + " ".join(f"{f} {v}" for f, v in forced) if forced else "")
                 + ") and the schedule the engine ran:",
                 table(["size", "NCCL algo", "proto", "channels", "schedule"],
                       [[format_size(r.bytes), r.nccl_algo, r.proto, r.channels, r.algorithm] for r in self.rows], "llrrl")]
        lines += [f"# {format_size(r.bytes)}: scaled from fewer nodes (simulator/nccl/symmetry.py): {r.reduced}"
                  for r in self.rows if r.reduced]
        if any(r.algorithm == DISCARDED for r in self.rows):
            lines.append("# 0 B: NCCL discards a collective of count 0 (src/enqueue.cc, taskAppend) and runs nothing: 0 s")
        return "\n".join(lines)

    def data(self) -> dict[str, Any]:
        req = self.request
        return {"preset": req.preset, "op": req.op, "ranks": req.ranks, "ranks_per_node": req.ranks_per_node,
                "algo": req.nccl_algo, "proto": req.proto, "channels": req.channels, "nccl_version": req.release(),
                "rows": [{"bytes": r.bytes, "time_s": r.time_s, "engine_s": r.engine_s, "base_s": r.base_s,
                          "nccl_algorithm": r.nccl_algo, "protocol": r.proto, "schedule": r.algorithm,
                          "channels": r.channels, "reduced": r.reduced or None} for r in self.rows]}

    def files(self) -> list[OutputFile]:
        req, out = self.request, []
        if req.nccl_log:
            out.append(OutputFile(req.nccl_log, "nccl-tests log", format_log(req.op, req.ranks, self.log_rows(), title=self.title())))
        if req.csv:
            nodes = req.machine.system(req.ranks, req.ranks_per_node)[0].nodes
            out.append(OutputFile(req.csv, "NCCL tuner CSV", tuner_csv(req.op, req.ranks, self.rows, nodes)))
        return out


TUNER_NAMES = {"allreduce": "allreduce", "allgather": "allgather", "reduce_scatter": "reducescatter"}
TUNER_ALGOS = {"nccl_ring": "ring", "nccl_tree": "tree", "nvls": "nvls", "nvls_tree": "nvls_tree"}  # plugin.c names
MAX_TUNER_BYTES = 4294967295  # the example file's open end


def tuner_csv(op: str, ranks: int, rows: list[Prediction], nodes: int) -> str:
    """The picks as rows of NCCL's example tuner plugin: collective,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks.

    Sizes with the same pick are merged; a range runs from just above the previous size to this size, the
    last one to the end. The algorithm is the family the engine timed (nccl_tree -> NCCL's tree).
    """
    lines = ["# collsim predict: NCCL tuner-plugin CSV (ext-tuner/example/nccl_tuner.conf)",
             "# collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks"]
    ranges: list[list] = []
    for r in rows:
        if r.algorithm == DISCARDED:  # nothing runs at count 0: no pick to give the plugin
            continue
        pick = (TUNER_ALGOS.get(r.algorithm, r.algorithm), r.proto.lower(), r.channels)  # pat: NCCL's own name
        if ranges and ranges[-1][2] == pick:
            ranges[-1][1] = r.bytes
        else:
            ranges.append([ranges[-1][1] + 1 if ranges else 0, r.bytes, pick])
    if ranges:
        ranges[-1][1] = max(ranges[-1][1], MAX_TUNER_BYTES)
    for low, high, (algo, proto, channels) in ranges:
        lines.append(f"{TUNER_NAMES[op]},{low},{high},{algo},{proto},{channels},{nodes},{ranks}")
    return "\n".join(lines) + "\n"
