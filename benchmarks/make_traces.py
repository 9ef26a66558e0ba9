"""Real PyTorch profiler traces made here: one small DDP and one FSDP training step on gloo (CPU), 2 and 4 ranks.

Each rank builds the same tiny model (four Linear layers of 256 x 256 with ReLUs, float32, 263,168 parameters),
runs WARMUP steps, then PROFILED steps under `torch.profiler` (CPU activities), and writes its Kineto trace
(`<kind>-<P>r/rank<R>.json.gz`) into the output folder. Every step starts after a barrier; its wall time on each
rank (time.perf_counter, barrier exit to optimizer end) is kept in `steps.json` next to the traces, so a replay
can be compared with what was measured outside the profiler too.

- ddp: DistributedDataParallel, bucket_cap_mb=0.3 (so the gradients go out in several all-reduce buckets).
- fsdp: FullyShardedDataParallel (FSDP1, FULL_SHARD) with each Linear its own unit: all-gathers of parameters in
  forward and backward, reduce-scatters of gradients (gloo has no native reduce-scatter: torch's gloo backend
  emulates it and the trace names what ran).

    python -m benchmarks.make_traces                        # 2 and 4 ranks, ddp and fsdp, into tests/data/traces
    python -m benchmarks.make_traces --ranks 2 --kinds ddp --out /tmp/traces
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from verify.launch import World, run_local

WIDTH, LAYERS, BATCH = 256, 4, 32
WARMUP, PROFILED = 3, 1
KINDS = ("ddp", "fsdp")


def _model(kind: str):
    import torch
    from torch import nn

    torch.manual_seed(0)
    layers: list[nn.Module] = []
    for _ in range(LAYERS):
        layers += [nn.Linear(WIDTH, WIDTH), nn.ReLU()]
    model = nn.Sequential(*layers)
    if kind == "ddp":
        from torch.nn.parallel import DistributedDataParallel

        return DistributedDataParallel(model, bucket_cap_mb=0.3)
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh("cpu", (torch.distributed.get_world_size(),))
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer, mesh=mesh)
    return fully_shard(model, mesh=mesh)


def trace_job(world: World, kind: str, folder: str) -> dict:
    """Train WARMUP + PROFILED steps; the profiled ones into this rank's trace. Returns per-step seconds."""
    import torch
    import torch.distributed as dist
    from torch.profiler import ProfilerActivity, profile, record_function

    model = _model(kind)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(BATCH, WIDTH, generator=torch.Generator().manual_seed(world.rank))

    def step(name: str | None = None) -> float:
        dist.barrier()  # outside the step's span: the ranks start together
        start = time.perf_counter()
        with record_function(name) if name else contextlib.nullcontext():
            opt.zero_grad()
            model(x).square().mean().backward()
            opt.step()
        return time.perf_counter() - start

    for _ in range(WARMUP):
        step()
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        times = [step(f"ProfilerStep#{i}") for i in range(PROFILED)]
    path = os.path.join(folder, f"rank{world.rank}.json")
    prof.export_chrome_trace(path)
    with open(path, "rb") as src, gzip.open(path + ".gz", "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    os.remove(path)
    return {"rank": world.rank, "step_s": times}


def make(kind: str, ranks: int, out: Path) -> dict:
    """One world's traces into out/<kind>-<ranks>r/; returns what steps.json records for it."""
    folder = out / f"{kind}-{ranks}r"
    with tempfile.TemporaryDirectory(prefix="collsim-traces-") as tmp:
        results = run_local(trace_job, ranks, "gloo", timeout=120.0, args=(kind, tmp))
        folder.mkdir(parents=True, exist_ok=True)
        for name in sorted(os.listdir(tmp)):
            shutil.move(os.path.join(tmp, name), folder / name)
    return {"kind": kind, "ranks": ranks, "step_s": [r["step_s"] for r in results], "load": os.getloadavg()}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="2,4", help="world sizes, comma-separated (default 2,4)")
    ap.add_argument("--kinds", default=",".join(KINDS), help="ddp, fsdp or both (default both)")
    ap.add_argument("--out", default="tests/data/traces", help="output folder (default tests/data/traces)")
    args = ap.parse_args(argv)
    import torch

    out = Path(args.out)
    runs = [make(kind, int(p), out) for kind in args.kinds.split(",") for p in args.ranks.split(",")]
    meta = {"torch": torch.__version__, "model": f"{LAYERS} x Linear({WIDTH}, {WIDTH}) + ReLU, batch {BATCH}, float32",
            "warmup": WARMUP, "profiled": PROFILED, "runs": runs}
    (out / "steps.json").write_text(json.dumps(meta, indent=1) + "\n")
    for r in runs:
        print(f"{r['kind']} {r['ranks']} ranks: step {[round(max(s) * 1e3, 3) for s in zip(*r['step_s'])]} ms "
              f"(slowest rank), load {r['load'][0]:.2f}")


if __name__ == "__main__":
    main()
