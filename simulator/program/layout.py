"""How a training job's parallel degrees map onto ranks = nodes x GPUs per node, and its process groups.

Megatron-LM's order: tensor parallel fastest (inside a node), then data parallel, then pipeline
stages across node groups: rank = t + tp * (d + dp * p). Expert parallel groups are blocks of
`ep` consecutive data-parallel ranks.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import CollsimError


@dataclass(frozen=True)
class Layout:
    """Parallel degrees over a machine of `gpus` GPUs, `gpus_per_node` to a node."""

    gpus: int
    gpus_per_node: int = 8
    tp: int = 1
    pp: int = 1
    ep: int = 1

    def __post_init__(self) -> None:
        for name in ("gpus", "gpus_per_node", "tp", "pp", "ep"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise CollsimError(f"{name.replace('_', '-')}: {value!r}; expected an integer >= 1")
        if self.gpus > self.gpus_per_node and self.gpus % self.gpus_per_node:
            raise CollsimError(f"gpus: {self.gpus} GPUs do not fill whole nodes of {self.gpus_per_node}; expected a multiple "
                               f"of {self.gpus_per_node} (or set --gpus-per-node)")
        for name in ("tp", "pp", "ep"):
            if getattr(self, name) > self.gpus:
                raise CollsimError(f"{name}: a group of {getattr(self, name)} is larger than the machine's {self.gpus} GPUs; "
                                   f"expected {name} <= {self.gpus}")
        if self.tp > self.gpus_per_node or self.gpus_per_node % self.tp:
            raise CollsimError(f"tp: {self.tp} does not fit inside a node of {self.gpus_per_node} GPUs; expected a divisor of "
                               f"{self.gpus_per_node} (tensor parallelism stays on NVLink)")
        if self.gpus % (self.tp * self.pp):
            raise CollsimError(f"layout: tp {self.tp} x pp {self.pp} = {self.tp * self.pp} does not divide {self.gpus} GPUs; "
                               f"expected tp x pp to divide the GPU count")
        if self.dp % self.ep:
            raise CollsimError(f"ep: {self.ep} does not divide the data-parallel degree {self.dp}; expected a divisor of {self.dp}")

    @property
    def dp(self) -> int:
        """Data-parallel degree: what tp and pp leave."""
        return self.gpus // (self.tp * self.pp)

    def rank(self, t: int, d: int, p: int) -> int:
        """Global rank of tensor index t, data index d, stage p."""
        return t + self.tp * (d + self.dp * p)

    def coords(self, rank: int) -> tuple[int, int, int]:
        """(t, d, p) of a global rank."""
        t, rest = rank % self.tp, rank // self.tp
        return t, rest % self.dp, rest // self.dp

    def tp_group(self, d: int, p: int) -> str:
        return f"tp{d + self.dp * p}"

    def dp_group(self, t: int, p: int) -> str:
        return f"dp{t + self.tp * p}"

    def ep_group(self, t: int, d: int, p: int) -> str:
        return f"ep{(t + self.tp * p) * (self.dp // self.ep) + d // self.ep}"

    def edp_group(self, t: int, d: int, p: int) -> str:
        """Expert data parallel: the ranks holding the same experts (same position in their ep group)."""
        return f"edp{(t + self.tp * p) * self.ep + d % self.ep}"

    def groups(self) -> dict[str, tuple[int, ...]]:
        """Every process group the layout uses (groups of one rank are left out: they do not communicate)."""
        out: dict[str, tuple[int, ...]] = {}
        for p in range(self.pp):
            for d in range(self.dp):
                if self.tp > 1:
                    out[self.tp_group(d, p)] = tuple(self.rank(t, d, p) for t in range(self.tp))
            for t in range(self.tp):
                if self.dp > 1:
                    out[self.dp_group(t, p)] = tuple(self.rank(t, d, p) for d in range(self.dp))
                if self.ep > 1:
                    for b in range(self.dp // self.ep):
                        out[self.ep_group(t, b * self.ep, p)] = tuple(self.rank(t, d, p) for d in range(b * self.ep, (b + 1) * self.ep))
                if self.ep > 1 and self.dp // self.ep > 1:
                    for e in range(self.ep):
                        out[self.edp_group(t, e, p)] = tuple(self.rank(t, d, p) for d in range(e, self.dp, self.ep))
        return out
