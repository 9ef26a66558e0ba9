"""GPU and model presets for training-step scenarios, with their published numbers and sources.

GPU peaks are dense BF16 tensor-core FLOP/s (no 2:4 sparsity), from the vendor datasheets:
- A100 SXM: 312 TFLOP/s. NVIDIA A100 Tensor Core GPU datasheet (2021), "BF16 Tensor Core 312 TFLOPS | 624 TFLOPS*" (* sparsity).
- H100 SXM: 989 TFLOP/s. NVIDIA H100 Tensor Core GPU datasheet (2023), "BF16 Tensor Core 1,979 TFLOPS*" (* with sparsity; dense is half).
- H200 SXM: 989 TFLOP/s. NVIDIA H200 Tensor Core GPU datasheet (2024), "BF16 Tensor Core 1,979 TFLOPS*" (* with
  sparsity): the H100's compute with more and faster memory (141 GB HBM3e).
- B200: 2250 TFLOP/s. NVIDIA DGX B200 / HGX B200 datasheet (2024), "FP16/BF16 Tensor Core 36 PFLOPS*" for 8 GPUs
  (* with sparsity): 4.5 PFLOP/s sparse, 2.25 PFLOP/s dense per GPU.
- B300: 2250 TFLOP/s. NVIDIA HGX B300 page / DGX B300 datasheet (2025), "FP16/BF16 Tensor Core 36 PFLOPS*" for 8 GPUs
  (* with sparsity), as B200's (Blackwell Ultra adds FP4, not BF16, throughput).

Model shapes are the published configurations:
- llama2-7b, llama2-70b: Touvron et al., "Llama 2" (arXiv:2307.09288), Table 1 and the released config.json
  (meta-llama/Llama-2-7b-hf, Llama-2-70b-hf): hidden, layers, heads, KV heads (GQA for 70B), SwiGLU FFN width, vocab 32000,
  untied input and output embeddings. Parameter counts 6,738,415,616 and 68,976,648,192.
- mixtral-8x7b: Jiang et al., "Mixtral of Experts" (arXiv:2401.04088), Table 1: dim 4096, 32 layers, 32 heads, 8 KV heads,
  hidden 14336, 8 experts, top-2, vocab 32000. 46.7B parameters, 12.9B active per token.
- megatron-22b: the 22B GPT of Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models"
  (arXiv:2205.05198), Table 3: hidden 6144, 48 layers, 64 heads, sequence 2048 (vocab 51200, Megatron's padded GPT-2
  vocabulary). Its 4h GELU MLP (2 x h x 4h weights) is written as a SwiGLU of width 8h/3 = 16384, which has the same
  8 h^2 weights and FLOPs. Used as the anchor of docs/whatif.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import CollsimError


@dataclass(frozen=True)
class Gpu:
    """A GPU's peak dense BF16 throughput."""

    name: str
    peak_flops: float


@dataclass(frozen=True)
class Model:
    """A decoder-only transformer's shape (Llama-style: SwiGLU MLP, GQA, RMSNorm, untied embeddings)."""

    name: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    seq_len: int
    experts: int = 1
    top_k: int = 1

    @property
    def attn_params(self) -> int:
        """Q and O (hidden x hidden) plus K and V (hidden x kv width) of one layer."""
        kv = self.hidden * self.kv_heads // self.heads
        return 2 * self.hidden * self.hidden + 2 * self.hidden * kv

    @property
    def expert_params(self) -> int:
        """One SwiGLU MLP (gate, up, down)."""
        return 3 * self.hidden * self.ffn

    @property
    def mlp_params(self) -> int:
        """All of a layer's MLP weights: every expert, plus the router for a MoE."""
        return self.experts * self.expert_params + (self.hidden * self.experts if self.experts > 1 else 0)

    @property
    def layer_params(self) -> int:
        """One transformer layer: attention, MLP (all experts), two norms."""
        return self.attn_params + self.mlp_params + 2 * self.hidden

    @property
    def embedding_params(self) -> int:
        """Input embedding or output head (untied: each is vocab x hidden)."""
        return self.vocab * self.hidden

    @property
    def params(self) -> int:
        """Total parameters: layers, input embedding, output head, final norm."""
        return self.layers * self.layer_params + 2 * self.embedding_params + self.hidden

    @property
    def active_layer_params(self) -> int:
        """Parameters one token goes through in a layer (top-k experts of a MoE)."""
        return self.attn_params + self.top_k * self.expert_params + 2 * self.hidden

    @property
    def moe(self) -> bool:
        """True for a mixture of experts."""
        return self.experts > 1


GPUS = {
    "a100": Gpu("A100 SXM", 312e12),
    "h100": Gpu("H100 SXM", 989e12),
    "h200": Gpu("H200 SXM", 989e12),
    "b200": Gpu("B200", 2250e12),
    "b300": Gpu("B300", 2250e12),
}

MODELS = {
    "llama2-7b": Model("Llama-2 7B", hidden=4096, layers=32, heads=32, kv_heads=32, ffn=11008, vocab=32000, seq_len=4096),
    "llama2-70b": Model("Llama-2 70B", hidden=8192, layers=80, heads=64, kv_heads=8, ffn=28672, vocab=32000, seq_len=4096),
    "megatron-22b": Model("Megatron 22B", hidden=6144, layers=48, heads=64, kv_heads=64, ffn=16384, vocab=51200, seq_len=2048),
    "mixtral-8x7b": Model("Mixtral 8x7B", hidden=4096, layers=32, heads=32, kv_heads=8, ffn=14336, vocab=32000, seq_len=4096,
                          experts=8, top_k=2),
}


def get_gpu(name: str) -> Gpu:
    """A GPU preset by name (case-insensitive)."""
    key = str(name).strip().lower().replace(" ", "").replace("-sxm", "").replace("sxm", "")
    if key not in GPUS:
        raise CollsimError(f"gpu: unknown GPU {name!r}; expected one of {', '.join(GPUS)}")
    return GPUS[key]


def get_model(name: str) -> Model:
    """A model preset by name (case-insensitive)."""
    key = str(name).strip().lower()
    if key not in MODELS:
        raise CollsimError(f"model: unknown model {name!r}; expected one of {', '.join(MODELS)}")
    return MODELS[key]
