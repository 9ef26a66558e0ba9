"""The one way a measured or fitted LinkProfile reaches a machine: closed forms, the engine's links and its options.

Convention (docs/model.md, "Profiles on a machine"):
- A profile's alpha is the latency of one MESSAGE, end to end, and its bandwidth the rate of one message
  alone on its route: a message of m bytes takes alpha + m / bandwidth. Its closed forms use them as is.
- A piecewise profile's segment is chosen by the size of the COLLECTIVE call (nccl-tests' size column,
  which is what the fit cut on, and how NCCL picks a protocol per call): every message of that call is in
  the segment's regime. Sizes no segment covers use the top-level alpha and bandwidth.
- On a topology, the links carry the profile's wire part: latency alpha_w / h and bandwidth B_w, where
  alpha_w is the smallest alpha of the profile's regimes (top level and segments), B_w the largest finite
  bandwidth, and h the links of the route from rank 0 to rank 1 (1 on ideal:P, 2 on switch:P). A message
  in regime (alpha_r, B_r) then waits alpha_r - alpha_w more at its ends and puts B_w / B_r wire bytes on
  the links per byte (0 for a regime with no size dependence): the engine's message regimes. So on a
  topology whose routes all have h links, one message alone takes exactly alpha_r + m / B_r; longer routes
  add alpha_w / h per extra link, and flows that meet share B_w max-min fairly.
- gamma (s per reduced byte) is the engine's reduction cost and the closed forms' gamma.
- A profile with `segments_by: message` (what `collsim calibrate --piecewise` writes) picks the segment by each
  MESSAGE's size instead: the engine prices every message in its own size's regime; a closed form, which has
  one alpha and bandwidth per call, uses the regime of the call's largest message (its schedule built to know it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .cost import LinkModel, lower_bound, predict
from .engine import EngineOptions, MessageModel
from .engine.messages import Regime
from .errors import CollsimError
from .profile import LinkProfile
from .topology.model import Topology


@dataclass(frozen=True)
class ProfileAdapter:
    """A profile applied to closed forms (per collective size) and to a topology plus engine options."""

    profile: LinkProfile

    def __post_init__(self) -> None:
        for seg in self.profile.segments:
            if not (seg.alpha_s >= 0 and math.isfinite(seg.alpha_s) and seg.bandwidth_Bps > 0):
                raise CollsimError(f"profile: segment [{seg.min_bytes}, {seg.max_bytes}) has alpha {seg.alpha_s!r} and "
                                   f"bandwidth {seg.bandwidth_Bps!r}; expected alpha >= 0 s and bandwidth > 0 B/s")
        if not math.isfinite(self.profile.alpha_s) or not math.isfinite(self.wire_bandwidth):
            raise CollsimError(f"profile: alpha {self.profile.alpha_s!r} s, bandwidth {self.profile.bandwidth_Bps!r} B/s; "
                               "expected finite numbers")

    # ---- regimes --------------------------------------------------------------------------------------------------
    @property
    def by_message(self) -> bool:
        """True when segments are picked by each message's size (`segments_by: message`)."""
        return self.profile.segments_by == "message" and bool(self.profile.segments)

    def regime(self, nbytes: float) -> tuple[float, float]:
        """(alpha s, bandwidth B/s) of a collective of `nbytes`: its segment's, else the top-level ones (always the
        top-level ones when segments go by message size: see message_regime)."""
        return self.message_regime(nbytes) if not self.by_message else (self.profile.alpha_s, self.profile.bandwidth_Bps)

    def message_regime(self, nbytes: float) -> tuple[float, float]:
        """(alpha s, bandwidth B/s) of the segment covering `nbytes`, else the top-level ones."""
        for seg in self.profile.segments:
            if seg.min_bytes <= nbytes and (seg.max_bytes is None or nbytes < seg.max_bytes):
                return seg.alpha_s, seg.bandwidth_Bps
        return self.profile.alpha_s, self.profile.bandwidth_Bps

    def _regimes(self) -> list[tuple[float, float]]:
        return [(self.profile.alpha_s, self.profile.bandwidth_Bps)] + [(s.alpha_s, s.bandwidth_Bps) for s in self.profile.segments]

    @property
    def wire_alpha(self) -> float:
        """The part of alpha every regime has: the links' share."""
        return min(a for a, _ in self._regimes())

    @property
    def wire_bandwidth(self) -> float:
        """The links' bandwidth: the largest finite bandwidth of the regimes."""
        return max((b for _, b in self._regimes() if math.isfinite(b)), default=math.inf)

    # ---- closed forms ---------------------------------------------------------------------------------------------
    def link_model(self, nbytes: float) -> LinkModel:
        """The closed forms' LinkModel for a collective of `nbytes`."""
        alpha, bandwidth = self.regime(nbytes)
        return LinkModel(alpha, 0.0 if math.isinf(bandwidth) else 1.0 / bandwidth, self.profile.gamma_s_per_byte)

    def predict(self, op: str, algo: str, p: int, sizes, **params) -> np.ndarray:
        """Closed-form seconds at each size, each size with its regime (by message: its largest message's)."""
        pick = (lambda n: self.message_regime(largest_message(op, algo, p, n, params))) if self.by_message else self.regime
        return self._per_regime(sizes, lambda chosen, model: predict(op, algo, p, chosen, model, **params), pick)

    def lower_bound(self, op: str, p: int, sizes) -> np.ndarray:
        """The op's lower bound at each size, each size with its regime."""
        return self._per_regime(sizes, lambda chosen, model: lower_bound(op, p, chosen, model), self.regime)

    def _per_regime(self, sizes, fn, pick) -> np.ndarray:
        sizes = np.asarray(sizes, dtype=np.float64).reshape(-1)
        out = np.empty_like(sizes)
        keys = [pick(float(n)) for n in sizes]
        for key in dict.fromkeys(keys):
            mask = np.array([k == key for k in keys])
            alpha, bandwidth = key
            out[mask] = fn(sizes[mask], LinkModel(alpha, 0.0 if math.isinf(bandwidth) else 1.0 / bandwidth,
                                                  self.profile.gamma_s_per_byte))
        return out

    # ---- the engine -----------------------------------------------------------------------------------------------
    def hops(self, topology: Topology) -> int:
        """h: the links of the route from rank 0 to rank 1 (1 for a one-device topology)."""
        return max(len(topology.route(0, 1)), 1) if topology.num_devices > 1 else 1

    def topology(self, topology: Topology) -> Topology:
        """`topology` with every link at latency wire_alpha / h and bandwidth wire_bandwidth."""
        return topology.with_links(self.wire_alpha / self.hops(topology), self.wire_bandwidth)

    def messages(self, nbytes: float) -> MessageModel | None:
        """The engine's message regime for a collective of `nbytes` (None when the links alone give it); by message:
        every segment as a regime of its message sizes, the top-level regime for sizes none covers."""
        if self.by_message:
            segs = [(s.min_bytes, s.max_bytes, s.alpha_s, s.bandwidth_Bps) for s in self.profile.segments]
            return MessageModel(tuple(Regime(lo, hi, *self._extra(a, b)) for lo, hi, a, b in
                                      segs + [(0, None, self.profile.alpha_s, self.profile.bandwidth_Bps)]))
        extra, factor = self._extra(*self.regime(nbytes))
        return None if extra == 0 and factor == 1 else MessageModel.uniform(extra, factor)

    def _extra(self, alpha: float, bandwidth: float) -> tuple[float, float]:
        """(latency beyond the links', wire bytes per payload byte) of a regime."""
        return alpha - self.wire_alpha, 0.0 if math.isinf(bandwidth) else self.wire_bandwidth / bandwidth

    def options(self, nbytes: float, base: EngineOptions | None = None) -> EngineOptions:
        """`base` (default: the profile's gamma) with the message regime of a collective of `nbytes`."""
        base = base or EngineOptions(gamma=self.profile.gamma_s_per_byte)
        return replace(base, messages=self.messages(nbytes))


def largest_message(op: str, algo: str, p: int, nbytes: float, params: dict) -> int:
    """Bytes of the largest network message of `algo`'s schedule for a float32 `op` of `nbytes` on `p` ranks."""
    from .algorithms import build_schedule
    from .collective import Collective

    n = int(nbytes) - int(nbytes) % 4
    schedule = build_schedule(Collective(op, p, n, "float32"), algo, **params)
    return max((schedule.nbytes(t) for t in schedule.transfers if not t.local), default=0)
