"""`collsim import-msccl` and `collsim export-msccl`: MSCCL algorithm XML in and out."""

from __future__ import annotations

import argparse
import sys

from simulator.algorithms import build_schedule
from simulator.collective import DTYPES, Collective
from simulator.engine import simulate
from simulator.errors import CollsimError
from simulator.fileio import atomic_write, say_written
from simulator.formats.msccl import (
    PLACEMENTS,
    check_msccl,
    export_msccl,
    import_msccl,
    read_msccl,
    roundtrip,
)
from simulator.render import table
from simulator.topology import parse_topology
from simulator.units import SIZE_HELP, format_size, parse_size

from ..args import SIZE_MEANING, add_algo_params, add_op, algo_params
from ..limits import Footprint
from ..output import emit_json

PLACEMENT_CHOICES = ("auto",) + PLACEMENTS


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "import-msccl", help="read an MSCCL algorithm XML file as a collsim schedule",
        description="Read an MSCCL algorithm (<algo>/<gpu>/<tb>/<step> XML, as msccl-tools writes and MSCCL's executor "
                    "runs) into a collsim schedule: sends are matched with receives per connection and channel, "
                    "threadblock order and depid/deps become dependencies. Prints what the file does; --check proves "
                    "every placement the file declares right on numpy buffers; --simulate runs it on a topology.",
        epilog="examples: collsim import-msccl allreduce.xml --check\n"
               "          collsim import-msccl allgather.xml --size 1MiB --simulate --topology switch:8")
    p.add_argument("file", metavar="FILE", help="MSCCL XML file")
    p.add_argument("--size", metavar="SIZE", help=f"{SIZE_HELP}; must cut into the file's chunks (default: the smallest such "
                                                  f"size at or above the file's minBytes, up to 1MiB). {SIZE_MEANING}")
    p.add_argument("--dtype", default="float32", help=f"element type: {', '.join(DTYPES)} (default float32)")
    p.add_argument("--placement", choices=PLACEMENT_CHOICES, default="auto",
                   help="in-place or out-of-place (default auto: out-of-place if the file allows it; --check checks every "
                        "placement the file declares)")
    p.add_argument("--check", action="store_true", help="execute on random data and check every rank's result (exit 1 on failure)")
    p.add_argument("--simulate", action="store_true", help="run the schedule on the event engine (needs --topology)")
    p.add_argument("--topology", metavar="SPEC", help="topology for --simulate, e.g. switch:8, ring:4 or a .yaml file")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_import, _footprint=Footprint())

    e = sub.add_parser(
        "export-msccl", help="write a collsim algorithm as MSCCL algorithm XML",
        description="Write any registered algorithm as MSCCL algorithm XML. The chunk is the largest piece that divides "
                    "every transfer at SIZE, so the file runs at any multiple of nchunksperloop chunks. Before writing, "
                    "the file is imported again and must give back exactly the schedule's transfers.",
        epilog="example: collsim export-msccl --op allreduce --algo ring --ranks 8 -o ring8.xml")
    add_op(e)
    e.add_argument("--algo", required=True, help="algorithm name (see collsim algorithms)")
    e.add_argument("--ranks", type=int, required=True, help="number of ranks (gpus in the file)")
    e.add_argument("--size", metavar="SIZE", help=f"{SIZE_HELP}; the schedule is built at this size and its pieces set the "
                                                  f"chunk (default: 24 x ranks^2 x chunks elements, which cuts evenly). {SIZE_MEANING}")
    e.add_argument("--dtype", default="float32", help=f"element type: {', '.join(DTYPES)} (default float32)")
    e.add_argument("--root", type=int, default=0, help="root rank for broadcast, reduce, gather, scatter (default 0)")
    add_algo_params(e)
    e.add_argument("--placement", choices=PLACEMENT_CHOICES, default="auto",
                   help="in-place or out-of-place file (default auto: in-place unless the schedule reads 'in'; alltoall out-of-place)")
    e.add_argument("--proto", default="Simple", choices=("Simple", "LL", "LL128"), help="protocol attribute (default Simple)")
    e.add_argument("--name", help="algorithm name in the file (default: the collsim algorithm name)")
    e.add_argument("-o", "--output", metavar="FILE", help="write the XML here (default: print it)")
    e.add_argument("--json", action="store_true", help="print a JSON summary (with the XML when there is no -o)")
    e.set_defaults(func=run_export, _footprint=Footprint())


def run_import(args: argparse.Namespace) -> int:
    if args.simulate and not args.topology:
        raise CollsimError("topology: --simulate needs --topology SPEC, e.g. switch:8")
    algo = read_msccl(args.file)
    size = parse_size(args.size, "size") if args.size else None
    placement = None if args.placement == "auto" else args.placement
    wanted = algo.placements if args.check and placement is None else [placement or algo.placements[0]]
    imports = [import_msccl(algo, size, args.dtype, pl) for pl in wanted]
    checks = [check_msccl(imp) for imp in imports] if args.check else []
    topology = parse_topology(args.topology) if args.simulate else None
    sims = [simulate(imp.schedule, topology) for imp in imports] if topology is not None else []
    rows = [_import_row(imp, checks[k] if checks else None, sims[k] if sims else None, args.topology) for k, imp in enumerate(imports)]
    failed = any(not c.ok for c in checks)
    if args.json:
        emit_json({"file": args.file, "name": algo.name, "op": algo.op, "coll": algo.coll, "ngpus": algo.ngpus,
                   "proto": algo.proto, "nchannels": algo.nchannels, "nchunksperloop": algo.nchunksperloop,
                   "placements": algo.placements, "min_bytes": algo.min_bytes, "max_bytes": algo.max_bytes,
                   "steps": algo.step_count(), "passed": None if not checks else not failed, "results": rows})
        return 1 if failed else 0
    _print_import(algo, imports, rows, bool(sims))
    if sims:
        print(f"simulated on {args.topology}: bandwidths in GB/s (nccl-tests definitions)")
    for c in checks:
        print(("PASS " if c.ok else "FAIL ") + c.message)
    return 1 if failed else 0


def _import_row(imp, check, trace, topology: str | None) -> dict:
    """One placement's summary: size, transfers, depth, and the check's and the simulation's outcome when asked."""
    s = imp.schedule
    row = {"placement": imp.placement, "bytes": s.collective.nbytes, "dtype": s.collective.dtype,
           "chunk_elems": imp.chunk_elems, "transfers": len(s.transfers), "network": imp.network_transfers,
           "local": len(s.transfers) - imp.network_transfers, "depth": s.num_steps,
           "bytes_sent_max": int(s.bytes_sent_per_rank().max()) if s.transfers else 0,
           "folded_copies": imp.folded_copies, "buffered_sends": imp.buffered_sends, "snapshots": imp.snapshots}
    if check is not None:
        row.update(check_ok=check.ok, check=check.message)
    if trace is not None:
        row.update(time_s=trace.time, algbw_GBps=trace.algbw / 1e9, busbw_GBps=trace.busbw / 1e9, topology=topology)
    return row


def _print_import(algo, imports, rows: list[dict], simulated: bool) -> None:
    """The file's header line, one table row per placement, and what the import had to fold or buffer."""
    print(f"# {algo.source}: {algo.name!r}, {algo.coll} on {algo.ngpus} gpus, proto {algo.proto}, {algo.nchannels} channels, "
          f"{algo.nchunksperloop} chunks per loop, {algo.step_count()} steps, declares {' and '.join(algo.placements)}")
    headers = ["placement", "size", "chunk(el)", "transfers", "network", "local", "depth", "max sent/rank"]
    table_rows = [[r["placement"], format_size(r["bytes"]), r["chunk_elems"], r["transfers"], r["network"], r["local"],
                   r["depth"], format_size(r["bytes_sent_max"])] for r in rows]
    if simulated:
        headers += ["time(us)", "algbw", "busbw"]
        for tr_row, r in zip(table_rows, rows):
            tr_row += [r["time_s"] * 1e6, r["algbw_GBps"], r["busbw_GBps"]]
    print(table(headers, table_rows, align="lrrrrrrr" + "rrr" * simulated))
    for imp in imports:
        notes = []
        if imp.folded_copies:
            notes.append(f"{imp.folded_copies} local copies only rebuild the in-place view collsim's output starts with "
                         f"and were folded into it")
        if imp.buffered_sends:
            notes.append(f"{imp.buffered_sends} sends had to wait in their connection buffer"
                         + (f", {imp.snapshots} of them kept as snapshots in extra scratch" if imp.snapshots else ""))
        if notes:
            print(f"{imp.placement}: " + "; ".join(notes))


def run_export(args: argparse.Namespace) -> int:
    chunks = getattr(args, "chunks", None) or 1
    probe = Collective(args.op, args.ranks, 0, args.dtype, args.root)
    size = parse_size(args.size, "size") if args.size else 24 * args.ranks * args.ranks * chunks * probe.elem_size
    coll = Collective(args.op, args.ranks, size, args.dtype, args.root)
    schedule = build_schedule(coll, args.algo, **algo_params(args))
    exported = export_msccl(schedule, args.placement, args.proto, args.name)
    roundtrip(schedule, exported)
    if args.output:
        try:
            atomic_write(args.output, exported.xml)
        except OSError as exc:
            raise CollsimError(f"output: cannot write {args.output!r}: {exc.strerror or exc}; expected a writable file path") from None
    summary = {"op": coll.op, "algorithm": args.algo, "ranks": coll.ranks, "bytes": coll.nbytes, "dtype": coll.dtype,
               "placement": exported.placement, "nchunksperloop": exported.nchunksperloop,
               "chunk_bytes": exported.chunk_elems * coll.elem_size, "threadblocks": exported.threadblocks,
               "steps": exported.steps, "nops": exported.nops, "dropped_deps": exported.dropped_deps,
               "warnings": exported.warnings, "file": args.output}
    if args.json:
        if not args.output:
            summary["xml"] = exported.xml
        emit_json(summary)
        return 0
    if not args.output:
        sys.stdout.write(exported.xml)
    lines = [f"{'wrote ' + args.output if args.output else 'exported'}: {args.algo} {coll.describe()}, {exported.placement}, "
             f"{exported.nchunksperloop} chunks per loop of {exported.chunk_elems * coll.elem_size} B at this size, "
             f"{exported.threadblocks} threadblocks, {exported.steps} steps; importing it gives back the same transfers"]
    lines += [f"warning: {w} (collsim reads the file regardless)" for w in exported.warnings]
    for line in lines:  # with --output, on stdout once the file is in place; without, on stderr beside the XML
        if args.output:
            say_written(line)
        else:
            print(line, file=sys.stderr)
    return 0
