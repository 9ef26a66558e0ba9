"""Fitting models to measured times: an algorithm's alpha-beta model (FitRequest; `collsim fit LOG`, the app's
Reality page) and a machine preset's free parameters (CalibrateRequest; `collsim fit LOG --preset SPEC`)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from simulator.algorithms import REGISTRY, names_for
from simulator.algorithms.registry import resolve_params
from simulator.cost import CLOSED_FORM
from simulator.errors import CollsimError
from simulator.fit import CV_MIN_BYTES, FitResult, _unique, fit_measurements, predict_pieces, to_profile
from simulator.formats.nccl_tests import NcclTestsLog, read_log
from simulator.nccl.fit_bounds import fit_limited
from simulator.render import table
from simulator.units import format_size, parse_size

from .request import OutputFile, Request, Result

MAX_SEGMENTS = 64
MAX_CALIBRATION_RANKS = 64
PLACEMENTS = ("out", "in", "min")


@dataclass(frozen=True)
class Measured:
    """Times measured for one collective: where from, op, ranks, (bytes, seconds) pairs, the algorithm if known, and
    the nccl-tests log they were read from (None for other sources)."""

    source: str
    op: str
    ranks: int
    measurements: tuple[tuple[int, float], ...]
    algorithm: str | None = None
    log: NcclTestsLog | None = field(default=None, repr=False, compare=False)
    placement: str = "out"

    @classmethod
    def from_log(cls, log: NcclTestsLog, placement: str = "out") -> Measured:
        return cls(log.source, log.op, log.ranks, tuple(log.measurements(placement)), log=log, placement=placement)

    @classmethod
    def read(cls, path: str, op: str | None = None, ranks: int | None = None, placement: str = "out") -> Measured:
        """An nccl-tests log file (`op` and `ranks` when the log cannot tell)."""
        if placement not in PLACEMENTS:
            raise CollsimError(f"placement: {placement!r} is not one of {', '.join(PLACEMENTS)}")
        return cls.from_log(read_log(path, op=op, ranks=ranks), placement)


# ---- the alpha-beta fit ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FitRequest(Request):
    """Fit the closed form of `algo` (an algorithm, a comma list, or 'best') to the measurements, cross-validated;
    with `train_sizes`, `holdout` or `bounds`: fit the training sizes only and report the error on the others."""

    measured: Measured
    algo: str = "ring"
    segments: int = 1
    train_sizes: str | None = None  # A:B
    holdout: str | None = None  # A:B
    bounds: str | None = None  # a machine preset bounding the fit
    out: str | None = None  # write the fit as a link profile (YAML, or JSON for a .json name)
    allow_gpu_mismatch: bool = False  # bound by a preset whose GPU is not the log's
    algorithms: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def check(self) -> None:
        if isinstance(self.segments, bool) or not isinstance(self.segments, int) or not 1 <= self.segments <= MAX_SEGMENTS:
            raise CollsimError(f"segments: {self.segments!r}; expected an integer 1..{MAX_SEGMENTS}")
        object.__setattr__(self, "algorithms", tuple(candidate_algos(self.measured.op, self.algo)))
        for text, name in ((self.train_sizes, "train-sizes"), (self.holdout, "holdout")):
            if text is not None:
                parse_interval(text, name)
        if self.bounds is not None and self.segments != 1:
            raise CollsimError("bounds: the regimes are NCCL's protocols on the machine; expected no --segments/--piecewise")

    @property
    def held_out(self) -> bool:
        return self.train_sizes is not None or self.holdout is not None or self.bounds is not None

    def run(self) -> AlphaBetaResult | HoldoutResult:
        return self._holdout() if self.held_out else self._cross_validated()

    def _cross_validated(self) -> AlphaBetaResult:
        m = self.measured
        results, refused = [], []
        for name in self.algorithms:
            try:
                params = _params(m.op, name, m.ranks)
                results.append(fit_measurements(m.op, name, m.ranks, list(m.measurements), self.segments, params))
            except CollsimError as exc:
                if len(self.algorithms) == 1:
                    raise
                refused.append({"algorithm": name, "refused": str(exc)})
        if not results:
            reasons = "; ".join(f"{r['algorithm']}: {r['refused']}" for r in refused)
            raise CollsimError(f"algo: none of {', '.join(self.algorithms)} can be fitted to {m.op} on {m.ranks} ranks ({reasons})")
        key = lambda r: (r.cv_median_abs_pct_error() if r.cv_median_abs_pct_error() is not None else r.cv_median_abs_pct_error(0))
        best = min(key(r) for r in results)
        tied = [r for r in results if key(r) <= best * (1 + 1e-6) + 1e-9]
        results = tied[:1] + sorted((r for r in results if r is not tied[0]), key=key)  # ties: the order asked for
        summary = [{"algorithm": r.algo, "cv_median_abs_pct_error": r.cv_median_abs_pct_error(),
                    "cv_median_abs_pct_error_all": r.cv_median_abs_pct_error(0), "alpha_s": r.alpha_s,
                    "bandwidth_Bps": r.bandwidth_Bps, "tied_with_best": any(r is t for t in tied)} for r in results]
        return AlphaBetaResult(self, results[0], summary + refused)

    def _holdout(self) -> HoldoutResult:
        m = self.measured
        sizes, times, train = split(m, self.train_sizes, self.holdout)
        train_log = [(int(s), float(t)) for s, t, k in zip(sizes, times, train) if k]
        limits = _limits(self.bounds, m, self.allow_gpu_mismatch) if self.bounds is not None else None
        results = []
        for name in self.algorithms:
            params = resolve_params(REGISTRY[(m.op, name)], {}) if (m.op, name) in REGISTRY else {}
            try:
                fit = fit_measurements(m.op, name, m.ranks, train_log, self.segments, params)
                if limits is not None:
                    fit = replace(fit, pieces=fit_limited(m.op, name, m.ranks, sizes[train], times[train], limits, params))
            except CollsimError:
                if len(self.algorithms) == 1:
                    raise
                continue
            predicted = predict_pieces(m.op, name, m.ranks, fit.pieces, sizes, params)
            results.append((medians(predicted, times, train), fit, predicted))
        if not results:
            raise CollsimError(f"algo: none of {', '.join(self.algorithms)} can be fitted to the training sizes")
        stats, fit, predicted = min(results, key=lambda r: r[0]["train_median_abs_pct"])  # chosen on training sizes only
        return HoldoutResult(self, fit, stats, sizes, times, train, predicted, limits)


def _params(op: str, name: str, ranks: int) -> dict:
    """The algorithm's default parameters, or the reason it cannot run on `ranks` ranks (CollsimError)."""
    spec = REGISTRY.get((op, name))
    if spec is None:
        return {}
    reason = spec.refusal(ranks)
    if reason:
        raise CollsimError(reason)
    return resolve_params(spec, {})


def candidate_algos(op: str, text: str) -> list[str]:
    """Algorithm names: one name, a comma list, or 'best' (every algorithm for the op)."""
    known = names_for(op)
    if text.strip() == "best":
        return known
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise CollsimError(f"algo: {text!r} names no algorithm; expected e.g. ring, a comma list, or best")
    for name in names:
        if name not in known:
            raise CollsimError(f"algo: no closed form for {op}/{name} and no such algorithm to simulate; "
                               f"algorithms: {', '.join(known) or 'none'}")
    return names


def _pieces(fit: FitResult) -> list[dict]:
    return [{"min_bytes": pc.lo, "max_bytes": pc.hi, "alpha_s": pc.alpha_s, "bandwidth_Bps": pc.bandwidth_Bps}
            for pc in fit.pieces]


def _profile_file(request: FitRequest, fit: FitResult) -> list[OutputFile]:
    if not request.out:
        return []
    profile = to_profile(fit, request.measured.source)
    return [OutputFile(request.out, "link profile", profile.dumps(request.out), f"load it with --profile {request.out}")]


@dataclass(frozen=True)
class AlphaBetaResult(Result):
    """The best fit (lowest cross-validated error) and every candidate's summary."""

    request: FitRequest
    fit: FitResult
    candidates: list[dict]

    def files(self) -> list[OutputFile]:
        return _profile_file(self.request, self.fit)

    def data(self) -> dict[str, Any]:
        m, best = self.request.measured, self.fit
        per_size = [{"bytes": int(s), "time_s": float(t), "fitted_s": float(f), "cv_predicted_s": float(c),
                     "cv_error_pct": float(e)}
                    for s, t, f, c, e in zip(best.sizes, best.times, best.fitted, best.cv_predicted, best.cv_errors_pct)]
        data = {"log": m.source, "op": m.op, "ranks": m.ranks}
        if m.log is not None:
            log = m.log
            data.update({"op_source": log.op_source, "ranks_source": log.ranks_source, "layout": log.layout, "dtype": log.dtype,
                         "notes": list(log.notes), "avg_busbw_GBps_in_log": log.avg_busbw_GBps,
                         "mean_busbw_GBps_of_rows": log.mean_busbw_GBps})
        data.update({"algorithm": best.algo, "params": best.params, "method": best.meta["method"], "placement": m.placement,
                     "alpha_s": best.alpha_s, "bandwidth_Bps": best.bandwidth_Bps, "segments": _pieces(best),
                     "cv_median_abs_pct_error": best.cv_median_abs_pct_error(),
                     "cv_median_abs_pct_error_all": best.cv_median_abs_pct_error(0),
                     "per_size": per_size, "candidates": self.candidates, "profile_written": self.request.out})
        if m.log is not None:
            data["rows"] = [row_json(r) for r in m.log.rows]
        return data

    def text(self) -> str:
        m, best, pieces = self.request.measured, self.fit, _pieces(self.fit)
        lines = [f"# {m.source}"]
        if m.log is not None:
            log = m.log
            lines.append(f"# {log.op} ({log.op_source}), {log.ranks} ranks ({log.ranks_source}), {len(log.rows)} rows, "
                         f"{log.dtype}, {log.layout} format")
            lines += [f"# note: {note}" for note in log.notes]
            if log.avg_busbw_GBps is not None:
                lines.append(f"# '# Avg bus bandwidth' {log.avg_busbw_GBps:g} GB/s; mean busbw of the rows "
                             f"{log.mean_busbw_GBps:.4f} GB/s")
        how = "closed form" if best.meta["method"] == CLOSED_FORM else f"engine time on ideal:{m.ranks} (no closed form)"
        lines.append(f"# {best.algo} {how} fitted to the {m.placement} times, least squares in relative error:")
        lines.append(f"#   all sizes, one segment: alpha {best.alpha_s * 1e6:.3f} us, bandwidth {best.bandwidth_Bps / 1e9:.2f} GB/s")
        if len(pieces) > 1:
            for pc in pieces:
                hi = format_size(pc["max_bytes"]) if pc["max_bytes"] is not None else "inf"
                bw = "inf (flat)" if pc["bandwidth_Bps"] == float("inf") else f"{pc['bandwidth_Bps'] / 1e9:.2f} GB/s"
                lines.append(f"#   [{format_size(pc['min_bytes'])}, {hi}): alpha {pc['alpha_s'] * 1e6:.3f} us, bandwidth {bw}")
        rows = [[format_size(s), t * 1e6, f * 1e6, c * 1e6, e]
                for s, t, f, c, e in zip(best.sizes, best.times, best.fitted, best.cv_predicted, best.cv_errors_pct)]
        lines.append(table(["size", "measured(us)", "fitted(us)", "cv pred(us)", "cv err %"], rows, "lrrrr"))
        big, every = best.cv_median_abs_pct_error(), best.cv_median_abs_pct_error(0)
        big_text = f"{big:.1f}%" if big is not None else "n/a (no sizes >= 64KiB)"
        lines.append(f"cross-validated median |error|: {big_text} for sizes >= {format_size(CV_MIN_BYTES)}, {every:.1f}% for all sizes")
        lines += self._candidates_text()
        return "\n".join(lines)

    def _candidates_text(self) -> list[str]:
        candidates, lines = self.candidates, []
        fitted = [c for c in candidates if "alpha_s" in c]
        if len(fitted) > 1 and all(c["tied_with_best"] for c in fitted):
            lines.append(f"# all {len(fitted)} algorithms fit equally well: for one rank count every closed form is "
                         "alpha x A(p) + n / bandwidth x B(p),\n# so a log at a single p cannot tell them apart; they differ "
                         "only in what alpha and bandwidth mean. Kept the first asked for.")
        if len(candidates) > 1:
            lines.append(table(["algorithm", "cv >=64KiB %", "cv all %", "alpha(us)", "bandwidth(GB/s)"],
                               [[c["algorithm"], c.get("cv_median_abs_pct_error"), c.get("cv_median_abs_pct_error_all"),
                                 c["alpha_s"] * 1e6 if "alpha_s" in c else "",
                                 c["bandwidth_Bps"] / 1e9 if "bandwidth_Bps" in c else c["refused"]]
                                for c in candidates], "lrrrr"))
        return lines


@dataclass(frozen=True)
class HoldoutResult(Result):
    """The fit on the training sizes, and its error on them and on the held-out sizes (a prediction)."""

    request: FitRequest
    fit: FitResult
    stats: dict
    sizes: np.ndarray
    times: np.ndarray
    train: np.ndarray
    predicted: np.ndarray
    limits: Any = None

    def files(self) -> list[OutputFile]:
        return _profile_file(self.request, self.fit)

    def data(self) -> dict[str, Any]:
        m = self.request.measured
        return {"log": m.source, "op": m.op, "ranks": m.ranks, "algorithm": self.fit.algo, **self.stats,
                "segments": _pieces(self.fit),
                "per_size": [{"bytes": int(s), "time_s": float(t), "predicted_s": float(p), "train": bool(k)}
                             for s, t, p, k in zip(self.sizes, self.times, self.predicted, self.train)],
                "profile_written": self.request.out}

    def text(self) -> str:
        m, fit, limits = self.request.measured, self.fit, self.limits
        lines = [f"# {m.source}: {m.op}, {m.ranks} ranks; {fit.algo} alpha-beta fit on {int(self.train.sum())} training sizes"]
        if limits is not None:
            lines.append(f"# bounded by {self.request.bounds}: bandwidth <= {limits.max_bandwidth_Bps / 1e9:.1f} GB/s, alpha >= "
                         f"{limits.min_alpha_s * 1e6:.2f} us, regimes {' -> '.join(limits.protocols)} cut at "
                         f"{', '.join(format_size(c) for c in limits.cuts) or 'none'}")
        lines += [f"#   from {format_size(pc.lo)}: alpha {pc.alpha_s * 1e6:.3f} us, bandwidth {pc.bandwidth_Bps / 1e9:.2f} GB/s"
                  for pc in fit.pieces]
        lines.append(errors_table(self.sizes, self.times, self.train, {"fit": self.predicted}))
        lines.append(summary_line(self.stats))
        return "\n".join(lines)


def _limits(bounds: str, m: Measured, allow_gpu_mismatch: bool = False):
    """The bounds preset's limits for the measurements' op and ranks."""
    from simulator.nccl.fit_bounds import preset_limits
    from simulator.nccl.predict import OPS
    from simulator.topology.spec import parse_topology

    if m.op not in OPS:
        raise CollsimError(f"op: {m.op}: --bounds reads the machine through predict, which covers {', '.join(OPS)}")
    try:
        topology = parse_topology(bounds)
    except CollsimError as exc:
        raise CollsimError(f"bounds: {exc}") from None
    if topology.origin is None:
        raise CollsimError(f"bounds: {bounds!r} is not a machine preset; expected e.g. p5, dgx-h100:nodes=2")
    _same_gpu(m, topology, "bounds", allow_gpu_mismatch)
    if m.ranks > topology.num_devices:
        raise CollsimError(f"bounds: {bounds} has {topology.num_devices} GPUs and the log {m.ranks} ranks; "
                           "expected a preset with at least as many GPUs (e.g. :nodes=N)")
    try:
        return preset_limits(topology, m.op, m.ranks)
    except CollsimError as exc:
        raise CollsimError(f"bounds: {exc}") from None


def _same_gpu(m: Measured, topology, field: str, allowed: bool) -> None:
    """A preset of one GPU is not fitted to a log of another (simulator/nccl/fitting.py check_same_gpu)."""
    from simulator.nccl.fitting import check_same_gpu

    if m.log is not None:
        check_same_gpu(m.log, topology, field, "--allow-gpu-mismatch", allowed=allowed)


# ---- calibrating a machine preset --------------------------------------------------------------------------------


@dataclass(frozen=True)
class CalibrateRequest(Request):
    """Fit a machine preset's free parameters (simulator/nccl/calibration.py) to the training sizes of a log."""

    measured: Measured
    preset: str
    nccl_version: str | None = None
    train_sizes: str | None = None
    holdout: str | None = None
    out: str | None = None  # write the calibrated preset
    allow_gpu_mismatch: bool = False  # calibrate a preset whose GPU is not the log's
    topology: Any = field(init=False, repr=False, compare=False)

    def check(self) -> None:
        from simulator.nccl.predict import OPS
        from simulator.topology.spec import parse_topology

        m = self.measured
        if m.op not in OPS:
            raise CollsimError(f"op: {m.op}: a preset is calibrated through predict, which covers {', '.join(OPS)}")
        for text, name in ((self.train_sizes, "train-sizes"), (self.holdout, "holdout")):
            if text is not None:
                parse_interval(text, name)
        if m.ranks > MAX_CALIBRATION_RANKS:
            raise CollsimError(f"ranks: {m.ranks} ranks; a calibration times every training size about 40 times with the "
                               f"engine (32 ranks take minutes); expected a log of at most {MAX_CALIBRATION_RANKS} ranks")
        try:
            topology = parse_topology(self.preset)
        except CollsimError as exc:
            raise CollsimError(f"preset: {exc}") from None
        if topology.origin is None:
            raise CollsimError(f"preset: {self.preset!r} is not a machine preset; expected e.g. p5, dgx-h100:nodes=2")
        if topology.origin.calibration is not None:
            raise CollsimError(f"preset: {self.preset} is already calibrated; expected a preset such as p5:nodes=2")
        _same_gpu(m, topology, "preset", self.allow_gpu_mismatch)
        if m.ranks > topology.num_devices:
            raise CollsimError(f"preset: {self.preset} has {topology.num_devices} GPUs and the log {m.ranks} ranks; "
                               "expected a preset with at least as many GPUs (e.g. :nodes=N)")
        object.__setattr__(self, "topology", topology)

    def run(self) -> CalibrateResult:
        from simulator.nccl.fitting import fit_calibration

        m = self.measured
        sizes, times, train = split(m, self.train_sizes, self.holdout)
        report = fit_calibration(self.topology, m.op, m.ranks, sizes, times, train, m.source, nccl_version=self.nccl_version)
        return CalibrateResult(self, report, medians(report.predicted, times, train), sizes, times, train)


@dataclass(frozen=True)
class CalibrateResult(Result):
    """The calibration, and the preset's error before and after it on the training and held-out sizes."""

    request: CalibrateRequest
    report: Any  # simulator.nccl.fitting's report: calibration, before, predicted
    stats: dict
    sizes: np.ndarray
    times: np.ndarray
    train: np.ndarray

    def files(self) -> list[OutputFile]:
        out = self.request.out
        note = f"collsim predict --preset {out}[:nodes=N]"
        return [OutputFile(out, "calibrated preset", self.report.calibration.dumps(out), note)] if out else []

    def data(self) -> dict[str, Any]:
        req, m, report = self.request, self.request.measured, self.report
        return {"log": m.source, "preset": req.preset, "op": m.op, "ranks": m.ranks, **self.stats,
                "calibration": report.calibration.to_dict(),
                "per_size": [{"bytes": int(s), "time_s": float(t), "preset_s": float(b), "calibrated_s": float(p),
                              "train": bool(k)}
                             for s, t, b, p, k in zip(self.sizes, self.times, report.before, report.predicted, self.train)],
                "file_written": req.out}

    def text(self) -> str:
        from simulator.nccl.calibration import PARAMS

        req, m, cal = self.request, self.request.measured, self.report.calibration
        lines = [f"# {m.source}: {m.op}, {m.ranks} ranks; calibrating {req.preset} on {int(self.train.sum())} training sizes"]
        rows = []
        for name, value in zip(PARAMS, cal.vector):
            shown = f"{value * 1e6:.2f} us" if name.endswith("_s") else f"{1 / value:.3f}"
            bound = "added to NCCL's, >= 0" if name.endswith("_s") else "share of the links' bandwidth, <= 1"
            rows.append([name, shown, bound, "yes" if name in cal.identified else "no (kept neutral)"])
        lines.append(table(["parameter", "value", "bound", "identified by the training sizes"], rows, "lrll"))
        lines.append(errors_table(self.sizes, self.times, self.train,
                                  {"preset": self.report.before, "calibrated": self.report.predicted}))
        lines.append(summary_line(self.stats))
        return "\n".join(lines)


# ---- shared pieces -----------------------------------------------------------------------------------------------


def row_json(row) -> dict:
    """A parsed log row as plain data (out-of-place columns at the top level)."""
    data = {"line": row.line, "bytes": row.bytes, "count": row.count, "dtype": row.dtype, "redop": row.redop,
            "root": row.root, "time_s": row.out.time_s, "algbw_GBps": row.out.algbw_GBps,
            "busbw_GBps": row.out.busbw_GBps, "wrong": row.out.wrong, "error": row.out.error}
    if row.inplace is not None:
        data["inplace"] = {"time_s": row.inplace.time_s, "algbw_GBps": row.inplace.algbw_GBps,
                           "busbw_GBps": row.inplace.busbw_GBps, "wrong": row.inplace.wrong, "error": row.inplace.error}
    return data


def parse_interval(text: str, field: str) -> tuple[int, float]:
    """[A, B] in bytes from 'A:B' (sizes such as 64KiB; either end may be empty: open)."""
    if text is None or text.count(":") != 1:
        raise CollsimError(f"{field}: {text!r} is not a size range; expected A:B such as 1MiB:16MiB, :16MiB or 64MiB:")
    lo_text, hi_text = (part.strip() for part in text.split(":"))
    lo = parse_size(lo_text, field) if lo_text else 0
    hi = parse_size(hi_text, field) if hi_text else float("inf")
    if lo > hi:
        raise CollsimError(f"{field}: {text!r} starts above its end; expected A:B with A <= B")
    return lo, hi


def train_mask(sizes: np.ndarray, train_text: str | None, holdout_text: str | None) -> np.ndarray:
    """Which sizes are fitted: inside train_text (default all) and outside holdout_text."""
    mask = np.ones(len(sizes), dtype=bool)
    if train_text is not None:
        lo, hi = parse_interval(train_text, "train-sizes")
        mask &= (sizes >= lo) & (sizes <= hi)
    if holdout_text is not None:
        lo, hi = parse_interval(holdout_text, "holdout")
        mask &= ~((sizes >= lo) & (sizes <= hi))
    return mask


def split(m: Measured, train_text: str | None, holdout_text: str | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unique sizes, their times, and which are fitted."""
    sizes, times = _unique(list(m.measurements))
    train = train_mask(sizes, train_text, holdout_text)
    if train.sum() == 0:
        raise CollsimError(f"train-sizes: no measured size of {m.source} is left to fit on (--train-sizes minus --holdout) "
                           f"(sizes {format_size(sizes.min())} to {format_size(sizes.max())}); expected a range that covers some")
    return sizes, times, train


def errors_table(sizes, times, train, columns: dict[str, np.ndarray]) -> str:
    names = list(columns)
    rows = []
    for i, size in enumerate(sizes):
        row = [format_size(size), "train (fitted)" if train[i] else "holdout (predicted)", times[i] * 1e6]
        for name in names:
            row += [columns[name][i] * 1e6, (columns[name][i] - times[i]) / times[i] * 100]
        rows.append(row)
    head = ["size", "set", "measured(us)"] + [h for n in names for h in (f"{n}(us)", f"{n} err %")]
    return table(head, rows, "ll" + "r" * (1 + 2 * len(names)))


def medians(predicted, times, train) -> dict:
    err = np.abs((predicted - times) / times * 100)
    return {"train_median_abs_pct": float(np.median(err[train])) if train.any() else None,
            "holdout_median_abs_pct": float(np.median(err[~train])) if (~train).any() else None,
            "holdout_worst_abs_pct": float(np.max(err[~train])) if (~train).any() else None}


def summary_line(stats: dict) -> str:
    hold = stats["holdout_median_abs_pct"]
    hold_text = (f"held-out sizes (a prediction): median |error| {hold:.1f}%, worst {stats['holdout_worst_abs_pct']:.1f}%"
                 if hold is not None else "no held-out sizes (nothing predicted)")
    return f"training sizes (fitted, not a prediction): median |error| {stats['train_median_abs_pct']:.1f}%; {hold_text}"
