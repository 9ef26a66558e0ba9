"""Fewer ranks than GPUs on each node of a preset machine (`collsim predict --ranks-per-node K`).

Rank r runs on node r // K, on that node's GPU r % K (GPUs 0..K-1 of every node; the others stay idle),
so every rank keeps its own GPU's NIC rail. NCCL then sees K GPUs per node and ranks / K nodes; at K = 1
its tuning model enables PAT for allgather and reduce-scatter (tuning.cc ncclPatEnable). A node's NICs
that serve none of the K GPUs carry nothing: NCCL's graph (nics_used) counts only the K GPUs' rails.
"""

from __future__ import annotations

from ..errors import CollsimError
from ..topology.model import Topology

FIELD = "ranks-per-node"


def parse_ranks_per_node(text: str | int | None) -> int | None:
    """The option's value as an integer >= 1 (None when not given); a clear error otherwise."""
    if text is None:
        return None
    if isinstance(text, bool):
        raise CollsimError(f"{FIELD}: {text!r} is not a count; expected an integer >= 1 (ranks on each node)")
    try:
        k = int(str(text).strip())
    except ValueError:
        raise CollsimError(f"{FIELD}: {text!r} is not an integer; expected an integer >= 1 (ranks on each node, "
                           "at most the node's GPUs)") from None
    if k < 1:
        raise CollsimError(f"{FIELD}: {k} ranks per node; expected an integer >= 1 (ranks on each node, at most the "
                           "node's GPUs)")
    return k


def check_ranks_per_node(k: int, gpus_per_node: int, ranks: int, nodes: int, machine: str) -> None:
    """Raise unless K ranks on each node fit the machine: 1 <= K <= its GPUs per node, K divides the ranks, enough nodes."""
    _check_count(k)
    if k > gpus_per_node:
        raise CollsimError(f"{FIELD}: {k} ranks per node, but a {machine} node has {gpus_per_node} GPUs; expected 1 to "
                           f"{gpus_per_node}")
    if ranks % k:
        fits = ", ".join(str(d) for d in range(1, gpus_per_node + 1) if ranks % d == 0)
        raise CollsimError(f"{FIELD}: {k} does not divide {ranks} ranks; expected a divisor of the ranks: {fits}")
    if ranks // k > nodes:
        raise CollsimError(f"{FIELD}: {ranks} ranks at {k} per node need {ranks // k} nodes, but the {machine} preset "
                           f"has {nodes}; expected --ranks <= {nodes * k} or more nodes ({machine}:nodes=N)")


def _check_count(k) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise CollsimError(f"{FIELD}: {k!r} is not a count; expected an integer >= 1 (ranks on each node)")


def per_node_placement(k: int, gpus_per_node: int, devices: int) -> list[int]:
    """Device of each rank (rank r on GPU r % K of node r // K), then the unused devices: a permutation of all devices."""
    used = [(r // k) * gpus_per_node + r % k for r in range(devices // gpus_per_node * k)]
    taken = set(used)
    return used + [d for d in range(devices) if d not in taken]


def place_per_node(topology: Topology, k: int, gpus_per_node: int) -> Topology:
    """A copy of a preset machine with K ranks per node."""
    return topology.with_placement(per_node_placement(k, gpus_per_node, topology.num_devices))


def nics_used(nics_per_node: int, gpus_per_node: int, k: int) -> int:
    """NICs serving GPUs 0..K-1 of a node: GPUs share NICs evenly (p4de: 2 per NIC), or each has nics / G of them."""
    share, bond = max(1, gpus_per_node // nics_per_node), max(1, nics_per_node // gpus_per_node)
    return -(-k // share) * bond


def default_ranks(topology: Topology, k: int | None) -> int:
    """Ranks when none are asked for: every GPU, or K on every node of a preset."""
    if k is None or topology.origin is None:
        return topology.num_devices
    _check_count(k)
    return topology.origin.nodes * k
