"""Bad input files for every file format collsim reads, run through the real command line.

Formats: topology YAML and JSON (`topology show`, `simulate --topology`, `sweep --topology`,
`import-msccl --topology`), link profiles (`simulate --profile`, `compare --profile`), nccl-tests logs
(`fit`, `nccl-model --compare`), MSCCL XML (`import-msccl`) and measured JSON (`compare --measured`).
Each bad file is a small edit of a well-formed file (the logs and MSCCL files in tests/data, the
topology of tests/simulator/test_topology.py), and `test_well_formed_bases_are_accepted` shows that each base
file on its own runs, so every refusal below comes from the edit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

import app.cli  # noqa: F401  (imported once here, so each forked case starts warm)
import verify.compare  # noqa: F401  (compare imports it on first use)

from .harness import Case, run_case, run_cli

DATA = Path(__file__).resolve().parents[1] / "data"
LOG = (DATA / "nccl-tests" / "07_b200_hgx_1node_8gpu_allreduce.txt").read_text()
LOG_LINES = LOG.splitlines()
TABLE = "# 4 nodes x 8 B200 = 32 ranks, all_reduce\n# payload   busbw_GBps  algbw_GBps\n"  # log 17's format
FIRST_ROW = LOG_LINES[3]          # '           8             2     float     sum      -1    20.25 ...'
XML = (DATA / "msccl" / "ndv4_ag-1k-512k.xml").read_text()
BIG = b"# " + b"x" * (50 * 2**20) + b"\n"  # 50 MiB: refused up front, before reading
LIMIT = "over the limit of"

TOPOLOGY = {
    "collsim_topology": 1, "name": "two-boxes",
    "defaults": {"latency": "1us", "bandwidth": "25GB/s"},
    "nodes": [{"name": "a0", "kind": "gpu"}, {"name": "a1", "kind": "gpu"}, {"name": "b0", "kind": "gpu"},
              {"name": "swa", "kind": "switch"}, {"name": "swb", "kind": "switch"}],
    "links": [{"a": "a0", "b": "swa"}, {"a": "a1", "b": "swa"}, {"a": "b0", "b": "swb"},
              {"a": "swa", "b": "swb", "bandwidth": "12.5GB/s", "latency": "2us"}],
}
PROFILE = {"collsim_profile": 1, "alpha_s": 3e-6, "bandwidth_Bps": 2.5e10, "gamma_s_per_byte": 0.0, "source": "test",
           "segments": [{"min_bytes": 0, "max_bytes": 65536, "alpha_s": 5e-6, "bandwidth_Bps": 1e9},
                        {"min_bytes": 65536, "max_bytes": None, "alpha_s": 3e-6, "bandwidth_Bps": 2.5e10}],
           "meta": {"ranks": 4}}
MEASURED = {"passed": True, "records": [
    {"op": "allreduce", "algorithm": "ring", "ranks": 4, "bytes": b, "time_s": 1e-5 + b / 1e9, "params": {}}
    for b in (65536, 262144, 1048576)]}

TOPO_SHOW = ["topology", "show"]
SIMULATE = ["simulate", "--op", "allreduce", "--algo", "ring", "--size", "1MiB"]
PROFILE_RUN = [*SIMULATE, "--topology", "switch:4", "--profile"]
COMPARE = ["compare", "--op", "allreduce", "--algo", "ring", "--alpha", "1us", "--bandwidth", "1GB/s", "--measured"]
FIT = ["fit", "--algo", "ring"]


def _yaml(data) -> str:
    return yaml.safe_dump(data, sort_keys=False)


def _edit(base: dict, path: str, value=None, delete: bool = False) -> dict:
    """A deep copy of `base` with the entry at 'links.0.bandwidth'-style `path` set (or deleted)."""
    data = json.loads(json.dumps(base))
    keys = [int(k) if k.isdigit() else k for k in path.split(".")]
    target = data
    for key in keys[:-1]:
        target = target[key]
    if delete:
        del target[keys[-1]]
    else:
        target[keys[-1]] = value
    return data


def _json_number(base: dict, path: str, literal: str) -> str:
    """JSON text of `base` with the value at `path` written as `literal` (NaN, 1e400: what json.dumps cannot write)."""
    return json.dumps(_edit(base, path, "@@")).replace('"@@"', literal)


def _nested(depth: int, as_json: bool) -> str:
    return "[" * depth + "]" * depth if as_json else "a:\n" + "".join("  " * i + "- \n" for i in range(1, depth))


BILLION_LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8))


# ---- the checks every file format shares -------------------------------------------------------------------

def _file_level(fmt: str, name: str, argv: list[str], structured: bool, others: dict | None = None) -> list[Case]:
    """Missing, directory, binary, 50 MiB; for YAML/JSON also empty, Latin-1, NUL, deep nesting, alias bombs, wrong top types.

    `argv` ends with the option that takes the file; `others` are well-formed files the command also needs.
    """
    def case(tag: str, files: dict, field: str, value=None, accepted=None) -> Case:
        return Case(f"{fmt}-{tag}", [*argv, name], field, value, accepted, {**(others or {}), **files})

    as_json = name.endswith(".json")
    cases = [
        case("missing", {}, name, accepted="No such file"),
        case("directory", {f"{name}/x": "x"}, name, accepted="Is a directory"),
        case("binary", {name: bytes(range(256)) * 4}, name, accepted="expected UTF-8 text" if structured else None),
        case("oversize", {name: BIG}, name, "50 MiB", LIMIT),
        Case(f"{fmt}-device", [*argv, "/dev/zero"], "/dev/zero", accepted="not a regular file", files=dict(others or {})),
    ]
    if fmt == "log":  # logs tolerate other encodings in the noise around the table; a binary file has no rows
        cases[2] = case("binary", {name: bytes(range(256)) * 4}, name, accepted="not an nccl-tests log")
    if not structured:
        return cases
    cases += [
        case("empty", {name: ""}, name, accepted="is empty"),
        case("latin1", {name: ("# caf\xe9\n" + ("{}" if as_json else "a: 1\n")).encode("latin-1")}, name, "0xe9",
             "expected UTF-8 text"),
        case("nul", {name: b"a: 1\n\x00\n"}, name, "NUL", "expected UTF-8 text"),
        case("deep", {name: _nested(200, as_json)}, name, accepted="expected at most 32"),
        case("toplist", {name: "[1, 2, 3]"}, name, accepted="expected"),
        case("topscalar", {name: '"just text"'}, name, accepted="expected"),
        case("syntax", {name: "{nope" if as_json else "a: [1, 2\nb: }"}, "line", accepted="not valid"),
    ]
    cases.append(case("over-data-cap", {name: (" " * 3 * 2**20) + ("{}" if as_json else "a: 1\n")}, name, "3 MiB",
                      "over the limit of 2 MiB"))
    if not as_json:
        cases.append(case("billion-laughs", {name: BILLION_LAUGHS}, name, accepted="at most 1,000,000"))
        cases.append(case("python-tag", {name: "!!python/object/apply:os.system ['true']\n"}, name, accepted="not valid YAML"))
    else:
        cases.append(case("json-nan", {name: '{"a": NaN}'}, name, "NaN", "expected a finite number"))
    return cases


# ---- topology files ----------------------------------------------------------------------------------------

def _topology_cases() -> list[Case]:
    cases = _file_level("topology-yaml", "t.yaml", TOPO_SHOW, True)
    cases += _file_level("topology-json", "t.json", [*SIMULATE, "--topology"], True)

    def bad(tag: str, data, field: str, value=None, accepted=None, name: str = "t.yaml", argv=TOPO_SHOW) -> Case:
        text = json.dumps(data) if name.endswith(".json") and not isinstance(data, str) else (
            data if isinstance(data, str) else _yaml(data))
        return Case(f"topology-{tag}", [*argv, name], field, value, accepted, {name: text})

    links = TOPOLOGY["links"]
    cases += [
        bad("bw-nan", _edit(TOPOLOGY, "links.3.bandwidth", float("nan")), "links[3] bandwidth", "nan", "a bandwidth such as 25GB/s"),
        bad("bw-inf", _edit(TOPOLOGY, "links.3.bandwidth", float("inf")), "links[3] bandwidth", "inf", "a bandwidth such as 25GB/s"),
        bad("bw-1e400", _edit(TOPOLOGY, "links.3.bandwidth", "1e400GB/s"), "links[3] bandwidth", "1e400GB/s", "such as 25GB/s"),
        bad("bw-negative", _edit(TOPOLOGY, "links.3.bandwidth", "-5GB/s"), "links[3] bandwidth", "-5GB/s", "such as 25GB/s"),
        bad("bw-zero", _edit(TOPOLOGY, "links.3.bandwidth", 0), "links[3] bandwidth", "0", "> 0"),
        bad("bw-text", _edit(TOPOLOGY, "links.3.bandwidth", "fast"), "links[3] bandwidth", "fast", "25GB/s"),
        bad("bw-unit", _edit(TOPOLOGY, "links.3.bandwidth", "5 furlongs/s"), "links[3] bandwidth", "furlongs/s", "GB/s"),
        bad("bw-list", _edit(TOPOLOGY, "links.3.bandwidth", [1, 2]), "links[3] bandwidth", "[1, 2]", "finite bandwidth"),
        bad("bw-bool", _edit(TOPOLOGY, "links.3.bandwidth", True), "links[3] bandwidth", "True", "finite bandwidth"),
        bad("lat-nan", _edit(TOPOLOGY, "links.3.latency", float("nan")), "links[3] latency", "nan", "expected a time such as 2us"),
        bad("lat-inf", _edit(TOPOLOGY, "links.3.latency", float("inf")), "links[3] latency", "inf", "expected a time such as 2us"),
        bad("lat-negative", _edit(TOPOLOGY, "links.3.latency", "-1us"), "links[3] latency", "-1us", "such as 2us"),
        bad("lat-unit", _edit(TOPOLOGY, "links.3.latency", "3 fortnights"), "links[3] latency", "fortnights", "us"),
        bad("default-bw-nan", _edit(TOPOLOGY, "defaults.bandwidth", float("nan")), "defaults: bandwidth", "nan", "finite"),
        bad("default-lat-1e400", _edit(TOPOLOGY, "defaults.latency", "1e400s"), "defaults: latency", "1e400s", "such as 2us"),
        bad("json-bw-1e400", _json_number(TOPOLOGY, "links.3.bandwidth", "1e400"), "links[3] bandwidth", "inf", "finite",
            name="t.json", argv=[*SIMULATE, "--topology"]),
        bad("json-bw-infinity", '{"nodes": ["a", "b"], "links": [{"a": "a", "b": "b", "bandwidth": Infinity}]}', "t.json",
            "Infinity", "finite number", name="t.json"),
        bad("unknown-node", _edit(TOPOLOGY, "links", links + [{"a": "a0", "b": "swz"}]), "links[4]", "'swz'", "nodes are"),
        bad("self-link", _edit(TOPOLOGY, "links", [{"a": "a0", "b": "a0"}]), "links[0]", "'a0'", "itself"),
        bad("duplicate-link", _edit(TOPOLOGY, "links", links + [{"a": "swa", "b": "a0"}]), "links[4]", "swa -> a0", "already"),
        bad("duplicate-node", _edit(TOPOLOGY, "nodes", TOPOLOGY["nodes"] + [{"name": "a0"}]), "nodes[5]", "'a0'", "duplicate"),
        bad("disconnected", _edit(TOPOLOGY, "links", links[:3]), "disconnected", "rank 2 (b0)", "add links"),
        bad("disconnected-oneway", _edit(TOPOLOGY, "links", links[:3] + [{"a": "swa", "b": "swb", "duplex": False}]),
            "disconnected", "rank 2 (b0)", "add links"),
        bad("unknown-kind", _edit(TOPOLOGY, "nodes.3.kind", "router"), "nodes[3]", "'router'", "gpu, switch, nic, cpu"),
        bad("unknown-key", _edit(TOPOLOGY, "colour", "red"), "unknown key", "'colour'", "nodes, links"),
        bad("link-typo", _edit(TOPOLOGY, "links.3.bandwith", "1GB/s"), "links[3]", "'bandwith'", "a, b, bandwidth, latency"),
        bad("node-typo", _edit(TOPOLOGY, "nodes.0.knd", "gpu"), "nodes[0]", "'knd'", "name, kind"),
        bad("defaults-typo", _edit(TOPOLOGY, "defaults.bw", "1GB/s"), "defaults", "'bw'", "latency, bandwidth"),
        bad("no-nodes", _edit(TOPOLOGY, "nodes", delete=True), "nodes", accepted="non-empty list"),
        bad("empty-nodes", _edit(TOPOLOGY, "nodes", []), "nodes", accepted="non-empty list"),
        bad("nodes-mapping", _edit(TOPOLOGY, "nodes", {"a0": "gpu"}), "nodes", accepted="non-empty list"),
        bad("no-links", _edit(TOPOLOGY, "links", delete=True), "links", accepted="list of {a, b"),
        bad("link-not-mapping", _edit(TOPOLOGY, "links", ["a0-swa"]), "links[0]", "'a0-swa'", "{a: NODE"),
        bad("link-missing-b", _edit(TOPOLOGY, "links.0.b", delete=True), "links[0]", accepted="{a: NODE"),
        bad("node-name-list", _edit(TOPOLOGY, "nodes.0.name", [1, 2]), "nodes[0] name", "[1, 2]", "text or an integer"),
        bad("no-bandwidth", _edit(TOPOLOGY, "defaults", {}), "links[0]", accepted="no bandwidth"),
        bad("duplex-text", _edit(TOPOLOGY, "links.0.duplex", "yes please"), "links[0]", "'yes please'", "true or false"),
        bad("ranks-unknown", _edit(TOPOLOGY, "ranks", ["a0", "zz"]), "ranks[1]", "'zz'", "nodes are"),
        bad("ranks-twice", _edit(TOPOLOGY, "ranks", ["a0", "a0"]), "ranks", accepted="listed twice"),
        bad("ranks-text", _edit(TOPOLOGY, "ranks", "a0,a1"), "ranks", accepted="list of node names"),
        bad("no-gpus", _edit(TOPOLOGY, "nodes", [{"name": n["name"], "kind": "switch"} for n in TOPOLOGY["nodes"]]),
            "no gpu nodes", accepted="kind: gpu"),
        bad("version", _edit(TOPOLOGY, "collsim_topology", 2), "collsim_topology", "2", "expected 1"),
        bad("name-list", _edit(TOPOLOGY, "name", ["x"]), "name", "['x']", "expected text"),
        bad("defaults-list", _edit(TOPOLOGY, "defaults", [1]), "defaults", accepted="mapping"),
        bad("sweep", _edit(TOPOLOGY, "links.3.bandwidth", float("nan")), "links[3] bandwidth", "nan", "finite",
            argv=["sweep", "--op", "allreduce", "--algo", "ring", "--sizes", "1KiB:4KiB", "--topology"]),
        bad("import-msccl", _edit(TOPOLOGY, "links.3.latency", float("inf")), "links[3] latency", "inf", "finite",
            argv=["import-msccl", "x.xml", "--simulate", "--topology"]),
    ]
    cases[-1].files["x.xml"] = XML
    return cases


# ---- topology SPEC strings with file-like values ---------------------------------------------------------------

def _spec_cases() -> list[Case]:
    def spec(tag: str, text: str, field: str, value: str, accepted: str) -> Case:
        return Case(f"topology-spec-{tag}", [*TOPO_SHOW, text], field, value, accepted)

    return [
        spec("bw-1e400", "switch:8,bw=1e400", "bw", "1e400", "such as 25GB/s"),
        spec("lat-1e400", "ring:4,lat=1e400", "lat", "1e400", "such as 2us"),
        spec("net-bw-1e400", "cluster:nodes=2,net_bw=1e400GB/s", "net_bw", "1e400GB/s", "such as 25GB/s"),
        spec("oversub-nan", "fat_tree:hosts=8,oversub=nan", "oversub", "nan", "finite number"),
        spec("bw-tiny", "switch:8,bw=1e-400", "bw", "1e-400", "> 0"),
    ]


# ---- link profiles -----------------------------------------------------------------------------------------

def _profile_cases() -> list[Case]:
    cases = _file_level("profile-yaml", "p.yaml", PROFILE_RUN, True)
    cases += _file_level("profile-json", "p.json", ["compare", "--op", "allreduce", "--algo", "ring", "--measured", "m.json",
                                                    "--profile"], True, {"m.json": json.dumps(MEASURED)})

    def bad(tag: str, data, field: str, value=None, accepted=None, name: str = "p.yaml") -> Case:
        text = data if isinstance(data, str) else json.dumps(data) if name.endswith(".json") else _yaml(data)
        return Case(f"profile-{tag}", [*PROFILE_RUN, name], field, value, accepted, {name: text})

    return cases + [
        bad("no-alpha", _edit(PROFILE, "alpha_s", delete=True), "alpha_s", accepted="needs the fields"),
        bad("no-bandwidth", _edit(PROFILE, "bandwidth_Bps", delete=True), "bandwidth_Bps", accepted="needs the fields"),
        bad("bw-negative", _edit(PROFILE, "bandwidth_Bps", -5), "bandwidth_Bps", "-5", "> 0"),
        bad("bw-zero", _edit(PROFILE, "bandwidth_Bps", 0), "bandwidth_Bps", "0", "> 0"),
        bad("bw-nan", _edit(PROFILE, "bandwidth_Bps", float("nan")), "bandwidth_Bps", "nan", "a number > 0"),
        bad("bw-minus-inf", _edit(PROFILE, "bandwidth_Bps", float("-inf")), "bandwidth_Bps", "-inf", "a number > 0"),
        bad("bw-minus-1e400", _json_number(PROFILE, "bandwidth_Bps", "-1e400"), "bandwidth_Bps", "-inf", "a number > 0",
            name="p.json"),
        bad("bw-text", _edit(PROFILE, "bandwidth_Bps", "fast"), "bandwidth_Bps", "'fast'", "a number > 0"),
        bad("bw-bool", _edit(PROFILE, "bandwidth_Bps", True), "bandwidth_Bps", "True", "a number > 0"),
        bad("alpha-negative", _edit(PROFILE, "alpha_s", -1e-6), "alpha_s", "-1e-06", ">= 0"),
        bad("alpha-inf", _edit(PROFILE, "alpha_s", float("inf")), "alpha_s", "inf", "finite number"),
        bad("gamma-nan", _edit(PROFILE, "gamma_s_per_byte", float("nan")), "gamma_s_per_byte", "nan", "finite"),
        bad("unknown-field", _edit(PROFILE, "bandwith_Bps", 1e9), "unknown field", "'bandwith_Bps'", "alpha_s, bandwidth_Bps"),
        bad("segments-text", _edit(PROFILE, "segments", "three"), "segments", "'three'", "list of"),
        bad("segment-not-mapping", _edit(PROFILE, "segments", [5]), "segments[0]", "5", "mapping"),
        bad("segment-missing", _edit(PROFILE, "segments.0.alpha_s", delete=True), "segments[0]", "'alpha_s'", "needs the fields"),
        bad("segment-typo", _edit(PROFILE, "segments.0.max", 5), "segments[0]", "'max'", "min_bytes, max_bytes"),
        bad("segment-order", _edit(PROFILE, "segments.0.max_bytes", 0), "segments[0]", "0", "max_bytes"),
        bad("segment-fraction", _edit(PROFILE, "segments.0.min_bytes", 1.5), "segments[0] min_bytes", "1.5", "an integer"),
        bad("segment-bw-nan", _edit(PROFILE, "segments.1.bandwidth_Bps", float("nan")), "segments[1] bandwidth_Bps", "nan",
            "a number > 0"),
        bad("segments-by", _edit(PROFILE, "segments_by", "size"), "segments_by", "'size'", "call, message"),
        bad("meta-list", _edit(PROFILE, "meta", [1]), "meta", "[1]", "mapping"),
        bad("source-list", _edit(PROFILE, "source", [1]), "source", "[1]", "text"),
    ]


# ---- nccl-tests logs ---------------------------------------------------------------------------------------

def _row(**cells) -> str:
    """FIRST_ROW with some of its 13 cells replaced (by index)."""
    parts = FIRST_ROW.split()
    for index, value in cells.items():
        parts[int(index[1:])] = value
    return "  ".join(parts)


def _log_with(row: str) -> str:
    return LOG.replace(FIRST_ROW, row, 1)


def _log_cases() -> list[Case]:
    cases = _file_level("log", "l.txt", FIT, False)
    cases += [c for c in _file_level("log-nccl-model", "l.txt", ["nccl-model", "--compare"], False)
              if c.id.endswith(("oversize", "missing"))]

    def bad(tag: str, text: str | bytes, field: str, value=None, accepted=None, argv=FIT) -> Case:
        return Case(f"log-{tag}", [*argv, "l.txt"], field, value, accepted, {"l.txt": text})

    header = "\n".join(LOG_LINES[:3])
    mixed = LOG + LOG.replace("float", "half").replace(" sum ", " max ")
    return cases + [
        bad("size-1e32", _log_with(_row(c0="1" + "0" * 32, c1="25" + "0" * 30)), "size column", "1" + "0" * 32, "2^53"),
        bad("size-1e32-nccl-model", _log_with(_row(c0="1" + "0" * 32, c1="25" + "0" * 30)), "size column", None, "2^53",
            argv=["nccl-model", "--compare"]),
        bad("count-5000-digits", _log_with(_row(c1="9" * 5000)), "count column", "5000 characters", "2^53"),
        bad("type-garbled", _log_with(_row(c2="flo@t")), "type column", "'flo@t'", "bfloat16"),
        bad("redop-garbled", _log_with(_row(c3="s#m")), "redop column", "'s#m'", "sum, prod"),
        bad("time-nan", _log_with(_row(c5="nan")), "time (us) column", "'nan'", "finite number >= 0"),
        bad("time-negative", _log_with(_row(c5="-20.25")), "time (us) column", "'-20.25'", "finite number >= 0"),
        bad("time-1e400", _log_with(_row(c5="1e400")), "time (us) column", "'1e400'", "finite number >= 0"),
        bad("busbw-text", _log_with(_row(c7="fast")), "busbw (GB/s) column", "'fast'", "finite number"),
        bad("wrong-text", _log_with(_row(c8="some")), "#wrong column", "'some'", "whole number"),
        bad("latin1-in-row", _log_with(_row(c2="flo\xe9t")).encode("latin-1"), "type column", "flo", "bfloat16"),
        bad("columns", _log_with(FIRST_ROW + " 7"), "line 4", "14 columns", "announces 13"),
        bad("no-rows", header + "\n", "no result rows", accepted="no result rows"),
        bad("noise-only", "NCCL INFO Bootstrap : Using eth0\nhello world\n", "not an nccl-tests log", accepted="size, count"),
        bad("mixed-ops", mixed, "rows disagree", accepted="one test per file"),
        bad("size-count", _log_with(_row(c0="12")), "line 4", "size 12 B", "whole multiple"),
        bad("avg-garbled", LOG.replace("# Avg bus bandwidth    : 238.019", "# Avg bus bandwidth    : lots"),
            "average bus bandwidth", "'lots'", "a number"),
        bad("all-zero", header + "\n" + _row(c5="0", c9="0") + "\n", "fit", "0 distinct sizes", "at least 4"),
        bad("wrong-ranks", LOG, "busbw / algbw", "allreduce on 3 ranks", "check --op and --ranks",
            argv=[*FIT, "--ranks", "3"]),
        # busbw tables (log 17's format: '# payload busbw_GBps algbw_GBps', then SIZE BUSBW ALGBW)
        bad("table-ratio", TABLE + "1MiB 3.0 1.0\n", "line 3", "busbw 3.0", "algbw 1.0 x 1.9375"),
        bad("table-short-row", TABLE + "1MiB 1.9375\n", "line 3", "'1MiB 1.9375'", "SIZE BUSBW_GBPS ALGBW_GBPS"),
        bad("table-size-garbled", TABLE + "1MeB 1.9375 1.0\n", "payload", "1MeB"),
        bad("table-algbw-zero", TABLE + "1MiB 0 0\n", "algbw_GBps", "'0'", "> 0"),
        bad("table-busbw-negative", TABLE + "1MiB -1 1.0\n", "busbw_GBps column", "'-1'", "finite number >= 0"),
        bad("table-no-ranks", TABLE.replace("= 32 ranks", "") + "1MiB 1.9375 1.0\n", "busbw table", accepted="'= N ranks'"),
        bad("table-no-rows", TABLE, "busbw table", accepted="no rows"),
    ]


# ---- MSCCL XML ---------------------------------------------------------------------------------------------

# Two gpus swap halves (an allgather): each gpu has a sending and a receiving threadblock with one step each.
TINY_XML = """<algo name="tiny" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" coll="allgather" inplace="1" outofplace="0">
""" + "".join(f"""  <gpu id="{g}" i_chunks="0" o_chunks="2" s_chunks="0">
    <tb id="0" send="{1 - g}" recv="-1" chan="0">
      <step s="0" type="s" srcbuf="o" srcoff="{g}" dstbuf="o" dstoff="{g}" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
    <tb id="1" send="-1" recv="{1 - g}" chan="0">
      <step s="0" type="r" srcbuf="o" srcoff="{1 - g}" dstbuf="o" dstoff="{1 - g}" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
""" for g in (0, 1)) + "</algo>\n"


def _tiny_cycle() -> str:
    """gpu 0's send waits for its receive, and the receive waits for the send: a dependency cycle."""
    head, rest = TINY_XML.split('<gpu id="1"', 1)
    head = head.replace('depid="-1" deps="-1" hasdep="0"', 'depid="1" deps="0" hasdep="1"', 1)
    head = head.replace('depid="-1" deps="-1" hasdep="0"', 'depid="0" deps="0" hasdep="1"', 1)
    return head + '<gpu id="1"' + rest


def _xml_with(old: str, new: str, text: str = XML) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def _msccl_cases() -> list[Case]:
    cases = _file_level("msccl", "a.xml", ["import-msccl"], False)
    algo_line = XML.splitlines()[0]

    def bad(tag: str, text: str | bytes, field: str, value=None, accepted=None) -> Case:
        return Case(f"msccl-{tag}", ["import-msccl", "a.xml", "--check"], field, value, accepted, {"a.xml": text})

    entity_bomb = ('<?xml version="1.0"?>\n<!DOCTYPE algo [<!ENTITY a "aaaaaaaaaa">'
                   + "".join(f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(8))
                   + ']>\n<algo name="&i;"/>\n')
    return cases + [
        bad("empty", "", "a.xml:1", accepted="not well-formed XML"),
        bad("latin1", _xml_with('name="all_gather_llm"', 'name="caf\xe9"').encode("latin-1"), "a.xml:1", accepted="well-formed"),
        bad("unclosed", XML.rsplit("</algo>", 1)[0], "a.xml", accepted="not well-formed XML"),
        bad("entity-bomb", entity_bomb, "a.xml", accepted="not well-formed XML"),
        bad("external-entity", '<?xml version="1.0"?>\n<!DOCTYPE algo [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n'
            '<algo name="&x;"/>\n', "a.xml", accepted="expected"),
        bad("root", "<foo/>", "a.xml:1", "<foo>", "expected <algo>"),
        bad("no-coll", _xml_with(' coll="allgather"', ""), "'coll'", accepted="required"),
        bad("coll", _xml_with('coll="allgather"', 'coll="allshuffle"'), "coll", "'allshuffle'", "allreduce, allgather"),
        bad("ngpus-zero", _xml_with('ngpus="8"', 'ngpus="0"'), "ngpus", "0", ">= 1"),
        bad("ngpus-huge", _xml_with('ngpus="8"', 'ngpus="2000000000"'), "ngpus", "2000000000", "expected a multiple"),
        bad("ngpus-digits", _xml_with('ngpus="8"', 'ngpus="' + "9" * 5000 + '"'), "ngpus", "5000 characters", "2^31 - 1"),
        bad("ngpus-text", _xml_with('ngpus="8"', 'ngpus="eight"'), "ngpus", "'eight'", "an integer"),
        bad("nchunks-huge", _xml_with('nchunksperloop="16"', 'nchunksperloop="4000000000"'), "nchunksperloop",
            "4000000000", "2^31 - 1"),
        bad("nchunks-over-16-bit", _xml_with('nchunksperloop="16"', 'nchunksperloop="1048576"'), "nchunksperloop",
            "1048576", "at most 65536"),
        bad("cnt-huge", _xml_with('cnt="1"', 'cnt="1000000"'), "cnt=1000000", accepted="expected chunks 0..15"),
        bad("srcoff-negative", _xml_with('srcoff="2"', 'srcoff="-7"'), "srcoff", "-7", ">= -1"),
        bad("step-type", _xml_with('type="r"', 'type="rr"'), "type", "'rr'", "s, r, rcs"),
        bad("proto", _xml_with('proto="LL"', 'proto="LL64"'), "proto", "'LL64'", "Simple, LL, LL128"),
        bad("gpu-renumbered", _xml_with('<gpu id="1"', '<gpu id="0"'), "gpu id=0", accepted="appears twice"),
        bad("tb-self-peer", _xml_with('<tb id="0" send="-1" recv="1"', '<tb id="0" send="-1" recv="0"'), "recv=0",
            accepted="another gpu"),
        bad("dep-missing-tb", _xml_with('depid="-1" deps="-1"', 'depid="99" deps="0"'), "tb 99", accepted="has tbs"),
        bad("dep-on-itself", _xml_with('depid="-1" deps="-1" hasdep="0"', 'depid="0" deps="0" hasdep="1"'), "depends on its own",
            accepted="wait forever"),
        bad("child", _xml_with("<tb ", "<threadblock ").replace("</tb>", "</threadblock>", 1), "<threadblock>", accepted="expected <tb>"),
        bad("flag", _xml_with('inplace="1"', 'inplace="2"'), "inplace", "2", "0 or 1"),
        bad("dependency-cycle", _tiny_cycle(), "deadlock", "waits for tb 1 step 0", "waits for tb 0 step 0"),
        bad("unmatched-receive", _xml_with('type="s" srcbuf="o" srcoff="1"', 'type="nop" srcbuf="o" srcoff="1"', TINY_XML),
            "a.xml:7", "gpu 0 receives 1 times from gpu 1", "only 0 times"),
        bad("send-to-nobody", _xml_with('<tb id="0" send="1" recv="-1"', '<tb id="0" send="-1" recv="-1"', TINY_XML),
            "send=-1", accepted="no send peer"),
        bad("algo-line", _xml_with(algo_line, algo_line.replace('outofplace="0"', 'outofplace="0" inplace2="1"')
                                   .replace('inplace="1"', 'inplace="0"', 1)), "inplace=0 and outofplace=0",
            accepted="at least one placement"),
    ]


# ---- measured JSON -----------------------------------------------------------------------------------------

def _measured_cases() -> list[Case]:
    cases = _file_level("measured", "m.json", COMPARE, True)

    def bad(tag: str, data, field: str, value=None, accepted=None) -> Case:
        text = data if isinstance(data, str) else json.dumps(data)
        return Case(f"measured-{tag}", [*COMPARE, "m.json"], field, value, accepted, {"m.json": text})

    return cases + [
        bad("records-ints", {"records": [1, 2, 3]}, "records[0]", "'1'", "{op, algorithm, ranks, bytes, time_s}"),
        bad("records-text", {"records": "all of them"}, "'records' list", accepted="collsim verify --json"),
        bad("no-records", {"rows": []}, "'records' list", accepted="collsim verify --json"),
        bad("bytes-garbled", _edit(MEASURED, "records.1.bytes", "64 KiBi"), "records[1] bytes", "64 KiBi", "64KiB"),
        bad("bytes-negative", _edit(MEASURED, "records.1.bytes", -4), "records[1] bytes", "-4", "byte count >= 1"),
        bad("bytes-zero", _edit(MEASURED, "records.0.bytes", 0), "records[0] bytes", "0", "byte count >= 1"),
        bad("bytes-float", _edit(MEASURED, "records.0.bytes", 1.5), "records[0] bytes", "1.5", "byte count"),
        bad("bytes-list", _edit(MEASURED, "records.2.bytes", [1]), "records[2] bytes", "[1]", "byte count"),
        bad("time-negative", _edit(MEASURED, "records.1.time_s", -1e-5), "records[1] time_s", "-1e-05", "> 0"),
        bad("time-zero", _edit(MEASURED, "records.1.time_s", 0), "records[1] time_s", "0", "> 0"),
        bad("time-nan", _json_number(MEASURED, "records.0.time_s", "NaN"), "m.json", "NaN", "finite number"),
        bad("time-1e400", _json_number(MEASURED, "records.0.time_s", "1e400"), "records[0] time_s", "inf", "finite"),
        bad("time-text", _edit(MEASURED, "records.0.time_s", "10us"), "records[0] time_s", "'10us'", "seconds"),
        bad("time-bool", _edit(MEASURED, "records.0.time_s", True), "records[0] time_s", "True", "seconds"),
        bad("ranks-text", _edit(MEASURED, "records.0.ranks", "four"), "ranks", "'four'", "rank count >= 1"),
        bad("params-list", _edit(MEASURED, "records.0.params", [1]), "params", "[1]", "mapping"),
        bad("other-algo", _edit(MEASURED, "records", [{**r, "algorithm": "tree"} for r in MEASURED["records"]]),
            "no timed allreduce/ring", accepted="allreduce/tree p=4"),
    ]


# ---- program files (`collsim lint-program`): the reading side; their content is tests/simulator/test_program_corpus.py's -----------

PROGRAM = "world: 2\ngroups: {dp: [0, 1]}\nranks:\n  0-1: [{op: all_reduce, group: dp, size: 1MiB}]\n"


def _program_cases(command: str = "lint-program") -> list[Case]:
    prefix = "program" if command == "lint-program" else command

    def case(tag: str, content, field: str, value=None, accepted=None, target: str = "p.yaml") -> Case:
        files = {} if content is None else {target: content}
        return Case(f"{prefix}-{tag}", [command, target], field, value, accepted, files)

    return [
        case("missing", None, "p.yaml", accepted="No such file"),
        Case(f"{prefix}-directory", [command, "d.yaml"], "d.yaml", None, "Is a directory", {"d.yaml/x": "x"}),
        Case(f"{prefix}-device", [command, "/dev/zero"], "/dev/zero", None, "not a regular file"),
        case("binary", bytes(range(256)) * 4, "p.yaml", accepted="expected UTF-8 text"),
        case("latin1", (PROGRAM + "# caf\xe9\n").encode("latin-1"), "p.yaml line 5", "0xe9", "expected UTF-8 text"),
        case("nul", PROGRAM.encode() + b"\x00", "p.yaml", "NUL", "expected UTF-8 text"),
        case("latin1-json", '{"world": 2, "x": "caf\xe9"}'.encode("latin-1"), "p.json", "0xe9", "UTF-8", target="p.json"),
    ]


# ---- calibration files (collsim fit LOG --preset P --out FILE), read back by predict --preset FILE[:nodes=N] ------

CALIBRATION = {"collsim_calibration": 1, "preset": "p5", "nodes": 1, "net": "efa100",
               "parameters": {"intra_efficiency": {"LL": 1.0, "LL128": 0.9, "Simple": 0.95},
                              "net_efficiency": {"LL": 1.0, "LL128": 1.0, "Simple": 1.0},
                              "intra_step_us": 0.5, "net_step_us": 0.0},
               "identified": ["intra_step_s"], "fitted_to": "log.txt", "fit": {}}
PREDICT_CAL = ["predict", "--size", "1MiB", "--preset"]


def _calibration_cases() -> list[Case]:
    cases = _file_level("calibration-yaml", "c.yaml", PREDICT_CAL, True)

    def bad(tag: str, data, field: str, value=None, accepted=None, name: str = "c.yaml", spec: str | None = None) -> Case:
        text = data if isinstance(data, str) else json.dumps(data) if name.endswith(".json") else _yaml(data)
        return Case(f"calibration-{tag}", [*PREDICT_CAL, spec or name], field, value, accepted, {name: text})

    eff = "parameters.intra_efficiency"
    return cases + [
        bad("eff-above-1", _edit(CALIBRATION, f"{eff}.Simple", 1.5), "intra_efficiency", "1.5", "[0.05, 1]"),
        bad("eff-zero", _edit(CALIBRATION, f"{eff}.LL", 0), "intra_efficiency", "0", "[0.05, 1]"),
        bad("eff-text", _edit(CALIBRATION, f"{eff}.LL128", "fast"), "intra_efficiency", "'fast'", "[0.05, 1]"),
        bad("eff-nan", _json_number(CALIBRATION, f"{eff}.Simple", "NaN"), "NaN", accepted="finite", name="c.json"),
        bad("eff-bool", _edit(CALIBRATION, f"{eff}.Simple", True), "intra_efficiency", "True", "[0.05, 1]"),
        bad("eff-protocol", _edit(CALIBRATION, f"{eff}.LL64", 0.9), "intra_efficiency", "LL64", "LL, LL128, Simple"),
        bad("eff-scalar", _edit(CALIBRATION, "parameters.net_efficiency", 0.9), "net_efficiency", "0.9", "mapping"),
        bad("step-negative", _edit(CALIBRATION, "parameters.net_step_us", -1), "net_step_us", "-1", "[0, 1000]"),
        bad("step-huge", _edit(CALIBRATION, "parameters.intra_step_us", 5000), "intra_step_us", "5000", "[0, 1000]"),
        bad("step-unit", _edit(CALIBRATION, "parameters.intra_step_us", "3 parsecs"), "intra_step_us", "parsecs"),
        bad("step-list", _edit(CALIBRATION, "parameters.intra_step_us", [1]), "intra_step_us", "[1]", "microseconds"),
        bad("param-typo", _edit(CALIBRATION, "parameters.intra_eff", 1), "unknown field", "'intra_eff'", "intra_efficiency"),
        bad("params-list", _edit(CALIBRATION, "parameters", [1]), "parameters", "[1]", "mapping"),
        bad("field-typo", _edit(CALIBRATION, "noeds", 2), "unknown field", "'noeds'", "preset, nodes"),
        bad("version", _edit(CALIBRATION, "collsim_calibration", 2), "collsim_calibration", "2", "expected 1"),
        bad("preset-unknown", _edit(CALIBRATION, "preset", "h100x"), "preset", "'h100x'", "p5"),
        bad("preset-not-machine", _edit(CALIBRATION, "preset", "tpu-v4-4x4x4"), "preset", "'tpu-v4-4x4x4'", "expected one of"),
        bad("nodes-zero", _edit(CALIBRATION, "nodes", 0), "nodes", "0", "integer >= 1"),
        bad("nodes-text", _edit(CALIBRATION, "nodes", "two"), "nodes", "'two'", "integer >= 1"),
        bad("net-unknown", _edit(CALIBRATION, "net", "efa9"), "net", "'efa9'", "efa100"),
        bad("identified-bogus", _edit(CALIBRATION, "identified", ["speed"]), "identified", "speed", "intra_step_s"),
        bad("fit-list", _edit(CALIBRATION, "fit", [1]), "fit", "[1]", "mapping"),
        bad("nccl-version-number", _edit(CALIBRATION, "nccl_version", 2.2), "nccl_version", "2.2", "'2.20.3'"),
        bad("nccl-version-old", _edit(CALIBRATION, "nccl_version", "2.3.1"), "nccl-version", "'2.3.1'", "2.19 or later"),
        bad("nccl-version-text", _edit(CALIBRATION, "nccl_version", "newest"), "nccl-version", "'newest'", "MAJOR.MINOR"),
        bad("spec-option", CALIBRATION, "unknown option", "'gpus'", spec="c.yaml:gpus=4"),
        bad("spec-nodes-text", CALIBRATION, "nodes", "x", spec="c.yaml:nodes=x"),
        bad("single-node-preset", _edit(CALIBRATION, "preset", "rtx4090-pcie"), "nodes", spec="c.yaml:nodes=2"),
        bad("topology-with-options", TOPOLOGY, "topology", "t.yaml:nodes=2", "calibration file", name="t.yaml",
            spec="t.yaml:nodes=2"),
    ]


CASES = {
    "topology file (YAML/JSON)": _topology_cases() + _spec_cases(),
    "calibration file": _calibration_cases(),
    "link profile": _profile_cases(),
    "nccl-tests log": _log_cases(),
    "MSCCL XML": _msccl_cases(),
    "measured JSON": _measured_cases(),
    "program file": _program_cases() + _program_cases("run-program"),
}
ALL = [case for cases in CASES.values() for case in cases]


def test_case_ids_are_unique_and_there_are_enough():
    ids = [case.id for case in ALL]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    assert len(ALL) >= 120


def test_counts_per_file_format():
    counts = {fmt: len(cases) for fmt, cases in CASES.items()}
    print("\nbad-input cases per file format:")
    for fmt, n in counts.items():
        print(f"  {fmt:28s} {n:4d}")
    print(f"  {'total':28s} {sum(counts.values()):4d}")
    assert all(n >= 15 for fmt, n in counts.items() if fmt != "program file"), counts


@pytest.mark.parametrize("case", ALL, ids=[case.id for case in ALL])
def test_bad_file(case, tmp_path):
    run_case(case, tmp_path)


GOOD_FILES = [
    (TOPO_SHOW + ["t.yaml"], {"t.yaml": _yaml(TOPOLOGY)}),
    ([*SIMULATE, "--topology", "t.json"], {"t.json": json.dumps(TOPOLOGY)}),
    ([*PROFILE_RUN, "p.yaml"], {"p.yaml": _yaml(PROFILE)}),
    ([*PROFILE_RUN, "p.json"], {"p.json": json.dumps(PROFILE)}),
    ([*PROFILE_RUN, "p.yaml"], {"p.yaml": _yaml(_edit(PROFILE, "segments.0.bandwidth_Bps", float("inf")))}),  # a flat segment
    ([*FIT, "l.txt"], {"l.txt": LOG}),
    ([*FIT, "l.txt"], {"l.txt": (DATA / "nccl-tests" / "17_b200_4node_32gpu_allreduce_torchbench.txt").read_text()}),
    ([*PREDICT_CAL, "c.yaml"], {"c.yaml": _yaml(CALIBRATION)}),
    ([*PREDICT_CAL, "c.json:nodes=2"], {"c.json": json.dumps(CALIBRATION)}),
    ([*PREDICT_CAL, "c.yaml"], {"c.yaml": _yaml(_edit(CALIBRATION, "parameters.intra_step_us", "3us"))}),  # times as written
    (["nccl-model", "--compare", "l.txt"], {"l.txt": LOG}),
    (["import-msccl", "a.xml", "--check"], {"a.xml": XML}),
    (["import-msccl", "a.xml", "--check"], {"a.xml": TINY_XML}),
    ([*COMPARE, "m.json"], {"m.json": json.dumps(MEASURED)}),
    (["lint-program", "p.yaml"], {"p.yaml": PROGRAM}),
    (["run-program", "p.yaml"], {"p.yaml": PROGRAM}),
    ([*COMPARE, "m.json"], {"m.json": json.dumps(_edit(MEASURED, "records.0.bytes", "64KiB"))}),  # sizes as people write them
]


@pytest.mark.parametrize("argv, files", GOOD_FILES, ids=[f"{a[0]}-{next(iter(f))}" for a, f in GOOD_FILES])
def test_well_formed_bases_are_accepted(argv, files, tmp_path):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    result = run_cli(argv, tmp_path)
    assert result.status == 0, result.stderr
