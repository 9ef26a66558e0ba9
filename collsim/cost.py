"""Closed-form time, algbw and busbw of one or every algorithm for an op, with the lower bound (`collsim cost`).

An algorithm registered without a closed form is timed by the event engine on ideal:P (the same contention-free
single-port machine the closed forms describe); the result says which was used. A link profile (collsim calibrate /
fit) may replace alpha, bandwidth and gamma: a piecewise one prices each size with its segment."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from simulator.algorithms import get, names_for
from simulator.algorithms.registry import check_ranks, resolve_params
from simulator.collective import DTYPES, Collective, normalize_dtype, normalize_op
from simulator.cost import CLOSED_FORM, ENGINE, LinkModel, estimate, has_closed_form, lower_bound
from simulator.errors import CollsimError
from simulator.render import table
from simulator.units import parse_bandwidth, parse_gamma, parse_size_range, parse_time

from .limits import Footprint, Limits
from .request import Request, Result

DEFAULT_ALPHA, DEFAULT_BANDWIDTH = "2us", "25GB/s"  # the link when none is given (the app's cost page starts on it)


@dataclass(frozen=True)
class CostRequest(Request):
    """`algorithm` None: every algorithm for the op that can run at `ranks` (the others are listed as refused);
    `sizes` as bytes or text ('1MiB', '1KiB:1GiB:32', 'A,B,C'); `alpha`, `bandwidth`, `gamma` as text (defaults 2us,
    25GB/s, 0), or `profile` a link profile file instead; `params` algorithm parameters as (name, value) pairs (each
    algorithm takes those it accepts when every algorithm is compared)."""

    op: str
    ranks: int
    sizes: tuple[int, ...] | str = "1MiB"
    algorithm: str | None = None
    dtype: str = "float32"
    root: int = 0
    alpha: str | None = None
    bandwidth: str | None = None
    gamma: str | None = None
    profile: str | None = None
    params: tuple[tuple[str, int], ...] = ()
    limits: Limits = Limits()  # transfers and memory the request may take
    adapter: Any = field(init=False, repr=False, compare=False)  # simulator.profile_adapter.ProfileAdapter, or None
    model: LinkModel = field(init=False, repr=False, compare=False)
    chosen: tuple[tuple[str, dict], ...] = field(init=False, repr=False, compare=False)  # (algorithm, its parameters)
    refused: dict[str, str] = field(init=False, repr=False, compare=False)  # name -> why it cannot run here

    def check(self) -> None:
        Footprint("cost", self.op, self.algorithm, ranks=self.ranks, params=self.params).bound(self.limits)
        self._set("op", normalize_op(self.op))
        if isinstance(self.sizes, str):
            self._set("sizes", tuple(parse_size_range(self.sizes, "size", multiple=DTYPES[normalize_dtype(self.dtype)])))
        self._set("adapter", self._adapter())
        self._set("model", self.adapter.profile.model if self.adapter else LinkModel.from_bandwidth(
            parse_time(self.alpha or DEFAULT_ALPHA, "alpha"), parse_bandwidth(self.bandwidth or DEFAULT_BANDWIDTH),
            parse_gamma(self.gamma or "0")))
        for size in self.sizes:  # validates ranks, dtype and root once per size
            Collective(self.op, self.ranks, size, self.dtype, self.root)
        self._pick_algorithms()

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

    def _adapter(self):
        """The profile adapter (None without a profile); a profile excludes alpha, bandwidth and gamma."""
        if not self.profile:
            return None
        given = [name for name in ("alpha", "bandwidth", "gamma") if getattr(self, name) is not None]
        if given:
            raise CollsimError(f"profile: give either --profile or --{'/--'.join(given)}, not both")
        from simulator.profile import load_profile
        from simulator.profile_adapter import ProfileAdapter

        return ProfileAdapter(load_profile(self.profile))

    def _pick_algorithms(self) -> None:
        """The algorithm named (checked at this rank count), or every one for the op that can run here."""
        chosen, refused, given = [], {}, dict(self.params)
        for name in [self.algorithm] if self.algorithm else names_for(self.op):
            spec = get(self.op, name)
            if not self.algorithm and spec.refusal(self.ranks):
                refused[name] = spec.refusal(self.ranks)
                continue
            check_ranks(spec, self.ranks)
            accepted = {p.name for p in spec.params} if not self.algorithm else set(given)
            chosen.append((name, resolve_params(spec, {k: v for k, v in given.items() if k in accepted})))
        self._set("chosen", tuple(chosen))
        self._set("refused", refused)

    def times(self, name: str, params: dict) -> tuple[list[float], str]:
        """An algorithm's time at each size, and how it was found (closed form or engine)."""
        if self.adapter:
            method = CLOSED_FORM if has_closed_form(self.op, name) else ENGINE
            return self.adapter.predict(self.op, name, self.ranks, list(self.sizes), **params), method
        est = estimate(self.op, name, self.ranks, list(self.sizes), self.model, **params)
        return est.times, est.method

    def run(self) -> CostResult:
        sizes = list(self.sizes)
        results = [(name, params, *self.times(name, params)) for name, params in self.chosen]
        bounds = (self.adapter.lower_bound(self.op, self.ranks, sizes) if self.adapter
                  else lower_bound(self.op, self.ranks, sizes, self.model))
        rows = []
        for name, params, times, method in results:
            for size, t, lb in zip(sizes, times, bounds):
                coll = Collective(self.op, self.ranks, size, self.dtype, self.root)
                rows.append({"op": self.op, "algorithm": name, "params": params, "ranks": self.ranks, "bytes": size,
                             "time_s": float(t), "algbw_GBps": coll.algbw(t) / 1e9, "busbw_GBps": coll.busbw(t) / 1e9,
                             "lower_bound_s": float(lb), "x_lower_bound": float(t / lb) if lb > 0 else 1.0,
                             "method": method})
        return CostResult(self, results, rows, list(bounds))


@dataclass(frozen=True)
class CostResult(Result):
    """Each algorithm's (name, parameters, times, method), one row per (algorithm, size), and the lower bounds."""

    request: CostRequest
    results: list[tuple]
    rows: list[dict]
    bounds: list[float]

    def data(self) -> dict[str, Any]:
        model = self.request.model
        if len(self.rows) == 1:
            return self.rows[0]
        return {"model": {"alpha_s": model.alpha, "bandwidth_Bps": 1 / model.beta, "gamma_s_per_byte": model.gamma},
                "results": self.rows, "refused": self.request.refused}

    def text(self) -> str:
        """The table: one row per algorithm (one size) or one column per algorithm (several); engine times marked."""
        req = self.request
        engine = [name for name, _, _, method in self.results if method != CLOSED_FORM]
        how = "closed forms" + (f"; * = event engine on ideal:{req.ranks}, no closed form" if engine else "")
        machine = (f"profile {req.profile}" if req.profile else
                   f"alpha={req.alpha or DEFAULT_ALPHA}, bandwidth={req.bandwidth or DEFAULT_BANDWIDTH}, "
                   f"gamma={req.model.gamma:g} s/B")
        lines = [f"# {req.op}, p={req.ranks}, {machine} ({how}; times in us, bandwidths in GB/s)"]
        lines += self._one_size() if len(req.sizes) == 1 else [self._grid(engine)]
        lines += [f"# {name}: not for {req.ranks} ranks ({reason})" for name, reason in req.refused.items()]
        return "\n".join(lines)

    def _one_size(self) -> list[str]:
        rows = self.rows
        best = min(r["time_s"] for r in rows)
        return [table(["algorithm", "time(us)", "algbw", "busbw", "x bound", "model", ""],
                      [[r["algorithm"], r["time_s"] * 1e6, r["algbw_GBps"], r["busbw_GBps"], r["x_lower_bound"],
                        r["method"], "<- best" if r["time_s"] == best and len(rows) > 1 else ""] for r in rows]),
                f"lower bound: {self.bounds[0] * 1e6:.2f} us"]

    def _grid(self, engine: list[str]) -> str:
        names = [name for name, _, _, _ in self.results]
        labels = [name + ("*" if name in engine else "") for name in names]
        grid = []
        for i, size in enumerate(self.request.sizes):
            times = [res[2][i] for res in self.results]
            grid.append([size] + [t * 1e6 for t in times]
                        + [self.bounds[i] * 1e6, names[min(range(len(times)), key=times.__getitem__)]])
        return table(["size(B)"] + labels + ["bound", "best"], grid)
