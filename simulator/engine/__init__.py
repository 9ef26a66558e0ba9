"""The discrete-event engine: runs a schedule on a topology with simpy and returns a Trace.

Parts, each on its own: options (EngineOptions and checks), messages (per-message regimes by size),
clock (integer time: femtosecond ticks), loop (simpy through its public API, one simpy event per distinct
instant), ports (send/receive ports and the id-order matching, for many transfers at once), maxmin (max-min fair
rates, a pure function), flows (flows in flight and their rates, one reshare per instant), stats (what a run records,
per-link counts included), csr (array helpers), deadlock (who waits for what), run (simulate: each instant's
events handled together, as arrays when the instant is busy and one at a time when it is not)."""

from .deadlock import DeadlockError, deadlock_report, format_deadlock
from .maxmin import max_min_rates
from .messages import MessageModel, Regime
from .options import EngineOptions
from .run import simulate

__all__ = ["DeadlockError", "EngineOptions", "MessageModel", "Regime", "deadlock_report", "format_deadlock",
           "max_min_rates", "simulate"]
