"""Training steps generated as Programs: DDP, FSDP/ZeRO-3, tensor (and sequence) parallel, 1F1B pipeline, expert parallel.

Compute per layer comes from FLOPs: training costs 6 x parameters x tokens (Kaplan et al., "Scaling
Laws for Neural Language Models", arXiv:2001.08361, sec. 2.1: C ~ 6N per token), split 2:4 between
forward and backward (the backward pass computes gradients of both activations and weights, twice
the forward; Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using
Megatron-LM", arXiv:2104.04473, sec. 5.1). The attention-score term (O(seq^2)) and the embedding
lookup are left out. A MoE token goes through its top-k experts, so compute uses active parameters.
Seconds = FLOPs / (GPU peak x MFU).

Streams: `compute` (compute, and the TP/EP collectives that sit on the critical path), `comm`
(DDP buckets, FSDP reduce-scatters), `ag` (FSDP all-gathers), and per pipeline direction
`recv_fwd`, `send_fwd`, `recv_bwd`, `send_bwd`. Events join them as CUDA events would.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..collective import DTYPES
from ..errors import CollsimError
from .layout import Layout
from .model import COMPUTE, RECORD, RECV, SEND, WAIT, Op, Program
from .presets import GPUS, Gpu, Model, get_gpu, get_model

SCENARIOS = {
    "ddp": "data parallel: gradient buckets all-reduced on a comm stream as backward produces them",
    "fsdp": "fully sharded (ZeRO-3): per-layer all-gather prefetched one layer ahead, reduce-scatter of gradients",
    "tp": "tensor parallel inside a node: two activation all-reduces per layer forward and backward, on the critical path",
    "tp-sp": "tensor + sequence parallel: all-gather and reduce-scatter instead of each all-reduce",
    "pp": "pipeline parallel, 1F1B schedule, activations and gradients sent between stages",
    "ep": "expert parallel (MoE): all-to-all dispatch and combine around the experts of every layer",
    "hybrid": "TP inside a node x data parallel (DDP, or FSDP with --fsdp) x PP across node groups",
}
MAX_OPS = 5_000_000  # a program larger than this is refused up front (memory and YAML size)
DDP_BUCKET = 25 * 2**20  # torch DDP bucket_cap_mb=25, in MiB (torch/nn/parallel/distributed.py)
# The plausible range of each input of a step (field: (smallest, largest, what it is)); beyond it a value is a typo, not
# a training run. Sequences: 16Mi tokens, above the longest context any model is trained or served at (10M); a micro-batch
# of one rank: 64Ki sequences and 16Mi tokens; 64Ki micro-batches per step; 1024 GPUs per node, above the largest
# NVLink domain sold (576, NVL576).
MAX_MICRO_TOKENS = 2**24  # micro-batch x seq-len
BOUNDS = {
    "seq-len": (1, 2**24, "tokens per sequence"),
    "micro-batch": (1, 2**16, "sequences per micro-batch"),
    "microbatches": (1, 2**16, "micro-batches per step"),
    "gpus-per-node": (1, 1024, "GPUs per node"),
}


@dataclass(frozen=True)
class StepSpec:
    """What to generate: model, GPU, layout, batch and how data parallelism is done."""

    model: Model
    gpu: Gpu
    layout: Layout
    mfu: float = 0.4
    fsdp: bool = False
    sp: bool = False
    micro_batch: int = 1  # sequences per micro-batch
    microbatches: int = 1  # micro-batches per step (gradient accumulation; the pipeline's schedule length)
    seq_len: int = 4096
    bucket: int = DDP_BUCKET
    dtype: str = "bfloat16"

    @property
    def tokens(self) -> int:
        """Tokens of one micro-batch on one data-parallel rank."""
        return self.micro_batch * self.seq_len

    @property
    def elem(self) -> int:
        return DTYPES[self.dtype]


def build_spec(scenario: str, model: str, gpu: str, gpus: int, gpus_per_node: int = 8, tp: int | None = None,
               pp: int | None = None, ep: int | None = None, fsdp: bool = False, sp: bool = False, mfu: float = 0.4,
               micro_batch: int = 1, microbatches: int | None = None, seq_len: int | None = None, bucket: int = DDP_BUCKET) -> StepSpec:
    """A StepSpec from a scenario name and its options (degrees not given default from the scenario)."""
    if scenario not in SCENARIOS:
        raise CollsimError(f"scenario: unknown scenario {scenario!r}; expected one of {', '.join(SCENARIOS)}")
    the_model = get_model(model)
    whole = {"tp": "tp", "tp-sp": "tp", "pp": "pp", "ep": "ep"}.get(scenario)
    degrees = {"tp": tp, "pp": pp, "ep": ep}
    if scenario == "hybrid" and tp is None:
        degrees["tp"] = min(gpus_per_node, gpus)
    if whole and degrees[whole] is None:
        degrees[whole] = gpus
    check_inputs(mfu, bucket, **{"seq-len": seq_len, "micro-batch": micro_batch, "microbatches": microbatches,
                                 "gpus-per-node": gpus_per_node})
    tokens = micro_batch * (seq_len or the_model.seq_len)
    if tokens > MAX_MICRO_TOKENS:
        raise CollsimError(f"micro-batch: {micro_batch} sequences of {seq_len or the_model.seq_len} tokens = {tokens} tokens "
                           f"per micro-batch on one rank; expected at most {MAX_MICRO_TOKENS} (a smaller --micro-batch or --seq-len)")
    layout = Layout(gpus, gpus_per_node, *(1 if degrees[k] is None else degrees[k] for k in ("tp", "pp", "ep")))
    if scenario == "ep" and not the_model.moe:
        raise CollsimError(f"model: {model} has no experts; expected a MoE model for scenario ep (e.g. mixtral-8x7b)")
    spec = StepSpec(the_model, get_gpu(gpu), layout, mfu=mfu, fsdp=fsdp or scenario == "fsdp", sp=sp or scenario == "tp-sp",
                    micro_batch=micro_batch, microbatches=microbatches or (2 * layout.pp if layout.pp > 1 else 1),
                    seq_len=seq_len or the_model.seq_len, bucket=bucket)
    _check(spec)
    return spec


def check_inputs(mfu: float, bucket: int, **counts: int | None) -> None:
    """Refuse an input of a step outside its plausible range (BOUNDS), an MFU outside (0, 1] or a bucket under 2 bytes;
    `counts`: field -> value (None: not given)."""
    if not (math.isfinite(mfu) and 0 < mfu <= 1):
        raise CollsimError(f"mfu: {mfu}; expected a utilisation in (0, 1], e.g. 0.4")
    for name, value in counts.items():
        low, high, what = BOUNDS[name]
        if value is not None and not low <= value <= high:
            raise CollsimError(f"{name}: {value} is out of range for {what}; expected an integer in {low}..{high}")
    if bucket < 2:
        raise CollsimError(f"bucket: {bucket} bytes; expected a bucket size of at least one element (e.g. 25MiB)")


def _check(spec: StepSpec) -> None:
    m, lay = spec.model, spec.layout
    if m.layers % lay.pp:
        raise CollsimError(f"pp: {m.layers} layers of {m.name} do not split into {lay.pp} equal stages; expected a divisor of {m.layers}")
    if m.heads % lay.tp or m.kv_heads % lay.tp:
        raise CollsimError(f"tp: {m.name}'s {m.heads} heads ({m.kv_heads} KV heads) do not split over tp {lay.tp}; "
                           f"expected a divisor of {math.gcd(m.heads, m.kv_heads)}")
    if lay.ep > 1 and (not m.moe or m.experts % lay.ep):
        raise CollsimError(f"ep: {lay.ep} does not divide {m.name}'s {m.experts} expert(s); expected a divisor of {m.experts}")
    if spec.fsdp and lay.pp > 1:
        raise CollsimError("fsdp: FSDP with pipeline stages is not generated; expected pp 1 with --fsdp (or DDP with pp)")
    if spec.sp and lay.tp == 1:
        raise CollsimError("sp: sequence parallelism needs tp > 1; give --tp")
    if spec.seq_len * spec.micro_batch % lay.tp and spec.sp:
        raise CollsimError(f"seq-len: {spec.tokens} tokens do not split over tp {lay.tp} for sequence parallelism")
    estimate = lay.gpus * spec.microbatches * (m.layers // lay.pp) * 20
    if estimate > MAX_OPS:
        raise CollsimError(f"gpus: this program would hold about {estimate:,} operations (limit {MAX_OPS:,}); "
                           "expected fewer GPUs, micro-batches or layers per stage")


class _Rank:
    """Builds one rank's operations."""

    def __init__(self, spec: StepSpec, rank: int):
        self.spec, self.rank, self.ops = spec, rank, []
        self.t, self.d, self.p = spec.layout.coords(rank)
        self.peak = spec.gpu.peak_flops * spec.mfu

    def compute(self, flops: float, name: str | None = None) -> None:
        self.ops.append(Op(COMPUTE, "compute", name=name, flops=float(flops), seconds=flops / self.peak))

    def coll(self, op: str, group: str, nbytes: int, stream: str = "compute", name: str | None = None) -> None:
        self.ops.append(Op(op, stream, name=name, group=group, nbytes=int(nbytes), dtype=self.spec.dtype))

    def record(self, event: str, stream: str) -> None:
        self.ops.append(Op(RECORD, stream, event=event))

    def wait(self, event: str, stream: str) -> None:
        self.ops.append(Op(WAIT, stream, event=event))

    def p2p(self, kind: str, peer: int, nbytes: int, stream: str, name: str) -> None:
        self.ops.append(Op(kind, stream, name=name, peer=peer, nbytes=int(nbytes), dtype=self.spec.dtype))


class _Step:
    """The generator: one pass over the schedule per rank."""

    def __init__(self, spec: StepSpec):
        self.s = spec
        m, lay = spec.model, spec.layout
        self.stage_layers = m.layers // lay.pp
        tokens = spec.tokens
        # forward FLOPs of one micro-batch on this rank (2 x active params x tokens, sharded over tp)
        self.attn_flops = 2 * (m.attn_params + m.hidden) * tokens / lay.tp
        self.mlp_flops = 2 * (m.top_k * m.expert_params + m.hidden + (m.hidden * m.experts if m.moe else 0)) * tokens / lay.tp
        self.head_flops = 2 * m.embedding_params * tokens / lay.tp
        self.act_bytes = tokens * m.hidden * spec.elem  # one micro-batch's activations (hidden states)
        # parameters this rank holds per layer (tp shards dense weights; ep shards experts)
        experts = m.experts // lay.ep if m.moe else 1
        self.dense_layer_params = math.ceil((m.attn_params + 2 * m.hidden + (m.hidden * m.experts if m.moe else 0)) / lay.tp)
        self.expert_layer_params = math.ceil(experts * m.expert_params / lay.tp)
        self.embed_params = math.ceil(m.embedding_params / lay.tp)

    def program(self) -> Program:
        lay = self.s.layout
        ranks = {r: self.rank_ops(r) for r in range(lay.gpus)}
        meta = {"scenario": {"model": self.s.model.name, "gpu": self.s.gpu.name, "gpus": lay.gpus, "gpus_per_node": lay.gpus_per_node,
                             "tp": lay.tp, "pp": lay.pp, "dp": lay.dp, "ep": lay.ep, "fsdp": self.s.fsdp, "sp": self.s.sp,
                             "micro_batch": self.s.micro_batch, "microbatches": self.s.microbatches, "seq_len": self.s.seq_len,
                             "bucket_bytes": self.s.bucket}}
        gpu_key = next(k for k, v in GPUS.items() if v == self.s.gpu)
        return Program(world=lay.gpus, groups=lay.groups(), ranks=ranks, source="scenario", gpu=gpu_key, mfu=self.s.mfu,
                       meta={"meta": meta})

    # --- one rank ---
    def rank_ops(self, rank: int) -> list[Op]:
        b = _Rank(self.s, rank)
        lay, mbs = self.s.layout, self.s.microbatches
        warmup = min(lay.pp - b.p - 1, mbs)
        order = [("F", m) for m in range(warmup)]
        for i in range(mbs - warmup):
            order += [("F", warmup + i), ("B", i)]
        order += [("B", m) for m in range(mbs - warmup, mbs)]
        self.grad = _GradSync(self, b)
        if self.s.fsdp:
            self.grad.gather_root()
        for kind, m in order:
            (self.forward if kind == "F" else self.backward)(b, m)
        self.grad.finish()
        return b.ops

    def _layers(self, p: int) -> range:
        return range(p * self.stage_layers, (p + 1) * self.stage_layers)

    def forward(self, b: _Rank, m: int) -> None:
        lay = self.s.layout
        if b.p > 0:
            b.p2p(RECV, lay.rank(b.t, b.d, b.p - 1), self._pp_bytes(), "recv_fwd", f"act{m}_recv")
            b.record(f"act{m}_in", "recv_fwd")
            b.wait(f"act{m}_in", "compute")
        layers = self._layers(b.p)
        for i, layer in enumerate(layers):
            if self.s.fsdp:
                self.grad.gather(layer, m, "f", layers, i)
            self.tp_in(b)
            b.compute(self.attn_flops, f"fwd{m}.{layer}.attn")
            self.tp_out(b)
            self.tp_in(b)
            if lay.ep > 1:
                b.coll("alltoall", lay.ep_group(b.t, b.d, b.p), self.act_bytes * self.s.model.top_k, name=f"dispatch{m}.{layer}")
            b.compute(self.mlp_flops, f"fwd{m}.{layer}.mlp")
            if lay.ep > 1:
                b.coll("alltoall", lay.ep_group(b.t, b.d, b.p), self.act_bytes * self.s.model.top_k, name=f"combine{m}.{layer}")
            self.tp_out(b)
        if b.p == lay.pp - 1:
            b.compute(self.head_flops, f"fwd{m}.head")
        else:
            b.record(f"act{m}_out", "compute")
            b.wait(f"act{m}_out", "send_fwd")
            b.p2p(SEND, lay.rank(b.t, b.d, b.p + 1), self._pp_bytes(), "send_fwd", f"act{m}_send")

    def backward(self, b: _Rank, m: int) -> None:
        lay = self.s.layout
        last = m == self.s.microbatches - 1
        if b.p < lay.pp - 1:
            b.p2p(RECV, lay.rank(b.t, b.d, b.p + 1), self._pp_bytes(), "recv_bwd", f"grad{m}_recv")
            b.record(f"grad{m}_in", "recv_bwd")
            b.wait(f"grad{m}_in", "compute")
        else:
            b.compute(2 * self.head_flops, f"bwd{m}.head")
            if last:
                self.grad.produced(b, self.embed_params + self.s.model.hidden, "head")
        layers = list(reversed(self._layers(b.p)))
        for i, layer in enumerate(layers):
            if self.s.fsdp:
                self.grad.gather(layer, m, "b", layers, i)
            self.tp_in(b)  # backward of the MLP's output all-reduce/reduce-scatter
            if lay.ep > 1:
                b.coll("alltoall", lay.ep_group(b.t, b.d, b.p), self.act_bytes * self.s.model.top_k, name=f"combine_grad{m}.{layer}")
            b.compute(2 * self.mlp_flops, f"bwd{m}.{layer}.mlp")
            if lay.ep > 1:
                b.coll("alltoall", lay.ep_group(b.t, b.d, b.p), self.act_bytes * self.s.model.top_k, name=f"dispatch_grad{m}.{layer}")
            self.tp_out(b)
            self.tp_in(b)
            b.compute(2 * self.attn_flops, f"bwd{m}.{layer}.attn")
            self.tp_out(b)
            if last:
                self.grad.produced(b, self.dense_layer_params, f"layer{layer}", self.expert_layer_params)
        if b.p == 0 and last:
            self.grad.produced(b, self.embed_params, "embedding")
        if b.p > 0:
            b.record(f"grad{m}_out", "compute")
            b.wait(f"grad{m}_out", "send_bwd")
            b.p2p(SEND, lay.rank(b.t, b.d, b.p - 1), self._pp_bytes(), "send_bwd", f"grad{m}_send")

    def _pp_bytes(self) -> int:
        return self.act_bytes // (self.s.layout.tp if self.s.sp else 1)

    def tp_in(self, b: _Rank) -> None:
        """Before a TP block: with sequence parallelism, all-gather the sequence shards (the g of Megatron-SP)."""
        if self.s.layout.tp > 1 and self.s.sp:
            b.coll("allgather", self.s.layout.tp_group(b.d, b.p), self.act_bytes)

    def tp_out(self, b: _Rank) -> None:
        """After a TP block: all-reduce the partial outputs, or reduce-scatter them over the sequence with SP."""
        if self.s.layout.tp > 1:
            b.coll("reduce_scatter" if self.s.sp else "allreduce", self.s.layout.tp_group(b.d, b.p), self.act_bytes)


class _GradSync:
    """Gradient synchronisation over data parallel: DDP buckets or FSDP reduce-scatters (and FSDP's all-gathers)."""

    def __init__(self, step: _Step, b: _Rank):
        self.step, self.b, self.s = step, b, step.s
        self.lay = step.s.layout
        self.filled = 0  # bytes in the open DDP bucket
        self.bucket_no = 0

    @property
    def group(self) -> str | None:
        return self.lay.dp_group(self.b.t, self.b.p) if self.lay.dp > 1 else None

    def produced(self, b: _Rank, params: int, what: str, expert_params: int = 0) -> None:
        """Backward finished `what`, whose gradients are now ready (in the last micro-batch).

        Dense `params` are synchronised over data parallel; with expert parallelism, `expert_params`
        over the expert-data-parallel group (ranks holding the same experts), one all-reduce per layer.
        """
        if self.lay.ep > 1:
            dense_group = self.group
            edp = self.lay.edp_group(b.t, b.d, b.p) if self.lay.dp // self.lay.ep > 1 else None
        else:
            params, expert_params, dense_group, edp = params + expert_params, 0, self.group, None
        if dense_group is None and edp is None:
            return
        event = f"grad_{what}"
        b.record(event, "compute")
        b.wait(event, "comm")
        if edp is not None and expert_params:
            b.coll("allreduce", edp, expert_params * self.s.elem, "comm", name=f"experts_{what}")
        if dense_group is None:
            return
        if self.s.fsdp:
            b.coll("reduce_scatter", self.group, params * self.s.elem, "comm", name=f"rs_{what}")
            return
        self.filled += params * self.s.elem
        while self.filled >= self.s.bucket:
            self.bucket_no += 1
            b.coll("allreduce", self.group, self.s.bucket, "comm", name=f"bucket{self.bucket_no}")
            self.filled -= self.s.bucket

    def gather_root(self) -> None:
        """FSDP's root unit (embedding, head, final norm) is gathered once and kept for the step."""
        if self.group is not None:
            m = self.s.model
            self.b.coll("allgather", self.group, (2 * self.step.embed_params + m.hidden) * self.s.elem, "ag", name="ag_root")
            self.b.record("ag_root", "ag")
            self.b.wait("ag_root", "compute")

    def gather(self, layer: int, m: int, phase: str, layers, i: int) -> None:
        """FSDP: make sure layer `layer` is gathered (issued one layer ahead), and prefetch the next one."""
        if self.group is None:
            return
        b = self.b
        if i == 0:
            self._ag(layer, m, phase)
        if i + 1 < len(layers):
            if i > 0:  # at most two layers gathered: the next waits until the previous layer's compute is done
                b.wait(self._done(layers[i - 1], m, phase), "ag")
            self._ag(layers[i + 1], m, phase)
        b.wait(f"ag_{phase}{m}.{layer}", "compute")

    def _done(self, layer: int, m: int, phase: str) -> str:
        event = f"{phase}done{m}.{layer}"
        self.b.record(event, "compute")
        return event

    def _ag(self, layer: int, m: int, phase: str) -> None:
        params = self.step.dense_layer_params + self.step.expert_layer_params
        self.b.coll("allgather", self.group, params * self.s.elem, "ag", name=f"ag_{phase}{m}.{layer}")
        self.b.record(f"ag_{phase}{m}.{layer}", "ag")

    def finish(self) -> None:
        """DDP flushes the last, partly filled bucket; the step ends when every gradient is synchronised."""
        b = self.b
        if self.group is None:
            return
        if not self.s.fsdp and self.filled:
            self.bucket_no += 1
            b.coll("allreduce", self.group, self.filled, "comm", name=f"bucket{self.bucket_no}")
        b.record("grads_synced", "comm")
        b.wait("grads_synced", "compute")


def generate(spec: StepSpec) -> Program:
    """The Program of one training step."""
    return _Step(spec).program()
