"""One training step on several machines, side by side, with prices and sensitivity: `collsim whatif`, and the app's
What-if page for each machine it shows (one machine, no sensitivity). Each machine's step is a StepRequest made from
one template (collsim/step.py); `collsim scale` shares the timing rule and the notes (collsim/scale.py)."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field, fields
from typing import Any

from simulator.errors import CollsimError
from simulator.parallel import check_parallel, run_cases
from simulator.program.nccl_timing import AUTO, TimingChoice, choose_timing, nccl_conflicts
from simulator.program.whatif import (
    StepCase,
    calls_timed,
    check_case_timing,
    cost_per_million,
    evaluate,
    sensitivity_cases,
)
from simulator.render import table
from simulator.topology.spec import check_spec_name
from simulator.units import format_time

from .request import OutputFile, Request, Result
from .step import StepRequest


def step_request(template: StepCase, **over: Any) -> StepRequest:
    """The template's step with `over` set (machine, gpus, label, timing...), checked as it is built."""
    values = {f.name: getattr(template, f.name) for f in fields(StepCase)}
    return StepRequest(**{**values, **over})


def resolve_timing(template: StepCase, machines: list[str] | tuple[str, ...], given: list[str] | None = None) -> TimingChoice:
    """The run's timing (nccl_timing.choose_timing: the template's timing, or for 'auto' the shared default rule, with
    the options given that NCCL timing refuses: the template's exact mode and forced algorithms, and `given`); a
    timing given is first checked as each step will check it (whatif.check_case_timing)."""
    if template.timing != AUTO:
        check_case_timing(template)  # what the timing asked for cannot honour, before any machine is built
    conflicts = nccl_conflicts(template.mode, dict(template.algorithms)) + (given or [])
    return choose_timing(template.timing, machines, conflicts)


def fallback_note(row: dict) -> str | None:
    """With NCCL timing, a line for a row some of whose collective calls ran on the links instead (None if none)."""
    timed = calls_timed(row)
    if row["timing"] != "nccl" or "links" not in timed:
        return None
    return (f"calls timed {timed}: the calls NCCL's model does not cover (more members than predict simulates, other "
            "ops, irregular groups) ran on the links (docs/whatif.md)")


def split_machines(text: str) -> list[str]:
    """'dgx-h100:nodes=2,net=ib400,hgx-b200' -> two specs: a piece with '=' and no ':' continues the previous spec."""
    out: list[str] = []
    for piece in text.split(","):
        piece = piece.strip()
        if out and "=" in piece and ":" not in piece:
            out[-1] += "," + piece
        elif piece:
            out.append(piece)
    if not out:
        raise CollsimError(f"machines: {text!r} names no machine; expected SPEC[,SPEC...] such as dgx-h100,hgx-b200:nodes=2")
    return out


def _price(value: str | float) -> float:
    try:
        price = float(value)
    except ValueError:
        price = math.nan
    if not (math.isfinite(price) and price > 0):
        raise CollsimError(f"price: {value!r} is not a price; expected dollars per GPU-hour > 0, e.g. 2.5")
    return price


def parse_prices(text: str | None, machines: list[str] | tuple[str, ...]) -> dict[str, float]:
    """--price: one number for every machine, or MACHINE=PRICE pairs separated by ';'."""
    if text is None:
        return {}
    if "=" not in text:
        price = _price(text.strip())
        return {m: price for m in machines}
    out = {}
    for part in text.split(";"):
        name, _, value = part.rpartition("=")
        if name.strip() not in machines:
            raise CollsimError(f"price: {name.strip()!r} is not one of the machines; expected one of {'; '.join(machines)}")
        out[name.strip()] = _price(value.strip())
    return out


@dataclass(frozen=True)
class WhatifRequest(Request):
    """`step` is the template of every machine's step (its machine, gpus, label and trace_ranks are set per machine;
    its timing may be 'auto': nccl_timing's default rule); `gpus` None: every device of each machine; `prices` are
    dollars per GPU-hour as (machine, price) pairs, or --price's text; `sensitivity` reruns each machine with the NIC,
    then NVLink, bandwidth doubled (links timing only); `trace_dir` gets a Chrome trace of each machine's step (its
    first `trace_ranks` ranks); `jobs` processes (None: every core) or the Dask scheduler at `dask` run the steps."""

    step: StepCase
    machines: tuple[str, ...]
    gpus: int | None = None
    prices: tuple[tuple[str, float], ...] | str | None = None
    sensitivity: bool = True
    trace_dir: str | None = None
    trace_ranks: int = 16
    jobs: int | None = None
    dask: str | None = None
    timing: TimingChoice = field(init=False, repr=False, compare=False)
    cases: tuple[StepRequest, ...] = field(init=False, repr=False, compare=False)  # one per machine

    def check(self) -> None:
        for machine in self.machines:
            check_spec_name(machine)  # every name before the first machine is simulated
        self._set("timing", resolve_timing(self.step, self.machines))
        self._check_prices()
        check_parallel(self.jobs, self.dask)
        if self.trace_dir and not os.path.isdir(self.trace_dir):
            raise CollsimError(f"trace-dir: {self.trace_dir!r} is not a directory; expected an existing directory")
        if self.trace_ranks < 1:
            raise CollsimError(f"trace-ranks: {self.trace_ranks}; expected an integer >= 1")
        traced = self.trace_ranks if self.trace_dir else 0
        self._set("cases", tuple(step_request(self.step, machine=m, gpus=self.gpus, trace_ranks=traced, label=m,
                                              timing=self.timing.timing) for m in self.machines))

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

    def _check_prices(self) -> None:
        if isinstance(self.prices, str):
            self._set("prices", tuple(parse_prices(self.prices, self.machines).items()))
        for name, price in self.prices or ():
            if name not in self.machines:
                raise CollsimError(f"price: {name!r} is not one of the machines; expected one of {'; '.join(self.machines)}")
            _price(price)

    @property
    def sensitive(self) -> bool:
        """Whether the doubled-bandwidth reruns run: NCCL's model knows only the preset's own links."""
        return self.sensitivity and self.timing.timing == "links"

    def run(self) -> WhatifResult:
        cases = list(self.cases)
        extra = [c for case in cases for c in sensitivity_cases(case)] if self.sensitive else []
        results = run_cases(evaluate, cases + extra, self.jobs, self.dask, "whatif")
        rows = _annotate(results[:len(cases)], results[len(cases):], dict(self.prices or ()))
        return WhatifResult(self, rows, _traces(rows, self.trace_dir) if self.trace_dir else [])


def _annotate(rows: list[dict], more: list[dict], prices: dict[str, float]) -> list[dict]:
    """Cost per million tokens and the step time saved by doubled bandwidths, added to each row."""
    for k, row in enumerate(rows):
        if row["label"] in prices:
            row["usd_per_million_tokens"] = cost_per_million(row, prices[row["label"]])
        if more:
            row["saved_by_2x_nic"] = 1 - more[2 * k]["step_s"] / row["step_s"]
            row["saved_by_2x_nvlink"] = 1 - more[2 * k + 1]["step_s"] / row["step_s"]
    return rows


def _traces(rows: list[dict], directory: str) -> list[OutputFile]:
    """Each row's Chrome trace (its events taken out of the row)."""
    out = []
    for k, row in enumerate(rows):
        name = row["machine"].replace(":", "_").replace(",", "_").replace("=", "-")
        path = os.path.join(directory, f"whatif-{k}-{name}.trace.json")
        events = row.pop("trace_events")
        text = json.dumps({"traceEvents": events, "displayTimeUnit": "ns", "otherData": {"collsim": dict(row)}})
        out.append(OutputFile(path, "Chrome trace", text, said=f"# wrote {path}"))
    return out


@dataclass(frozen=True)
class WhatifResult(Result):
    """One row per machine (simulator/program/whatif.py evaluate), annotated with cost and sensitivity."""

    request: WhatifRequest
    rows: list[dict]
    traces: list[OutputFile]

    def data(self) -> dict[str, Any]:
        req = self.request
        return {"scenario": req.step.scenario, "timing": req.timing.timing, "timing_why": req.timing.why,
                "rows": self.rows, "traces": [t.path for t in self.traces]}

    def files(self) -> list[OutputFile]:
        return list(self.traces)

    def text(self) -> str:
        req, rows = self.request, self.rows
        lines = [f"# whatif {req.step.scenario}: {rows[0]['model']}, "
                 f"{f'{req.gpus} GPUs' if req.gpus else 'every GPU of each machine'}; efficiency = compute-only step / step",
                 f"# timing: {req.timing.why}", self._table()]
        lines += [f"# {row['label']}: doubling the NIC bandwidth saves {row['saved_by_2x_nic']:.1%}; "
                  f"doubling NVLink saves {row['saved_by_2x_nvlink']:.1%} ({row['mode']} run)"
                  for row in (rows if req.sensitive else ())]
        if req.timing.timing == "nccl":
            lines += self._nccl_notes()
        return "\n".join(lines)

    def _table(self) -> str:
        priced, sensitive = bool(self.request.prices), self.request.sensitive
        headers = ["machine", "gpu", "gpus", "step", "compute", "exposed comm", "tokens/s", "efficiency"]
        headers += ["$/Mtok"] if priced else []
        headers += ["2x NIC saves", "2x NVLink saves"] if sensitive else []
        body = []
        for row in self.rows:
            line = [row["label"], row["gpu"], row["gpus"], format_time(row["step_s"]), format_time(row["compute_s"]),
                    format_time(row["exposed_s"]), round(row["tokens_per_s"]), f"{row['efficiency']:.1%}"]
            if priced:
                line.append(f"{row['usd_per_million_tokens']:.3f}" if "usd_per_million_tokens" in row else "")
            if sensitive:
                line += [f"{row['saved_by_2x_nic']:.1%}", f"{row['saved_by_2x_nvlink']:.1%}"]
            body.append(line)
        return table(headers, body)

    def _nccl_notes(self) -> list[str]:
        lines = []
        for row in self.rows:
            lines.append(f"# {row['label']}: calls timed {calls_timed(row)} (NCCL: as collsim predict times them; "
                         f"{row['mode']} run)")
            note = fallback_note(row)
            if note:
                lines.append(f"# {row['label']}: {note}")
        if self.request.sensitivity:
            lines.append("# no doubled-bandwidth reruns with NCCL timing: NCCL's model knows only each preset's own links "
                         "(use --timing links for them)")
        return lines
