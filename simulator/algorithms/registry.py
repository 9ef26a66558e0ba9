"""The table of algorithms: builders registered by (op, name), with their parameters, rank constraints and closed forms.

An algorithm is one `register(...)` call on its builder; its closed form (`cost=`, with `exact=`
saying where it is the schedule's exact time) is declared in the same call, next to the builder.
An algorithm without one still works everywhere: simulator.cost falls back to the event engine.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..collective import OPS, Collective, normalize_op
from ..errors import CollsimError
from ..schedule import Schedule
from .forms import CostFn, ExactFn, always


@dataclass(frozen=True)
class Param:
    """An integer tunable of an algorithm (e.g. chunks, group): the CLI flag `--NAME` and the app's widget come from it.

    `default` None means the builder picks (and reports the pick in `Schedule.params`).
    """

    name: str
    default: int | None
    help: str
    minimum: int = 1
    maximum: int | None = None

    def accepted(self) -> str:
        """The accepted range in words."""
        return f"an integer >= {self.minimum}" + (f" and <= {self.maximum}" if self.maximum is not None else "")


CHUNKS = Param("chunks", 1, "pipelining depth: pieces each block is cut into, sent as separate pipelined messages")


@dataclass(frozen=True)
class AlgorithmSpec:
    """One registered algorithm for one op."""

    op: str
    name: str
    build: Callable[..., Schedule]
    summary: str
    ranks_rule: str = "any p >= 1"
    params: tuple[Param, ...] = ()
    refuses: Callable[[int], str | None] | None = None  # reason a rank count cannot be done, or None
    cost: CostFn | None = None    # closed form cost(p, n, model, **params) -> seconds; None: the engine is used
    exact: ExactFn = always       # exact(p, model, **params): where the closed form is the schedule's exact time

    def refusal(self, ranks: int) -> str | None:
        """Why this algorithm cannot run on `ranks` ranks, or None."""
        return self.refuses(ranks) if self.refuses else None


REGISTRY: dict[tuple[str, str], AlgorithmSpec] = {}


def register(op: str, name: str, summary: str, params: tuple[Param, ...] = (),
             ranks_rule: str = "any p >= 1", refuses: Callable[[int], str | None] | None = None,
             cost: CostFn | None = None, exact: ExactFn = always):
    """Decorator: register `fn(collective, **params) -> Schedule` as algorithm `name` for `op`.

    `cost(p, n, model, **params)` is its closed form in seconds, vectorised over n (optional: without
    one, times come from the event engine on `ideal:P`); `exact(p, model, **params)` says where the
    closed form is the schedule's exact time (sizes that split evenly); elsewhere it is an estimate.
    """
    op = normalize_op(op)

    def wrap(fn: Callable[..., Schedule]) -> Callable[..., Schedule]:
        key = (op, name)
        if key in REGISTRY:
            raise RuntimeError(f"algorithm {op}/{name} registered twice")
        REGISTRY[key] = AlgorithmSpec(op, name, fn, summary, ranks_rule, params, refuses, cost, exact)
        return fn

    return wrap


def unregister(op: str, name: str) -> None:
    """Remove (op, name) from the table (for tests and plug-ins that register temporarily)."""
    REGISTRY.pop((normalize_op(op), name), None)


def all_params() -> dict[str, tuple[Param, list[str]]]:
    """Every parameter name in the table: its first Param and the algorithms (op/name) that take it."""
    out: dict[str, tuple[Param, list[str]]] = {}
    for spec in all_specs():
        for param in spec.params:
            out.setdefault(param.name, (param, []))[1].append(f"{spec.op}/{spec.name}")
    return out


def names_for(op: str) -> list[str]:
    """Algorithm names registered for an op, in registration order."""
    op = normalize_op(op)
    return [name for (o, name) in REGISTRY if o == op]


def get(op: str, name: str) -> AlgorithmSpec:
    """The spec of (op, name), or an error naming the algorithms that exist for op."""
    op = normalize_op(op)
    spec = REGISTRY.get((op, name))
    if spec is None:
        raise CollsimError(f"algo: unknown algorithm {name!r} for {op}; expected one of {', '.join(names_for(op))}")
    return spec


def all_specs() -> list[AlgorithmSpec]:
    """Every registered algorithm, grouped by op in the canonical op order."""
    return sorted(REGISTRY.values(), key=lambda s: (OPS.index(s.op), names_for(s.op).index(s.name)))


def resolve_params(spec: AlgorithmSpec, params: dict) -> dict:
    """The algorithm's parameters with defaults filled in; unknown or bad values are errors."""
    known = {p.name: p for p in spec.params}
    given = {k: v for k, v in params.items() if v is not None}
    unknown = sorted(set(given) - set(known))
    if unknown:
        accepted = ", ".join(known) or "none"
        raise CollsimError(f"{unknown[0]}: {spec.op}/{spec.name} has no parameter {unknown[0]!r}; it accepts: {accepted}")
    out = {}
    for name, param in known.items():
        value = given.get(name, param.default)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int):
                raise CollsimError(f"{name}: {value!r} is not an integer")
            if value < param.minimum:
                raise CollsimError(f"{name}: {value} is too small for {spec.op}/{spec.name}; expected >= {param.minimum}")
            if param.maximum is not None and value > param.maximum:
                raise CollsimError(f"{name}: {value} is too large for {spec.op}/{spec.name}; expected <= {param.maximum}")
        out[name] = value
    return out


def check_ranks(spec: AlgorithmSpec, ranks: int) -> None:
    """Raise an error naming the algorithms that can, when `spec` refuses this rank count."""
    reason = spec.refusal(ranks)
    if reason:
        others = [n for n in names_for(spec.op) if n != spec.name and not get(spec.op, n).refusal(ranks)]
        raise CollsimError(f"ranks: {spec.op}/{spec.name} cannot run on {ranks} ranks ({reason}); "
                           f"algorithms that can: {', '.join(others) or 'none'}")


def build_schedule(collective: Collective, name: str, **params) -> Schedule:
    """The schedule of algorithm `name` for this collective."""
    spec = get(collective.op, name)
    check_ranks(spec, collective.ranks)
    resolved = resolve_params(spec, params)
    schedule = spec.build(collective, **resolved)
    chosen = schedule.params  # what the builder picked for parameters left to it (e.g. the default group)
    schedule.params = {k: chosen.get(k) if v is None else v for k, v in resolved.items()}
    return schedule
