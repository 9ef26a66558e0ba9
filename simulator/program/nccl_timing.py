"""A program's collective call timed as NCCL runs it: `simulator.nccl.predict.predict` on the machine preset.

A call of allreduce, allgather or reduce_scatter is timed this way when NCCL's model knows the machine
(`machine.knows`) and its members map onto one of predict's placements; the machine (simulator/nccl/machine.py
NcclMachine) is resolved once per run (`nccl_machine`):

- all members on one node: predict with `ranks=len(members)` (GPUs 0..n-1 of one node);
- K members on each of N nodes: predict with `ranks_per_node=K`, ranks K x N (rank r on GPU r % K of node r // K).

The members' own GPUs are taken as equivalent to those by the node's symmetry: every node of a preset is built
alike (the members' nodes stand for nodes 0..N-1; where they sit in the fabric, one leaf switch or several, is not
kept, as NCCL's model does not see it either), and on an NVSwitch node (every NVLink preset is one) any K GPUs reach
each other alike. Across nodes the NICs also count: a set of
GPUs is equivalent to GPUs 0..K-1 only if it spreads over the node's NICs as they do (the same numbers of members
behind each NIC used). On p4de (two GPUs per NIC) members on GPUs {0, 2, 4, 6} use four NICs where GPUs 0..3 use
two, so such a call is not timed by NCCL's model; {0, 1, 2, 3} and {4, 5, 6, 7} are. On nodes without an NVSwitch
(the PCIe presets) only GPUs 0..K-1 themselves qualify.

Sizes: a program's call and predict both take nccl-tests' size meaning (simulator/collective.py: the per-rank
buffer for allreduce, the whole buffer, count x element size x ranks, for allgather and reduce_scatter), so the
call's bytes are passed unchanged; a 0-byte call takes 0 s, as NCCL discards a collective of count 0 (src/enqueue.cc,
taskAppend). Anything else (other ops, irregular member sets, more than predict.MAX_GPUS
members, a machine or a size predict refuses) returns None and is timed on the links (isolated.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import NamedTuple

from ..errors import CollsimError
from ..nccl import predict as nccl
from ..nccl.machine import NcclMachine, knows, resolve
from ..topology import parse_topology
from ..topology.model import Topology
from .model import Op

TIMINGS = ("links", "nccl")
MEASURED = "measured"  # run-program only: each call takes the `time` its program gives (an imported trace's)
AUTO = "auto"  # no timing asked for: default_timing decides (collsim whatif, scale and the What-if page)


class TimingChoice(NamedTuple):
    """The timing a run takes ('links' or 'nccl') and why, in one line for the output."""

    timing: str
    why: str


def forced_algorithms(algorithms: dict[str, str] | None) -> list[str]:
    """OP=NAME for each algorithm forced on an op NCCL picks its own algorithm for (nccl.OPS)."""
    return [f"{op}={name}" for op, name in sorted((algorithms or {}).items()) if op in nccl.OPS]


def nccl_conflicts(mode: str = "auto", algorithms: dict[str, str] | None = None) -> list[str]:
    """The options given that NCCL timing refuses (check_timing): '--mode exact', '--algo OP=NAME' on its ops."""
    return (["--mode exact"] if mode == "exact" else []) + [f"--algo {a}" for a in forced_algorithms(algorithms)]


def default_timing(machines: Sequence[str], given: Sequence[str] = (),
                   parse: Callable[[str], Topology] | None = None) -> TimingChoice:
    """The timing of a run that asks for none: 'nccl' when NCCL's model knows every machine (a preset with a Machine
    record, as `collsim predict --preset` takes) and no option NCCL timing refuses was given (`given`, e.g.
    nccl_conflicts' list), else 'links'. `parse` builds a machine from its spec (default parse_topology; the app
    passes its bounded builder): a spec it refuses counts as unknown, and the run reports the error itself.
    The one rule behind `collsim whatif`, `collsim scale` and the What-if page's default."""
    if given:
        return TimingChoice("links", f"links: {', '.join(given)} given, which NCCL timing refuses (without it, NCCL "
                                     "timing is the default where NCCL's model knows every machine)")
    unknown = next((m for m in machines if not _knows(m, parse)), None)
    if not machines or unknown is not None:
        return TimingChoice("links", f"links: {unknown!r} is not a preset NCCL's model knows" if unknown is not None
                            else "links: no machine given")
    return TimingChoice("nccl", "nccl (the default where NCCL's model knows every machine; --timing links for "
                                "collsim's algorithms on the links)")


def choose_timing(requested: str, machines: Sequence[str], given: Sequence[str] = (),
                  parse: Callable[[str], Topology] | None = None) -> TimingChoice:
    """The timing asked for (--timing links|nccl), or default_timing's for AUTO; an unknown name is refused."""
    if requested == AUTO:
        return default_timing(machines, given, parse)
    if requested not in TIMINGS:
        raise CollsimError(f"timing: {requested!r}; expected one of {', '.join((AUTO, *TIMINGS))}")
    return TimingChoice(requested, f"{requested} (--timing {requested})")


def _knows(spec: str, parse: Callable[[str], Topology] | None) -> bool:
    try:
        return knows((parse or parse_topology)(spec))
    except CollsimError:
        return False


def check_timing(timing: str, mode: str = "isolated", algorithms: dict[str, str] | None = None) -> str:
    """The run's mode under this timing: 'nccl' times calls alone, so 'auto' runs isolated and 'exact' is refused;
    it also refuses an algorithm forced (OP=NAME in `algorithms`) on an op NCCL picks its own algorithm for."""
    if timing not in (*TIMINGS, MEASURED):
        raise CollsimError(f"timing: {timing!r}; expected one of {', '.join((*TIMINGS, MEASURED))}")
    if timing == MEASURED:
        if mode == "exact":
            raise CollsimError("mode: 'exact' with timing 'measured': a measured call is one step of its time; expected "
                               "mode isolated or auto, or timing links")
        return "isolated"
    if timing != "nccl":
        return mode
    if mode == "exact":
        raise CollsimError("mode: 'exact' with timing 'nccl': NCCL timing times each call alone; expected mode "
                           "isolated or auto (which then runs isolated), or timing links")
    forced = forced_algorithms(algorithms)
    if forced:
        raise CollsimError(f"algo: {', '.join(forced)} with timing 'nccl': NCCL picks its own algorithm for "
                           f"{', '.join(nccl.OPS)}; expected no --algo for those ops, or timing links")
    return "isolated" if mode == "auto" else mode


def nccl_machine(topology: Topology) -> NcclMachine | None:
    """NCCL's machine of a run's topology, or None where NCCL's model does not know it (nothing is timed by it)."""
    return resolve(topology) if knows(topology) else None


def placement(machine: NcclMachine | None, op: Op, members: tuple[int, ...]) -> tuple[int, int | None] | None:
    """(ranks, ranks_per_node) of predict for this call (ranks_per_node None: one node, or every GPU of each node), or
    None when predict does not cover it (another op, no machine NCCL's model knows, members that fit none of its
    placements)."""
    if op.op not in nccl.OPS or machine is None or not 2 <= len(members) <= nccl.MAX_GPUS:
        return None
    preset = machine.preset
    per_node = preset.gpus_per_node
    nodes: dict[int, list[int]] = {}
    for m in members:
        device = machine.topology.placement[m]
        nodes.setdefault(device // per_node, []).append(device % per_node)
    k = len(members) // len(nodes)
    if any(len(local) != k for local in nodes.values()):
        return None
    ideal = list(range(k))
    if preset.machine.link != "nvlink":  # no NVSwitch: only the GPUs predict places on
        fits = all(sorted(local) == ideal for local in nodes.values())
    elif len(nodes) == 1:
        fits = True
    else:
        fits = all(_per_nic(local, preset) == _per_nic(ideal, preset) for local in nodes.values())
    if not fits:
        return None
    if len(nodes) == 1:
        return k, None
    # every GPU of its nodes: predict's own placement (the same times as K per node), so that on a whole machine it
    # may time the call on a few nodes and scale it (simulator/nccl/symmetry.py), as `collsim predict` does
    return len(members), None if k == per_node else k


def _per_nic(local: list[int], preset) -> list[int]:
    """How many of these GPUs of a node sit behind each NIC they use (sorted): GPU g uses NIC g // (GPUs per NIC)."""
    nics = preset.machine.nics_per_node or preset.gpus_per_node
    share = max(1, preset.gpus_per_node // nics)
    return sorted(Counter(g // share for g in local).values())


def nccl_time(machine: NcclMachine, op: Op, placed: tuple[int, int | None]) -> tuple[float, str] | None:
    """(seconds, 'nccl ALGO/PROTO') of the call as predict times it at `placement`'s answer, or None where predict
    refuses it. A 0-byte call takes 0 s ('nccl discarded'): NCCL discards a collective of count 0 before planning or
    launching it (src/enqueue.cc, taskAppend: "Empty collectives can be discarded."; predict.DISCARDED)."""
    ranks, per_node = placed
    try:
        best = nccl.predict(machine, op.op, [int(op.nbytes or 0)], ranks=ranks, dtype=op.dtype,
                            ranks_per_node=per_node)[0]
    except CollsimError:  # a size or dtype predict refuses: timed on the links instead
        return None
    if best.algorithm == nccl.DISCARDED:
        return best.time_s, f"nccl {nccl.DISCARDED}"
    return best.time_s, f"nccl {best.nccl_algo}/{best.proto}"
