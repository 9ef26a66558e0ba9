"""NCCL-style channels and rails: several rings at once, each in its own order, and a pipelined two-level allreduce.

NCCL runs a collective on several *channels*: each is a ring (or tree) over all ranks in its own
order, and the data is split over them (src/graph/search.cc builds the orders, src/enqueue.cc
splits the work). On nodes x GPUs its rings cross from node to node through different GPUs, so
that every GPU's NIC (its *rail*) carries one channel's inter-node traffic.

- `nccl_ring` (allreduce, allgather, reduce_scatter): C rings. Channel c visits the nodes in
  turn and, inside node i, its GPUs starting at local GPU c mod G (`rail_orders`): the ring leaves
  a node through GPU c-1 and enters the next through GPU c, so C = G channels use every NIC once
  in each direction. Each block is cut into C pieces; channel c moves piece c of every block.
- `rails` (allreduce): NCCL's tree bandwidth with rails, as schedules collsim can check: the
  buffer is cut into K pipeline chunks; each chunk is reduce-scattered by a ring inside each
  node, allreduced by a ring across nodes on every rail (GPU k of each node, through its own NIC),
  and allgathered inside each node. Chunk j+1 follows chunk j through every transfer (it waits for
  the same transfer of chunk j), so the phases of successive chunks overlap like NCCL's pipeline.
  Out of each node go 2 (N-1)/N n bytes over its NICs (N nodes), against 2 (p-1)/p n for rings over
  all p ranks: on 2 nodes of 8, n against 1.875 n, the reason NCCL runs trees across a few nodes.
"""

from __future__ import annotations

import numpy as np

from ..collective import Collective, offsets_of, split_counts
from ..schedule import BUFFERS, ArraySchedule, Schedule, ScheduleBuilder, csr_rows
from .chunks import chunk_schedule, rings
from .forms import LinkModel
from .hierarchical import GROUP, resolve_group
from .phases import Seg, block_segs, ring_phase
from .registry import CHUNKS, Param, register
from .ring import _allgather_cost, _allreduce_cost, _reduce_scatter_cost

DEFAULT_CHANNELS = 2
CHANNELS = Param("channels", DEFAULT_CHANNELS, "rings run at once, each in its own order, the data split over them "
                 "(NCCL's channels; `collsim predict` picks NCCL's count for the machine)", maximum=64)
NODE = Param("node", None, "ranks per node for the rail-aware ring orders (default: every rank on one node)")
PIPELINE = Param("pipeline", 1, "chunks the buffer is cut into; chunk j+1 follows chunk j through every transfer",
                 maximum=256)


def rail_orders(p: int, node: int | None, channels: int) -> list[list[int]]:
    """The rank order of each channel's ring: nodes in turn; inside node i its ranks from local rank c mod size.

    Node i holds ranks i*node .. (i+1)*node - 1 (the last node may be smaller). Channel c enters
    node i at its local rank c and leaves it at local rank c - 1, so consecutive channels cross
    between nodes through different ranks (and their NICs).
    """
    node = p if node is None else max(1, min(int(node), p))
    orders = []
    for c in range(channels):
        order: list[int] = []
        for start in range(0, p, node):
            size = min(node, p - start)
            order.extend(start + (c + k) % size for k in range(size))
        orders.append(order)
    return orders


def split_seg(seg: Seg, parts: int) -> list[Seg]:
    """A region cut into `parts` near-equal pieces (larger first), empty pieces kept so every channel has one."""
    off, count = seg
    sizes = split_counts(count, parts)
    starts = off + np.concatenate(([0], np.cumsum(sizes)[:-1]))
    return [(int(s), int(c)) for s, c in zip(starts, sizes)]


def _ring(coll: Collective, chunks: int, channels: int, node: int | None, rs: bool, ag: bool) -> Schedule:
    orders = tuple(map(tuple, rail_orders(coll.ranks, node, channels)))
    pieces = [split_seg(seg, channels) for seg in block_segs(coll.block_offsets)]
    segs = [pieces[r][c] for c in range(channels) for r in range(coll.ranks)]
    owned = tuple(tuple(c * coll.ranks + r for r in order) for c, order in enumerate(orders))
    return chunk_schedule(coll, "nccl_ring", rings, segs, orders, owned, rs, ag, chunks=chunks,
                          params={"chunks": chunks, "channels": channels, "node": node})


# ---- closed forms ------------------------------------------------------------------------------------------
# On one node (every channel's ring has the same edges, rotated) with one port per rank, the C
# channels of k chunks each are the ring with C k chunks: the rank's port sends channel after
# channel without idling (derived; the engine agrees where gamma = 0, tests/test_channels.py).
# With gamma > 0 or rings that cross nodes through different ranks it is an estimate.

def _channels_exact(p: int, model: LinkModel, chunks: int = 1, channels: int = DEFAULT_CHANNELS,
                    node: int | None = None) -> bool:
    return model.gamma == 0 and (node is None or node >= p)


def _ring_form(form):
    def cost(p, n, m, chunks=1, channels=DEFAULT_CHANNELS, node=None):
        return form(p, n, m, chunks * channels)
    return cost


PARAMS = (CHUNKS, CHANNELS, NODE)


@register("allreduce", "nccl_ring", "C rings in their own (rail-aware) orders, each on 1/C of the data",
          PARAMS, cost=_ring_form(_allreduce_cost), exact=_channels_exact)
def allreduce_nccl_ring(coll: Collective, chunks: int = 1, channels: int = DEFAULT_CHANNELS, node: int | None = None) -> Schedule:
    return _ring(coll, chunks, channels, node, True, True)


@register("allgather", "nccl_ring", "C rings in their own (rail-aware) orders, each on 1/C of the data",
          PARAMS, cost=_ring_form(_allgather_cost), exact=_channels_exact)
def allgather_nccl_ring(coll: Collective, chunks: int = 1, channels: int = DEFAULT_CHANNELS, node: int | None = None) -> Schedule:
    return _ring(coll, chunks, channels, node, False, True)


@register("reduce_scatter", "nccl_ring", "C rings in their own (rail-aware) orders, each on 1/C of the data",
          PARAMS, cost=_ring_form(_reduce_scatter_cost), exact=_channels_exact)
def reduce_scatter_nccl_ring(coll: Collective, chunks: int = 1, channels: int = DEFAULT_CHANNELS,
                             node: int | None = None) -> Schedule:
    return _ring(coll, chunks, channels, node, True, False)


# ---- rails: pipelined two-level allreduce --------------------------------------------------------------------

def _rails_chunk(b: ScheduleBuilder, p: int, g: int, seg: Seg) -> list[int]:
    """One chunk's hierarchical allreduce (ring RS in nodes, ring allreduce per rail, ring AG in nodes); its ids."""
    first = len(b._transfers)
    nodes = [list(range(i * g, (i + 1) * g)) for i in range(p // g)]
    segs = block_segs(offsets_of(split_counts(seg[1], g)) + seg[0])
    step = 0
    for members in nodes:
        step = ring_phase(b, members, segs, True)
    rails = [[members[j] for members in nodes] for j in range(g)]
    sub = [block_segs(offsets_of(split_counts(segs[j][1], len(nodes))) + segs[j][0]) for j in range(g)]
    after_rs = after_ag = step
    for j in range(g):
        after_rs = ring_phase(b, rails[j], sub[j], True, step=step)
    for j in range(g):
        after_ag = ring_phase(b, rails[j], sub[j], False, step=after_rs)
    for members in nodes:
        ring_phase(b, members, segs, False, step=after_ag)
    return list(range(first, len(b._transfers)))


# Closed form: pipeline=1 is `hierarchical` (same transfers, same order; exact). With K chunks on
# one port per rank the port carries every message of the K chunks; the estimate is that work
# (hierarchical's form with K times the messages, the same bytes), exact when nothing waits.
def _rails_cost(p, n, m: LinkModel, group=None, pipeline=1):
    g = resolve_group(p, group)
    nodes = p // g
    inner = 2 * (g - 1) * (pipeline * m.alpha + n / g * m.beta) + (g - 1) / g * n * m.gamma
    outer = 2 * (nodes - 1) * (pipeline * m.alpha + n / p * m.beta) + (nodes - 1) / p * n * m.gamma
    return inner + outer


def _rails_exact(p: int, model: LinkModel, group=None, pipeline=1) -> bool:
    return pipeline == 1


@register("allreduce", "rails",
          "K pipelined chunks of: ring reduce-scatter in each node, ring allreduce per rail across nodes, ring allgather",
          (GROUP, PIPELINE), ranks_rule="any p >= 1; group (ranks per node) must divide p", cost=_rails_cost,
          exact=_rails_exact)
def allreduce_rails(coll: Collective, group: int | None = None, pipeline: int = 1) -> Schedule:
    """Chunk by chunk, as one ScheduleBuilder would add them, and transfer i of chunk j+1 also waits for transfer i of
    chunk j when both go between the same ranks (the pipeline). Chunks touch disjoint elements, so a chunk's own
    dependencies are those of a chunk of its size at offset 0, built once per size (at most two) and shifted."""
    p = coll.ranks
    g = resolve_group(p, group)
    segs = block_segs(offsets_of(split_counts(coll.count, pipeline)))
    shapes = {count: _chunk_columns(coll, p, g, count) for count in {count for _, count in segs}}
    parts, base, prev = [], 0, None
    for off, count in segs:
        shape = shapes[count]
        n = shape["src"].size
        table = shape["deps"] + np.where(shape["deps"] >= 0, base, 0)
        if prev is not None:  # the pipeline: the same message of the chunk before
            m = min(n, prev[1]["src"].size)
            same = (shape["src"][:m] == prev[1]["src"][:m]) & (shape["dst"][:m] == prev[1]["dst"][:m])
            table[:m, -1] = np.where(same, prev[0] + np.arange(m), -1)
        parts.append({**shape, "src_off": shape["src_off"] + off, "dst_off": shape["dst_off"] + off, "deps": table})
        prev, base = (base, shape), base + n
    columns = {key: np.concatenate([q[key] for q in parts]) for key in parts[0] if key != "deps"}
    width = max(q["deps"].shape[1] for q in parts)  # the tables side by side, padded to the widest (the pipeline last)
    table = np.full((base, width), -1, dtype=np.int64)
    at = 0
    for q in parts:
        rows = q["deps"]
        table[at:at + len(rows), :rows.shape[1] - 1] = rows[:, :-1]
        table[at:at + len(rows), -1] = rows[:, -1]
        at += len(rows)
    columns["dep_ptr"], columns["dep_idx"] = csr_rows(table)
    columns["piece_ptr"] = np.arange(base + 1, dtype=np.int64)
    return ArraySchedule(coll, "rails", columns, {"group": g, "pipeline": pipeline})


def _chunk_columns(coll: Collective, p: int, g: int, count: int) -> dict[str, np.ndarray]:
    """One rails chunk of `count` elements at offset 0 through its own ScheduleBuilder, as columns (one piece per
    transfer; its dependencies as a table, one column left free for the pipeline's)."""
    b = ScheduleBuilder(coll, "rails")
    _rails_chunk(b, p, g, (0, count))
    ts = b.build().transfers
    if any(len(t.pieces) != 1 for t in ts):
        raise AssertionError("rails: a ring message with other than one piece")
    width = max((len(t.deps) for t in ts), default=0) + 1
    deps = np.full((len(ts), width), -1, dtype=np.int64)
    for i, t in enumerate(ts):
        deps[i, :len(t.deps)] = t.deps
    pieces = [t.pieces[0] for t in ts]
    return {"src": np.array([t.src for t in ts], dtype=np.int64), "dst": np.array([t.dst for t in ts], dtype=np.int64),
            "reduce": np.array([t.reduce for t in ts], dtype=bool), "step": np.array([t.step for t in ts], dtype=np.int64),
            "src_buf": np.array([BUFFERS.index(q.src_buf) for q in pieces], dtype=np.int64),
            "src_off": np.array([q.src_off for q in pieces], dtype=np.int64),
            "dst_buf": np.array([BUFFERS.index(q.dst_buf) for q in pieces], dtype=np.int64),
            "dst_off": np.array([q.dst_off for q in pieces], dtype=np.int64),
            "count": np.array([q.count for q in pieces], dtype=np.int64), "deps": deps}
