"""The algorithm library: one module per family, each registering builders by (op, name).

A new algorithm is one new file in this folder that calls `register`: every module here is
imported, the families below first (the order `collsim algorithms` lists them in), then any other
module in name order. The reference forms that docstrings name `X_inferred` (the same messages through the
inferring ScheduleBuilder, which the equivalence tests compare against) live in tests/reference_algorithms.py.
"""

import importlib
import pkgutil

# isort: off
from . import ring, recursive, tree, bruck, direct, hierarchical  # noqa: F401
# isort: on
from .registry import REGISTRY, AlgorithmSpec, Param, all_specs, build_schedule, get, names_for

_SUPPORT = {"registry", "forms", "phases", "chunks", "columns"}  # shared code, not families
for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if _module not in _SUPPORT:
        importlib.import_module(f"{__name__}.{_module}")

__all__ = ["REGISTRY", "AlgorithmSpec", "Param", "all_specs", "build_schedule", "get", "names_for"]
