"""A mixture-of-experts training step whose all-to-all sizes come from a routing distribution (`collsim scenario moe`).

The world is one expert-parallel group of `ep` ranks; rank j holds experts j*E/ep .. (j+1)*E/ep - 1 (E experts). Each
rank has `tokens` tokens and routes each to `top_k` experts. The routing distribution p_e (the share of choices that
go to expert e, the same for every source rank unless a file gives one per rank) is:

- `uniform`: p_e = 1/E;
- `zipf:S`: p_e = (e+1)^-S / sum_k (k+1)^-S, expert 0 the hottest (S = 0 is uniform);
- a JSON file of observed counts (e.g. from a router's log): a list of E counts per expert, or a list of `ep` such
  lists (one per source rank); p_e is each list normalised.

Rank i sends n_ij = tokens x top_k x P_j token copies to rank j, P_j the share of rank j's experts, rounded by largest
remainder so each rank's n_i. add up to tokens x top_k exactly (expected counts, not a sample). A token picks distinct
experts, so p_e may not exceed 1/top_k: a distribution that asks more is refused.

Each layer, forward: attention compute (2 x attention params x tokens FLOPs), dispatch (an all-to-all-v: n_ij x hidden x
2 bytes from i to j), the experts' compute on the R_j = sum_i n_ij copies rank j received (2 x expert params FLOPs
each), combine (the reverse all-to-all-v); backward: the same in reverse at twice the FLOPs. No data parallelism: the
gradients stay on their rank. So an imbalanced routing shows as waiting: every rank waits at the combine for the rank
with the most tokens, (R_max - R_i) x 2 x expert params / (peak x MFU) per layer forward and twice that backward.

An all-to-all-v is written as NCCL runs one (ncclGroupStart, a send and a recv per peer, ncclGroupEnd): per peer a
send and a recv on their own streams (`to<j>`, `from<j>`), started by an event of the compute stream and waited for by
it, so the messages of one all-to-all run at once and share the links; a zero-byte message is left out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import CollsimError
from ..readfile import read_data
from .model import Op, Program
from .presets import Gpu, Model

BYTES = 2  # bfloat16 activations
MAX_EP = 256


@dataclass(frozen=True)
class Routing:
    """Where tokens go: `shares[i][e]`, the share of rank i's choices that go to expert e (rows sum to 1)."""

    name: str
    shares: tuple[tuple[float, ...], ...]


def parse_routing(text: str, experts: int, ep: int) -> Routing:
    """'uniform', 'zipf:S' or a JSON file of counts, as shares per source rank."""
    text = str(text).strip()
    if text == "uniform":
        return Routing("uniform", (tuple([1.0 / experts] * experts),) * ep)
    if text.startswith("zipf:"):
        try:
            s = float(text[5:])
        except ValueError:
            s = float("nan")
        if not (math.isfinite(s) and 0 <= s <= 10):
            raise CollsimError(f"routing: {text!r}; expected zipf:S with an exponent 0 <= S <= 10, e.g. zipf:1.2")
        weights = [(e + 1) ** -s for e in range(experts)]
        return Routing(f"zipf s={s:g}", (tuple(w / sum(weights) for w in weights),) * ep)
    if text.lower().endswith(".json"):
        return _from_file(text, experts, ep)
    raise CollsimError(f"routing: {text!r}; expected uniform, zipf:S (e.g. zipf:1.2) or a .json file of counts per expert")


def _from_file(path: str, experts: int, ep: int) -> Routing:
    data = read_data(path, "routing")
    rows = data if isinstance(data, list) and data and all(isinstance(r, list) for r in data) else [data]
    ok = len(rows) in (1, ep) and all(isinstance(r, list) and len(r) == experts and all(
        isinstance(c, (int, float)) and not isinstance(c, bool) and math.isfinite(c) and c >= 0 for c in r) and sum(r) > 0
        for r in rows)
    if not ok:
        raise CollsimError(f"routing: {path}: expected a list of {experts} token counts per expert (>= 0, not all 0), or "
                           f"{ep} such lists (one per rank)")
    shares = tuple(tuple(c / sum(r) for c in r) for r in rows)
    return Routing(f"counts from {path}", shares * ep if len(shares) == 1 else shares)


@dataclass(frozen=True)
class MoeSpec:
    """One expert-parallel MoE step: `tokens` per rank per step, `layers` MoE layers."""

    model: Model
    gpu: Gpu
    ep: int
    tokens: int
    routing: Routing
    layers: int
    mfu: float = 0.4

    def check(self) -> None:
        m = self.model
        if not m.moe:
            raise CollsimError(f"model: {m.name} has no experts; expected a MoE model (e.g. mixtral-8x7b)")
        if not 2 <= self.ep <= MAX_EP or m.experts % self.ep:
            raise CollsimError(f"ep: {self.ep}; expected a divisor of {m.name}'s {m.experts} experts, 2..{MAX_EP}")
        if not 1 <= self.layers <= m.layers:
            raise CollsimError(f"layers: {self.layers}; expected 1..{m.layers} ({m.name}'s layers)")
        if not 1 <= self.tokens <= 2**24:
            raise CollsimError(f"tokens: {self.tokens}; expected 1..{2**24} tokens per rank")
        worst = max(max(row) for row in self.routing.shares)
        if worst > 1 / m.top_k + 1e-12:
            raise CollsimError(f"routing: {self.routing.name} sends {worst:.1%} of the choices to one expert, more than "
                               f"1/top_k = {1 / m.top_k:.1%} (a token picks {m.top_k} distinct experts); expected a "
                               "flatter distribution (a smaller zipf exponent)")


def token_counts(spec: MoeSpec) -> np.ndarray:
    """n[i, j]: token copies rank i sends to rank j's experts (largest-remainder rounding of tokens x top_k x P_j)."""
    per_rank = spec.model.experts // spec.ep
    total = spec.tokens * spec.model.top_k
    out = np.zeros((spec.ep, spec.ep), dtype=np.int64)
    for i, shares in enumerate(spec.routing.shares):
        exact = np.array([sum(shares[j * per_rank:(j + 1) * per_rank]) for j in range(spec.ep)]) * total
        counts = np.floor(exact).astype(np.int64)
        extra = total - int(counts.sum())
        order = np.argsort(-(exact - counts), kind="stable")
        counts[order[:extra]] += 1
        out[i] = counts
    return out


def generate_moe(spec: MoeSpec) -> Program:
    """The step as a program: world = ep, one group 'ep' (unused by the all-to-alls, which are sends and receives)."""
    spec.check()
    n = token_counts(spec)
    m, rate = spec.model, spec.gpu.peak_flops * spec.mfu
    attn = 2.0 * m.attn_params * spec.tokens / rate
    expert = 2.0 * m.expert_params / rate  # seconds per token copy, forward
    ranks = {}
    for i in range(spec.ep):
        b = _Builder(i, spec.ep)
        got = int(n[:, i].sum())
        for layer in range(spec.layers):
            b.compute(attn, f"attn{layer}")
            b.alltoallv(f"dispatch{layer}", n[i] * m.hidden * BYTES, n[:, i] * m.hidden * BYTES)
            b.compute(got * expert, f"experts{layer}")
            b.alltoallv(f"combine{layer}", n[:, i] * m.hidden * BYTES, n[i] * m.hidden * BYTES)
        for layer in reversed(range(spec.layers)):
            b.alltoallv(f"combine_grad{layer}", n[i] * m.hidden * BYTES, n[:, i] * m.hidden * BYTES)
            b.compute(2 * got * expert, f"experts_grad{layer}")
            b.alltoallv(f"dispatch_grad{layer}", n[:, i] * m.hidden * BYTES, n[i] * m.hidden * BYTES)
            b.compute(2 * attn, f"attn_grad{layer}")
        ranks[i] = b.ops
    meta = {"scenario": {"name": "moe", "model": m.name, "gpu": spec.gpu.name, "ep": spec.ep, "tokens": spec.tokens,
                         "layers": spec.layers, "routing": spec.routing.name, "mfu": spec.mfu,
                         "tokens_to_rank": [int(x) for x in n.sum(axis=0)]}}
    return Program(world=spec.ep, groups={"ep": tuple(range(spec.ep))}, ranks=ranks, source="moe scenario",
                   meta={"name": f"moe {m.name} ep {spec.ep}, routing {spec.routing.name}", "meta": meta})


class _Builder:
    """One rank's operations: compute on 'compute', all-to-all-v messages on a stream per peer and direction."""

    def __init__(self, rank: int, world: int):
        self.rank, self.world, self.ops = rank, world, []

    def compute(self, seconds: float, name: str) -> None:
        self.ops.append(Op("compute", stream="compute", name=name, seconds=float(seconds)))

    def alltoallv(self, name: str, send: np.ndarray, recv: np.ndarray) -> None:
        """send[j] bytes to each peer j and recv[j] bytes from it, all at once once compute reaches this point; compute
        goes on when every message has been sent and received."""
        self.ops.append(Op("record", stream="compute", event=f"{name}.go"))
        done = []
        for peer in range(self.world):
            for kind, nbytes, stream in (("send", send[peer], f"to{peer}"), ("recv", recv[peer], f"from{peer}")):
                if peer == self.rank or nbytes == 0:
                    continue
                done.append(f"{name}.{stream}")
                self.ops += [Op("wait", stream=stream, event=f"{name}.go"),
                             Op(kind, stream=stream, peer=peer, nbytes=int(nbytes)),
                             Op("record", stream=stream, event=done[-1])]
        self.ops += [Op("wait", stream="compute", event=e) for e in done]
