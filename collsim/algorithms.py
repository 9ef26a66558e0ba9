"""Every registered (op, algorithm) with the rank counts it accepts, its parameters and how its cost is found:
`collsim algorithms`.

Limits: none (a listing of the registry)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simulator.algorithms import all_specs
from simulator.collective import normalize_op
from simulator.render import table

from .request import Request, Result


@dataclass(frozen=True)
class AlgorithmsRequest(Request):
    """Every algorithm, or those of `op`."""

    op: str | None = None

    def check(self) -> None:
        if self.op is not None:
            object.__setattr__(self, "op", normalize_op(self.op))

    def run(self) -> AlgorithmsResult:
        return AlgorithmsResult([{
            "op": s.op, "algorithm": s.name, "ranks": s.ranks_rule,
            "params": {p.name: {"default": p.default, "help": p.help, "minimum": p.minimum, "maximum": p.maximum}
                       for p in s.params},
            "closed_form": s.cost is not None, "summary": s.summary,
        } for s in all_specs() if self.op is None or s.op == self.op])


@dataclass(frozen=True)
class AlgorithmsResult(Result):
    rows: list[dict]

    def data(self) -> list[dict[str, Any]]:  # type: ignore[override]  # a list, as the command always printed
        return self.rows

    def text(self) -> str:
        return table(["op", "algorithm", "ranks", "params", "cost", "summary"],
                     [[r["op"], r["algorithm"], r["ranks"],
                       ",".join(f"{k}={v['default']}" for k, v in r["params"].items()) or "-",
                       "closed form" if r["closed_form"] else "engine", r["summary"]]
                      for r in self.rows], align="llllll")
