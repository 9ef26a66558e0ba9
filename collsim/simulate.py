"""One algorithm's schedule on a machine, run by the discrete-event engine: `collsim simulate` and the app's
Step-through page (which also draws the same schedule on symbols)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from simulator.algorithms import build_schedule
from simulator.collective import Collective, normalize_op
from simulator.engine import EngineOptions
from simulator.engine import simulate as run_engine
from simulator.schedule import Schedule
from simulator.topology.model import Topology
from simulator.trace import Trace
from simulator.units import format_size, format_time, parse_size

from .limits import Limits
from .machine import Machine, MachineSetup
from .request import OutputFile, Request, Result


@dataclass(frozen=True)
class SimulateRequest(Request):
    """`size` in nccl-tests' meaning (bytes or text such as '1MiB'); ranks default to every device of the machine;
    `params` are the algorithm's parameters as (name, value) pairs; `limits` bound its transfers and the memory of the
    machine and the schedule, before either is built."""

    op: str
    algo: str
    size: int | str = "1MiB"
    setup: MachineSetup = MachineSetup()
    ranks: int | None = None
    dtype: str = "float32"
    root: int = 0
    params: tuple[tuple[str, Any], ...] = ()
    trace: str | None = None  # write a Chrome trace here
    export: str | None = None  # write per-transfer data here (.csv rows, .json totals, links and transfers)
    limits: Limits = Limits()
    machine: Machine = field(init=False, repr=False, compare=False)
    collective: Collective = field(init=False, repr=False, compare=False)

    def check(self) -> None:
        self.setup.footprint("simulate", self.op, self.algo, self.ranks, self.params).bound(self.limits)
        size = parse_size(self.size, "size") if isinstance(self.size, str) else self.size
        machine = self.setup.machine(self.ranks)
        ranks = self.ranks or machine.topology.num_devices
        machine.topology.check_ranks(ranks)
        object.__setattr__(self, "machine", machine)
        object.__setattr__(self, "collective", Collective(normalize_op(self.op), ranks, size, self.dtype, self.root))

    def options(self) -> EngineOptions:
        m, coll = self.machine, self.collective
        return m.options(self.setup.options(m.topology, coll.ranks, m.gamma), coll.nbytes)

    def run(self) -> SimulateResult:
        options = self.options()
        schedule = build_schedule(self.collective, self.algo, **dict(self.params))
        trace = run_engine(schedule, self.machine.topology, options)
        return SimulateResult(self, schedule, trace, options)


@dataclass(frozen=True)
class SimulateResult(Result):
    """The engine's run, its critical path, and the closed form where the machine is the one closed forms assume."""

    request: SimulateRequest
    schedule: Schedule
    trace: Trace
    options: EngineOptions
    closed: dict | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        req = self.request
        profiled = req.machine.adapter if req.setup.alpha is None and req.setup.bandwidth is None else None
        closed = closed_form(req.collective, req.algo, self.schedule.params, req.machine.topology, req.machine.gamma,
                             self.options, profiled)
        if closed:
            closed["agrees_with_engine"] = abs(closed["time_s"] - self.trace.time) <= 1e-9 * max(self.trace.time, 1e-30)
        object.__setattr__(self, "closed", closed)

    def data(self) -> dict[str, Any]:
        summary = self.trace.summary()
        path = self.trace.critical_path()
        summary["critical_path"] = {"transfers": len(path), "ids": path[:64]}
        if self.closed:
            summary["closed_form"] = self.closed
        return summary

    def files(self) -> list[OutputFile]:
        req, out = self.request, []
        if req.trace:
            out.append(OutputFile(req.trace, "chrome trace", self.trace.to_chrome))
        if req.export:
            out.append(OutputFile(req.export, "data", self.trace.export))
        return out

    def text(self) -> str:
        req, trace, options = self.request, self.trace, self.options
        coll, topology = req.collective, req.machine.topology
        params = " ".join(f"{k}={v}" for k, v in self.schedule.params.items() if v is not None)
        link = trace.busiest_link()
        lines = [f"# {coll.describe()}, {req.algo}{' ' + params if params else ''} on {topology.name} "
                 f"(ports {options.ports or 'unlimited'}, contention {'on' if options.contention else 'off'}, "
                 f"gamma {req.machine.gamma:g} s/B)",
                 f"time            {format_time(trace.time)}",
                 f"algbw           {trace.algbw / 1e9:.3f} GB/s",
                 f"busbw           {trace.busbw / 1e9:.3f} GB/s"]
        if link:
            lines.append(f"busiest link    {link['name']}: {format_size(link['bytes'])} at {link['bandwidth_Bps'] / 1e9:g} GB/s, "
                         f"utilisation {100 * link['utilisation']:.1f}%, busy {100 * link['busy_fraction']:.1f}%, "
                         f"peak {link['peak_flows']} concurrent flows")
        lines.append(f"critical path   {len(trace.critical_path())} transfers")
        if self.closed:
            agree = self.closed["agrees_with_engine"]
            note = ("exact for this model, and the engine agrees" if self.closed["exact"] and agree else
                    "exact for even blocks; this size splits unevenly" if self.closed["exact"] else
                    "an estimate for this case; see docs/algorithms.md")
            lines.append(f"closed form     {format_time(self.closed['time_s'])} ({note})")
        lines.append(f"engine          {len(self.schedule)} transfers, {trace.events} events in {trace.wall_s:.3f} s")
        return "\n".join(lines)


def closed_form(coll: Collective, algo: str, params: dict, topology: Topology, gamma: float, options: EngineOptions,
                adapter=None) -> dict | None:
    """The closed form's time when the machine is the one closed forms assume (ideal, one port, no extras);
    with a profile (and no alpha/bandwidth given), the profile's regime for this size."""
    from dataclasses import replace

    from simulator.cost import CLOSED_FORMS, LinkModel, is_exact, predict

    plain = (topology.ideal and options.ports == 1 and not options.start_delay and not options.slowdown
             and not options.background and not options.header_bytes and not options.eager_bytes)
    if not plain or (coll.op, algo) not in CLOSED_FORMS:
        return None
    if adapter is not None:
        model = replace(adapter.link_model(coll.nbytes), gamma=gamma)
    else:
        model = LinkModel.from_bandwidth(topology.uniform_latency, topology.uniform_bandwidth, gamma)
    time_s = float(predict(coll.op, algo, coll.ranks, [coll.nbytes], model, **params)[0])
    return {"time_s": time_s, "exact": bool(is_exact(coll.op, algo, coll.ranks, model, **params))}
