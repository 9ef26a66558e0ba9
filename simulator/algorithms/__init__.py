"""The algorithm library: one module per family, each registering builders by (op, name)."""

# isort: off
# Families register themselves on import; this order is the order `collsim algorithms` lists them in.
from . import ring, recursive, tree, bruck, direct, hierarchical  # noqa: F401
# isort: on
from .registry import REGISTRY, AlgorithmSpec, Param, all_specs, build_schedule, get, names_for

__all__ = ["REGISTRY", "AlgorithmSpec", "Param", "all_specs", "build_schedule", "get", "names_for"]
