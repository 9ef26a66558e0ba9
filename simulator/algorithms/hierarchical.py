"""Two-level allreduce: ring reduce-scatter inside groups, ring allreduce across groups, ring allgather inside.

Groups are consecutive ranks (as GPUs of a node are): group i is ranks i*g .. i*g + g - 1.
"""

from __future__ import annotations

from ..collective import Collective, offsets_of, split_counts
from ..errors import CollsimError
from ..schedule import Schedule, ScheduleBuilder
from .phases import block_segs, ring_allgather, ring_reduce_scatter
from .registry import Param, register

MAX_DEFAULT_GROUP = 8
GROUP = Param("group", None, f"ranks per group (a divisor of p; default: the largest divisor <= {MAX_DEFAULT_GROUP})")


def default_group(p: int) -> int:
    """The largest divisor of p that is at most 8 (GPUs per node on most machines)."""
    return max(d for d in range(1, min(p, MAX_DEFAULT_GROUP) + 1) if p % d == 0)


def resolve_group(p: int, group: int | None) -> int:
    """The group size to use, or an error naming the divisors of p."""
    if group is None:
        return default_group(p)
    if group < 1 or p % group:
        divisors = ", ".join(str(d) for d in range(1, p + 1) if p % d == 0)
        raise CollsimError(f"group: {group} ranks per group does not divide {p} ranks; expected one of {divisors}")
    return group


@register("allreduce", "hierarchical",
          "ring reduce-scatter in groups of g, ring allreduce across groups on n/g, ring allgather in groups",
          (GROUP,), ranks_rule="any p >= 1; group must divide p")
def allreduce_hierarchical(coll: Collective, group: int | None = None) -> Schedule:
    p = coll.ranks
    g = resolve_group(p, group)
    b = ScheduleBuilder(coll, "hierarchical", {"group": g})
    groups = [list(range(i * g, (i + 1) * g)) for i in range(p // g)]
    segs = block_segs(offsets_of(split_counts(coll.count, g)))
    step = 0
    for members in groups:
        step = ring_reduce_scatter(b, members, segs)
    across = [[members[j] for members in groups] for j in range(g)]
    sub = [block_segs(offsets_of(split_counts(segs[j][1], len(groups))) + segs[j][0]) for j in range(g)]
    for j in range(g):
        after_rs = ring_reduce_scatter(b, across[j], sub[j], step=step)
    for j in range(g):
        after_ag = ring_allgather(b, across[j], sub[j], step=after_rs)
    for members in groups:
        ring_allgather(b, members, segs, step=after_ag)
    return b.build()
