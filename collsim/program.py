"""Programs of collectives (docs/programs.md): checked without running them (`collsim lint-program`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from simulator.errors import CollsimError
from simulator.program import Program, check_program, load_program
from simulator.program.loader import MAX_WORK

from .request import Request, Result


@dataclass(frozen=True)
class LintRequest(Request):
    """Do a program's groups' calls line up across their ranks, and can program order finish? `max_work` bounds the
    program read (ranks + group members + operations, counted before anything is built)."""

    path: str
    max_work: int = MAX_WORK

    def check(self) -> None:
        if isinstance(self.max_work, bool) or not isinstance(self.max_work, int) or self.max_work < 1:
            raise CollsimError(f"max-work: {self.max_work!r}; expected a count >= 1 such as 2000000")

    def run(self) -> LintResult:
        program = load_program(self.path, self.max_work)
        return LintResult(self, program, check_program(program))


@dataclass(frozen=True)
class LintResult(Result):
    """The program read and the problems found (none: sound)."""

    request: LintRequest
    program: Program = field(repr=False)
    problems: list

    @property
    def status(self) -> int:
        return 1 if self.problems else 0

    def summary(self) -> dict[str, Any]:
        p = self.program
        return {"file": self.request.path, "world": p.world, "groups": len(p.groups),
                "operations": sum(len(ops) for ops in p.ranks.values()), "ok": not self.problems}

    def data(self) -> dict[str, Any]:
        return {**self.summary(), "problems": [p.to_dict() for p in self.problems]}

    def text(self) -> str:
        s, path = self.summary(), self.request.path
        if not self.problems:
            return (f"OK: {path}: {s['world']} ranks, {s['groups']} groups, {s['operations']} operations; "
                    "every group's calls match and program order finishes")
        return "\n".join(f"{path}: {problem.kind}: {problem.message}" for problem in self.problems)
