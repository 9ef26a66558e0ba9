"""Make SMPI reference times: every (collective, algorithm, p, bytes) case on a platform, one smpirun each.

Usage: python make_refs.py PLATFORM SENDS OUT.csv [P ...]
  PLATFORM: cluster (each host's full-duplex link to a non-blocking backbone) or ring (hosts in a
            bidirectional ring of full-duplex links, routed the shortest way round, ties forward:
            collsim's ring:P); 10 GB/s and 1 us per link.
  SENDS:    rendezvous (smpi/send-is-detached-thresh 0) or eager (SMPI's default: sends under 64 KiB detached).
Needs SimGrid 3.32's smpicc/smpirun (Debian: libsimgrid-dev); see ../README.md.
"""

from __future__ import annotations

import csv
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
BW, LAT = 1e10, 1e-6
SIZES = (1024, 65536, 1048576, 16777216)
CASES = {  # collective -> SMPI algorithms (the `pair` ones need p a power of two)
    "allreduce": ("lr", "rdb", "rab_rdb", "smp_binomial", "smp_rsag_rab"),
    "allgather": ("NTSLR", "rdb", "bruck", "pair"),
    "reduce_scatter": ("ompi_ring", "ompi_basic_recursivehalving", "mpich_rdb"),
    "bcast": ("binomial_tree", "scatter_LR_allgather", "scatter_rdb_allgather"),
    "alltoall": ("pair", "bruck"),
    "reduce": ("binomial", "rab"),
}
SMPI_KEY = {"reduce_scatter": "reduce_scatter"}  # --cfg=smpi/<key>:<algorithm>
CONFIG = ["--cfg=network/model:CM02", "--cfg=smpi/bw-factor:1", "--cfg=smpi/lat-factor:1",
          "--cfg=smpi/simulate-computation:no", "--cfg=network/crosstraffic:0", "--cfg=smpi/wtime:0",
          "--cfg=network/loopback-bw:1e18", "--cfg=network/loopback-lat:0", "--log=root.threshold:error"]
SENDS = {"rendezvous": ["--cfg=smpi/send-is-detached-thresh:0"], "eager": []}


def cluster_xml(p: int) -> str:
    return (f'<cluster id="c" prefix="h" suffix="" radical="0-{p - 1}" speed="1Gf" bw="{BW:g}Bps" lat="{LAT * 1e6:g}us" '
            'sharing_policy="SPLITDUPLEX"/>')


def ring_xml(p: int) -> str:
    hosts = "".join(f'<host id="h{i}" speed="1Gf"/>' for i in range(p))
    links = "".join(f'<link id="l{i}" bandwidth="{BW:g}Bps" latency="{LAT * 1e6:g}us" sharing_policy="SPLITDUPLEX"/>'
                    for i in range(p))  # l{i} joins h{i} and h{i+1}: UP is i -> i+1
    routes = []
    for a in range(p):
        for b in range(p):
            if a == b:
                continue
            forward = (b - a) % p
            hops = ([f'<link_ctn id="l{(a + k) % p}" direction="UP"/>' for k in range(forward)] if forward <= p - forward
                    else [f'<link_ctn id="l{(a - k - 1) % p}" direction="DOWN"/>' for k in range(p - forward)])
            routes.append(f'<route src="h{a}" dst="h{b}" symmetrical="NO">{"".join(hops)}</route>')
    return f'<zone id="z" routing="Full">{hosts}{links}{"".join(routes)}</zone>'


def platform(kind: str, p: int, folder: Path) -> tuple[Path, Path]:
    body = cluster_xml(p) if kind == "cluster" else ring_xml(p)
    xml = folder / f"{kind}{p}.xml"
    xml.write_text('<?xml version="1.0"?>\n<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
                   f'<platform version="4.1">{body}</platform>\n')
    hosts = folder / f"hosts{p}"
    hosts.write_text("".join(f"h{i}\n" for i in range(p)))
    return xml, hosts


def run(binary: Path, xml: Path, hosts: Path, p: int, sends: str, coll: str, algo: str, nbytes: int) -> float | None:
    cmd = ["smpirun", "-np", str(p), "-platform", str(xml), "-hostfile", str(hosts), *CONFIG, *SENDS[sends],
           f"--cfg=smpi/{SMPI_KEY.get(coll, coll)}:{algo}", str(binary), coll, str(nbytes)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    lines = [x for x in out.stdout.split() if x]
    if out.returncode or not lines:
        print(f"  {coll}/{algo} p={p} n={nbytes}: failed: {out.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return None
    return float(lines[-1])


def main() -> None:
    kind, sends, dest, ps = sys.argv[1], sys.argv[2], Path(sys.argv[3]), [int(x) for x in sys.argv[4:]] or [4]
    folder = Path(tempfile.mkdtemp())
    binary = folder / "coll"
    subprocess.run(["smpicc", "-O1", "-o", str(binary), str(HERE / "coll.c")], check=True)
    with open(dest, "w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(["collective", "smpi_algorithm", "p", "bytes", "platform", "sends", "bandwidth_Bps", "latency_s",
                      "simulated_seconds"])
        for p in ps:
            xml, hosts = platform(kind, p, folder)
            for coll, algos in CASES.items():
                for algo in algos:
                    for nbytes in SIZES:
                        t = run(binary, xml, hosts, p, sends, coll, algo, nbytes)
                        if t is not None:
                            out.writerow([coll, algo, p, nbytes, kind, sends, f"{BW:.0f}", f"{LAT:g}", f"{t:.12e}"])
                            handle.flush()


if __name__ == "__main__":
    main()
