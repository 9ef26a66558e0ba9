"""Closed-form alpha-beta-gamma costs of every registered algorithm, and lower bounds.

Notation (REFERENCE.md): p ranks, n bytes in nccl-tests' meaning (per-rank buffer for
allreduce/broadcast/reduce, total buffer for the others), alpha seconds per message, beta
seconds per byte (1/bandwidth), gamma seconds per reduced byte. Every function is vectorised
over n. The model is the single-port, full-duplex one: a rank sends one message and receives
one message at a time, and a message of m bytes takes alpha + m beta.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .collective import normalize_op
from .errors import CollsimError
from .ops import lookup

CostFn = Callable[..., np.ndarray]
CLOSED_FORMS: dict[tuple[str, str], CostFn] = {}


@dataclass(frozen=True)
class LinkModel:
    """alpha (s per message), beta (s per byte) and gamma (s per reduced byte)."""

    alpha: float
    beta: float
    gamma: float = 0.0

    @classmethod
    def from_bandwidth(cls, alpha: float, bandwidth: float, gamma: float = 0.0) -> LinkModel:
        """From a latency in s and a bandwidth in bytes/s."""
        return cls(alpha, 1.0 / bandwidth, gamma)


ExactFn = Callable[..., bool]
# When a closed form equals the schedule's time under the execution model (blocks and chunks even).
EXACT: dict[tuple[str, str], ExactFn] = {}


def always(p: int, model: LinkModel, **params) -> bool:
    """Exact for every p."""
    return True


def pow2(p: int, model: LinkModel, **params) -> bool:
    """Exact for p a power of two."""
    return p & (p - 1) == 0


def closed_form(op: str, name: str, exact: ExactFn = always):
    """Decorator: register fn(p, n, m: LinkModel, **params) -> seconds as the cost of (op, name).

    `exact(p, model, **params)` says when the form is the schedule's exact time under the model
    (for sizes that split evenly); elsewhere it is an estimate, described in its comment.
    """

    def wrap(fn: CostFn) -> CostFn:
        key = (normalize_op(op), name)
        CLOSED_FORMS[key] = fn
        EXACT[key] = exact
        return fn

    return wrap


def is_exact(op: str, name: str, p: int, model: LinkModel, **params) -> bool:
    """True where the closed form of (op, name) is the schedule's exact time under the model."""
    return p == 1 or EXACT[(normalize_op(op), name)](p, model, **{k: v for k, v in params.items() if v is not None})


def lg(p: int) -> int:
    """ceil(log2 p), 0 for p = 1."""
    return int(math.ceil(math.log2(p))) if p > 1 else 0


def floor_lg(p: int) -> int:
    """floor(log2 p)."""
    return p.bit_length() - 1


def predict(op: str, name: str, p: int, sizes, model: LinkModel, **params) -> np.ndarray:
    """Closed-form seconds of algorithm `name` for each size in `sizes` (bytes)."""
    key = (normalize_op(op), name)
    fn = CLOSED_FORMS.get(key)
    if fn is None:
        known = ", ".join(n for (o, n) in CLOSED_FORMS if o == key[0])
        raise CollsimError(f"algo: no closed form for {key[0]}/{name}; known: {known}")
    n = np.asarray(sizes, dtype=np.float64)
    if p == 1:
        return np.zeros_like(n)
    return np.broadcast_to(np.asarray(fn(p, n, model, **{k: v for k, v in params.items() if v is not None}),
                                      dtype=np.float64), n.shape).copy()


def lower_bound(op: str, p: int, sizes, model: LinkModel) -> np.ndarray:
    """ceil(lg p) alpha + W beta: no single-port algorithm can beat it (REFERENCE.md, Thakur et al. 2005).

    Latency: the number of ranks holding (or contributing to) a datum at most doubles per
    message round. Bandwidth: W n bytes must cross some rank's port (2(p-1)/p n for allreduce,
    (p-1)/p n for allgather, reduce-scatter, scatter, gather and alltoall, n for broadcast and reduce).
    """
    n = np.asarray(sizes, dtype=np.float64)
    if p == 1:
        return np.zeros_like(n)
    return lg(p) * model.alpha + lookup(op).bandwidth_bound(p) * n * model.beta


# ---- ring family (Patarasuk & Yuan 2009; Thakur et al. 2005) ---------------------------------
# Published (k = 1): allreduce 2(p-1) alpha + 2(p-1)/p n beta + (p-1)/p n gamma; reduce-scatter
# (p-1) alpha + (p-1)/p n (beta + gamma); allgather (p-1) alpha + (p-1)/p n beta. With k = 1 each
# step's send waits for the previous step's reduction, so the terms add up exactly.
# Pipelined (derived): blocks cut into k chunks, a = alpha + n/(pk) beta per chunk message and
# g = n/(pk) gamma per chunk reduction. For k >= 2 a chunk is reduced while the next travels, so
# the slower of the two sets the pace: the port (a) or the reducer (g) is never idle.
# reduce-scatter: (p-1) k max(a, g) + min(a, g) (exact in every case tested). Allreduce: 2(p-1) k a
# if g <= a (exact in every case tested); if g > a the allgather can only start as the last
# reductions finish: max((p-1) k g + p a, (p-1) k (a + g) - (k-1) g + a), an estimate (exact for
# p >= 3 in the cases tested, within 25% everywhere in tests/test_cost.py).

def _ring_exact(p: int, model: LinkModel, chunks: int = 1) -> bool:
    return chunks == 1 or model.gamma == 0


def _ring_chunk(p, n, m, chunks):
    """(a, g): one chunk message and one chunk reduction."""
    piece = n / (p * chunks)
    return m.alpha + piece * m.beta, piece * m.gamma


@closed_form("allreduce", "ring", _ring_exact)
def _allreduce_ring(p, n, m, chunks=1):
    a, g = _ring_chunk(p, n, m, chunks)
    if chunks == 1:
        return 2 * (p - 1) * a + (p - 1) * g
    slow_reducer = np.maximum((p - 1) * chunks * g + p * a, (p - 1) * chunks * (a + g) - (chunks - 1) * g + a)
    return np.where(g <= a, 2 * (p - 1) * chunks * a, slow_reducer)


@closed_form("allgather", "ring")
def _allgather_ring(p, n, m, chunks=1):
    return (p - 1) * (chunks * m.alpha + n / p * m.beta)


@closed_form("reduce_scatter", "ring")
def _reduce_scatter_ring(p, n, m, chunks=1):
    a, g = _ring_chunk(p, n, m, chunks)
    if chunks == 1:
        return (p - 1) * (a + g)
    return (p - 1) * chunks * np.maximum(a, g) + np.minimum(a, g)


# ---- helpers for the MPICH pre/post step ---------------------------------------------------------
# p not a power of two: r = p - p2 extra ranks (p2 = 2^floor(lg p)) first hand their data to a
# partner and get the result back at the end (MPICH; Thakur et al. 2005, section 4).

def _pof2(p: int) -> int:
    """2^floor(lg p)."""
    return 1 << floor_lg(p)


def _fold_extra(p: int) -> int:
    """1 when p needs the pre/post step, else 0."""
    return 0 if p == _pof2(p) else 1


def _window_blocks(p: int) -> list[int]:
    """Largest window (in blocks of n/p) exchanged per round by the p2 survivors of the pre step.

    Survivor j < r stands for two blocks, the others for one; a round at distance d moves d
    survivors' blocks, at most d + min(d, r) blocks (derived; d + 0 = d when p is a power of two).
    """
    p2 = _pof2(p)
    r = p - p2
    return [d + min(d, r) for d in (1 << i for i in range(floor_lg(p2)))]


# ---- recursive doubling / halving (Thakur, Rabenseifner & Gropp 2005; REFERENCE.md) ------------
# Allreduce recursive doubling, published: lg(p) alpha + n lg(p) (beta + gamma). Each round swaps
# whole vectors (both directions at once) and reduces: alpha + n beta + n gamma. For p not a power
# of two (derived): one pre round alpha + n (beta + gamma) and one post round alpha + n beta.

@closed_form("allreduce", "recursive_doubling")
def _allreduce_recursive_doubling(p, n, m):
    rounds = floor_lg(p)
    x = _fold_extra(p)
    return (rounds + x) * (m.alpha + n * (m.beta + m.gamma)) + x * (m.alpha + n * m.beta)


# Rabenseifner, published (p a power of two): 2 lg(p) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma:
# halving rounds of n/2, n/4, ... each reduced before the next is sent, then doubling rounds.
# p not a power of two (derived, the published form uses p where the schedule has p2 survivors):
# (2 floor(lg p) + 2) alpha + (2 (p2-1)/p2 + 2) n beta + (1 + (p2-1)/p2) n gamma.

@closed_form("allreduce", "rabenseifner", pow2)
def _allreduce_rabenseifner(p, n, m):
    p2, x = _pof2(p), _fold_extra(p)
    f = (p2 - 1) / p2
    return ((2 * floor_lg(p) + 2 * x) * m.alpha + (2 * f + 2 * x) * n * m.beta + (f + x) * n * m.gamma)


# Allgather recursive doubling, published (p a power of two): lg(p) alpha + (p-1)/p n beta.
# Other p (derived, an upper bound): pre round of n/p, doubling rounds carrying at most
# d + min(d, r) blocks, post round of (p-1)/p n.

@closed_form("allgather", "recursive_doubling", pow2)
def _allgather_recursive_doubling(p, n, m):
    x = _fold_extra(p)
    rounds = sum(m.alpha + w * n / p * m.beta for w in _window_blocks(p))
    return rounds + x * (2 * m.alpha + n / p * m.beta + (p - 1) / p * n * m.beta)


# Reduce-scatter recursive halving, published (commutative, p a power of two):
# lg(p) alpha + (p-1)/p n (beta + gamma). Other p (derived, an upper bound): pre round of n with
# its reduction, halving rounds of at most d + min(d, r) blocks, post round of n/p.

@closed_form("reduce_scatter", "recursive_halving", pow2)
def _reduce_scatter_recursive_halving(p, n, m):
    x = _fold_extra(p)
    rounds = sum(m.alpha + w * n / p * (m.beta + m.gamma) for w in _window_blocks(p))
    return rounds + x * (m.alpha + n * (m.beta + m.gamma) + m.alpha + n / p * m.beta)


# Reduce Rabenseifner (reduce-scatter + binomial gather), published (p a power of two):
# 2 lg(p) alpha + 2 (p-1)/p n beta + (p-1)/p n gamma. Other p (derived): the p2 survivors split n
# evenly, after one pre round alpha + n (beta + gamma).

@closed_form("reduce", "rabenseifner", pow2)
def _reduce_rabenseifner(p, n, m):
    p2, x = _pof2(p), _fold_extra(p)
    f = (p2 - 1) / p2
    return 2 * floor_lg(p) * m.alpha + 2 * f * n * m.beta + f * n * m.gamma + x * (m.alpha + n * (m.beta + m.gamma))


# ---- binomial trees (Thakur et al. 2005; MPICH) ----------------------------------------------
# Broadcast: ceil(lg p) (alpha + n beta): the root sends ceil(lg p) whole messages one after another.

@closed_form("broadcast", "binomial")
def _broadcast_binomial(p, n, m):
    return lg(p) * (m.alpha + n * m.beta)


# Reduce: ceil(lg p) (alpha + n (beta + gamma)), published for p a power of two (each child's
# message is reduced before the parent sends on). Other p: the truncated top subtree can collide
# with a sibling on the root's port; the form is then an estimate (tested to stay within 1 round).

@closed_form("reduce", "binomial", pow2)
def _reduce_binomial(p, n, m):
    return lg(p) * (m.alpha + n * (m.beta + m.gamma))


# Allreduce binomial = reduce then broadcast (derived: the two phases do not overlap, the
# broadcast starts when the root's last reduction ends).

@closed_form("allreduce", "binomial", pow2)
def _allreduce_binomial(p, n, m):
    return lg(p) * (2 * m.alpha + n * (2 * m.beta + m.gamma))


# Gather and scatter binomial, published: lg(p) alpha + (p-1)/p n beta; the root's port carries
# ceil(lg p) messages totalling (p-1)/p n, back to back.

@closed_form("gather", "binomial")
def _gather_binomial(p, n, m):
    return lg(p) * m.alpha + (p - 1) / p * n * m.beta


@closed_form("scatter", "binomial")
def _scatter_binomial(p, n, m):
    return lg(p) * m.alpha + (p - 1) / p * n * m.beta


# Broadcast scatter + ring allgather (van de Geijn), published: (lg(p) + p - 1) alpha + 2 (p-1)/p n beta.
# Derived for the schedule: block 1 reaches rank 1 last, when the root's port has carried the whole
# scatter (ceil(lg p) alpha + (p-1)/p n beta), then needs p-1 ring hops of alpha + n/p beta.

@closed_form("broadcast", "scatter_allgather")
def _broadcast_scatter_allgather(p, n, m):
    return (lg(p) + p - 1) * m.alpha + 2 * (p - 1) / p * n * m.beta


# Pipelined chain, published: (p + k - 2)(alpha + n beta / k) (REFERENCE.md, pipelining).

@closed_form("broadcast", "pipelined_chain")
def _broadcast_pipelined_chain(p, n, m, chunks=1):
    return (p + chunks - 2) * (m.alpha + n / chunks * m.beta)


# ---- NCCL double binary tree (Sanders, Speck & Traeff 2009; NCCL trees.cc) ---------------------
# Derived; no published closed form. Each tree carries n/2 in k chunks: an up message costs
# u = alpha + n/(2k) (beta + gamma), a down message d = alpha + n/(2k) beta. With k = 1 a node
# takes its children's messages one after the other (single port) and sends to them one after
# the other, so tree t needs c_up(t) u + c_down(t) d, where the integer message counts c come
# from the tree's shape (for a power of two: 2 D - 1 each, D the depth). The trees run side by
# side. With k chunks every rank's ports carry P messages per chunk index (P = children + 1 per
# tree, summed over both trees: 4 for p a power of two >= 4), adding P (k - 1) d.
# T = max_t (c_up(t) u + c_down(t) d) + P (k - 1) d. Exact for p a power of two, k = 1 and
# gamma = 0; otherwise an estimate (within 25% of the schedule in tests/test_cost.py).
# REFERENCE's "about 2 lg(p) alpha + 2 n beta" is its shape for large k.

def dtree_counts(p: int) -> tuple[list[tuple[int, int]], int]:
    """Per tree, the messages on its critical path going up and coming down (k = 1), and the period P."""
    from .algorithms.tree import dtree_parents, tree_depths

    counts, load = [], [0] * p
    for parent in dtree_parents(p):
        children: list[list[int]] = [[] for _ in range(p)]
        for r, u in enumerate(parent):
            if u >= 0:
                children[u].append(r)
                load[r] += 1
                load[u] += 1
        depth = tree_depths(parent)
        order = sorted(range(p), key=lambda r: depth[r])
        up = [0] * p
        for r in reversed(order):  # leaves first
            t = 0
            for c in sorted(children[r], key=lambda c: up[c]):
                t = max(t, up[c]) + 1
            up[r] = t
        down = [0] * p
        for r in order:
            for i, c in enumerate(sorted(children[r], key=lambda c: (depth[c], c))):
                down[c] = down[r] + i + 1
        root = parent.index(-1)
        counts.append((up[root], max(down)))
    return counts, max(load)


def _dbt_exact(p: int, model: LinkModel, chunks: int = 1) -> bool:
    return pow2(p, model) and chunks == 1 and model.gamma == 0


@closed_form("allreduce", "double_binary_tree", _dbt_exact)
def _allreduce_double_binary_tree(p, n, m, chunks=1):
    counts, period = dtree_counts(p)
    piece = n / (2 * chunks)
    up = m.alpha + piece * (m.beta + m.gamma)
    down = m.alpha + piece * m.beta
    fill = np.maximum.reduce([c_up * up + c_down * down for c_up, c_down in counts])
    return fill + period * (chunks - 1) * down


# ---- direct (all-pairs) --------------------------------------------------------------------------
# Allgather, alltoall, gather, scatter direct: every port carries p-1 messages of n/p back to back:
# (p-1)(alpha + n/p beta), REFERENCE's pairwise (p-1) alpha + (p-1)/p n beta.

@closed_form("allgather", "direct")
@closed_form("alltoall", "direct")
@closed_form("gather", "direct")
@closed_form("scatter", "direct")
def _direct_one_port(p, n, m):
    return (p - 1) * (m.alpha + n / p * m.beta)


# Reduce-scatter direct (derived): p-1 messages of b = n/p arrive back to back at each rank and
# its reducer works through them one at a time, so it ends at
# max((p-1)(alpha + b beta) + b gamma, (alpha + b beta) + (p-1) b gamma).

def _direct_rs(p, n, m):
    b = n / p
    msg = m.alpha + b * m.beta
    return np.maximum((p - 1) * msg + b * m.gamma, msg + (p - 1) * b * m.gamma)


@closed_form("reduce_scatter", "direct")
def _reduce_scatter_direct(p, n, m):
    return _direct_rs(p, n, m)


# Allreduce direct (derived): the direct reduce-scatter, then p-1 allgather messages of n/p.

@closed_form("allreduce", "direct")
def _allreduce_direct(p, n, m):
    return _direct_rs(p, n, m) + (p - 1) * (m.alpha + n / p * m.beta)


# ---- Bruck (Bruck et al. 1997; Thakur et al. 2005) ------------------------------------------------
# Allgather, published: ceil(lg p) alpha + (p-1)/p n beta (step k carries min(2^k, p - 2^k) blocks).

@closed_form("allgather", "bruck")
def _allgather_bruck(p, n, m):
    return lg(p) * m.alpha + (p - 1) / p * n * m.beta


# Alltoall, published (p a power of two): lg(p) alpha + (n/2) lg(p) beta. Any p (derived): step k
# carries the blocks whose index i in 1..p-1 has bit k set.

def _bruck_alltoall_blocks(p: int) -> list[int]:
    """Blocks of n/p sent in each step of Bruck's alltoall."""
    return [sum(1 for i in range(1, p) if i >> k & 1) for k in range(lg(p))]


@closed_form("alltoall", "bruck")
def _alltoall_bruck(p, n, m):
    return sum(m.alpha + c * n / p * m.beta for c in _bruck_alltoall_blocks(p))


# ---- two-level (REFERENCE.md, hierarchical allreduce with alpha_in = alpha_out) ------------------
# G ranks per group, N = p / G groups: ring reduce-scatter in the group on n, ring allreduce across
# groups on n/G, ring allgather in the group. Each ring step waits for the previous reduction, so
# (derived, exact) 2 (G-1)(alpha + n/G beta) + (G-1)/G n gamma + 2 (N-1)(alpha + n/(G N) beta) + (N-1)/(G N) n gamma.

@closed_form("allreduce", "hierarchical")
def _allreduce_hierarchical(p, n, m, group=None):
    from .algorithms.hierarchical import resolve_group

    g = resolve_group(p, group)
    groups = p // g
    inner = 2 * (g - 1) * (m.alpha + n / g * m.beta) + (g - 1) / g * n * m.gamma
    outer = 2 * (groups - 1) * (m.alpha + n / p * m.beta) + (groups - 1) / p * n * m.gamma
    return inner + outer
