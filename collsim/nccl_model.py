"""NCCL's own latency/bandwidth model (src/graph/tuning.cc) per (algorithm, protocol), its pick per size, and an
nccl-tests log compared with that pick: `collsim nccl-model` (simulator/nccl/tuning.py does the arithmetic).

Limits: none beyond the size list's own (units.parse_size_range caps how many sizes a range expands to); the model
is closed-form arithmetic per size."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from simulator.collective import REDUCING, ROOTED, TOTAL_SIZE_OPS
from simulator.errors import CollsimError
from simulator.formats.nccl_tests import ResultRow, format_log, read_log
from simulator.nccl.tuning import System, choose, compare, parse_nccl_version, tune
from simulator.render import table
from simulator.units import format_size, parse_bandwidth, parse_size_range

from .request import OutputFile, Request, Result

NVLS_SETTINGS = {"auto": None, "on": True, "off": False}


@dataclass(frozen=True)
class NcclModelRequest(Request):
    """The machine (`gpus` per node x `nodes`, `arch`, intra-node `link`, graph bandwidth `bus_bw` and `channels`,
    `nic_bw` x `nics` per node, `nvls` auto/on/off, `nccl_version`; bandwidths as text) and either `op` at `sizes`
    (text), or `compare_log`, an nccl-tests log of that machine, read at `placement`. `write_log` names an nccl-tests
    file for the predicted times as well."""

    gpus: int = 8
    nodes: int = 1
    arch: str = "hopper"
    link: str = "nvlink"
    op: str = "allreduce"
    sizes: str = "8:8GiB"
    bus_bw: str | None = None
    channels: int | None = None
    nic_bw: str = "400Gbit/s"
    nics: int | None = None
    nvls: str = "auto"
    nvls_efficiency: float = 1.0
    nccl_version: str = "latest"
    amd_cpu: bool = False
    compare_log: str | None = None
    placement: str = "out"
    write_log: str | None = None
    system: System = field(init=False, repr=False, compare=False)
    log: Any = field(init=False, repr=False, compare=False)  # the nccl-tests log compared, or None
    model: dict = field(init=False, repr=False, compare=False)  # (algorithm, protocol) -> (latency us, algbw GB/s)
    size_list: list[int] = field(init=False, repr=False, compare=False)

    def check(self) -> None:
        if self.nvls not in NVLS_SETTINGS:
            raise CollsimError(f"nvls: {self.nvls!r}; expected one of {', '.join(NVLS_SETTINGS)}")
        system = System(arch=self.arch.lower(), gpus_per_node=self.gpus, nodes=self.nodes, link=self.link.lower(),
                        bus_bw_GBps=parse_bandwidth(self.bus_bw, "bus-bw") / 1e9 if self.bus_bw else None,
                        channels=self.channels, nic_bw_GBps=parse_bandwidth(self.nic_bw, "nic-bw") / 1e9,
                        nics_per_node=self.nics, nvls=NVLS_SETTINGS[self.nvls], nvls_efficiency=self.nvls_efficiency,
                        net_overhead_us=2.0 if self.amd_cpu else 1.0, amd_cpu=self.amd_cpu,
                        nccl_version=parse_nccl_version(self.nccl_version))
        self._set("system", system)
        self._set("log", read_log(self.compare_log) if self.compare_log else None)
        if self.log is not None and self.log.ranks != system.ranks:
            raise CollsimError(f"compare: {self.compare_log} has {self.log.ranks} ranks but --gpus {self.gpus} x --nodes "
                               f"{self.nodes} = {system.ranks}")
        self._set("model", tune(system, self.asked_op))
        self._set("size_list", [] if self.log is not None else parse_size_range(self.sizes, "size"))

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

    @property
    def asked_op(self) -> str:
        """The op modelled: the compared log's, else `op`."""
        return self.log.op if self.log is not None else self.op

    def run(self) -> NcclModelResult:
        if self.log is not None:
            return NcclModelResult(self, compare(self.system, self.asked_op, self.log.measurements(self.placement)))
        picks, best, times = choose(self.system, self.op, self.size_list)
        names = [f"{a}/{p}" for a, p in times]
        rows = [{"bytes": s, "times_s": {n: float(times[k][i]) for n, k in zip(names, times)},
                 "pick": f"{picks[i][0]}/{picks[i][1]}", "time_s": float(best[i])} for i, s in enumerate(self.size_list)]
        return NcclModelResult(self, {"rows": rows}, names, [float(t) for t in best])


def predicted_rows(op: str, ranks: int, sizes: list[int], seconds) -> list[ResultRow]:
    """nccl-tests rows (float, as nccl-tests rounds sizes to whole elements per rank) for predicted times."""
    per = 4 * (ranks if op in TOTAL_SIZE_OPS else 1)
    return [ResultRow(size // per * per, size // per, "float", "sum" if op in REDUCING else "none",
                      0 if op in ROOTED else -1, float(t), None, None) for size, t in zip(sizes, seconds)]


@dataclass(frozen=True)
class NcclModelResult(Result):
    """The model's choices, and per size either every choice's time and the pick (`names`: the choices in order;
    `best`: the pick's time) or the log's measured time beside the pick (`answer` is compare()'s dict then)."""

    request: NcclModelRequest
    answer: dict
    names: list[str] = field(default_factory=list)
    best: list[float] = field(default_factory=list)

    def settings(self) -> dict[str, Any]:
        system, model = self.request.system, self.request.model
        return {"arch": system.arch, "gpus_per_node": system.gpus_per_node, "nodes": system.nodes, "ranks": system.ranks,
                "link": system.link, "graph_bw_GBps": system.graph_bw_GBps, "channels": system.n_channels,
                "nvls": system.nvls_enabled, "nvls_tree": any(a == "nvls_tree" for a, _ in model),
                "op": self.request.asked_op}

    def choices(self) -> list[dict]:
        return [{"algorithm": a, "protocol": p, "latency_us": lat, "algbw_GBps": bw}
                for (a, p), (lat, bw) in self.request.model.items()]

    def files(self) -> list[OutputFile]:
        req = self.request
        if not req.write_log or req.log is not None:
            return []
        system = req.system
        text = format_log(req.op, system.ranks, predicted_rows(req.op, system.ranks, req.size_list, self.best),
                          title=f"collsim nccl-model ({system.arch}, {system.gpus_per_node} x {system.nodes})")
        return [OutputFile(req.write_log, "nccl-tests log", text, quiet=True)]

    def data(self) -> dict[str, Any]:
        extra = {"log": self.request.compare_log} if self.request.log is not None else {}
        return {"system": self.settings(), "choices": self.choices(), **extra, **self.answer}

    def text(self) -> str:
        lines = self._header()
        rows = self.answer["rows"]
        if self.request.log is None:
            lines.append(table(["size"] + self.names + ["pick"],
                               [[format_size(r["bytes"])] + [r["times_s"][n] * 1e6 for n in self.names] + [r["pick"]]
                                for r in rows], "l" + "r" * len(self.names) + "l"))
            return "\n".join(lines)
        lines.append(table(["size", "measured(us)", "NCCL pick", "predicted(us)", "err %", "busbw meas", "busbw pred"],
                           [[format_size(r["bytes"]), r["measured_s"] * 1e6, r["pick"], r["predicted_s"] * 1e6,
                             r["error_pct"], r["measured_busbw_GBps"], r["predicted_busbw_GBps"]] for r in rows], "lrlrrrr"))
        big = self.answer["median_abs_pct_error_ge_64KiB"]
        lines.append(f"median |error| of NCCL's pick: {'n/a' if big is None else f'{big:.1f}%'} for sizes >= 64KiB, "
                     f"{self.answer['median_abs_pct_error_all']:.1f}% for all sizes")
        return "\n".join(lines)

    def _header(self) -> list[str]:
        s = self.settings()
        return [f"# NCCL model: {s['op']}, {s['arch']}, {s['gpus_per_node']} GPUs x {s['nodes']} node(s) "
                f"= {s['ranks']} ranks, {s['link']}, graph {s['graph_bw_GBps']:.1f} GB/s per GPU over "
                f"{s['channels']} channels, NVLS {'on' if s['nvls'] else 'off'}, NVLS-tree "
                f"{'on' if s['nvls_tree'] else 'off'} (times in us)",
                "# " + ", ".join(f"{c['algorithm']}/{c['protocol']}: {c['latency_us']:.1f} us + n / {c['algbw_GBps']:.1f} GB/s"
                                 for c in self.choices())]
