"""Model predictions against measured times of the same schedule, per size, with the median error and the error split
into terms: `collsim compare` (verify/compare.py and verify/steptrace.py do the arithmetic; the ranks run on
verify/launch.py).

Limits: a live measurement starts one process per rank (the request's Footprint counts them); the link model, the
algorithm at its rank count and the traced size are checked before any process starts."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from typing import Any

from simulator.algorithms import get
from simulator.algorithms.registry import check_ranks, resolve_params
from simulator.collective import normalize_op
from simulator.cost import LinkModel
from simulator.errors import CollsimError
from simulator.profile import LinkProfile, load_profile
from simulator.render import table
from simulator.units import parse_bandwidth, parse_gamma, parse_size, parse_size_range, parse_time

from .limits import Footprint, Limits
from .request import OutputFile, Request, Result


@dataclass(frozen=True)
class CompareRequest(Request):
    """`op`/`algo` predicted from `profile` (a file), or from `alpha`, `bandwidth` and `gamma` (text), against its times
    measured now on `ranks` processes of `backend` at `sizes` (text), or read from `measured` (a `collsim verify
    --json` file). `params` are algorithm parameters as (name, value) pairs. `csv` and `trace` (one run of
    `trace_size` measured per transfer beside the engine's) name files to write as well."""

    op: str
    algo: str
    ranks: int | None = None
    sizes: str = "64KiB:64MiB:4"
    dtype: str = "float32"
    profile: str | None = None
    alpha: str | None = None
    bandwidth: str | None = None
    gamma: str = "0"
    measured: str | None = None
    backend: str = "gloo"
    timeout: float = 60.0
    budget: float = 2.0
    params: tuple[tuple[str, Any], ...] = ()
    csv: str | None = None
    trace: str | None = None
    trace_size: str | None = None
    limits: Limits = Limits()  # transfers and memory the request may take
    link: LinkProfile = field(init=False, repr=False, compare=False)
    traced: int | None = field(init=False, repr=False, compare=False)  # the size traced, None: the first measured

    def check(self) -> None:
        Footprint("compare", self.op, self.algo, ranks=self.ranks, params=self.params, processes=not self.measured).bound(self.limits)
        object.__setattr__(self, "op", normalize_op(self.op))
        spec = get(self.op, self.algo)
        object.__setattr__(self, "link", self._link())
        object.__setattr__(self, "traced", self._trace_size())
        if not self.measured:
            if self.ranks is None:
                raise CollsimError("ranks: give --ranks N to measure (or --measured FILE)")
            check_ranks(spec, self.ranks)

    def _link(self) -> LinkProfile:
        if self.profile:
            if self.alpha or self.bandwidth:
                raise CollsimError("profile: give either --profile or --alpha/--bandwidth, not both")
            return load_profile(self.profile)
        if not (self.alpha and self.bandwidth):
            raise CollsimError("profile: give --profile FILE (from `collsim calibrate`) or both --alpha and --bandwidth")
        m = LinkModel.from_bandwidth(parse_time(self.alpha), parse_bandwidth(self.bandwidth), parse_gamma(self.gamma))
        return LinkProfile(m.alpha, 1 / m.beta, m.gamma, "command line")

    def _trace_size(self) -> int | None:
        """trace_size in bytes (None: the first size), after checking `trace` and `measured` agree with it."""
        if self.trace is not None and self.measured:
            raise CollsimError("trace: --measured files hold no per-transfer times; expected a live run (drop --measured) "
                               "to write --trace")
        if self.trace_size is None:
            return None
        if self.trace is None:
            raise CollsimError(f"trace-size: {self.trace_size!r} without --trace; expected --trace FILE too")
        size = parse_size(self.trace_size, "trace-size")
        largest = max(parse_size_range(self.sizes, "sizes"))
        if not 1 <= size <= largest:
            raise CollsimError(f"trace-size: {self.trace_size!r}; expected a size from 1 byte to the largest of --sizes "
                               f"({largest} bytes)")
        return size

    def _measure(self) -> tuple[int, list[int], list[float], dict, str]:
        """(ranks, sizes, seconds, params, where from): the --measured file's, or a run now."""
        from verify.compare import load_measured

        if self.measured:
            return (*load_measured(self.measured, self.op, self.algo, self.ranks), self.measured)
        from verify.runner import VerifyRequest as RankJob

        from .verify import run_job

        spec = get(self.op, self.algo)
        given = dict(self.params)
        params = resolve_params(spec, {x.name: given[x.name] for x in spec.params if given.get(x.name) is not None})
        job = RankJob(cases=((self.op, self.algo, params),), sizes=tuple(parse_size_range(self.sizes, "sizes")),
                      dtypes=(self.dtype,), timing=True, native=True, time_native=False, time_budget_s=self.budget)
        records = [r for r in run_job(job, self.ranks, self.backend, self.timeout) if "time_s" in r]
        return (self.ranks, [r["bytes"] for r in records], [r["time_s"] for r in records], params,
                f"measured now on {self.backend}")

    def run(self) -> CompareResult:
        from verify.compare import error_table, predictions
        from verify.steptrace import error_terms

        ranks, sizes, times, params, source = self._measure()
        predicted = predictions(self.op, self.algo, ranks, sizes, self.link, params, self.dtype)
        if not predicted:
            raise CollsimError(f"algo: no model can predict {self.op}/{self.algo}")
        rows, summary = error_table(sizes, times, predicted)
        terms = error_terms(self.op, self.algo, ranks, sizes, times, self.link, params, self.dtype)
        trace = self._trace(ranks, params, self.traced if self.traced is not None else sizes[0]) if self.trace else None
        for row in rows:
            row.update(op=self.op, algorithm=self.algo, ranks=ranks)
        return CompareResult(self, ranks, params, source, list(predicted), rows, summary, terms, trace)

    def _trace(self, ranks: int, params: dict, size: int) -> dict:
        """One run of `size` measured per transfer, beside the engine's run of it (verify/steptrace.py)."""
        from verify.steptrace import chrome_trace, engine_trace, measured_intervals, predicted_intervals

        predicted = engine_trace(self.op, self.algo, ranks, size, self.link, params, self.dtype)
        measured = measured_intervals(self.op, self.algo, ranks, size, params, self.dtype, self.backend, self.timeout)
        title = f"{self.op}/{self.algo} p={ranks} {size} B: predicted vs measured on {self.backend}"
        return chrome_trace(predicted.schedule, predicted_intervals(predicted), measured, title)


@dataclass(frozen=True)
class CompareResult(Result):
    """Per size the measured and each model's time with its error; the median errors; the engine's terms."""

    request: CompareRequest
    ranks: int
    params: dict
    source: str
    models: list[str]
    rows: list[dict]
    summary: dict
    terms: list[dict]
    trace: dict | None = field(default=None, repr=False)

    def files(self) -> list[OutputFile]:
        import json

        req, out = self.request, []
        if req.trace:
            out.append(OutputFile(req.trace, "Chrome trace", json.dumps(self.trace),
                                  said=f"# trace written: {req.trace} (open in https://ui.perfetto.dev or chrome://tracing)"))
        if req.csv:
            out.append(OutputFile(req.csv, "CSV", self.csv_text(), quiet=True))
        return out

    def csv_text(self) -> str:
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(self.rows[0]))
        writer.writeheader()
        writer.writerows(self.rows)
        return buf.getvalue()

    def data(self) -> dict[str, Any]:
        req, link = self.request, self.request.link
        model = {"alpha_s": link.alpha_s, "bandwidth_Bps": link.bandwidth_Bps, "gamma_s_per_byte": link.gamma_s_per_byte,
                 "source": link.source}
        return {"op": req.op, "algorithm": req.algo, "ranks": self.ranks, "params": self.params, "measured": self.source,
                "model": model, "median_abs_pct_error": self.summary, "rows": self.rows, "terms": self.terms,
                "trace_written": req.trace}

    def text(self) -> str:
        req, link, names = self.request, self.request.link, self.models
        head = ["size(B)", "measured(us)"] + [h for n in names for h in (f"{n}(us)", "error")]
        body = [[r["bytes"], r["measured_s"] * 1e6] + [v for n in names for v in (r[f"{n}_s"] * 1e6, f"{r[f'{n}_err_pct']:+.1f}%")]
                for r in self.rows]
        lines = [f"# {req.op}/{req.algo} p={self.ranks}: {self.source}; model alpha {link.alpha_s * 1e6:.2f} us, "
                 f"bandwidth {link.bandwidth_Bps / 1e9:.3f} GB/s, gamma {link.gamma_s_per_byte:.3g} s/B",
                 table(head, body, align="r" * len(head))]
        lines += [f"# {name}: median absolute error {mdape:.1f}%" for name, mdape in self.summary.items()]
        lines.append("# the engine's prediction split into terms (us), and the factor one term alone would need to close "
                     "the error:")
        lines.append(table(["size(B)", "measured", "predicted", "latency", "bandwidth", "reduction", "contention", "protocol",
                            "error", "latency x", "bandwidth x"], [_terms_row(t) for t in self.terms], align="r" * 11))
        return "\n".join(lines)


def _terms_row(t: dict) -> list:
    return [t["bytes"]] + [t[k] * 1e6 for k in ("measured_s", "predicted_s", "latency_s", "bandwidth_s", "reduction_s",
                                                 "contention_s", "protocol_s")] + \
        [f"{t['error_pct']:+.1f}%", _factor(t["latency_x_to_close"]), _factor(t["bandwidth_x_to_close"])]


def _factor(value: float | None) -> str:
    return "-" if value is None else f"x{value:.2f}" if value > 0 else "none"
