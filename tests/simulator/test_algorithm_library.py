"""The library's contents: required names, NCCL's trees, group sizes, rooted ops on every root."""

import pytest

from simulator.algorithms import build_schedule, names_for
from simulator.algorithms.hierarchical import default_group
from simulator.algorithms.tree import dtree_parents
from simulator.collective import Collective
from simulator.errors import CollsimError
from simulator.semantics import check

REQUIRED = {
    "allreduce": ["ring", "recursive_doubling", "rabenseifner", "binomial", "double_binary_tree", "direct", "hierarchical"],
    "allgather": ["ring", "recursive_doubling", "bruck", "direct"],
    "reduce_scatter": ["ring", "recursive_halving", "direct"],
    "broadcast": ["binomial", "pipelined_chain", "scatter_allgather"],
    "reduce": ["binomial", "rabenseifner"],
    "alltoall": ["direct", "bruck"],
    "gather": ["binomial", "direct"],
    "scatter": ["binomial", "direct"],
}


def test_required_algorithms_are_registered():
    for op, names in REQUIRED.items():
        assert set(names) <= set(names_for(op)), f"{op}: missing {set(names) - set(names_for(op))}"


def _parents(edges: dict[int, tuple[int, ...]], p: int) -> list[int]:
    parent = [-1] * p
    for up, children in edges.items():
        for c in children:
            parent[c] = up
    return parent


def test_double_binary_tree_matches_nccl_drawings():
    """The two drawings in the comment of NCCL's src/graph/trees.cc (p = 12 mirrored, p = 13 shifted)."""
    first12 = _parents({0: (8,), 8: (4, 10), 4: (2, 6), 2: (1, 3), 6: (5, 7), 10: (9, 11)}, 12)
    second12 = _parents({11: (3,), 3: (1, 7), 1: (0, 2), 7: (5, 9), 5: (4, 6), 9: (8, 10)}, 12)
    assert dtree_parents(12) == (first12, second12)
    first13 = _parents({0: (8,), 8: (4, 12), 4: (2, 6), 2: (1, 3), 6: (5, 7), 12: (10,), 10: (9, 11)}, 13)
    second13 = _parents({1: (9,), 9: (5, 0), 5: (3, 7), 3: (2, 4), 7: (6, 8), 0: (11,), 11: (10, 12)}, 13)
    assert dtree_parents(13) == (first13, second13)


def test_double_binary_tree_is_two_spanning_trees():
    for p in range(2, 70):
        for parent in dtree_parents(p):
            assert parent.count(-1) == 1
            for r in range(p):  # every rank reaches the root
                seen, u = 0, r
                while parent[u] >= 0 and seen <= p:
                    u, seen = parent[u], seen + 1
                assert parent[u] == -1 and seen <= p


def test_double_binary_tree_even_p_interior_once():
    """For even p (mirror), no rank is interior in both trees (NCCL's reason for two trees)."""
    for p in range(4, 66, 2):
        first, second = dtree_parents(p)
        interior = [set(first) - {-1}, set(second) - {-1}]
        assert not interior[0] & interior[1], p


def test_hierarchical_group_default_and_errors():
    assert [default_group(p) for p in (1, 2, 7, 8, 12, 16, 24, 11, 18)] == [1, 2, 7, 8, 6, 8, 8, 1, 6]
    s = build_schedule(Collective("allreduce", 12, 1200, "int8"), "hierarchical")
    assert (s.sends_per_rank() == 2 * (6 - 1) + 2 * (2 - 1)).all()  # groups of 6, 2 groups
    assert s.params == {"group": 6}
    with pytest.raises(CollsimError, match=r"group: 5 .* does not divide 12 ranks; expected one of 1, 2, 3, 4, 6, 12"):
        build_schedule(Collective("allreduce", 12, 1200, "int8"), "hierarchical", group=5)
    with pytest.raises(CollsimError, match="group"):
        build_schedule(Collective("allreduce", 4, 1200, "int8"), "hierarchical", group=8)


@pytest.mark.parametrize("op", ["broadcast", "reduce", "gather", "scatter"])
def test_rooted_ops_on_every_root(op):
    for name in names_for(op):
        for p in (1, 2, 3, 5, 6, 8, 11):
            for root in range(p):
                coll = Collective(op, p, 8 * p + 3, "int8", root=root)
                result = check(build_schedule(coll, name, **({"chunks": 3} if name == "pipelined_chain" else {})))
                assert result.ok, result.message

