"""The native torch.distributed collectives, laid out like collsim's buffers so results compare directly.

Which torch.distributed function an op calls, and with which arguments, is in the op's spec
(simulator/ops.py); this module lays out the tensors each buffer layout needs and where the result
sits in the full-size 'out' buffer. Uneven blocks (count not divisible by p) are padded for the
collectives that need equal blocks; timing runs use even sizes, where no padding happens.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from simulator.collective import Collective
from simulator.ops import SPECS

NATIVE_NAMES = {name: spec.torch for name, spec in SPECS.items()}


@dataclass
class NativeCall:
    """`run()` performs the collective; `reset()` restores its inputs; `result()` is the full 'out' layout."""

    run: Callable[[], object]  # the torch call's return: a Work with async_op, else None
    reset: Callable[[], None]
    result: Callable[[], object]


def redop(name: str):
    """torch.distributed's ReduceOp for a collsim redop."""
    import torch.distributed as dist

    return {"sum": dist.ReduceOp.SUM, "prod": dist.ReduceOp.PRODUCT, "max": dist.ReduceOp.MAX, "min": dist.ReduceOp.MIN}[name]


@dataclass
class NativeArgs:
    """What an op spec's `torch_args` picks its positional arguments from (simulator/ops.py)."""

    send: object  # the input tensor (blocks padded to equal width when uneven); None where the rank sends nothing
    recv: object  # the output tensor (the same tensor as `send` for full-buffer ops: they run in place)
    blocks: list | None  # on the root: the p equal blocks of its list-taking side (gather, scatter); None elsewhere
    send_splits: list[int] | None  # alltoall: elements to each peer
    recv_splits: list[int] | None  # alltoall: elements from each peer
    root: int
    op: object  # torch.distributed.ReduceOp


def native_call(coll: Collective, rank: int, my_input, group=None, *, torch_root: int | None = None,
                async_op: bool = False) -> NativeCall:
    """Buffers and closures for the native collective of `coll` on this rank (my_input already on the device).

    `rank` and coll.root count within the group; `torch_root` is the root as torch.distributed names it (a global
    rank; default coll.root, right when the group is the whole world)."""
    import torch
    import torch.distributed as dist

    spec, p, root = coll.spec, coll.ranks, coll.root
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

    def blocks_of(t):
        return [t.narrow(0, r * width, width) for r in range(p)] if rank == root and t is not None else None

    args = NativeArgs(None, None, None, None, None, root if torch_root is None else torch_root, redop(coll.redop))
    reset, result = (lambda: None), (lambda: full)
    if spec.send == "pairs":  # consecutive splits by peer on both sides
        args.send, args.recv = my_input, full
        args.send_splits = [coll.pair_count(rank, d) for d in range(p)]
        args.recv_splits = [coll.pair_count(s, rank) for s in range(p)]
    elif spec.recv == "block":
        args.recv = empty(width)
        args.send = padded_blocks(my_input) if spec.holds_input(coll, rank) else None
        args.blocks = blocks_of(args.send)
        if spec.reduces:
            src, src_copy = args.send, args.send.clone()
            reset = lambda: src.copy_(src_copy)

        def result():
            full[offs[rank]:offs[rank + 1]].copy_(args.recv[:counts[rank]])
            return full
    elif spec.send == "block":
        args.send = my_input if even else torch.cat([my_input, empty(width - len(my_input))])
        args.recv = full if even else empty(p * width)
        args.blocks = blocks_of(args.recv)
        result = lambda: full if even else (unpad_into(full, args.recv), full)[1]
    else:  # full buffer in, full buffer out: in place
        buf = args.send = args.recv = my_input.clone()
        reset, result = (lambda: buf.copy_(my_input)), (lambda: buf)
    fn = getattr(dist, spec.torch)
    call = lambda: fn(*spec.torch_args(args), group=group, async_op=async_op)
    return NativeCall(call, reset, result)
