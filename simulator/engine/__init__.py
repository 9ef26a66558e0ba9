"""The discrete-event engine: runs a schedule on a topology with simpy and returns a Trace.

Parts, each on its own: options (EngineOptions and checks), messages (per-message regimes by size),
loop (simpy through its public API), ports (send/receive ports and the ready-queue matching),
maxmin (max-min fair rates, a pure function), flows (flows in flight and their rates), stats
(what a run records for the Trace), deadlock (who waits for what), run (simulate: the wiring).
"""

from .deadlock import DeadlockError, deadlock_report, format_deadlock
from .maxmin import max_min_rates
from .messages import MessageModel, Regime
from .options import EngineOptions
from .run import simulate

__all__ = ["DeadlockError", "EngineOptions", "MessageModel", "Regime", "deadlock_report", "format_deadlock",
           "max_min_rates", "simulate"]
