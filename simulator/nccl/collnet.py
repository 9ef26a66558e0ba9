"""CollNet (IB SHARP) allreduce across nodes: the network switch is a helper rank that reduces between nodes.

NCCL's CollNet Direct (NVIDIA/nccl src/device/all_reduce.h, its NCCL_ALGO_COLLNET_DIRECT kernel)
reduces inside each node, hands one shard per GPU to the SHARP-capable switch, which sums the
shard over the nodes in the network and returns it, then gathers inside the node again. Here,
with `group` GPUs per node (ranks k*group .. k*group+group-1 on node k) and the switch as helper
rank p (`Schedule.helpers = 1`):

1. inside each node, a direct reduce-scatter: GPU g of the node ends with shard g summed over the node;
2. GPU g of every node sends shard g to the switch (one slot per node), the switch reduces the
   slots and sends the sum back to GPU g of every node: per GPU n/group up and n/group down
   through its rail, whatever the node count (a ring across nodes moves 2 (N-1)/N of it);
3. inside each node, a direct allgather of the shards.

This module keeps what production code uses: `node_shards` (NVLS-tree's shards, simulator/nccl/nvls_tree.py).
The CollNet Direct schedule itself (proven on numpy for any p and group dividing p, not timed by `collsim predict`
and not a registered algorithm, for the reasons simulator/nccl/nvls.py gives) is test code:
tests/simulator/test_collnet.py.
"""


from __future__ import annotations

from ..collective import Collective
from ..errors import CollsimError


def node_shards(coll: Collective, group: int, name: str) -> list[tuple[int, int]]:
    """Check that `coll` is an allreduce over nodes of `group` GPUs; (offset, count) of the shard each GPU of a node heads."""
    if coll.op != "allreduce":
        raise CollsimError(f"op: {name} is modelled for allreduce; not {coll.op}")
    if isinstance(group, bool) or not isinstance(group, int) or group < 1 or coll.ranks % group:
        raise CollsimError(f"group: {group!r} GPUs per node; expected an integer >= 1 that divides the {coll.ranks} ranks")
    count = coll.count
    return [(count * g // group, count * (g + 1) // group - count * g // group) for g in range(group)]


