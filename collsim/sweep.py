"""Simulated nccl-tests-like tables over a range of sizes, one per algorithm: `collsim sweep`. Each (algorithm, size)
is one case, run serially, in worker processes or on a Dask cluster (simulator/parallel.py), each carrying the frozen
MachineSetup that builds its machine."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from simulator.algorithms import build_schedule, get, names_for
from simulator.algorithms.registry import AlgorithmSpec, check_ranks
from simulator.collective import REDUCING, ROOTED, Collective, normalize_op
from simulator.engine import EngineOptions, simulate
from simulator.formats.nccl_tests import format_log, log_paths, result_row
from simulator.parallel import check_parallel, run_cases
from simulator.render import table
from simulator.units import parse_size_range

from .limits import Limits
from .machine import Machine, MachineSetup
from .request import OutputFile, Request, Result

DEFAULT_SIZES = "1KiB:64MiB"
COLUMNS = ["size", "count", "type", "redop", "root", "time(us)", "algbw", "busbw"]


@dataclass(frozen=True)
class SweepRequest(Request):
    """`algorithms` None: every algorithm for the op that can run at this rank count (the others are listed as
    skipped); `sizes` as bytes or text ('1KiB:64MiB', 'A,B,C'); ranks default to every device of the machine; `params`
    are algorithm parameters as (name, value) pairs, each algorithm taking those it accepts. `jobs` processes (None:
    every core) or the Dask scheduler at `dask` run the cases; `csv` and `nccl_log` name files to write as well.
    `limits` bound the transfers of every case and the memory of the machine and the schedules held at once."""

    op: str
    algorithms: tuple[str, ...] | None = None
    sizes: tuple[int, ...] | str = DEFAULT_SIZES
    setup: MachineSetup = MachineSetup()
    ranks: int | None = None
    dtype: str = "float32"
    root: int = 0
    params: tuple[tuple[str, Any], ...] = ()
    jobs: int | None = None
    dask: str | None = None
    csv: str | None = None
    nccl_log: str | None = None  # FILE, or FILE-ALGO for each of several algorithms
    limits: Limits = Limits()
    machine: Machine = field(init=False, repr=False, compare=False)
    options: EngineOptions = field(init=False, repr=False, compare=False)
    specs: tuple[AlgorithmSpec, ...] = field(init=False, repr=False, compare=False)  # the algorithms that run
    skipped: dict[str, str] = field(init=False, repr=False, compare=False)  # name -> why it cannot run here

    def check(self) -> None:
        sizes = self.sizes if isinstance(self.sizes, str) else ",".join(map(str, self.sizes))
        self.setup.footprint("sweep", self.op, None if self.algorithms is None else ",".join(self.algorithms), self.ranks,
                             self.params, size_flag="--sizes", sizes=sizes, jobs=self.jobs, workers=True,
                             dask=bool(self.dask)).bound(self.limits)
        self._set("op", normalize_op(self.op))
        if isinstance(self.sizes, str):
            self._set("sizes", tuple(parse_size_range(self.sizes, "sizes")))
        machine = self.setup.machine(self.ranks)
        self._set("machine", machine)
        self._set("ranks", self.ranks or machine.topology.num_devices)
        machine.topology.check_ranks(self.ranks)
        for size in self.sizes:
            Collective(self.op, self.ranks, size, self.dtype, self.root)
        self._pick_algorithms()
        self._set("options", self.setup.options(machine.topology, self.ranks, machine.gamma))
        check_parallel(self.jobs, self.dask)

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

    def _pick_algorithms(self) -> None:
        """The algorithms named (each checked at this rank count), or every one for the op that can run here."""
        specs, skipped = [], {}
        for name in names_for(self.op) if self.algorithms is None else self.algorithms:
            spec = get(self.op, name)
            reason = spec.refusal(self.ranks) if self.algorithms is None else None
            if reason:
                skipped[name] = reason
                continue
            check_ranks(spec, self.ranks)
            specs.append(spec)
        self._set("specs", tuple(specs))
        self._set("skipped", skipped)

    def cases(self) -> list[tuple]:
        """One case per (algorithm, size), as `sweep_case` takes it."""
        given = dict(self.params)
        return [(self.setup, self.ranks, self.op, spec.name, size, self.dtype, self.root,
                 tuple(sorted((p.name, given[p.name]) for p in spec.params if p.name in given)))
                for spec in self.specs for size in self.sizes]

    def run(self) -> SweepResult:
        return SweepResult(self, run_cases(sweep_case, self.cases(), self.jobs, self.dask, "sweep"))


@lru_cache(maxsize=4)
def _machine(setup: MachineSetup, ranks: int) -> tuple[Machine, EngineOptions]:
    """The machine and engine options of a sweep, built once per process from its setup."""
    machine = setup.machine(ranks)
    return machine, setup.options(machine.topology, ranks, machine.gamma)


def sweep_case(case: tuple) -> dict:
    """One (algorithm, size) of a sweep: its row. Runs anywhere (worker processes, Dask workers)."""
    setup, ranks, op, name, size, dtype, root, params = case
    machine, options = _machine(setup, ranks)
    coll = Collective(op, ranks, size, dtype, root)
    schedule = build_schedule(coll, name, **dict(params))
    trace = simulate(schedule, machine.topology, machine.options(options, coll.nbytes))
    return {"algorithm": name, "size": size, "count": coll.count, "type": coll.dtype,
            "redop": coll.redop if op in REDUCING else "none", "root": coll.root if op in ROOTED else -1,
            "time_us": trace.time * 1e6, "algbw_GBps": trace.algbw / 1e9, "busbw_GBps": trace.busbw / 1e9}


@dataclass(frozen=True)
class SweepResult(Result):
    """One row per (algorithm, size), in the request's order."""

    request: SweepRequest
    rows: list[dict]

    def rows_of(self, name: str) -> list[dict]:
        return [r for r in self.rows if r["algorithm"] == name]

    def data(self) -> dict[str, Any]:
        req = self.request
        return {"op": req.op, "ranks": req.ranks, "topology": req.machine.topology.name,
                "gamma_s_per_byte": req.machine.gamma, "ports": req.options.ports, "contention": req.options.contention,
                "rows": self.rows, "skipped": req.skipped}

    def text(self) -> str:
        req = self.request
        lines = [f"# collsim sweep: {req.op}, {req.ranks} ranks on {req.machine.topology.name} "
                 "(simulated; times in us, bandwidths in GB/s)"]
        for spec in req.specs:
            mine = self.rows_of(spec.name)
            lines += [f"#\n# algorithm: {spec.name}",
                      table(COLUMNS, [[r["size"], r["count"], r["type"], r["redop"], r["root"], r["time_us"],
                                       r["algbw_GBps"], r["busbw_GBps"]] for r in mine])]
            if mine:
                lines.append(f"# Avg bus bandwidth    : {sum(r['busbw_GBps'] for r in mine) / len(mine):.3f}")
        lines += [f"# {name}: not for {req.ranks} ranks ({reason})" for name, reason in req.skipped.items()]
        return "\n".join(lines)

    def csv_text(self) -> str:
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(self.rows[0]) if self.rows else ["algorithm"])
        writer.writeheader()
        writer.writerows(self.rows)
        return buf.getvalue()

    def logs(self) -> list[OutputFile]:
        """Each algorithm's rows as an nccl-tests log that `collsim fit` reads back."""
        req = self.request
        title = f"collsim sweep on {req.machine.topology.name} (simulated)"
        paths = log_paths(req.nccl_log, [spec.name for spec in req.specs])
        return [OutputFile(str(path), "nccl-tests log",
                           format_log(req.op, req.ranks, [result_row(r["size"], r["count"], r["type"], r["redop"], r["root"],
                                                                     r["time_us"] * 1e-6, None) for r in self.rows_of(name)],
                                      title=f"{title}, algorithm {name}"), said=f"# wrote {path}")
                for name, path in paths.items()]

    def files(self) -> list[OutputFile]:
        req, out = self.request, []
        if req.csv:
            out.append(OutputFile(req.csv, "CSV", self.csv_text(), said=f"# wrote {req.csv}"))
        if req.nccl_log:
            out += self.logs()
        return out
