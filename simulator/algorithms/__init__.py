"""The algorithm library: one module per family, each registering builders by (op, name)."""

from . import bruck, direct, hierarchical, recursive, ring, tree  # noqa: F401  (modules register themselves on import)
from .registry import REGISTRY, AlgorithmSpec, Param, all_specs, build_schedule, get, names_for

__all__ = ["REGISTRY", "AlgorithmSpec", "Param", "all_specs", "build_schedule", "get", "names_for"]
