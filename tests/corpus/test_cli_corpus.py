"""The bad-input corpus of the command line: every subcommand, every output flag, the examples of issue 8.

Each case is refused with one line naming the field (see harness.py for everything each case asserts).
Accepted inputs that used to be refused or mishandled are tested positively at the end.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from .harness import Case, count_by_command, run_case, run_cli

DATA = Path(__file__).resolve().parents[1] / "data"
LOG = str(DATA / "nccl-tests" / "04_h100_p5_1node_8gpu_allreduce_awsbatch.txt")
MSCCL = str(DATA / "msccl" / "ndv4_ag-1k-512k.xml")

RING = ["--op", "allreduce", "--algo", "ring"]
CHECK = ["check", *RING, "--ranks", "4"]
DRAW = ["draw", *RING, "--ranks", "4"]
COST = ["cost", "--op", "allreduce", "--ranks", "8"]
SIM = ["simulate", *RING, "--ranks", "8", "--size", "1MiB"]
SWEEP = ["sweep", *RING, "--ranks", "4", "--sizes", "1KiB:4KiB"]
VERIFY = ["verify", *RING, "--ranks", "2", "--sizes", "1KiB", "--no-time"]
CALIBRATE = ["calibrate", "--ranks", "2"]
COMPARE = ["compare", *RING, "--ranks", "2", "--alpha", "2us", "--bandwidth", "1GB/s"]
FIT = ["fit", LOG]
NCCL = ["nccl-model", "--gpus", "8", "--size", "1KiB:1MiB"]
PREDICT = ["predict", "--preset", "p5", "--size", "1MiB:2MiB"]
EXPORT = ["export-msccl", *RING, "--ranks", "4"]
IMPORT = ["import-msccl", MSCCL]
SHOW = ["topology", "show"]
DDP2 = str(DATA / "programs" / "ddp2.yaml")
RUNP = ["run-program", DDP2]
WHATIF = ["whatif", "ddp", "--machines", "dgx-h100", "--jobs", "1"]
SCALE = ["scale", "ddp", "--gpus", "8:16", "--jobs", "1"]



def bad(id: str, argv: list[str], field: str, value: str | None = None, accepted: str | None = None, **kw) -> Case:
    return Case(id=id, argv=argv, field=field, value=value, accepted=accepted, **kw)


# --- every output flag at every kind of bad target ------------------------------------------------------------
OUTPUT_COMMANDS = [  # (id, argv before the flag, flag, field the error names)
    ("draw-o", DRAW, "-o", "output"),
    ("simulate-trace", SIM, "--trace", "trace"),
    ("simulate-export", SIM, "--export", "export"),
    ("sweep-csv", SWEEP, "--csv", "csv"),
    ("sweep-nccl-log", SWEEP, "--nccl-log", "nccl-log"),
    ("verify-csv", VERIFY, "--csv", "csv"),
    ("verify-nccl-log", VERIFY, "--nccl-log", "nccl-log"),
    ("calibrate-out", CALIBRATE, "--out", "out"),
    ("calibrate-o", CALIBRATE, "-o", "out"),
    ("compare-csv", COMPARE, "--csv", "csv"),
    ("compare-trace", COMPARE, "--trace", "trace"),
    ("fit-out", FIT, "--out", "out"),
    ("fit-preset-out", [*FIT, "--preset", "p5", "--train-sizes", "1MiB:4MiB"], "--out", "out"),
    ("nccl-model-write-log", NCCL, "--write-log", "write-log"),
    ("predict-nccl-log", PREDICT, "--nccl-log", "nccl-log"),
    ("predict-csv", PREDICT, "--csv", "csv"),
    ("export-msccl-o", EXPORT, "-o", "output"),
    ("run-program-trace", RUNP, "--trace", "trace"),
    ("scale-html", SCALE, "--html", "html"),
]
BAD_TARGETS = [  # (id, path, files to create first, what the error says)
    ("missing-dir", "missing/x.out", {}, "does not exist"),
    ("directory", "adir", {"adir/keep": "kept"}, "is a directory"),
    ("empty", "", {}, "not a file path"),
    ("sys", "/sys/x", {}, "/sys"),
    ("proc", "/proc/x", {}, "/proc"),
    ("parent-is-file", "afile/x.out", {"afile": "a file"}, "not a directory"),
]


def output_cases() -> list[Case]:
    cases = [bad(f"{cid}-{tid}", [*argv, flag, path], field, path or None, says, files=files, outputs=[path])
             for cid, argv, flag, field in OUTPUT_COMMANDS for tid, path, files, says in BAD_TARGETS]
    cases += [
        # two outputs, the second bad: NEITHER is written
        bad("simulate-trace-ok-export-missing", [*SIM, "--trace", "ok.json", "--export", "missing/x.csv"], "export",
            "missing/x.csv", outputs=["ok.json", "missing/x.csv"]),
        bad("simulate-trace-missing-export-ok", [*SIM, "--trace", "missing/t.json", "--export", "ok.csv"], "trace",
            outputs=["ok.csv"]),
        bad("sweep-csv-ok-nccl-log-missing", [*SWEEP, "--csv", "ok.csv", "--nccl-log", "missing/x.log"], "nccl-log",
            outputs=["ok.csv"]),
        bad("verify-csv-ok-nccl-log-dir", [*VERIFY, "--csv", "ok.csv", "--nccl-log", "adir"], "nccl-log",
            files={"adir/keep": ""}, outputs=["ok.csv"]),
        bad("simulate-same-file-twice", [*SIM, "--trace", "same.json", "--export", "same.json"], "export", "same.json",
            outputs=["same.json"]),
        # an existing file stays as it was when the run is refused for another reason
        bad("simulate-existing-trace-bad-size", ["simulate", *RING, "--ranks", "8", "--size", "abc", "--trace", "t.json"],
            "size", "abc", outputs=["t.json"], preexisting=True),
        bad("draw-existing-output-bad-algo", ["draw", "--op", "allreduce", "--algo", "nope", "--ranks", "4", "-o", "r.svg"],
            "algo", "nope", outputs=["r.svg"], preexisting=True),
        bad("export-existing-output-bad-ranks", ["export-msccl", *RING, "--ranks", "0", "-o", "r.xml"], "ranks", "0",
            outputs=["r.xml"], preexisting=True),
        bad("sweep-existing-csv-bad-sizes", ["sweep", *RING, "--ranks", "4", "--sizes", "1KiB:1MiB:nan", "--csv", "s.csv"],
            "sizes", "nan", outputs=["s.csv"], preexisting=True),
        bad("nccl-model-existing-log-bad-gpus", ["nccl-model", "--gpus", "0", "--write-log", "p.log"], "gpus", "0",
            outputs=["p.log"], preexisting=True),
        bad("fit-existing-out-missing-log", ["fit", "missing.txt", "--out", "p.yaml"], "missing.txt",
            outputs=["p.yaml"], preexisting=True),
        bad("calibrate-existing-out-one-size", [*CALIBRATE, "--sizes", "1KiB", "--out", "p.yaml"], "sizes",
            outputs=["p.yaml"], preexisting=True),
        bad("compare-existing-csv-no-profile", ["compare", *RING, "--ranks", "2", "--csv", "c.csv"], "profile",
            outputs=["c.csv"], preexisting=True),
        bad("verify-existing-csv-bad-dtype", [*VERIFY, "--dtype", "int64", "--sizes", "28", "--csv", "v.csv"], "sizes", "28",
            outputs=["v.csv"], preexisting=True),
    ]
    return cases


# --- sizes, times, bandwidths, counts: the same parsers behind every command -------------------------------------
BAD_SIZES = [  # (id, text, what the error quotes)
    ("abc-factor", "1KiB:1MiB:abc", "abc"),
    ("nan-factor", "1KiB:1MiB:nan", "nan"),
    ("inf-factor", "1KiB:1MiB:inf", "inf"),
    ("factor-1", "1KiB:1MiB:1", "1KiB:1MiB:1"),
    ("factor-below-1", "1KiB:1MiB:0.5", "0.5"),
    ("huge-point-count", "4:8:1.0000001", "10000"),
    ("1e7-sizes", "1:1e15:1.0000035", "10000"),
    ("empty", "", "''"),
    ("commas-only", ",,", "',,'"),
    ("1e30", "1e30", "1e30"),
    ("1e400", "1e400", "1e400"),
    ("negative", "-4", "-4"),
    ("unknown-unit", "4XB", "xb"),
    ("fraction", "1.5", "1.5"),
    ("reversed-range", "1MiB:1KiB", "1MiB:1KiB"),
    ("zero-start", "0:1KiB", "0:1KiB"),
    ("four-parts", "1:2:3:4", "1:2:3:4"),
    ("words", "big", "big"),
]


def size_cases() -> list[Case]:
    cases = [bad(f"check-size-{sid}", [*CHECK, "--size", text], "size", value) for sid, text, value in BAD_SIZES]
    cases += [bad(f"cost-size-{sid}", [*COST, "--size", text], "size", value) for sid, text, value in BAD_SIZES[:10]]
    cases += [bad(f"sweep-sizes-{sid}", [*SWEEP[:-2], "--sizes", text], "sizes", value) for sid, text, value in BAD_SIZES[:8]]
    cases += [bad(f"verify-sizes-{sid}", [*VERIFY[:-3], "--sizes", text], "sizes", value) for sid, text, value in BAD_SIZES[:6]]
    cases += [bad(f"nccl-model-size-{sid}", ["nccl-model", "--size", text], "size", value) for sid, text, value in BAD_SIZES[:6]]
    cases += [bad(f"simulate-size-{sid}", [*SIM[:-2], "--size", text], "size", value)
              for sid, text, value in BAD_SIZES if ":" not in text and "," not in text]
    cases += [bad(f"calibrate-sizes-{sid}", [*CALIBRATE, "--sizes", text], "sizes", value) for sid, text, value in BAD_SIZES[:4]]
    cases += [bad(f"export-size-{sid}", [*EXPORT, "--size", text], "size", value) for sid, text, value in BAD_SIZES[9:13]]
    cases.append(bad("check-size-not-whole-elements", [*CHECK, "--size", "6"], "size", "6", "multiple of 4"))
    return cases


BAD_TIMES = [("1e400", "1e400"), ("negative", "-1us"), ("words", "soon"), ("unit", "3parsecs"), ("nan", "nan"), ("inf", "inf")]
BAD_BANDWIDTHS = [("zero", "0"), ("1e400", "1e400"), ("negative", "-1GB/s"), ("nan", "nan"), ("unit", "25GB/h"), ("zero-unit", "0GB/s")]
BAD_GAMMAS = [("nan", "nan"), ("negative", "-1e-11"), ("inf", "inf"), ("words", "fast")]


def link_number_cases() -> list[Case]:
    cases = []
    for cmd, argv in (("cost", COST), ("simulate", SIM)):
        cases += [bad(f"{cmd}-alpha-{i}", [*argv, f"--alpha={t}"], "alpha", t) for i, t in BAD_TIMES]
        cases += [bad(f"{cmd}-bandwidth-{i}", [*argv, f"--bandwidth={t}"], "bandwidth", t) for i, t in BAD_BANDWIDTHS]
        cases += [bad(f"{cmd}-gamma-{i}", [*argv, f"--gamma={t}"], "gamma", t) for i, t in BAD_GAMMAS]
    cases += [bad(f"compare-alpha-{i}", [*COMPARE[:-4], f"--alpha={t}", "--bandwidth", "1GB/s"], "alpha", t) for i, t in BAD_TIMES[:3]]
    cases += [bad(f"compare-bandwidth-{i}", [*COMPARE[:-2], f"--bandwidth={t}"], "bandwidth", t) for i, t in BAD_BANDWIDTHS[:3]]
    cases += [bad(f"compare-gamma-{i}", [*COMPARE, f"--gamma={t}"], "gamma", t) for i, t in BAD_GAMMAS[:3]]
    cases += [bad(f"nccl-model-bus-bw-{i}", [*NCCL, f"--bus-bw={t}"], "bus-bw", t) for i, t in BAD_BANDWIDTHS[:4]]
    cases += [bad(f"nccl-model-nic-bw-{i}", [*NCCL, f"--nic-bw={t}"], "nic-bw", t) for i, t in BAD_BANDWIDTHS[:2]]
    cases += [bad("simulate-topology-bw-1e400", [*SIM, "--topology", "switch:8,bw=1e400"], "bw", "1e400"),
              bad("simulate-topology-bw-nan", [*SIM, "--topology", "switch:8,bw=nan"], "bw", "nan"),
              bad("simulate-topology-lat-inf", [*SIM, "--topology", "switch:8,lat=inf"], "lat", "inf")]
    return cases


# --- per command ------------------------------------------------------------------------------------------------
def algorithms_cases() -> list[Case]:
    return [
        bad("algorithms-op-bogus", ["algorithms", "--op", "bogus"], "op", "bogus"),
        bad("algorithms-op-empty", ["algorithms", "--op", ""], "op"),
        bad("algorithms-extra-arg", ["algorithms", "extra"], "unrecognized arguments", "extra"),
        bad("algorithms-unknown-flag", ["algorithms", "--bogus"], "unrecognized arguments", "--bogus"),
    ]


def check_cases() -> list[Case]:
    return [
        bad("check-size-1TB-memory", [*CHECK, "--size", "1TB"], "size", "1TB", "--max-memory raises it"),
        bad("check-seed-negative", [*CHECK, "--seed", "-1"], "seed", "-1", "0.."),
        bad("check-seed-words", [*CHECK, "--seed", "x"], "seed", "'x'"),
        bad("check-seed-float", [*CHECK, "--seed", "1e3"], "seed", "1e3"),
        bad("check-seed-2-64", [*CHECK, "--seed", str(2**64)], "seed", str(2**64)),
        bad("check-root-7-of-4", ["check", "--op", "broadcast", "--algo", "binomial", "--ranks", "4", "--root", "7"], "root", "7", "0..3"),
        bad("check-root-negative", ["check", "--op", "broadcast", "--algo", "binomial", "--ranks", "4", "--root", "-1"], "root", "-1"),
        bad("check-root-in-range-of-some", ["check", "--op", "reduce", "--algo", "binomial", "--ranks", "2-9", "--root", "3"], "root", "3"),
        bad("check-ranks-0", [*CHECK[:-2], "--ranks", "0"], "ranks", "'0'"),
        bad("check-ranks-negative", [*CHECK[:-2], "--ranks", "-3"], "ranks", "-3"),
        bad("check-ranks-words", [*CHECK[:-2], "--ranks", "abc"], "ranks", "abc"),
        bad("check-ranks-empty", [*CHECK[:-2], "--ranks", ""], "ranks", "''"),
        bad("check-ranks-reversed", [*CHECK[:-2], "--ranks", "9-2"], "ranks", "9-2"),
        bad("check-ranks-huge-range", [*CHECK[:-2], "--ranks", "1-100000000"], "ranks", "1-100000000", "10000"),
        bad("check-ranks-5000", [*CHECK[:-2], "--ranks", "5000"], "ranks", "5000", "--max-transfers raises it"),
        bad("check-all-ranks-3000", ["check", "--all", "--ranks", "3000"], "ranks", "3000", "--max-transfers raises it"),
        bad("check-chunks-0", [*CHECK, "--chunks", "0"], "chunks", "0"),
        bad("check-chunks-negative", [*CHECK, "--chunks", "-2"], "chunks", "-2"),
        bad("check-chunks-huge", [*CHECK, "--chunks", "100000000"], "chunks", "100000000", "--max-transfers"),
        bad("check-group-0", ["check", "--op", "allreduce", "--algo", "hierarchical", "--ranks", "4", "--group", "0"], "group", "0"),
        bad("check-op-bogus", ["check", "--op", "bogus", "--algo", "ring"], "op", "bogus"),
        bad("check-algo-bogus", ["check", "--op", "allreduce", "--algo", "bogus"], "algo", "bogus"),
        bad("check-no-op", ["check"], "op"),
        bad("check-dtype-bogus", [*CHECK, "--dtype", "float128"], "dtype", "float128"),
        bad("check-max-transfers-bogus", [*CHECK[:-2], "--ranks", "100", "--max-transfers", "lots"], "max-transfers", "lots"),
        bad("check-max-memory-bogus", [*CHECK, "--size", "1GiB", "--max-memory", "-1"], "max-memory", "-1"),
    ]


def draw_cases() -> list[Case]:
    o = ["-o", "d.svg"]
    return [bad(f"draw-{i}", [*argv, *o], field, value, outputs=["d.svg"]) for i, argv, field, value in [
        ("elements-huge", [*DRAW, "--elements", "100000000"], "elements", "100000000"),
        ("elements-0", [*DRAW, "--elements", "0"], "elements", "0"),
        ("elements-negative", [*DRAW, "--elements", "-5"], "elements", "-5"),
        ("elements-words", [*DRAW, "--elements", "many"], "elements", "many"),
        ("ranks-0", [*DRAW[:-2], "--ranks", "0"], "ranks", "0"),
        ("ranks-negative", [*DRAW[:-2], "--ranks", "-4"], "ranks", "-4"),
        ("ranks-huge", [*DRAW[:-2], "--ranks", "100000"], "ranks", "100000"),
        ("root-negative", ["draw", "--op", "broadcast", "--algo", "binomial", "--ranks", "4", "--root", "-1"], "root", "-1"),
        ("root-too-big", ["draw", "--op", "broadcast", "--algo", "binomial", "--ranks", "4", "--root", "4"], "root", "4"),
        ("op-bogus", ["draw", "--op", "bogus", "--algo", "ring", "--ranks", "4"], "op", "bogus"),
        ("algo-bogus", ["draw", "--op", "allreduce", "--algo", "bogus", "--ranks", "4"], "algo", "bogus"),
        ("chunks-0", [*DRAW, "--chunks", "0"], "chunks", "0"),
        ("chunks-huge", [*DRAW, "--chunks", "100000000"], "chunks", "100000000"),
    ]] + [bad("draw-no-output", DRAW, "output")]


def cost_cases() -> list[Case]:
    return [
        bad("cost-ranks-1e9", [*COST[:-2], "--ranks", "1000000000"], "ranks", "1000000000", "--max-transfers raises it"),
        bad("cost-ranks-0", [*COST[:-2], "--ranks", "0"], "ranks", "0"),
        bad("cost-ranks-negative", [*COST[:-2], "--ranks", "-8"], "ranks", "-8"),
        bad("cost-ranks-words", [*COST[:-2], "--ranks", "eight"], "ranks", "eight"),
        bad("cost-root-9-of-8", ["cost", "--op", "broadcast", "--ranks", "8", "--root", "9"], "root", "9"),
        bad("cost-root-negative", ["cost", "--op", "broadcast", "--ranks", "8", "--root", "-1"], "root", "-1"),
        bad("cost-dtype-bogus", [*COST, "--dtype", "complex64"], "dtype", "complex64"),
        bad("cost-algo-bogus", [*COST, "--algo", "bogus"], "algo", "bogus"),
        bad("cost-op-bogus", ["cost", "--op", "allsum", "--ranks", "8"], "op", "allsum"),
        bad("cost-chunks-0", [*COST, "--algo", "ring", "--chunks", "0"], "chunks", "0"),
        bad("cost-chunks-huge", [*COST, "--algo", "ring", "--chunks", "100000000"], "chunks", "100000000"),
        bad("cost-size-not-whole-elements", [*COST, "--size", "6"], "size", "6"),
    ]


def topology_cases() -> list[Case]:
    specs = [  # (id, spec, field, value)
        ("switch-1e8", "switch:100000000", "switch:100000000", "--max-memory raises it"),
        ("ideal-100000", "ideal:100000", "ideal:100000", "--max-memory raises it"),
        ("cluster-huge", "cluster:nodes=100000,gpus=8", "cluster:nodes=100000,gpus=8", "--max-memory"),
        ("preset-huge", "dgx-h100:nodes=1000000", "dgx-h100:nodes=1000000", "--max-memory"),
        ("torus-huge", "torus:10000x10000", "torus:10000x10000", "--max-memory"),
        ("switch-0", "switch:0", "switch", None),
        ("switch-words", "switch:abc", "topology", None),
        ("bw-1e400", "switch:8,bw=1e400", "bw", "1e400"),
        ("bw-zero", "switch:8,bw=0", "bw", None),
        ("lat-negative", "switch:8,lat=-1us", "lat", None),
        ("unknown", "bogus:8", "topology", "bogus:8"),
        ("torus-bad", "torus:4x", "topology", None),
        ("empty", "", "spec", None),
        ("missing-file", "missing.yaml", "missing.yaml", None),
        ("unknown-option", "switch:8,colour=red", "colour", None),
        ("routing-unknown", "dgx-h100:nodes=2,routing=maybe", "routing", "adaptive, ecmp, static"),
        ("rails-routing-unknown", "rails:nodes=2,gpus=8,routing=maybe", "routing", "adaptive, ecmp, static"),
    ]
    cases = [bad(f"topology-show-{i}", [*SHOW, spec], field, accepted=acc) for i, spec, field, acc in specs]
    cases += [bad(f"simulate-topology-{i}", [*SIM[:-4], "--topology", spec], field, accepted=acc) for i, spec, field, acc in specs[:5]]
    cases += [bad("topology-no-action", ["topology"], "show"),
              bad("topology-show-no-spec", SHOW, "spec"),
              bad("topologies-extra-arg", ["topologies", "extra"], "unrecognized arguments", "extra"),
              bad("topologies-unknown-flag", ["topologies", "--links"], "unrecognized arguments")]
    return cases


def simulate_cases() -> list[Case]:
    return [
        bad("simulate-ranks-0", [*SIM[:-4], "--ranks", "0"], "ranks", "0"),
        bad("simulate-ranks-100000", [*SIM[:-4], "--ranks", "100000"], "ranks", "100000",
            "about 2e10 transfers, over the limit of 5e7; --max-transfers raises it"),
        bad("simulate-chunks-1e8", [*SIM, "--chunks", "100000000"], "chunks", "100000000", "--max-transfers raises it"),
        bad("simulate-ranks-over-topology", [*SIM[:-4], "--ranks", "16", "--topology", "switch:8"], "ranks", "16"),
        bad("simulate-root-8-of-8", ["simulate", "--op", "broadcast", "--algo", "binomial", "--ranks", "8", "--root", "8"], "root", "8"),
        bad("simulate-ports-negative", [*SIM, "--ports", "-1"], "ports", "-1"),
        bad("simulate-header-bytes-negative", [*SIM, "--header-bytes", "-16"], "header-bytes", "-16"),
        bad("simulate-straggler-rank-out", [*SIM, "--straggler", "9:1us"], "straggler", "9"),
        bad("simulate-straggler-words", [*SIM, "--straggler", "late"], "straggler", "late"),
        bad("simulate-straggler-bad-time", [*SIM, "--straggler", "1:1e400"], "straggler", "1e400"),
        bad("simulate-slow-words", [*SIM, "--slow", "0:abc"], "slow", "abc"),
        bad("simulate-slow-zero", [*SIM, "--slow", "0:0"], "slow", "0"),
        bad("simulate-slow-nan", [*SIM, "--slow", "0:nan"], "slow", "nan"),
        bad("simulate-congestion-no-link", [*SIM, "--congestion", "99999:0.5"], "congestion", "99999"),
        bad("simulate-congestion-share-2", [*SIM, "--congestion", "0:2"], "congestion", "2"),
        bad("simulate-congestion-share-nan", [*SIM, "--congestion", "0:nan"], "congestion", "nan"),
        bad("simulate-placement-repeat", [*SIM, "--placement", "0,0"], "placement", "0,0"),
        bad("simulate-placement-out", [*SIM, "--placement", "99"], "placement", "99"),
        bad("simulate-profile-missing", [*SIM, "--profile", "missing.yaml"], "profile", "missing.yaml"),
        bad("simulate-algo-bogus", ["simulate", "--op", "allreduce", "--algo", "bogus", "--ranks", "8"], "algo", "bogus"),
        bad("simulate-no-algo", ["simulate", "--op", "allreduce"], "algo"),
        bad("simulate-max-transfers-words", [*SIM, "--max-transfers", "many"], "max-transfers", "many"),
    ]


def sweep_cases() -> list[Case]:
    return [
        bad("sweep-ranks-100000", [*SWEEP[:-4], "--ranks", "100000", "--sizes", "1KiB"], "ranks", "100000", "--max-transfers"),
        bad("sweep-ranks-0", [*SWEEP[:-4], "--ranks", "0", "--sizes", "1KiB"], "ranks", "0"),
        bad("sweep-algo-bogus", ["sweep", "--op", "allreduce", "--algo", "ring,bogus", "--ranks", "4"], "algo", "bogus"),
        bad("sweep-chunks-huge", [*SWEEP, "--chunks", "100000000"], "chunks", "100000000", "--max-transfers"),
        bad("sweep-topology-bw-inf", [*SWEEP, "--topology", "switch:4,bw=inf"], "bw", "inf"),
        bad("sweep-root-negative", ["sweep", "--op", "broadcast", "--algo", "binomial", "--ranks", "4", "--root", "-1"], "root", "-1"),
    ]


def verify_cases() -> list[Case]:
    return [
        bad("verify-int64-28-bytes", [*VERIFY[:-3], "--dtype", "int64", "--sizes", "28"], "sizes", "28", "int64"),
        bad("verify-float32-6-bytes", [*VERIFY[:-3], "--sizes", "6"], "sizes", "6", "float32"),
        bad("verify-ranks-1000", [*VERIFY[:-5], "--ranks", "1000"], "ranks", "1000", "--max-memory raises it"),
        bad("verify-ranks-0", [*VERIFY[:-5], "--ranks", "0"], "ranks", "0"),
        bad("verify-no-ranks", ["verify", *RING, "--sizes", "1KiB"], "ranks"),
        bad("verify-dtype-bogus", [*VERIFY, "--dtype", "float8"], "dtype", "float8"),
        bad("verify-redop-bogus", [*VERIFY, "--redop", "avg"], "redop", "avg"),
        bad("verify-root-negative", ["verify", "--op", "broadcast", "--ranks", "2", "--root", "-1"], "root", "-1"),
        bad("verify-root-too-big", ["verify", "--op", "broadcast", "--ranks", "2", "--root", "5"], "root", "5"),
        bad("verify-iters-0", [*VERIFY, "--iters", "0"], "iters", "0"),
        bad("verify-warmup-negative", [*VERIFY, "--warmup", "-1"], "warmup", "-1"),
        bad("verify-timeout-0", [*VERIFY, "--timeout", "0"], "timeout", "0"),
        bad("verify-timeout-nan", [*VERIFY, "--timeout", "nan"], "timeout", "nan"),
        bad("verify-budget-negative", [*VERIFY, "--budget", "-2"], "budget", "-2"),
        bad("verify-seed-negative", [*VERIFY, "--seed", "-1"], "seed", "-1"),
        bad("verify-check-limit-words", [*VERIFY, "--check-limit", "lots"], "check-limit", "lots"),
        bad("verify-slice-negative", [*VERIFY, "--slice", "-1"], "slice", "-1"),
        bad("verify-no-op", ["verify", "--ranks", "2"], "op"),
        bad("verify-algo-bogus", ["verify", "--op", "allreduce", "--algo", "bogus", "--ranks", "2"], "algo", "bogus"),
        bad("verify-chunks-huge", [*VERIFY, "--chunks", "100000000"], "chunks", "100000000", "--max-transfers"),
    ]


def calibrate_cases() -> list[Case]:
    return [
        bad("calibrate-ranks-1", ["calibrate", "--ranks", "1"], "ranks", "1"),
        bad("calibrate-ranks-1000", ["calibrate", "--ranks", "1000"], "ranks", "1000", "--max-memory raises it"),
        bad("calibrate-one-size", [*CALIBRATE, "--sizes", "1KiB"], "sizes", "1KiB"),
        bad("calibrate-iters-0", [*CALIBRATE, "--iters", "0"], "iters", "0"),
        bad("calibrate-budget-0", [*CALIBRATE, "--budget", "0"], "budget", "0"),
        bad("calibrate-timeout-negative", [*CALIBRATE, "--timeout", "-1"], "timeout", "-1"),
        bad("calibrate-pattern-bogus", [*CALIBRATE, "--pattern", "star"], "pattern", "star"),
        bad("calibrate-segments-0", [*CALIBRATE, "--segments", "0"], "segments", "0", "1..64"),
        bad("calibrate-segments-text", [*CALIBRATE, "--segments", "three"], "segments", "three"),
    ]


def compare_cases() -> list[Case]:
    return [
        bad("compare-no-profile", ["compare", *RING, "--ranks", "2"], "profile"),
        bad("compare-profile-and-alpha", [*COMPARE, "--profile", "p.yaml"], "profile"),
        bad("compare-profile-missing", ["compare", *RING, "--ranks", "2", "--profile", "missing.yaml"], "profile", "missing.yaml"),
        bad("compare-measured-missing", [*COMPARE, "--measured", "missing.json"], "measured", "missing.json"),
        bad("compare-measured-not-json", [*COMPARE, "--measured", "m.json"], "measured", "m.json", files={"m.json": "not json"}),
        bad("compare-ranks-1000", [*COMPARE[:-6], "--ranks", "1000", "--alpha", "2us", "--bandwidth", "1GB/s"], "ranks", "1000",
            "--max-memory"),
        bad("compare-ranks-0", [*COMPARE[:-6], "--ranks", "0", "--alpha", "2us", "--bandwidth", "1GB/s"], "ranks", "0"),
        bad("compare-algo-bogus", ["compare", "--op", "allreduce", "--algo", "bogus", "--ranks", "2", "--alpha", "2us",
                                   "--bandwidth", "1GB/s"], "algo", "bogus"),
        bad("compare-no-algo", ["compare", "--op", "allreduce"], "algo"),
        bad("compare-trace-measured", [*COMPARE, "--measured", "m.json", "--trace", "t.json"], "trace", accepted="live run",
            files={"m.json": '{"records": []}'}, outputs=["t.json"]),
        bad("compare-trace-size-alone", [*COMPARE, "--trace-size", "64KiB"], "trace-size", "'64KiB'", "--trace FILE"),
        bad("compare-trace-size-bogus", [*COMPARE, "--trace", "t.json", "--trace-size", "abc"], "trace-size", "abc",
            outputs=["t.json"]),
        bad("compare-trace-size-huge", [*COMPARE, "--trace", "t.json", "--trace-size", "1TiB"], "trace-size", "'1TiB'",
            "largest of --sizes", outputs=["t.json"]),
        bad("compare-trace-size-zero", [*COMPARE, "--trace", "t.json", "--trace-size", "0"], "trace-size", "'0'",
            "from 1 byte", outputs=["t.json"]),
    ]


def _log_of(ranks: int) -> str:
    """A small allreduce nccl-tests log on `ranks` ranks."""
    from simulator.formats.nccl_tests import ResultRow, format_log

    rows = [ResultRow(n, n // 4, "float", "sum", -1, 1e-5 + n / 1e11, None, None) for n in (1 << 20, 1 << 22, 1 << 24, 1 << 26)]
    return format_log("allreduce", ranks, rows)


def fit_cases() -> list[Case]:
    return [
        bad("fit-log-missing", ["fit", "missing.txt"], "missing.txt"),
        bad("fit-log-directory", ["fit", "adir"], "adir", files={"adir/keep": ""}),
        bad("fit-no-log", ["fit"], "LOG"),
        bad("fit-segments-0", [*FIT, "--segments", "0"], "segments", "0"),
        bad("fit-segments-1000", [*FIT, "--segments", "1000"], "segments", "1000"),
        bad("fit-algo-bogus", [*FIT, "--algo", "bogus"], "algo", "bogus"),
        bad("fit-algo-empty", [*FIT, "--algo", ","], "algo"),
        bad("fit-op-bogus", [*FIT, "--op", "bogus"], "op", "bogus"),
        bad("fit-ranks-0", [*FIT, "--ranks", "0"], "ranks", "0"),
        bad("fit-placement-bogus", [*FIT, "--placement", "both"], "placement", "both"),
        bad("fit-train-sizes-no-colon", [*FIT, "--train-sizes", "16MiB"], "train-sizes", "'16MiB'", "A:B"),
        bad("fit-train-sizes-reversed", [*FIT, "--train-sizes", "16MiB:1MiB"], "train-sizes", "'16MiB:1MiB'", "A <= B"),
        bad("fit-train-sizes-unit", [*FIT, "--train-sizes", "1XB:2MiB"], "train-sizes", "XB"),
        bad("fit-train-sizes-two-colons", [*FIT, "--train-sizes", "1:2:3"], "train-sizes", "'1:2:3'", "A:B"),
        bad("fit-train-sizes-outside-log", [*FIT, "--train-sizes", "1TiB:2TiB"], "train-sizes", accepted="a range that covers"),
        bad("fit-holdout-everything", [*FIT, "--holdout", ":"], "train-sizes", accepted="--holdout"),
        bad("fit-holdout-bogus", [*FIT, "--holdout", "abc"], "holdout", "'abc'", "A:B"),
        bad("fit-holdout-negative", [*FIT, "--holdout=-5:1MiB"], "holdout", "-5"),
        bad("fit-train-sizes-too-few", [*FIT, "--train-sizes", "8:16"], "fit", "2", "at least 4"),
        bad("fit-preset-unknown", [*FIT, "--preset", "h100x"], "preset", "h100x"),
        bad("fit-preset-builder", [*FIT, "--preset", "ring:8"], "preset", "ring:8", "machine preset"),
        bad("fit-preset-not-nccl", [*FIT, "--preset", "mi300x"], "preset", "mi300x"),
        bad("fit-preset-too-small", [*FIT, "--preset", "rtx4090-pcie", "--allow-gpu-mismatch"], "preset", "4 GPUs"),
        bad("fit-preset-nodes-0", [*FIT, "--preset", "p5:nodes=0"], "nodes", "0"),
        bad("fit-preset-with-algo", [*FIT, "--preset", "p5", "--algo", "tree"], "preset", accepted="expected neither"),
        bad("fit-preset-with-piecewise", [*FIT, "--preset", "p5", "--piecewise"], "preset", accepted="expected neither"),
        bad("fit-preset-calibrated", [*FIT, "--preset", "c.yaml"], "preset", "already calibrated",
            files={"c.yaml": "collsim_calibration: 1\npreset: p5\nparameters: {}\n"}),
        bad("fit-bounds-unknown", [*FIT, "--bounds", "h100x"], "bounds", "h100x"),
        bad("fit-bounds-builder", [*FIT, "--bounds", "switch:8"], "bounds", "switch:8", "machine preset"),
        bad("fit-bounds-not-nccl", [*FIT, "--bounds", "mi300x"], "bounds", "mi300x"),
        bad("fit-bounds-too-small", [*FIT, "--bounds", "rtx4090-pcie", "--allow-gpu-mismatch"], "bounds", "4 GPUs"),
        bad("fit-bounds-with-segments", [*FIT, "--bounds", "p5", "--segments", "2"], "bounds", accepted="no --segments"),
        bad("fit-bounds-nodes-text", [*FIT, "--bounds", "p5:nodes=x"], "bounds", "nodes"),
        bad("fit-preset-too-many-ranks", ["fit", "big.txt", "--preset", "gb200-nvl72"], "ranks", "72", "at most 64",
            files={"big.txt": _log_of(72)}),
        bad("fit-preset-train-one-size", [*FIT, "--preset", "p5", "--train-sizes", "1MiB:1MiB"], "train-sizes", "1",
            "at least 2"),
    ]


def predict_cases() -> list[Case]:
    """collsim predict, the machine presets and multi-rail clusters it reads."""
    cases = [bad(f"predict-size-{sid}", [*PREDICT[:-2], "--size", text], "size", value) for sid, text, value in BAD_SIZES[:8]]
    return cases + [
        bad("predict-csv-ok-nccl-log-missing", [*PREDICT, "--csv", "ok.csv", "--nccl-log", "missing/x.log"], "nccl-log",
            outputs=["ok.csv"]),
        bad("predict-existing-csv-bad-proto", [*PREDICT, "--proto", "LX", "--csv", "t.csv"], "proto", "LX",
            outputs=["t.csv"], preexisting=True),
        bad("predict-no-preset", ["predict", "--size", "1MiB"], "preset"),
        bad("predict-preset-unknown", ["predict", "--preset", "p6"], "topology", "p6"),
        bad("predict-preset-not-a-machine", ["predict", "--preset", "mi300x"], "preset", "mi300x", "dgx-h100"),
        bad("predict-preset-builder", ["predict", "--preset", "switch:8"], "preset", "switch:8"),
        bad("predict-preset-nodes-0", ["predict", "--preset", "p5:nodes=0"], "nodes", "0"),
        bad("predict-preset-too-many-ranks", ["predict", "--preset", "p5:nodes=2049"], "ranks", "16,392", "16,384"),
        bad("predict-gb200-trays-19", ["predict", "--preset", "gb200-nvl4:nodes=19"], "nodes", "19"),
        bad("predict-shm-not-host-staged", ["predict", "--preset", "p5:shm=5GB/s"], "shm", "p5", "rtx4090-pcie"),
        bad("predict-shm-zero", ["predict", "--preset", "rtx4090-pcie:shm=0"], "shm", "0", "bandwidth"),
        bad("predict-shm-text", ["predict", "--preset", "rtx4090-pcie:shm=fast"], "shm", "fast", "bandwidth"),
        bad("predict-shm-two-nodes", ["predict", "--preset", "rtx4090-pcie:nodes=2,shm=5GB/s"], "nodes", "2"),
        bad("predict-op-alltoall", [*PREDICT, "--op", "alltoall"], "op", "alltoall", "allgather"),
        bad("predict-op-bogus", [*PREDICT, "--op", "allsum"], "op", "allsum"),
        bad("predict-proto-bogus", [*PREDICT, "--proto", "LL256"], "proto", "LL256", "Simple"),
        bad("predict-proto-empty", [*PREDICT, "--proto", ""], "proto"),
        bad("predict-ranks-0", [*PREDICT, "--ranks", "0"], "ranks", "0"),
        bad("predict-ranks-1", [*PREDICT, "--ranks", "1"], "ranks", "1", "2 or more"),
        bad("predict-ranks-over", [*PREDICT, "--ranks", "9"], "ranks", "9"),
        bad("predict-ranks-not-whole-nodes", ["predict", "--preset", "p5:nodes=2", "--size", "1MiB", "--ranks", "12"],
            "ranks", "12"),
        bad("predict-size-odd-bytes", [*PREDICT[:-2], "--size", "7"], "size", "7"),
        bad("predict-net-bogus", ["predict", "--preset", "p5:nodes=2,net=efa999"], "net", "efa999"),
        bad("predict-ranks-per-node-words", [*PREDICT, "--ranks-per-node", "one"], "ranks-per-node", "one", ">= 1"),
        bad("predict-ranks-per-node-fraction", [*PREDICT, "--ranks-per-node", "1.5"], "ranks-per-node", "1.5", ">= 1"),
        bad("predict-ranks-per-node-0", [*PREDICT, "--ranks-per-node", "0"], "ranks-per-node", "0", ">= 1"),
        bad("predict-ranks-per-node-negative", [*PREDICT, "--ranks-per-node", "-2"], "ranks-per-node", "-2", ">= 1"),
        bad("predict-ranks-per-node-over-gpus", [*PREDICT, "--ranks-per-node", "9"], "ranks-per-node", "9", "1 to 8"),
        bad("predict-ranks-per-node-not-dividing", ["predict", "--preset", "p5:nodes=4", "--size", "1MiB", "--ranks", "8",
                                                    "--ranks-per-node", "3"], "ranks-per-node", "3", "1, 2, 4, 8"),
        bad("predict-ranks-per-node-too-few-nodes", ["predict", "--preset", "p5:nodes=2", "--size", "1MiB", "--ranks", "8",
                                                     "--ranks-per-node", "1"], "ranks-per-node", "8 ranks", "--ranks <= 2"),
        bad("predict-ranks-per-node-builder", ["predict", "--preset", "switch:8", "--ranks-per-node", "1"], "preset",
            "switch:8"),
        bad("predict-algo-bogus", [*PREDICT, "--algo", "CollNet"], "algo", "CollNet", "NVLSTree"),
        bad("predict-algo-empty", [*PREDICT, "--algo", ""], "algo"),
        bad("predict-algo-nvls-on-ampere", ["predict", "--preset", "p4de:nodes=2", "--size", "1MiB", "--algo", "NVLS"],
            "algo", "nvls", "ring, tree"),
        bad("predict-algo-pat-on-full-nodes", ["predict", "--preset", "p5:nodes=2", "--size", "1MiB", "--op", "allgather",
                                              "--algo", "PAT"], "algo", "pat", "ring"),
        bad("predict-algo-nvls-proto-ll", [*PREDICT, "--algo", "NVLS", "--proto", "LL"], "proto", "LL", "Simple"),
        bad("nccl-model-nccl-version-old", [*NCCL, "--nccl-version", "1.0"], "nccl-version", "1.0", "2.19 or later"),
        bad("nccl-model-nccl-version-words", [*NCCL, "--nccl-version", "2.x"], "nccl-version", "2.x", "MAJOR.MINOR"),
        bad("fit-nccl-version-without-preset", ["fit", LOG, "--nccl-version", "2.20.3"], "nccl-version", "2.20.3",
            "--preset"),
        bad("fit-nccl-version-old", ["fit", LOG, "--preset", "p5", "--nccl-version", "2.1"], "nccl-version",
            "2.1", "2.19 or later"),
        bad("predict-nccl-version-old", [*PREDICT, "--nccl-version", "2.3"], "nccl-version", "2.3", "2.19 or later"),
        bad("predict-nccl-version-words", [*PREDICT, "--nccl-version", "newest"], "nccl-version", "newest", "2.20.3"),
        bad("predict-nccl-version-major-only", [*PREDICT, "--nccl-version", "2"], "nccl-version", "'2'", "MAJOR.MINOR"),
        bad("predict-nccl-version-four-parts", [*PREDICT, "--nccl-version", "2.20.3.1"], "nccl-version", "2.20.3.1"),
        bad("predict-nccl-version-empty", [*PREDICT, "--nccl-version", ""], "nccl-version"),
        bad("predict-channels-0", [*PREDICT, "--channels", "0"], "channels", "0", "1 to 64"),
        bad("predict-channels-65", [*PREDICT, "--channels", "65"], "channels", "65", "1 to 64"),
        bad("predict-channels-words", [*PREDICT, "--channels", "all"], "channels", "all", "1 to 64"),
        bad("predict-channels-fraction", [*PREDICT, "--channels", "2.5"], "channels", "2.5", "1 to 64"),
        bad("simulate-channels-0", [*SIM[:4], "nccl_ring", *SIM[5:], "--channels", "0"], "channels", "0"),
        bad("simulate-channels-65", [*SIM[:4], "nccl_ring", *SIM[5:], "--channels", "65"], "channels", "65", "<= 64"),
        bad("simulate-node-0", [*SIM[:4], "nccl_ring", *SIM[5:], "--node", "0"], "node", "0"),
        bad("simulate-pipeline-0", [*SIM[:4], "rails", *SIM[5:], "--pipeline", "0"], "pipeline", "0"),
        bad("simulate-pipeline-on-ring", [*SIM, "--pipeline", "2"], "pipeline", "ring"),
        bad("simulate-pat-aggregate-0", ["simulate", "--op", "allgather", "--algo", "pat", *SIM[5:], "--aggregate", "0"],
            "aggregate", "0"),
        bad("simulate-aggregate-on-ring", [*SIM, "--aggregate", "2"], "aggregate", "ring"),
        bad("simulate-rails-group-3", [*SIM[:4], "rails", *SIM[5:], "--group", "3"], "group", "3"),
        bad("simulate-cluster-nics-3", [*SIM, "--topology", "cluster:nodes=2,gpus=8,nics=3"], "nics", "3"),
        bad("simulate-cluster-nics-0", [*SIM, "--topology", "cluster:nodes=2,gpus=8,nics=0"], "nics", "0"),
        bad("simulate-cluster-nics-word", [*SIM, "--topology", "cluster:nodes=2,gpus=8,nics=many"], "nics"),
    ]


def nccl_model_cases() -> list[Case]:
    return [
        bad("nccl-model-gpus-0", ["nccl-model", "--gpus", "0"], "gpus", "0"),
        bad("nccl-model-nodes-0", ["nccl-model", "--nodes", "0"], "nodes", "0"),
        bad("nccl-model-nodes-negative", ["nccl-model", "--nodes", "-2"], "nodes", "-2"),
        bad("nccl-model-arch-bogus", [*NCCL, "--arch", "pascal9"], "arch", "pascal9"),
        bad("nccl-model-link-bogus", [*NCCL, "--link", "carrier-pigeon"], "link", "carrier-pigeon"),
        bad("nccl-model-op-bogus", [*NCCL, "--op", "alltoall"], "op", "alltoall"),
        bad("nccl-model-channels-0", [*NCCL, "--channels", "0"], "channels", "0"),
        bad("nccl-model-nics-0", [*NCCL, "--nics", "0"], "nics", "0"),
        bad("nccl-model-nvls-eff-nan", [*NCCL, "--nvls-efficiency", "nan"], "nvls-efficiency", "nan"),
        bad("nccl-model-nvls-eff-0", [*NCCL, "--nvls-efficiency", "0"], "nvls-efficiency", "0"),
        bad("nccl-model-compare-missing", [*NCCL, "--compare", "missing.log"], "missing.log"),
        bad("nccl-model-compare-ranks", ["nccl-model", "--gpus", "4", "--compare", LOG], "compare"),
    ]


def msccl_cases() -> list[Case]:
    return [
        bad("export-ranks-100000", [*EXPORT[:-2], "--ranks", "100000"], "ranks", "100000", "--max-transfers raises it"),
        bad("export-ranks-0", [*EXPORT[:-2], "--ranks", "0"], "ranks", "0"),
        bad("export-algo-bogus", ["export-msccl", "--op", "allreduce", "--algo", "bogus", "--ranks", "4"], "algo", "bogus"),
        bad("export-root-negative", ["export-msccl", "--op", "broadcast", "--algo", "binomial", "--ranks", "4", "--root", "-1"],
            "root", "-1"),
        bad("export-root-too-big", ["export-msccl", "--op", "broadcast", "--algo", "binomial", "--ranks", "4", "--root", "4"],
            "root", "4"),
        bad("export-chunks-0", [*EXPORT, "--chunks", "0"], "chunks", "0"),
        bad("export-chunks-huge", [*EXPORT, "--chunks", "100000000"], "chunks", "100000000", "--max-transfers"),
        bad("export-proto-bogus", [*EXPORT, "--proto", "LL64"], "proto", "LL64"),
        bad("export-dtype-bogus", [*EXPORT, "--dtype", "float8"], "dtype", "float8"),
        bad("import-missing-file", ["import-msccl", "missing.xml"], "missing.xml"),
        bad("import-not-xml", ["import-msccl", "a.xml"], "a.xml", files={"a.xml": "not xml at all"}),
        bad("import-size-words", [*IMPORT, "--size", "big"], "size", "big"),
        bad("import-size-1e30", [*IMPORT, "--size", "1e30"], "size", "1e30"),
        bad("import-simulate-no-topology", [*IMPORT, "--simulate"], "topology"),
        bad("import-placement-bogus", [*IMPORT, "--placement", "sideways"], "placement", "sideways"),
        bad("import-dtype-bogus", [*IMPORT, "--dtype", "float8"], "dtype", "float8"),
    ]


def app_cases() -> list[Case]:
    return [
        bad("app-port-99999", ["app", "--port", "99999"], "port", "99999", "1 to 65535"),
        bad("app-port-0", ["app", "--port", "0"], "port", "0"),
        bad("app-port-negative", ["app", "--port", "-1"], "port", "-1"),
        bad("app-port-words", ["app", "--port", "http"], "port", "http"),
        bad("no-command", [], "command"),
        bad("unknown-command", ["simulat"], "simulat"),
    ]


def empty_value_cases() -> list[Case]:
    """'' given for an option or argument is refused, not read as 'use the default' (or as the directory '.')."""
    return [bad(f"empty-{i}", argv, field, "''") for i, argv, field in [
        ("simulate-algo", ["simulate", "--op", "allreduce", "--algo", "", "--ranks", "4"], "algo"),
        ("cost-algo", [*COST, "--algo", ""], "algo"),
        ("simulate-topology", [*SIM, "--topology", ""], "topology"),
        ("simulate-profile", [*SIM, "--profile", ""], "profile"),
        ("sweep-op", ["sweep", "--op", "", "--ranks", "4"], "op"),
        ("fit-log", ["fit", ""], "log"),
        ("import-file", ["import-msccl", ""], "file"),
        ("compare-measured", [*COMPARE, "--measured", ""], "measured"),
        ("nccl-model-compare", ["nccl-model", "--compare", ""], "compare"),
        ("verify-dtype", [*VERIFY, "--dtype", ""], "dtype"),
        ("check-dtype", [*CHECK, "--dtype", ""], "dtype"),
        ("export-name", [*EXPORT, "--name", ""], "name"),
    ]]


def signal_cases() -> list[Case]:
    """A long run stopped by SIGINT or SIGTERM: one error line, no output file, no process or temporary file left."""
    long_sweep = ["sweep", "--op", "allreduce", "--ranks", "64", "--sizes", "1KiB:1GiB", "--csv", "out.csv"]
    return [
        bad("sweep-sigint", long_sweep, "interrupted", outputs=["out.csv"], signal=(signal.SIGINT, 1.0)),
        bad("sweep-sigterm", long_sweep, "terminated", outputs=["out.csv"], signal=(signal.SIGTERM, 1.0)),
        bad("sweep-sigterm-existing-csv", long_sweep, "terminated", outputs=["out.csv"], preexisting=True,
            signal=(signal.SIGTERM, 1.0)),
        bad("subprocess-size-abc", [*COST, "--size", "1KiB:1MiB:abc"], "size", "abc", mode="subprocess"),
        bad("subprocess-simulate-two-outputs", [*SIM, "--trace", "ok.json", "--export", "missing/x.csv"], "export",
            outputs=["ok.json"], mode="subprocess"),
    ]


def program_cases() -> list[Case]:
    """run-program, whatif and scale: programs, scenarios and their options."""
    swapped = str(DATA / "programs" / "swapped.yaml")
    cycle = "world: 1\ngroups: {}\nranks:\n  0: [{op: compute, time: 1ms, name: a, after: [b]}, {op: compute, time: 1ms, name: b}]\n"
    mismatch = "world: 2\ngroups: {dp: [0, 1]}\nranks:\n  0: [{op: allreduce, group: dp, size: 2MiB}]\n" \
               "  1: [{op: allreduce, group: dp, size: 1MiB}]\n"
    return [
        bad("run-program-missing-file", ["run-program", "missing.yaml"], "missing.yaml"),
        bad("run-program-not-yaml", ["run-program", "p.yaml"], "p.yaml", files={"p.yaml": "world: [unclosed"}),
        bad("run-program-deadlock", ["run-program", swapped], "deadlock",
            accepted="rank 0 waits in allreduce#1 (group dp) for rank 1, which waits in allgather#1 (group tp) for rank 0"),
        bad("run-program-mismatch", ["run-program", "m.yaml"], "mismatch", files={"m.yaml": mismatch},
            accepted="(size differs)"),
        bad("run-program-algo-bogus", [*RUNP, "--algo", "allreduce=bogus"], "algo", "bogus", "ring"),
        bad("run-program-algo-no-equals", [*RUNP, "--algo", "ring"], "algo", "ring", "OP=NAME"),
        bad("run-program-algo-bad-op", [*RUNP, "--algo", "allsum=ring"], "op", "allsum"),
        bad("run-program-topology-small", [*RUNP, "--topology", "ideal:1"], "ranks", "2"),
        bad("run-program-topology-bogus", [*RUNP, "--topology", "moon:3"], "topology", "moon"),
        bad("run-program-ports-negative", [*RUNP, "--ports", "-1"], "ports", "-1"),
        bad("run-program-gamma-words", [*RUNP, "--gamma", "fast"], "gamma", "fast"),
        bad("run-program-bandwidth-zero", [*RUNP, "--bandwidth", "0"], "bandwidth", "0"),
        bad("run-program-cycle", ["run-program", "c.yaml"], "dependency cycle", files={"c.yaml": cycle}),
        bad("run-program-mode-bogus", [*RUNP, "--mode", "fast"], "mode", "fast"),
        bad("run-program-timing-unknown", [*RUNP, "--timing", "fast"], "timing", "fast", "'links', 'nccl'"),
        bad("run-program-timing-nccl-exact", [*RUNP, "--timing", "nccl", "--mode", "exact"], "mode", "'exact'",
            "expected mode isolated or auto"),
        bad("run-program-timing-nccl-algo", [*RUNP, "--timing", "nccl", "--algo", "allgather=ring"], "algo",
            "allgather=ring", "timing links"),
        bad("run-program-timing-nccl-bandwidth", [*RUNP, "--topology", "dgx-h100", "--timing", "nccl", "--bandwidth", "10GB/s"],
            "bandwidth", "'10GB/s'", "timing links"),
        bad("whatif-model-unknown", [*WHATIF, "--model", "gpt-5"], "model", "gpt-5", "llama2-7b"),
        bad("whatif-layout-not-dividing", ["whatif", "hybrid", "--machines", "dgx-h100", "--tp", "3"], "tp", "3"),
        bad("whatif-group-larger-than-machine", ["whatif", "ddp", "--machines", "dgx-h100", "--gpus", "16"], "gpus", "16"),
        bad("whatif-tp-larger-than-node", ["whatif", "tp", "--machines", "dgx-h100:nodes=2", "--tp", "16"], "tp", "16"),
        bad("whatif-pp-too-large", ["whatif", "pp", "--machines", "dgx-h100", "--pp", "16"], "pp", "16"),
        bad("whatif-machines-empty", ["whatif", "ddp", "--machines", ","], "machines"),
        bad("whatif-machine-unknown", ["whatif", "ddp", "--machines", "dgx-h999"], "dgx-h999"),
        bad("whatif-machine-no-gpu", ["whatif", "ddp", "--machines", "ring:8"], "gpu", accepted="--gpu"),
        bad("whatif-price-words", [*WHATIF, "--price", "cheap"], "price", "cheap"),
        bad("whatif-price-unknown-machine", [*WHATIF, "--price", "b200=3"], "price", "b200"),
        bad("whatif-mfu-zero", [*WHATIF, "--mfu", "0"], "mfu", "0"),
        bad("whatif-jobs-zero", [*WHATIF, "--jobs", "0"], "jobs", "0"),
        bad("whatif-dask-unreachable", [*WHATIF, "--dask", "tcp://127.0.0.1:9"], "dask", "tcp://127.0.0.1:9", mode="subprocess"),
        bad("whatif-trace-dir-missing", [*WHATIF, "--trace-dir", "nowhere"], "trace-dir", "nowhere"),
        bad("whatif-scenario-unknown", ["whatif", "zero", "--machines", "dgx-h100"], "scenario", "zero"),
        bad("whatif-algo-bogus", [*WHATIF, "--algo", "allreduce=magic"], "algo", "magic"),
        bad("whatif-ep-dense-model", ["whatif", "ep", "--machines", "dgx-h100"], "model", accepted="MoE"),
        bad("whatif-timing-unknown", [*WHATIF, "--timing", "fast"], "timing", "fast", "'auto', 'links', 'nccl'"),
        bad("whatif-timing-nccl-exact", [*WHATIF, "--timing", "nccl", "--mode", "exact"], "mode", "'exact'",
            "expected mode isolated or auto"),
        bad("whatif-timing-nccl-algo", [*WHATIF, "--timing", "nccl", "--algo", "allreduce=hierarchical"], "algo",
            "allreduce=hierarchical", "timing links"),
        bad("scale-gpus-words", [*SCALE, "--gpus", "many"], "gpus", "many"),
        bad("scale-gpus-reversed", [*SCALE, "--gpus", "64:8"], "gpus", "64:8"),
        bad("scale-gpus-not-nodes", [*SCALE, "--gpus", "12:48"], "gpus", "12"),
        bad("scale-preset-unknown", [*SCALE, "--preset", "dgx-z"], "preset", "dgx-z"),
        bad("scale-net-unknown", [*SCALE, "--net", "carrier-pigeon"], "net", "carrier-pigeon"),
        bad("scale-algos-bogus", [*SCALE, "--algos", "ring,teleport"], "algo", "teleport"),
        bad("scale-algos-empty", [*SCALE, "--algos", ","], "algos"),
        bad("scale-jobs-negative", [*SCALE, "--jobs", "-1"], "jobs", "-1"),
        bad("scale-timing-unknown", [*SCALE, "--timing", "fast"], "timing", "fast", "'auto', 'links', 'nccl'"),
        bad("scale-timing-nccl-algos", [*SCALE, "--timing", "nccl", "--algos", "ring"], "algos", "'ring'",
            "timing links"),
        bad("scale-timing-nccl-algo", [*SCALE, "--timing", "nccl", "--algo", "allreduce=ring"], "algo",
            "allreduce=ring", "timing links"),
        bad("scale-timing-nccl-exact", [*SCALE, "--timing", "nccl", "--mode", "exact"], "mode", "'exact'",
            "expected mode isolated or auto"),
        bad("whatif-timing-auto-unknown-machine", ["whatif", "ddp", "--machines", "dgx-h100,dgx-h999", "--jobs", "1"],
            "dgx-h999"),
        bad("sweep-jobs-zero", [*SWEEP, "--jobs", "0"], "jobs", "0"),
        bad("sweep-dask-empty", [*SWEEP, "--dask", " "], "dask"),
    ]


CASES = (output_cases() + size_cases() + link_number_cases() + algorithms_cases() + check_cases() + draw_cases() + cost_cases()
         + topology_cases() + simulate_cases() + sweep_cases() + verify_cases() + calibrate_cases() + compare_cases()
         + fit_cases() + nccl_model_cases() + predict_cases() + msccl_cases() + app_cases() + empty_value_cases() + signal_cases()
         + program_cases())
SUBCOMMANDS = ("algorithms", "check", "draw", "cost", "topologies", "topology", "simulate", "sweep", "verify", "calibrate",
               "compare", "fit", "nccl-model", "predict", "import-msccl", "export-msccl", "app", "run-program", "whatif", "scale")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_refused_cleanly(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path)


def test_corpus_size_and_coverage() -> None:
    counts = count_by_command(CASES)
    print("\nCLI corpus cases per subcommand:")
    for name, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        print(f"  {name:14s} {n}")
    print(f"  {'total':14s} {len(CASES)}")
    assert len(CASES) >= 220
    assert len({c.id for c in CASES}) == len(CASES), "case ids must be unique"
    missing = [name for name in SUBCOMMANDS if counts.get(name, 0) < 2]
    assert not missing, f"subcommands with fewer than 2 cases: {missing}"
    flags = {flag for c in CASES for flag in c.argv}
    for flag in ("-o", "--trace", "--export", "--csv", "--out", "--nccl-log", "--write-log"):
        assert flag in flags, flag


# --- accepted inputs the corpus work touched -------------------------------------------------------------------
def test_cost_range_with_fractional_factor_is_accepted(tmp_path: Path) -> None:
    """1e6:1e9:1.5 runs: the points between the ends are rounded to whole float32 elements, the ends kept."""
    work = tmp_path / "w"
    work.mkdir()
    result = run_cli(["cost", "--op", "allreduce", "--algo", "ring", "--ranks", "8", "--size", "1e6:1e9:1.5", "--json"], work)
    assert result.status == 0, result.stderr
    import json

    sizes = [row["bytes"] for row in json.loads(result.stdout)["results"]]
    assert sizes[0] == 10**6 and sizes[-1] < 10**9 and len(sizes) == 18  # 1.5**17 = 985 < 1000 < 1.5**18
    assert all(s % 4 == 0 for s in sizes) and sizes == sorted(sizes)
    assert all(abs(s - 10**6 * 1.5**k) <= 2 for k, s in enumerate(sizes))


def test_outputs_are_written_together_with_the_umask(tmp_path: Path) -> None:
    """simulate --trace and --export both land, with mode 0666 & ~umask (the harness child inherits umask 022)."""
    import os

    work = tmp_path / "w"
    work.mkdir()
    old = os.umask(0o027)
    try:
        result = run_cli([*SIM, "--trace", "t.json", "--export", "e.csv"], work)
    finally:
        os.umask(old)
    assert result.status == 0, result.stderr
    for name in ("t.json", "e.csv"):
        assert (work / name).stat().st_mode & 0o777 == 0o640, name
    assert not result.leftover_tmp and not [p for p in os.listdir(work) if p.endswith(".tmp")]
