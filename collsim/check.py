"""Schedules run on numpy buffers of random data, every rank's result checked against what the collective defines:
`collsim check`."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import product
from typing import Any

from simulator.algorithms import all_specs, build_schedule, get
from simulator.algorithms.registry import AlgorithmSpec, check_ranks
from simulator.collective import Collective, normalize_op
from simulator.errors import CollsimError
from simulator.parallel import run_cases
from simulator.render import table
from simulator.semantics import check
from simulator.units import parse_rank_range, parse_size_range

from .limits import CHECK_TRANSFER_BYTES, Footprint, Limits
from .request import Request, Result

DEFAULT_RANKS = "2-9"
DEFAULT_SIZES = "0,4,28,388,4100"  # 0, 1, 7, 97 and 1025 float32 elements: primes, uneven blocks


@dataclass(frozen=True)
class CheckRequest(Request):
    """One algorithm (`op` and `algo`), or with `every` each registered algorithm (of `op`, if given), at each rank
    count of `ranks` ('2-9', '2,4,8' or counts) and each size of `sizes` (bytes or text); `params` are algorithm
    parameters as (name, value) pairs, each algorithm taking those it accepts. With `every`, an algorithm that refuses
    a rank count, or its parameters there, is counted as refused; else that refusal is the answer. `limits` bound the
    transfers of every schedule and the memory of the buffers and the largest schedule."""

    op: str | None = None
    algo: str | None = None
    every: bool = False
    ranks: tuple[int, ...] | str = DEFAULT_RANKS
    sizes: tuple[int, ...] | str = DEFAULT_SIZES
    dtype: str = "float32"
    root: int = 0
    seed: int = 0
    params: tuple[tuple[str, Any], ...] = ()
    limits: Limits = Limits()
    specs: tuple[AlgorithmSpec, ...] = field(init=False, repr=False, compare=False)

    def check(self) -> None:
        given = self.ranks if isinstance(self.ranks, str) else ",".join(map(str, self.ranks))
        sizes = self.sizes if isinstance(self.sizes, str) else ",".join(map(str, self.sizes))
        Footprint("check", self.op, self.algo, self.every, given, params=self.params, size_flag="--size", sizes=sizes,
                  buffers=True, transfer_bytes=CHECK_TRANSFER_BYTES).bound(self.limits)
        self._set("ranks", tuple(parse_rank_range(given)))
        if isinstance(self.sizes, str):
            self._set("sizes", tuple(parse_size_range(self.sizes, "size")))
        low = min(self.ranks)
        if self.root >= low:
            raise CollsimError(f"root: {self.root} is not a rank of {low}; expected 0..{low - 1} for --ranks {given}")
        if self.every:
            op = normalize_op(self.op) if self.op else None
            self._set("specs", tuple(s for s in all_specs() if op is None or s.op == op))
            return
        if not self.op or not self.algo:
            raise CollsimError("check: give --op and --algo, or --all")
        spec = get(self.op, self.algo)
        for p in self.ranks:
            check_ranks(spec, p)
        self._set("specs", (spec,))

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

    def run(self) -> CheckResult:
        return CheckResult(self, run_cases(self.check_one, list(product(self.specs, self.ranks)), 1, None, "check"))

    def check_one(self, case: tuple[AlgorithmSpec, int]) -> dict:
        """One algorithm at one rank count, every size: passed, refused (and why) or FAIL (the first wrong result)."""
        spec, p = case
        message = spec.refusal(p) or ""
        status = "refused" if message else "pass"
        given = dict(self.params)
        params = {x.name: given[x.name] for x in spec.params if x.name in given}
        for size in self.sizes if status == "pass" else ():
            coll = Collective(spec.op, p, size, self.dtype, self.root)
            try:
                schedule = build_schedule(coll, spec.name, **params)
            except CollsimError as exc:
                if not self.every:
                    raise
                status, message = "refused", str(exc)  # e.g. a group that does not divide this rank count
                break
            outcome = check(schedule, seed=self.seed)
            if not outcome.ok:
                status, message = "FAIL", outcome.message
                break
        return {"op": spec.op, "algorithm": spec.name, "ranks": p, "status": status, "message": message}


@dataclass(frozen=True)
class CheckResult(Result):
    """One row per (algorithm, rank count); the exit status is 1 if any failed."""

    request: CheckRequest
    results: list[dict]

    def failed(self) -> list[dict]:
        return [r for r in self.results if r["status"] == "FAIL"]

    @property
    def status(self) -> int:
        return 1 if self.failed() else 0

    def data(self) -> dict[str, Any]:
        req = self.request
        return {"passed": not self.failed(), "sizes": list(req.sizes), "dtype": req.dtype, "seed": req.seed,
                "results": self.results}

    def text(self) -> str:
        req, failed = self.request, self.failed()
        summary: dict[tuple[str, str], dict[str, list[int]]] = {}
        for r in self.results:
            summary.setdefault((r["op"], r["algorithm"]), {}).setdefault(r["status"], []).append(r["ranks"])
        lines = [table(["op", "algorithm", "passed", "refused", "FAILED"],
                       [[op, name, span(s.get("pass", [])), span(s.get("refused", [])), span(s.get("FAIL", []))]
                        for (op, name), s in summary.items()], align="lllll")]
        lines += [f"FAIL {r['op']}/{r['algorithm']} p={r['ranks']}: {r['message']}" for r in failed]
        refused = sum(r["status"] == "refused" for r in self.results)
        lines.append(f"{len(self.results) - len(failed) - refused} passed, {len(failed)} failed, {refused} refused by "
                     f"design (sizes {','.join(map(str, req.sizes))} B, dtype {req.dtype}, seed {req.seed})")
        return "\n".join(lines)


def span(values: list[int]) -> str:
    """'1-5,8' for [1,2,3,4,5,8]; '-' for none."""
    if not values:
        return "-"
    out, start, prev = [], values[0], values[0]
    for v in values[1:] + [None]:
        if v is not None and v == prev + 1:
            prev = v
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if v is not None:
            start = prev = v
    return ",".join(out)
