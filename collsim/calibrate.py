"""Alpha, bandwidth and gamma measured on a real backend (ping-pong, ring step or the schedule executor) and fitted,
written as a link profile: `collsim calibrate` (verify/calibrate.py runs the ranks).

Limits: one process per rank (the request's Footprint counts them); at least 2 ranks and 2 sizes, checked before any
process starts. Calibrating a machine preset on a log is collsim/fit.py's CalibrateRequest."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from simulator.errors import CollsimError
from simulator.render import table
from simulator.units import format_size, parse_size_range

from .limits import Footprint, Limits
from .request import OutputFile, Request, Result

PATTERNS = ("pingpong", "ring", "executor")


@dataclass(frozen=True)
class LinkCalibrationRequest(Request):
    """Time messages of each of `sizes` (text: START:END[:FACTOR] or a list) between `ranks` processes on `backend` with
    `pattern`, fit t = alpha + n beta (in up to `segments` size ranges; `piecewise` is 3) and gamma (unless `gamma` is
    False), and write the profile to `out` when given."""

    backend: str = "gloo"
    ranks: int = 2
    pattern: str = "pingpong"
    segments: int = 1
    piecewise: bool = False
    pair_only: bool = False
    sizes: str = "1B:64MiB:4"
    iters: int = 20
    budget: float = 1.0
    gamma: bool = True
    timeout: float = 60.0
    out: str | None = None
    limits: Limits = Limits()  # transfers and memory the request may take
    size_list: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def check(self) -> None:
        Footprint("calibrate", ranks=self.ranks, processes=True).bound(self.limits)
        sizes = tuple(parse_size_range(self.sizes, "sizes"))
        if len(set(sizes)) < 2:
            raise CollsimError(f"sizes: {self.sizes!r} gives {len(set(sizes))} size; a fit needs at least 2, e.g. 1B:64MiB:4")
        if self.ranks < 2:
            raise CollsimError(f"ranks: {self.ranks}; a ping-pong needs at least 2")
        if not 1 <= self.segments <= 64:
            raise CollsimError(f"segments: {self.segments} is not a number of size ranges; expected an integer 1..64")
        if self.iters < 1:
            raise CollsimError(f"iters: {self.iters}; expected >= 1")
        if self.pattern not in PATTERNS:
            raise CollsimError(f"pattern: {self.pattern!r}; expected one of {', '.join(PATTERNS)}")
        object.__setattr__(self, "size_list", sizes)

    @property
    def pieces(self) -> int:
        """Size ranges fitted: --segments, or 3 for --piecewise when --segments is left at 1."""
        return 3 if self.piecewise and self.segments == 1 else self.segments

    def run(self) -> LinkCalibrationResult:
        from verify.calibrate import CalibrateRequest, combine, pingpong_job
        from verify.launch import run_local

        job = CalibrateRequest(sizes=self.size_list, iters=self.iters, concurrent=not self.pair_only, gamma=self.gamma,
                               time_budget_s=self.budget, pattern=self.pattern)
        return LinkCalibrationResult(self, combine(run_local(pingpong_job, self.ranks, self.backend, self.timeout, (job,)),
                                                   self.backend, self.pieces))


@dataclass(frozen=True)
class LinkCalibrationResult(Result):
    """verify.calibrate's Calibration: the fit, its segments and gamma, and the profile they make."""

    request: LinkCalibrationRequest
    calibration: Any

    def files(self) -> list[OutputFile]:
        out = self.request.out
        return [OutputFile(out, "link profile", self.calibration.profile().dumps(out), said=f"wrote {out}")] if out else []

    def data(self) -> dict[str, Any]:
        return {"profile": self.calibration.profile().to_dict(), "fit": self.calibration.fit.to_dict(),
                "written": self.request.out}

    def text(self) -> str:
        req, cal = self.request, self.calibration
        fit = cal.fit
        lines = [self._title(),
                 table(["size", "bytes", "measured(us)", "fit(us)", "residual"],
                       [[format_size(n), n, t * 1e6, f * 1e6, f"{r * 100:+.1f}%"]
                        for n, t, f, r in zip(fit.sizes, fit.times_s, fit.predict(fit.sizes), fit.rel_residuals)],
                       align="lrrrr")]
        if cal.pieces:
            lines += ["# segments by message size (each range fitted on its own):",
                      table(["from", "to", "alpha(us)", "bandwidth(GB/s)"],
                            [[format_size(pc.lo), "-" if pc.hi is None else format_size(pc.hi), pc.alpha_s * 1e6,
                              pc.bandwidth_Bps / 1e9] for pc in cal.pieces], align="llrr")]
        lines += [f"alpha     {fit.alpha_s * 1e6:.2f} us",
                  f"bandwidth {fit.bandwidth_Bps / 1e9:.3f} GB/s  (beta {fit.beta_s_per_byte:.3g} s/B)",
                  f"R^2       {fit.r2:.4f} on times, {fit.r2_log:.4f} on log times; largest residual "
                  f"{fit.max_rel_residual * 100:.1f}%",
                  f"crossover {fit.crossover_bytes:.0f} B: below it latency dominates, above it bandwidth"]
        if cal.gamma_s_per_byte:
            how = "the executor's reducing step less its plain step" if cal.reduce_step_points else "in-place float32 additions"
            lines.append(f"gamma     {cal.gamma_s_per_byte:.3g} s/B  ({1e-9 / cal.gamma_s_per_byte:.2f} GB/s of {how})")
        if not req.out:
            lines.append("(no --out given: profile not written)")
        return "\n".join(lines)

    def _title(self) -> str:
        req = self.request
        if req.pattern == "executor":
            return (f"# executor shift step on {req.backend}, {req.ranks} ranks: one transfer per rank to the next, run by "
                    f"the schedule executor and timed as `collsim verify` times a schedule; time per message = median over "
                    f"iterations of the slowest rank's step")
        if req.pattern == "ring":
            return (f"# ring exchange on {req.backend}, {req.ranks} ranks: each rank sends to the next and receives from "
                    f"the previous at once; time per message = median step time")
        return (f"# ping-pong on {req.backend}, {req.ranks} ranks, pairs {self.calibration.pairs}; one-way time = median "
                "round trip / 2")
