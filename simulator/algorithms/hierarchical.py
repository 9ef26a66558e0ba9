"""Two-level allreduce: ring reduce-scatter inside groups, ring allreduce across groups, ring allgather inside.

Groups are consecutive ranks (as GPUs of a node are): group i is ranks i*g .. i*g + g - 1.
"""

from __future__ import annotations

from ..collective import Collective, offsets_of, split_counts
from ..errors import CollsimError
from ..schedule import Schedule, ScheduleBuilder
from .forms import LinkModel
from .phases import block_segs
from .registry import Param, register
from .ring import ring_allgather, ring_reduce_scatter

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


# Closed form (REFERENCE.md, hierarchical allreduce with alpha_in = alpha_out): G ranks per group,
# N = p / G groups: ring reduce-scatter in the group on n, ring allreduce across groups on n/G, ring
# allgather in the group. Each ring step waits for the previous reduction, so (derived, exact)
# 2 (G-1)(alpha + n/G beta) + (G-1)/G n gamma + 2 (N-1)(alpha + n/(G N) beta) + (N-1)/(G N) n gamma.

def _cost(p, n, m: LinkModel, group=None):
    g = resolve_group(p, group)
    groups = p // g
    inner = 2 * (g - 1) * (m.alpha + n / g * m.beta) + (g - 1) / g * n * m.gamma
    outer = 2 * (groups - 1) * (m.alpha + n / p * m.beta) + (groups - 1) / p * n * m.gamma
    return inner + outer


@register("allreduce", "hierarchical",
          "ring reduce-scatter in groups of g, ring allreduce across groups on n/g, ring allgather in groups",
          (GROUP,), ranks_rule="any p >= 1; group must divide p", cost=_cost)
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
