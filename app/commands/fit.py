"""`collsim fit LOG`: fit an algorithm's alpha-beta model to an nccl-tests log, cross-validated."""

from __future__ import annotations

import argparse
from dataclasses import replace

import numpy as np

from simulator.algorithms import REGISTRY, names_for
from simulator.algorithms.registry import resolve_params
from simulator.cost import CLOSED_FORM
from simulator.errors import CollsimError
from simulator.fit import CV_MIN_BYTES, FitResult, _unique, fit_measurements, predict_pieces, to_profile
from simulator.formats.nccl_tests import NcclTestsLog, read_log
from simulator.nccl.fit_bounds import fit_limited
from simulator.units import format_size, parse_size

from ..output import emit_json, table


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "fit", help="fit the alpha-beta model of an algorithm to an nccl-tests log",
        description="Read an nccl-tests log as found in the wild and fit the closed form of an algorithm\n"
                    "(alpha per message, link bandwidth) by least squares in relative error; an algorithm without\n"
                    "a closed form is timed by the event engine on ideal:P instead. Cross-validation\n"
                    "fits on every other size and predicts the sizes in between (and the other way round);\n"
                    "the per-size error and the median absolute percentage error for sizes >= 64 KiB and for\n"
                    "all sizes are printed. --piecewise fits separate size ranges (NCCL's LL -> LL128 ->\n"
                    "Simple protocol regimes). --out writes the fit as a link profile file (YAML/JSON).",
        epilog="examples: collsim fit tests/data/nccl-tests/04_h100_p5_1node_8gpu_allreduce_awsbatch.txt\n"
               "          collsim fit LOG --piecewise --out h100.yaml\n"
               "          collsim fit LOG --algo best --json\n"
               "          collsim fit LOG --preset p5 --train-sizes :16MiB --out my-p5.yaml\n"
               "          collsim predict --preset my-p5.yaml:nodes=2 --size 1MiB:8GiB")
    p.add_argument("log", metavar="LOG", help="an nccl-tests output file (prefixes, NCCL INFO noise and the old format are fine)")
    p.add_argument("--op", help="the collective, when the log cannot tell (e.g. allgather vs alltoall)")
    p.add_argument("--ranks", type=int, help="rank count, when the log cannot tell (e.g. broadcast)")
    p.add_argument("--algo", default="ring",
                   help="algorithm whose closed form (or engine time) is fitted (default ring); a comma list, or 'best' "
                        "for every algorithm of the op: the lowest cross-validated error wins")
    p.add_argument("--segments", type=int, default=1, help="fit up to this many size ranges separately (default 1)")
    p.add_argument("--piecewise", action="store_true", help="shorthand for --segments 3 (LL, LL128, Simple regimes)")
    p.add_argument("--placement", choices=("out", "in", "min"), default="out",
                   help="which time to fit: out-of-place (default), in-place, or the faster of the two")
    p.add_argument("--out", metavar="FILE", help="write the fit as a link profile (simulator/profile.py; YAML, or JSON for a .json "
                   "name); with --preset, the calibrated preset, a file predict and simulate take as --preset/--topology FILE[:nodes=N]")
    p.add_argument("--preset", metavar="SPEC", help="calibrate this machine preset (e.g. p5, dgx-h100:nodes=2) to the log: fit its "
                   "link efficiency per class and protocol (<= 1) and its extra latency per step (>= 0, on top of NCCL's)")
    p.add_argument("--nccl-version", metavar="V", help="with --preset: the NCCL release the log ran (e.g. 2.20.3), whose "
                   "tuning.cc latency tables set NCCL's picks and step costs; kept in the calibration (default: latest)")
    p.add_argument("--train-sizes", metavar="A:B", help="fit only the sizes in [A, B] (either end may be left open, e.g. :16MiB); "
                   "the error on the other sizes is reported as a prediction")
    p.add_argument("--bounds", metavar="SPEC", help="bound the alpha-beta fit by a machine preset: bandwidth at most what its "
                   "links allow, alpha at least NCCL's latency floor, one size regime per NCCL protocol (simulator/nccl/fit_bounds.py)")
    p.add_argument("--holdout", metavar="A:B", help="hold the sizes in [A, B] out of the fit and report the error on them")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def candidate_algos(op: str, text: str) -> list[str]:
    """Algorithm names from --algo: one name, a comma list, or 'best' (every algorithm for the op)."""
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


def fit_log(log: NcclTestsLog, algos: list[str], segments: int, placement: str) -> tuple[FitResult, list[dict]]:
    """Fit every named algorithm; the one with the lowest cross-validated error first."""
    results, refused = [], []
    for name in algos:
        spec = REGISTRY.get((log.op, name))
        params = {}
        if spec is not None:
            reason = spec.refusal(log.ranks)
            if reason:
                refused.append({"algorithm": name, "refused": reason})
                continue
            params = resolve_params(spec, {})
        try:
            results.append(fit_measurements(log.op, name, log.ranks, log.measurements(placement), segments, params))
        except CollsimError as exc:
            if len(algos) == 1:
                raise
            refused.append({"algorithm": name, "refused": str(exc)})
    if not results:
        reasons = "; ".join(f"{r['algorithm']}: {r['refused']}" for r in refused)
        raise CollsimError(f"algo: none of {', '.join(algos)} can be fitted to {log.op} on {log.ranks} ranks ({reasons})")
    key = lambda r: (r.cv_median_abs_pct_error() if r.cv_median_abs_pct_error() is not None else r.cv_median_abs_pct_error(0))
    best = min(key(r) for r in results)
    tied = [r for r in results if key(r) <= best * (1 + 1e-6) + 1e-9]
    results = tied[:1] + sorted((r for r in results if r is not tied[0]), key=key)  # ties: the order asked for
    summary = [{"algorithm": r.algo, "cv_median_abs_pct_error": r.cv_median_abs_pct_error(),
                "cv_median_abs_pct_error_all": r.cv_median_abs_pct_error(0), "alpha_s": r.alpha_s,
                "bandwidth_Bps": r.bandwidth_Bps, "tied_with_best": any(r is t for t in tied)} for r in results]
    return results[0], summary + refused


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
    """Which sizes are fitted: inside --train-sizes (default all) and outside --holdout."""
    mask = np.ones(len(sizes), dtype=bool)
    if train_text is not None:
        lo, hi = parse_interval(train_text, "train-sizes")
        mask &= (sizes >= lo) & (sizes <= hi)
    if holdout_text is not None:
        lo, hi = parse_interval(holdout_text, "holdout")
        mask &= ~((sizes >= lo) & (sizes <= hi))
    return mask


def run(args: argparse.Namespace) -> int:
    if args.nccl_version is not None and args.preset is None:
        raise CollsimError(f"nccl-version: {args.nccl_version!r} sets the latency tables of a preset's calibration; "
                           "expected it with --preset SPEC")
    log = read_log(args.log, op=args.op, ranks=args.ranks)
    if args.preset is not None:
        return run_calibration(args, log)
    segments = 3 if args.piecewise and args.segments == 1 else args.segments
    algos = candidate_algos(log.op, args.algo)
    if args.train_sizes is not None or args.holdout is not None or args.bounds is not None:
        return run_holdout(args, log, algos, segments)
    best, candidates = fit_log(log, algos, segments, args.placement)
    profile = to_profile(best, str(args.log))
    if args.out:
        profile.save(args.out)
    pieces = [{"min_bytes": pc.lo, "max_bytes": pc.hi, "alpha_s": pc.alpha_s, "bandwidth_Bps": pc.bandwidth_Bps}
              for pc in best.pieces]
    per_size = [{"bytes": int(s), "time_s": float(t), "fitted_s": float(f), "cv_predicted_s": float(c),
                 "cv_error_pct": float(e)}
                for s, t, f, c, e in zip(best.sizes, best.times, best.fitted, best.cv_predicted, best.cv_errors_pct)]
    if args.json:
        emit_json({"log": str(args.log), "op": log.op, "ranks": log.ranks, "op_source": log.op_source,
                   "ranks_source": log.ranks_source, "layout": log.layout, "dtype": log.dtype, "notes": list(log.notes),
                   "avg_busbw_GBps_in_log": log.avg_busbw_GBps, "mean_busbw_GBps_of_rows": log.mean_busbw_GBps,
                   "algorithm": best.algo, "params": best.params, "method": best.meta["method"], "placement": args.placement,
                   "alpha_s": best.alpha_s, "bandwidth_Bps": best.bandwidth_Bps, "segments": pieces,
                   "cv_median_abs_pct_error": best.cv_median_abs_pct_error(),
                   "cv_median_abs_pct_error_all": best.cv_median_abs_pct_error(0),
                   "per_size": per_size, "candidates": candidates, "profile_written": args.out,
                   "rows": [row_json(r) for r in log.rows]})
        return 0
    _print_text(args, log, best, candidates, pieces)
    return 0


def _print_text(args, log: NcclTestsLog, best: FitResult, candidates: list[dict], pieces: list[dict]) -> None:
    print(f"# {args.log}")
    print(f"# {log.op} ({log.op_source}), {log.ranks} ranks ({log.ranks_source}), {len(log.rows)} rows, "
          f"{log.dtype}, {log.layout} format")
    for note in log.notes:
        print(f"# note: {note}")
    if log.avg_busbw_GBps is not None:
        print(f"# '# Avg bus bandwidth' {log.avg_busbw_GBps:g} GB/s; mean busbw of the rows {log.mean_busbw_GBps:.4f} GB/s")
    how = "closed form" if best.meta["method"] == CLOSED_FORM else f"engine time on ideal:{log.ranks} (no closed form)"
    print(f"# {best.algo} {how} fitted to the {args.placement} times, least squares in relative error:")
    print(f"#   all sizes, one segment: alpha {best.alpha_s * 1e6:.3f} us, bandwidth {best.bandwidth_Bps / 1e9:.2f} GB/s")
    if len(pieces) > 1:
        for pc in pieces:
            hi = format_size(pc["max_bytes"]) if pc["max_bytes"] is not None else "inf"
            bw = "inf (flat)" if pc["bandwidth_Bps"] == float("inf") else f"{pc['bandwidth_Bps'] / 1e9:.2f} GB/s"
            print(f"#   [{format_size(pc['min_bytes'])}, {hi}): alpha {pc['alpha_s'] * 1e6:.3f} us, bandwidth {bw}")
    rows = [[format_size(s), t * 1e6, f * 1e6, c * 1e6, e]
            for s, t, f, c, e in zip(best.sizes, best.times, best.fitted, best.cv_predicted, best.cv_errors_pct)]
    print(table(["size", "measured(us)", "fitted(us)", "cv pred(us)", "cv err %"], rows, "lrrrr"))
    big, every = best.cv_median_abs_pct_error(), best.cv_median_abs_pct_error(0)
    big_text = f"{big:.1f}%" if big is not None else "n/a (no sizes >= 64KiB)"
    print(f"cross-validated median |error|: {big_text} for sizes >= {format_size(CV_MIN_BYTES)}, {every:.1f}% for all sizes")
    fitted = [c for c in candidates if "alpha_s" in c]
    if len(fitted) > 1 and all(c["tied_with_best"] for c in fitted):
        print(f"# all {len(fitted)} algorithms fit equally well: for one rank count every closed form is "
              "alpha x A(p) + n / bandwidth x B(p),\n# so a log at a single p cannot tell them apart; they differ "
              "only in what alpha and bandwidth mean. Kept the first asked for.")
    if len(candidates) > 1:
        print(table(["algorithm", "cv >=64KiB %", "cv all %", "alpha(us)", "bandwidth(GB/s)"],
                    [[c["algorithm"], c.get("cv_median_abs_pct_error"), c.get("cv_median_abs_pct_error_all"),
                      c["alpha_s"] * 1e6 if "alpha_s" in c else "", c["bandwidth_Bps"] / 1e9 if "bandwidth_Bps" in c else c["refused"]]
                     for c in candidates], "lrrrr"))
    if args.out:
        print(f"profile written to {args.out} (load it with --profile {args.out})")



def _split(args, log: NcclTestsLog) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    sizes, times = _unique(log.measurements(args.placement))
    train = train_mask(sizes, args.train_sizes, args.holdout)
    if train.sum() == 0:
        raise CollsimError(f"train-sizes: no measured size of {args.log} is left to fit on (--train-sizes minus --holdout) "
                           f"(sizes {format_size(sizes.min())} to {format_size(sizes.max())}); expected a range that covers some")
    return sizes, times, train


def _errors_table(sizes, times, train, columns: dict[str, np.ndarray]) -> str:
    names = list(columns)
    rows = []
    for i, size in enumerate(sizes):
        row = [format_size(size), "train (fitted)" if train[i] else "holdout (predicted)", times[i] * 1e6]
        for name in names:
            row += [columns[name][i] * 1e6, (columns[name][i] - times[i]) / times[i] * 100]
        rows.append(row)
    head = ["size", "set", "measured(us)"] + [h for n in names for h in (f"{n}(us)", f"{n} err %")]
    return table(head, rows, "ll" + "r" * (1 + 2 * len(names)))


def _medians(predicted, times, train) -> dict:
    err = np.abs((predicted - times) / times * 100)
    return {"train_median_abs_pct": float(np.median(err[train])) if train.any() else None,
            "holdout_median_abs_pct": float(np.median(err[~train])) if (~train).any() else None,
            "holdout_worst_abs_pct": float(np.max(err[~train])) if (~train).any() else None}


def _summary_line(stats: dict) -> str:
    hold = stats["holdout_median_abs_pct"]
    hold_text = (f"held-out sizes (a prediction): median |error| {hold:.1f}%, worst {stats['holdout_worst_abs_pct']:.1f}%"
                 if hold is not None else "no held-out sizes (nothing predicted)")
    return f"training sizes (fitted, not a prediction): median |error| {stats['train_median_abs_pct']:.1f}%; {hold_text}"


def run_holdout(args, log: NcclTestsLog, algos: list[str], segments: int) -> int:
    """The alpha-beta fit on the training sizes only, its error on the held-out ones."""
    sizes, times, train = _split(args, log)
    train_log = [(int(s), float(t)) for s, t, k in zip(sizes, times, train) if k]
    limits = _limits(args, log) if args.bounds is not None else None
    results = []
    for name in algos:
        spec = REGISTRY.get((log.op, name))
        params = resolve_params(spec, {}) if spec is not None else {}
        try:
            fit = fit_measurements(log.op, name, log.ranks, train_log, segments, params)
            if limits is not None:
                fit = replace(fit, pieces=fit_limited(log.op, name, log.ranks, sizes[train], times[train], limits, params))
        except CollsimError:
            if len(algos) == 1:
                raise
            continue
        predicted = predict_pieces(log.op, name, log.ranks, fit.pieces, sizes, params)
        results.append((_medians(predicted, times, train), fit, predicted))
    if not results:
        raise CollsimError(f"algo: none of {', '.join(algos)} can be fitted to the training sizes")
    stats, fit, predicted = min(results, key=lambda r: r[0]["train_median_abs_pct"])  # chosen on training sizes only
    if args.out:
        to_profile(fit, str(args.log)).save(args.out)
    if args.json:
        emit_json({"log": str(args.log), "op": log.op, "ranks": log.ranks, "algorithm": fit.algo, **stats,
                   "segments": [{"min_bytes": pc.lo, "max_bytes": pc.hi, "alpha_s": pc.alpha_s,
                                 "bandwidth_Bps": pc.bandwidth_Bps} for pc in fit.pieces],
                   "per_size": [{"bytes": int(s), "time_s": float(t), "predicted_s": float(p), "train": bool(k)}
                                for s, t, p, k in zip(sizes, times, predicted, train)], "profile_written": args.out})
        return 0
    print(f"# {args.log}: {log.op}, {log.ranks} ranks; {fit.algo} alpha-beta fit on {int(train.sum())} training sizes")
    if limits is not None:
        print(f"# bounded by {args.bounds}: bandwidth <= {limits.max_bandwidth_Bps / 1e9:.1f} GB/s, alpha >= "
              f"{limits.min_alpha_s * 1e6:.2f} us, regimes {' -> '.join(limits.protocols)} cut at "
              f"{', '.join(format_size(c) for c in limits.cuts) or 'none'}")
    for pc in fit.pieces:
        print(f"#   from {format_size(pc.lo)}: alpha {pc.alpha_s * 1e6:.3f} us, bandwidth {pc.bandwidth_Bps / 1e9:.2f} GB/s")
    print(_errors_table(sizes, times, train, {"fit": predicted}))
    print(_summary_line(stats))
    if args.out:
        print(f"profile written to {args.out} (load it with --profile {args.out})")
    return 0


def _limits(args, log: NcclTestsLog):
    """--bounds: the preset's limits for this log's op and ranks."""
    from simulator.nccl.fit_bounds import preset_limits
    from simulator.nccl.predict import OPS
    from simulator.topology.spec import parse_topology

    if args.segments != 1 or args.piecewise:
        raise CollsimError("bounds: the regimes are NCCL's protocols on the machine; expected no --segments/--piecewise")
    if log.op not in OPS:
        raise CollsimError(f"op: {log.op}: --bounds reads the machine through predict, which covers {', '.join(OPS)}")
    try:
        topology = parse_topology(args.bounds)
    except CollsimError as exc:
        raise CollsimError(f"bounds: {exc}") from None
    if topology.origin is None:
        raise CollsimError(f"bounds: {args.bounds!r} is not a machine preset; expected e.g. p5, dgx-h100:nodes=2")
    if log.ranks > topology.num_devices:
        raise CollsimError(f"bounds: {args.bounds} has {topology.num_devices} GPUs and the log {log.ranks} ranks; "
                           "expected a preset with at least as many GPUs (e.g. :nodes=N)")
    try:
        return preset_limits(topology, log.op, log.ranks)
    except CollsimError as exc:
        raise CollsimError(f"bounds: {exc}") from None


MAX_CALIBRATION_RANKS = 64


def run_calibration(args, log: NcclTestsLog) -> int:
    """`fit LOG --preset SPEC`: the preset's free parameters fitted to the training sizes (simulator/nccl/calibration.py)."""
    from simulator.nccl.calibration import PARAMS
    from simulator.nccl.fitting import fit_calibration
    from simulator.nccl.predict import OPS
    from simulator.topology.spec import parse_topology

    if args.algo != "ring" or args.segments != 1 or args.piecewise:
        raise CollsimError("preset: --algo, --segments and --piecewise shape the alpha-beta fit; with --preset the "
                           "algorithm and protocol per size are NCCL's picks for the machine; expected neither")
    if log.op not in OPS:
        raise CollsimError(f"op: {log.op}: a preset is calibrated through predict, which covers {', '.join(OPS)}")
    try:
        topology = parse_topology(args.preset)
    except CollsimError as exc:
        raise CollsimError(f"preset: {exc}") from None
    if topology.origin is None:
        raise CollsimError(f"preset: {args.preset!r} is not a machine preset; expected e.g. p5, dgx-h100:nodes=2")
    if topology.origin.calibration is not None:
        raise CollsimError(f"preset: {args.preset} is already calibrated; expected a preset such as p5:nodes=2")
    if log.ranks > MAX_CALIBRATION_RANKS:
        raise CollsimError(f"ranks: {log.ranks} ranks; a calibration times every training size about 40 times with the "
                           f"engine (32 ranks take minutes); expected a log of at most {MAX_CALIBRATION_RANKS} ranks")
    if log.ranks > topology.num_devices:
        raise CollsimError(f"preset: {args.preset} has {topology.num_devices} GPUs and the log {log.ranks} ranks; "
                           "expected a preset with at least as many GPUs (e.g. :nodes=N)")
    sizes, times, train = _split(args, log)
    report = fit_calibration(topology, log.op, log.ranks, sizes, times, train, str(args.log),
                             nccl_version=args.nccl_version)
    cal = report.calibration
    stats = _medians(report.predicted, times, train)
    if args.out:
        cal.save(args.out)
    values = dict(zip(PARAMS, cal.vector))
    if args.json:
        emit_json({"log": str(args.log), "preset": args.preset, "op": log.op, "ranks": log.ranks, **stats,
                   "calibration": cal.to_dict(),
                   "per_size": [{"bytes": int(s), "time_s": float(t), "preset_s": float(b), "calibrated_s": float(p),
                                 "train": bool(k)}
                                for s, t, b, p, k in zip(sizes, times, report.before, report.predicted, train)],
                   "file_written": args.out})
        return 0
    print(f"# {args.log}: {log.op}, {log.ranks} ranks; calibrating {args.preset} on {int(train.sum())} training sizes")
    rows = []
    for name, value in values.items():
        shown = f"{value * 1e6:.2f} us" if name.endswith("_s") else f"{1 / value:.3f}"
        bound = "added to NCCL's, >= 0" if name.endswith("_s") else "share of the links' bandwidth, <= 1"
        rows.append([name, shown, bound, "yes" if name in cal.identified else "no (kept neutral)"])
    print(table(["parameter", "value", "bound", "identified by the training sizes"], rows, "lrll"))
    print(_errors_table(sizes, times, train, {"preset": report.before, "calibrated": report.predicted}))
    print(_summary_line(stats))
    if args.out:
        print(f"calibrated preset written to {args.out} (collsim predict --preset {args.out}[:nodes=N])")
    return 0
