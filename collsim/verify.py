"""Schedules run as real torch.distributed point-to-point programs, checked against the numpy semantics and the native
collective and timed both the nccl-tests way (`collsim verify`); a program's collectives run on real process groups
(`collsim verify --program`).

Limits: a local world starts one process per rank (the request's Footprint counts them with the buffers of the largest
size); a program's world is refused over verify.program.MAX_LOCAL_RANKS before its operations are read."""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulator.algorithms import all_specs, get, names_for
from simulator.algorithms.registry import check_ranks, resolve_params
from simulator.collective import DTYPES, normalize_dtype, normalize_op
from simulator.errors import CollsimError
from simulator.formats.nccl_tests import format_log, log_paths, result_row
from simulator.program.loader import MAX_WORK
from simulator.render import table
from simulator.units import parse_size, parse_size_range

from .limits import Footprint, Limits
from .request import OutputFile, Request, Result

VERIFY_DTYPES = ("float32", "float16", "bfloat16", "int32", "int64")
REDOPS = ("sum", "prod", "max", "min")
ROW_FIELDS = ("op", "algorithm", "ranks", "bytes", "count", "dtype", "redop", "root", "correct", "wrong", "wrong_vs_native",
              "time_s", "algbw_GBps", "busbw_GBps", "native_time_s", "native_algbw_GBps", "native_busbw_GBps", "native_wrong")


def _set(obj: object, name: str, value: Any) -> None:
    object.__setattr__(obj, name, value)


def _check_timeout(timeout: float) -> None:
    if timeout <= 0:
        raise CollsimError(f"timeout: {timeout} s; expected seconds > 0")


@dataclass(frozen=True)
class VerifyRequest(Request):
    """Every (op, algorithm) asked (`algo` a name or comma list, default every one for `op`; `every`: every registered
    one, of `op` if given) at each of `sizes` and `dtypes` (text, comma lists), on a local world of `ranks` processes,
    or on the torchrun world of `torchrun_world` processes (this process one of its ranks). `params` are algorithm
    parameters as (name, value) pairs, each algorithm taking those it accepts. `native` also times the native
    collective (it is always a check); `timing` False checks only. `csv` and `nccl_log` name files to write as well."""

    ranks: int | None = None
    op: str | None = None
    algo: str | None = None
    every: bool = False
    sizes: str = "1KiB:16MiB:4"
    dtypes: str = "float32"
    root: int = 0
    redop: str = "sum"
    data: str = "random"
    seed: int = 0
    native: bool = False
    timing: bool = True
    iters: int = 20
    warmup: int = 3
    budget: float = 2.0
    timeout: float = 60.0
    check_limit: str = "16MiB"
    slice: str = "0"
    nccl_algo: str | None = None
    nccl_proto: str | None = None
    params: tuple[tuple[str, Any], ...] = ()
    backend: str = "gloo"
    torchrun_world: int | None = None
    csv: str | None = None
    nccl_log: str | None = None
    limits: Limits = Limits()  # transfers and memory the request may take
    world: int = field(init=False, repr=False, compare=False)
    job: Any = field(init=False, repr=False, compare=False)  # verify.runner.VerifyRequest, what every rank runs

    def check(self) -> None:
        Footprint("verify", self.op, self.algo, self.every, self.ranks, params=self.params, size_flag="--sizes",
                  sizes=self.sizes, buffers=True, processes=True, torchrun=self.torchrun_world is not None).bound(self.limits)
        dtypes, sizes = self._values()
        _set(self, "world", self._world())
        _check_timeout(self.timeout)
        if self.nccl_log and not self.timing:
            raise CollsimError(f"nccl-log: {self.nccl_log!r} with --no-time, which times nothing; expected timing (drop "
                               "--no-time) to write an nccl-tests log")
        from verify.runner import VerifyRequest as RankJob

        job = RankJob(cases=self._cases(), sizes=sizes, dtypes=dtypes, mode=self.data, seed=self.seed, root=self.root,
                      redop=self.redop, native=True, timing=self.timing, time_native=self.native, iters=self.iters,
                      warmup=self.warmup, time_budget_s=self.budget,
                      check_limit=parse_size(self.check_limit, "check-limit"), slice_bytes=parse_size(self.slice, "slice"))
        if self.root < 0 or self.root >= self.world:
            raise CollsimError(f"root: {self.root} is not a rank of {self.world}; expected 0..{self.world - 1}")
        _set(self, "job", job)

    def _values(self) -> tuple[tuple[str, ...], tuple[int, ...]]:
        """Iterations, dtypes, reduction and sizes checked; (dtypes, sizes)."""
        if self.iters < 1 or self.warmup < 0:
            raise CollsimError(f"iters: {self.iters} timed and {self.warmup} warm-up iterations; expected iters >= 1 and "
                               "warmup >= 0")
        dtypes = tuple(normalize_dtype(d.strip()) for d in self.dtypes.split(",") if d.strip())
        for d in dtypes:
            if d not in VERIFY_DTYPES:
                raise CollsimError(f"dtype: {d} is not verified on torch.distributed; expected one of {', '.join(VERIFY_DTYPES)}")
        if self.redop not in REDOPS:
            raise CollsimError(f"redop: unknown reduction {self.redop!r}; expected one of {', '.join(REDOPS)}")
        sizes = tuple(parse_size_range(self.sizes, "sizes", multiple=max(DTYPES[d] for d in dtypes)))
        for d, size in ((d, s) for d in dtypes for s in sizes if s % DTYPES[d]):
            raise CollsimError(f"sizes: {size} bytes is not a whole number of {d} elements ({DTYPES[d]} bytes each); "
                               f"expected a multiple of {DTYPES[d]}")
        return dtypes, sizes

    def _world(self) -> int:
        """The world size: torchrun's, or `ranks` for a local world."""
        if self.torchrun_world is not None and self.ranks is not None and self.ranks != self.torchrun_world:
            raise CollsimError(f"ranks: --ranks {self.ranks} but torchrun started {self.torchrun_world} processes; "
                               "leave --ranks out")
        ranks = self.torchrun_world if self.torchrun_world is not None else self.ranks
        if ranks is None or ranks < 1:
            raise CollsimError(f"ranks: {ranks!r}; give --ranks N (N >= 1) for a local world")
        return ranks

    def _cases(self) -> tuple[tuple[str, str, dict], ...]:
        """(op, algorithm, params) asked; a refusal at this rank count is an error when algorithms are named."""
        if self.every:
            specs = [s for s in all_specs() if not self.op or s.op == normalize_op(self.op)]
        else:
            if not self.op:
                raise CollsimError("op: give --op (e.g. --op allreduce) or --all")
            op = normalize_op(self.op)
            names = [n.strip() for n in self.algo.split(",")] if self.algo else names_for(op)
            specs = [get(op, n) for n in names]
            for spec in specs if self.algo else ():
                check_ranks(spec, self.world)
        given = dict(self.params)
        return tuple((spec.op, spec.name, resolve_params(spec, {x.name: given[x.name] for x in spec.params
                                                                if given.get(x.name) is not None}))
                     for spec in specs)

    def run(self) -> VerifyResult:
        """Run on the local world, or as this torchrun rank (records None on a rank other than 0: rank 0 reports)."""
        for key, value in (("NCCL_ALGO", self.nccl_algo), ("NCCL_PROTO", self.nccl_proto)):
            if value:
                os.environ[key] = value  # inherited by the ranks; only NCCL reads them
        return VerifyResult(self, run_job(self.job, self.world, self.backend, self.timeout, self.torchrun_world is not None))


def run_job(job: Any, ranks: int, backend: str, timeout: float, torchrun: bool = False) -> list[dict] | None:
    """Run a verify.runner job on a local world or, under torchrun, on this process's rank; rank 0's records."""
    from verify.launch import run_local, run_torchrun
    from verify.runner import verify_job

    if torchrun:
        rank, records = run_torchrun(verify_job, backend, timeout, (job,))
        return records if rank == 0 else None
    return run_local(verify_job, ranks, backend, timeout, (job,))[0]


@dataclass(frozen=True)
class VerifyResult(Result):
    """Rank 0's records (None on another torchrun rank, which reports nothing)."""

    request: VerifyRequest
    records: list[dict] | None

    @property
    def status(self) -> int:
        return 1 if any(r.get("correct") is False for r in self.records or ()) else 0

    def meta(self) -> dict[str, Any]:
        req = self.request
        return {"backend": req.backend, "ranks": req.world, "launcher": "local" if req.torchrun_world is None else "torchrun",
                "data": req.data, "seed": req.seed, "nccl_algo": req.nccl_algo, "nccl_proto": req.nccl_proto}

    def data(self) -> dict[str, Any]:
        return {**self.meta(), "passed": not self.status, "records": self.records}

    def text(self) -> str:
        return render(self.records, self.meta(), show_native=self.request.native and self.request.timing)

    def files(self) -> list[OutputFile]:
        req, out = self.request, []
        if req.csv:
            out.append(OutputFile(req.csv, "CSV", self.csv_text(), quiet=True))
        if req.nccl_log:
            out += self.logs()
        return out

    def csv_text(self) -> str:
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=ROW_FIELDS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(r for r in self.records if r.get("status") == "ok")
        return buf.getvalue()

    def logs(self) -> list[OutputFile]:
        """The timed rows of each (op, algorithm) as nccl-tests logs (the schedule's out-of-place time): PATH, PATH.OP
        for each of several ops, with -ALGO before the suffix for each of several algorithms."""
        path, backend = self.request.nccl_log, self.request.backend
        timed = [r for r in self.records if r.get("status") == "ok" and "time_s" in r]
        if not timed:
            raise CollsimError("nccl-log: nothing was timed (was --no-time given?); no log written")
        ops = list(dict.fromkeys(r["op"] for r in timed))
        out = []
        for op in ops:
            mine = [r for r in timed if r["op"] == op]
            rows: dict[str, list] = {}
            for r in mine:
                rows.setdefault(r["algorithm"], []).append(
                    result_row(r["bytes"], r["count"], r["dtype"], r["redop"], r["root"], r["time_s"], r.get("wrong", 0)))
            title = f"collsim verify on {backend}"
            for name, target in log_paths(path if len(ops) == 1 else f"{path}.{op}", list(rows)).items():
                out.append(OutputFile(str(target), "nccl-tests log",
                                      format_log(op, mine[0]["ranks"], rows[name], title=f"{title}, algorithm {name}"),
                                      quiet=True))
        return out


def render(records: list[dict], meta: dict, show_native: bool) -> str:
    """nccl-tests-style tables, one per (op, algorithm): the schedule and the native collective side by side."""
    lines = [f"# collsim verify: backend {meta['backend']}, {meta['ranks']} ranks ({meta['launcher']}), data {meta['data']}, "
             f"seed {meta['seed']}"]
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in records:
        groups.setdefault((r["op"], r["algorithm"]), []).append(r)
    timed = any("time_s" in r for r in records)
    for (op, algo), rows in groups.items():
        lines.append("")
        if rows[0].get("status") == "refused":
            lines.append(f"# {op} / {algo}: refused for {rows[0]['ranks']} ranks ({rows[0]['message']})")
            continue
        lines += _group(op, algo, rows, timed, show_native and timed)
    failed = sum(1 for r in records if r.get("correct") is False)
    checked = sum(1 for r in records if r.get("status") == "ok")
    lines.append(f"# {checked - failed} of {checked} cases correct" + (f", {failed} WRONG" if failed else ""))
    return "\n".join(lines)


def _group(op: str, algo: str, rows: list[dict], timed: bool, native: bool) -> list[str]:
    """One (op, algorithm)'s title line, table, first wrong results and average bus bandwidth."""
    params = ",".join(f"{k}={v}" for k, v in rows[0]["params"].items() if v is not None)
    lines = [f"# {op} / {algo}{' (' + params + ')' if params else ''}: schedule as P2P"
             + (" | native torch.distributed" if native else "") + "; time in us, bandwidth in GB/s"]
    head = ["size(B)", "count", "type", "redop", "root"] + (["time", "algbw", "busbw"] if timed else []) + ["#wrong"]
    head += ["|", "time", "algbw", "busbw", "#wrong", "x native"] if native else []
    lines.append(table(head, [_row(r, timed, native) for r in rows], align="rrllr" + "r" * (len(head) - 5)))
    lines += [f"# WRONG: {r['first_error']}" for r in [r for r in rows if r.get("correct") is False][:3]]
    if timed:
        mean = sum(r["busbw_GBps"] for r in rows) / len(rows)
        lines.append(f"# Avg bus bandwidth : {mean:.4f}" + (f"   (native {sum(r['native_busbw_GBps'] for r in rows) / len(rows):.4f})"
                                                              if native else ""))
    return lines


def _row(r: dict, timed: bool, native: bool) -> list:
    row = [r["bytes"], r["count"], r["dtype"], r["redop"], r["root"]]
    if timed:
        row += [r["time_s"] * 1e6, r["algbw_GBps"], r["busbw_GBps"]]
    row += [_wrong(r.get("wrong", 0) + (r.get("wrong_vs_native") or 0), r.get("correct"))]
    if native:
        row += ["|", r["native_time_s"] * 1e6, r["native_algbw_GBps"], r["native_busbw_GBps"],
                _wrong(r.get("native_wrong", 0), r.get("native_correct")),
                r["busbw_GBps"] / r["native_busbw_GBps"] if r["native_busbw_GBps"] else float("nan")]
    return row


def _wrong(n: int, correct) -> str | int:
    return "N/A" if correct is None else int(n)


# ---- a program's collectives on real process groups ---------------------------------------------------------------


@dataclass(frozen=True)
class VerifyProgramRequest(Request):
    """Run a program's collectives on a local world of its ranks (`ranks`, if given, must be its world); a world over
    MAX_LOCAL_RANKS is refused before the file's operations are read when the file states it plainly."""

    path: str
    ranks: int | None = None
    backend: str = "gloo"
    timeout: float = 60.0
    max_work: int = MAX_WORK
    limits: Limits = Limits()  # transfers and memory the request may take

    def check(self) -> None:
        Footprint("verify", ranks=self.ranks, processes=True).bound(self.limits)
        from simulator.program.loader import stated_world
        from verify.program import refuse_world

        world = stated_world(self.path)
        if world is not None:
            source = Path(self.path).name
            self._check_ranks(world, source)
            refuse_world(world, source)

    def _check_ranks(self, world: int, source: str) -> None:
        if self.ranks is not None and self.ranks != world:
            raise CollsimError(f"ranks: --ranks {self.ranks} but {source} has a world of {world}; leave --ranks out")

    def run(self) -> VerifyProgramResult:
        from simulator.program import load_program
        from verify.program import verify_program

        program = load_program(self.path, self.max_work)
        self._check_ranks(program.world, program.source)
        _check_timeout(self.timeout)
        return VerifyProgramResult(self, program.world, verify_program(program, self.backend, self.timeout))


@dataclass(frozen=True)
class VerifyProgramResult(Result):
    """verify.program.verify_program's summary: passed, or the hang or wrong data found."""

    request: VerifyProgramRequest
    world: int
    summary: dict

    @property
    def status(self) -> int:
        return 0 if self.summary["passed"] else 1

    def data(self) -> dict[str, Any]:
        return {"file": self.request.path, **self.summary}

    def text(self) -> str:
        req, summary = self.request, self.summary
        if not summary["passed"]:
            return f"{req.path}: {summary['error']}"
        checked = sum(r["checked"] for r in summary["ranks"])
        return (f"OK: {req.path}: {self.world} ranks on {req.backend}, every operation completed, "
                f"{checked} received buffers hold the expected data ({summary['seconds']:.1f} s)")
