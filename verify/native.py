"""The native torch.distributed collectives, laid out like collsim's buffers so results compare directly.

Like nccl-tests, each op is a few lines: how to call it on this rank and where its result sits in
the full-size 'out' buffer. Uneven blocks (count not divisible by p) are padded for the
collectives that need equal blocks; timing runs use even sizes, where no padding happens.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from simulator.collective import Collective

NATIVE_NAMES = {"allreduce": "all_reduce", "allgather": "all_gather_into_tensor", "reduce_scatter": "reduce_scatter_tensor",
                "broadcast": "broadcast", "reduce": "reduce", "alltoall": "all_to_all_single", "gather": "gather",
                "scatter": "scatter"}


@dataclass
class NativeCall:
    """`run()` performs the collective; `reset()` restores its inputs; `result()` is the full 'out' layout."""

    run: Callable[[], None]
    reset: Callable[[], None]
    result: Callable[[], object]


def redop(name: str):
    """torch.distributed's ReduceOp for a collsim redop."""
    import torch.distributed as dist

    return {"sum": dist.ReduceOp.SUM, "prod": dist.ReduceOp.PRODUCT, "max": dist.ReduceOp.MAX, "min": dist.ReduceOp.MIN}[name]


def native_call(coll: Collective, rank: int, my_input, group=None) -> NativeCall:
    """Buffers and closures for the native collective of `coll` on this rank (my_input already on the device)."""
    import torch
    import torch.distributed as dist

    p, root, op = coll.ranks, coll.root, redop(coll.redop)
    counts = [int(c) for c in coll.block_counts]
    offs = [int(o) for o in coll.block_offsets]
    width = max(counts) if counts else 0
    even = len(set(counts)) <= 1
    dev, dtype = my_input.device, my_input.dtype
    empty = lambda n: torch.zeros(n, dtype=dtype, device=dev)
    full = empty(coll.out_count)

    def padded_blocks(src):
        """src (count elements) cut into p blocks padded to `width`, as one tensor of p * width."""
        if even:
            return src
        out = empty(p * width)
        for r in range(p):
            out[r * width:r * width + counts[r]].copy_(src[offs[r]:offs[r + 1]])
        return out

    def unpad_into(dst, src):
        """Inverse of padded_blocks."""
        if even:
            dst.copy_(src)
            return
        for r in range(p):
            dst[offs[r]:offs[r + 1]].copy_(src[r * width:r * width + counts[r]])

    if coll.op in ("allreduce", "reduce", "broadcast"):
        buf = my_input.clone()
        call = {"allreduce": lambda: dist.all_reduce(buf, op, group=group),
                "reduce": lambda: dist.reduce(buf, root, op, group=group),
                "broadcast": lambda: dist.broadcast(buf, root, group=group)}[coll.op]
        return NativeCall(call, lambda: buf.copy_(my_input), lambda: buf)
    if coll.op in ("allgather", "gather"):
        send = my_input if even else torch.cat([my_input, empty(width - len(my_input))])
        recv = full if even else empty(p * width)
        if coll.op == "allgather":
            call = lambda: dist.all_gather_into_tensor(recv, send, group=group)
        else:
            views = [recv.narrow(0, r * width, width) for r in range(p)] if rank == root else None
            call = lambda: dist.gather(send, views if rank == root else None, root, group=group)
        return NativeCall(call, lambda: None, lambda: (full if even else (unpad_into(full, recv), full)[1]))
    if coll.op in ("reduce_scatter", "scatter"):
        out_block = empty(width)
        if coll.op == "reduce_scatter":
            src = padded_blocks(my_input)
            src_copy = src.clone()
            call = lambda: dist.reduce_scatter_tensor(out_block, src, op, group=group)
            reset = lambda: src.copy_(src_copy)
        else:
            src = padded_blocks(my_input) if rank == root else None
            views = [src.narrow(0, r * width, width) for r in range(p)] if src is not None else None
            call = lambda: dist.scatter(out_block, views if rank == root else None, root, group=group)
            reset = lambda: None

        def result():
            full[offs[rank]:offs[rank + 1]].copy_(out_block[:counts[rank]])
            return full

        return NativeCall(call, reset, result)
    # alltoall: consecutive splits by peer on both sides
    in_splits = [coll.pair_count(rank, d) for d in range(p)]
    out_splits = [coll.pair_count(s, rank) for s in range(p)]
    call = lambda: dist.all_to_all_single(full, my_input, out_splits, in_splits, group=group)
    return NativeCall(call, lambda: None, lambda: full)
