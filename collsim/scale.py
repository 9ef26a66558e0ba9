"""Step time and scaling efficiency as the GPU count grows, per all-reduce algorithm (or as NCCL runs it): `collsim
scale`. Each (GPU count, algorithm) is one StepRequest made from one template (collsim/whatif.py step_request)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from simulator.algorithms import get
from simulator.errors import CollsimError
from simulator.parallel import check_parallel, run_cases
from simulator.program.nccl_timing import TimingChoice
from simulator.program.whatif import StepCase, calls_timed, evaluate
from simulator.render import table
from simulator.topology.presets import NETWORKS, PRESETS
from simulator.units import format_time

from .request import OutputFile, Request, Result
from .step import StepRequest
from .whatif import fallback_note, resolve_timing, step_request

DEFAULT_ALGOS = "ring,hierarchical,double_binary_tree"
NCCL_LABEL = "nccl"  # the one row per GPU count with NCCL timing (NCCL picks each call's algorithm)


def gpu_counts(text: str, per_node: int) -> list[int]:
    """Powers of two from START to END (each a whole number of nodes once past one node)."""
    start, sep, end = str(text).partition(":")
    try:
        lo, hi = int(start), int(end) if sep else int(start)
    except ValueError:
        raise CollsimError(f"gpus: cannot read {text!r}; expected START:END such as 8:4096") from None
    if lo < 1 or hi < lo or hi > 1 << 16:
        raise CollsimError(f"gpus: {text!r}; expected 1 <= START <= END <= 65536")
    out, g = [], lo
    while g <= hi:
        if g > per_node and g % per_node:
            raise CollsimError(f"gpus: {g} GPUs do not fill whole nodes of {per_node}; expected START a power of two "
                               f"times {per_node} or below it")
        out.append(g)
        g *= 2
    return out


def machine_spec(preset: str, net: str, gpus: int) -> str:
    per = PRESETS[preset].gpus_per_node
    nodes = max(1, gpus // per)
    return preset if nodes == 1 else f"{preset}:nodes={nodes},net={net}"


@dataclass(frozen=True)
class ScaleRequest(Request):
    """`step` is the template of every step (its machine, gpus, label, timing and all-reduce algorithm are set per row;
    its timing may be 'auto'); `gpus` START:END: powers of two, each on `preset` with as many nodes as needed over
    `net`; `algos` the all-reduce algorithms compared on the links (comma-separated; default DEFAULT_ALGOS; refused
    with NCCL timing, which has one 'nccl' row per count); `html` a plotly chart to write; `jobs` processes (None: every
    core) or the Dask scheduler at `dask` run the steps."""

    step: StepCase
    gpus: str = "8:512"
    preset: str = "dgx-h100"
    net: str = "ib400"
    algos: str | None = None
    html: str | None = None
    jobs: int | None = None
    dask: str | None = None
    timing: TimingChoice = field(init=False, repr=False, compare=False)
    rows_of: tuple[str, ...] = field(init=False, repr=False, compare=False)  # the row labels of each GPU count
    cases: tuple[StepRequest, ...] = field(init=False, repr=False, compare=False)

    def check(self) -> None:
        if self.preset not in PRESETS:
            raise CollsimError(f"preset: unknown preset {self.preset!r}; expected one of {', '.join(PRESETS)}")
        if self.net not in NETWORKS:
            raise CollsimError(f"net: unknown network {self.net!r}; expected one of {', '.join(NETWORKS)}")
        check_parallel(self.jobs, self.dask)
        counts = gpu_counts(self.gpus, PRESETS[self.preset].gpus_per_node)
        machines = [machine_spec(self.preset, self.net, g) for g in counts]
        self._set("timing", resolve_timing(self.step, machines, [f"--algos {self.algos}"] if self.algos is not None else []))
        self._set("rows_of", tuple(self._algos()))
        self._set("cases", tuple(step_request(self.step, machine=machine, gpus=g, label=algo, timing=self.timing.timing,
                                              algorithms=self._algorithms(algo))
                                 for g, machine in zip(counts, machines) for algo in self.rows_of))

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

    def _algos(self) -> list[str]:
        """The rows of each GPU count: 'nccl' with NCCL timing (algos refused), else the all-reduce algorithms."""
        if self.timing.timing == "nccl":
            if self.algos is not None:
                raise CollsimError(f"algos: {self.algos!r} with timing 'nccl': NCCL picks its own all-reduce algorithm; "
                                   "expected no --algos, or timing links")
            return [NCCL_LABEL]
        text = DEFAULT_ALGOS if self.algos is None else self.algos
        algos = [a.strip() for a in text.split(",") if a.strip()]
        if not algos:
            raise CollsimError(f"algos: {text!r} names no algorithm; expected names such as {DEFAULT_ALGOS}")
        return algos

    def _algorithms(self, algo: str) -> tuple[tuple[str, str], ...]:
        """The template's algorithms with `algo` for all-reduce (as given, for the 'nccl' row)."""
        if algo == NCCL_LABEL:
            return self.step.algorithms
        others = [(op, name) for op, name in self.step.algorithms if op != "allreduce"]
        return tuple(sorted([*others, ("allreduce", get("allreduce", algo).name)]))

    def run(self) -> ScaleResult:
        return ScaleResult(self, run_cases(evaluate, list(self.cases), self.jobs, self.dask, "scale"))


@dataclass(frozen=True)
class ScaleResult(Result):
    """One row per (GPU count, algorithm), counts ascending."""

    request: ScaleRequest
    rows: list[dict]

    def data(self) -> dict[str, Any]:
        req = self.request
        return {"scenario": req.step.scenario, "preset": req.preset, "net": req.net, "timing": req.timing.timing,
                "timing_why": req.timing.why, "rows": self.rows, "html": req.html}

    def text(self) -> str:
        req, rows = self.request, self.rows
        lines = [f"# scale {req.step.scenario}: {rows[0]['model']} on {req.preset} nodes over {req.net}; "
                 "efficiency = compute-only step / step", f"# timing: {req.timing.why}",
                 table(["gpus", "algorithm", "step", "exposed comm", "tokens/s", "efficiency", "mode", "calls timed"],
                       [[r["gpus"], r["label"], format_time(r["step_s"]), format_time(r["exposed_s"]),
                         round(r["tokens_per_s"]), f"{r['efficiency']:.1%}", r["mode"], calls_timed(r)] for r in rows])]
        return "\n".join(lines + self._summary())

    def _summary(self) -> list[str]:
        """Where each row kind falls below 90% efficiency, and the counts whose calls were not all timed by NCCL."""
        lines = []
        for algo in self.request.rows_of:
            mine = [r for r in self.rows if r["label"] == algo]
            below = next((r["gpus"] for r in mine if r["efficiency"] < 0.9), None)
            lines.append(f"# {algo}: " + (f"efficiency falls below 90% at {below} GPUs" if below else "90% or better up to "
                                          f"{mine[-1]['gpus']} GPUs"))
        for r in self.rows:
            note = fallback_note(r)
            if note:
                lines.append(f"# {r['gpus']} GPUs: {note}")
        return lines

    def files(self) -> list[OutputFile]:
        html = self.request.html
        return [OutputFile(html, "chart", self.html_text(), said=f"# wrote {html}")] if html else []

    def html_text(self) -> str:
        """An interactive plotly chart: efficiency and step time against GPUs, one line per row kind."""
        import plotly.graph_objects as go
        from plotly.colors import qualitative
        from plotly.subplots import make_subplots

        from collsim.charts import count_ticks, standalone_html

        req, rows = self.request, self.rows
        fig = make_subplots(rows=1, cols=2, subplot_titles=("scaling efficiency", "step time (s)"))
        for k, algo in enumerate(dict.fromkeys(r["label"] for r in rows)):
            mine = [r for r in rows if r["label"] == algo]
            x = [r["gpus"] for r in mine]
            style = dict(mode="lines+markers", legendgroup=algo, line=dict(color=qualitative.Plotly[k % 10]))
            # one colour per row kind in both panels: plotly's own cycle gave the second panel's lines other colours
            fig.add_trace(go.Scatter(x=x, y=[r["efficiency"] for r in mine], name=algo, **style), 1, 1)
            fig.add_trace(go.Scatter(x=x, y=[r["step_s"] for r in mine], name=algo, showlegend=False, **style), 1, 2)
        fig.update_xaxes(title_text="GPUs", **count_ticks(r["gpus"] for r in rows))
        fig.update_yaxes(tickformat=".0%", row=1, col=1)
        fig.update_layout(title=f"collsim scale {req.step.scenario}: {rows[0]['model']} on {req.preset} over {req.net}")
        return standalone_html(fig)
