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

The numpy check proves the data movement for any p and group dividing p. Not yet timed by
`collsim predict` (the engine would need a view in which the IB switch is a device, as
simulator/nccl/nvls.py's `switch_view` does for the NVSwitch) and not a registered algorithm, for
the reasons simulator/nccl/nvls.py gives.
"""

from __future__ import annotations

from ..collective import Collective
from ..errors import CollsimError
from ..schedule import Piece, Schedule, ScheduleBuilder, region


def _inside_nodes(b: ScheduleBuilder, nodes: int, group: int, shards, gather: bool) -> None:
    """Direct reduce-scatter (GPU g of a node ends with shard g summed over the node) or direct allgather, per node."""
    for k in range(nodes):
        for g, (off, n) in enumerate(shards):
            for h in range(group):
                if h == g:
                    continue
                if gather:
                    b.send(k * group + g, k * group + h, region("out", off, n), step=4)
                else:
                    b.reduce(k * group + h, k * group + g, "out", off, n, step=0)


def _through_switch(b: ScheduleBuilder, nodes: int, group: int, shards, count: int, sw: int) -> None:
    """GPU g of every node sends shard g to the switch (slot per node), which sums the slots and returns the sum."""
    for g, (off, n) in enumerate(shards):
        for k in range(nodes):
            b.send(k * group + g, sw, Piece("out", off, "scratch", k * count + off, n), step=1)
        for k in range(1, nodes):
            b.send(sw, sw, Piece("scratch", k * count + off, "scratch", off, n), reduce=True, step=2)
        for k in range(nodes):
            b.send(sw, k * group + g, Piece("scratch", off, "out", off, n), step=3)


def node_shards(coll: Collective, group: int, name: str) -> list[tuple[int, int]]:
    """Check that `coll` is an allreduce over nodes of `group` GPUs; (offset, count) of the shard each GPU of a node heads."""
    if coll.op != "allreduce":
        raise CollsimError(f"op: {name} is modelled for allreduce; not {coll.op}")
    if isinstance(group, bool) or not isinstance(group, int) or group < 1 or coll.ranks % group:
        raise CollsimError(f"group: {group!r} GPUs per node; expected an integer >= 1 that divides the {coll.ranks} ranks")
    count = coll.count
    return [(count * g // group, count * (g + 1) // group - count * g // group) for g in range(group)]


def collnet_allreduce(coll: Collective, group: int) -> Schedule:
    """CollNet Direct allreduce of `coll` over nodes of `group` GPUs, the network switch as helper rank p."""
    shards = node_shards(coll, group, "CollNet")
    p, count = coll.ranks, coll.count
    nodes = p // group
    b = ScheduleBuilder(coll, "collnet", {"group": group})
    if p > 1 and count > 0:
        b.use_scratch(nodes * count)  # slot k: node k's partial sum of a shard
        _inside_nodes(b, nodes, group, shards, gather=False)
        if nodes > 1:
            _through_switch(b, nodes, group, shards, count, sw=p)
        _inside_nodes(b, nodes, group, shards, gather=True)
    schedule = b.build()
    schedule.helpers = 1
    return schedule
