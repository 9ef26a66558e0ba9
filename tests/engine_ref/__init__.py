"""The engine as it was before issue 9 (float seconds, one max-min per event), frozen as the regression reference.

`simulate` here is the old simulator.engine.simulate verbatim (same EngineOptions, Trace and deadlock report);
tests/simulator/test_engine_scale_battery.py and benchmarks/engine_scale.py compare the current engine with it.
"""

from .run import simulate

__all__ = ["simulate"]
