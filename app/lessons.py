"""Guided lessons: short text, a prediction the student makes before the reveal (checked), two exercises with answers.

The right answers that are measurements (an engine time, which algorithm wins) are computed by the
simulator when the lesson is shown, so they stay true when the model changes; the others follow from
the definitions and are stated.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from simulator.algorithms import build_schedule
from simulator.collective import Collective
from simulator.cost import LinkModel, predict
from simulator.engine import EngineOptions, simulate
from simulator.errors import CollsimError
from simulator.topology import parse_topology


@dataclass(frozen=True)
class Lesson:
    """One lesson: `answer()` is the right prediction (a number, or one of `options`)."""

    key: str
    title: str
    text: str
    question: str
    answer: Callable[[], float | str]
    explain: str
    exercises: tuple[tuple[str, str], ...]
    options: tuple[str, ...] = ()
    tolerance: float = 0.0   # relative, for numbers
    unit: str = ""

    @property
    def kind(self) -> str:
        return "choice" if self.options else "number"


def check(lesson: Lesson, guess) -> bool:
    """True when the guess is the right answer (numbers within the lesson's relative tolerance)."""
    right = lesson.answer()
    if lesson.kind == "choice":
        return guess == right
    try:
        value = float(guess)
    except (TypeError, ValueError):
        raise CollsimError(f"prediction: {guess!r} is not a number; expected a number such as 3") from None
    if not math.isfinite(value):
        raise CollsimError(f"prediction: {guess!r} is not a finite number; expected a number such as 3")
    return abs(value - float(right)) <= lesson.tolerance * abs(float(right)) + 1e-12


# ---- measurements the lessons ask about ---------------------------------------------------------------------------

TEXTBOOK = LinkModel.from_bandwidth(2e-6, 25e9)  # 2 us, 25 GB/s
HIER_TOPOLOGY = "cluster:nodes=4,gpus=4,net_bw=12.5GB/s"
HIER_SIZE = 4096


def faster_at_4k() -> str:
    """Ring or recursive doubling: the faster closed form for a 4 KiB allreduce on 8 ranks."""
    ring = float(predict("allreduce", "ring", 8, [4096], TEXTBOOK)[0])
    rd = float(predict("allreduce", "recursive_doubling", 8, [4096], TEXTBOOK)[0])
    return "ring" if ring < rd else "recursive doubling"


def hierarchy_times(nbytes: int = HIER_SIZE) -> dict[str, float]:
    """Engine seconds of a flat ring and hierarchical (group 4) allreduce on 4 nodes x 4 GPUs."""
    topo = parse_topology(HIER_TOPOLOGY)
    coll = Collective("allreduce", 16, nbytes, "float32")
    return {"flat ring": simulate(build_schedule(coll, "ring"), topo).time,
            "hierarchical": simulate(build_schedule(coll, "hierarchical", group=4), topo).time}


def hierarchy_winner() -> str:
    times = hierarchy_times()
    return min(times, key=times.get)


def straggler_times(delay: float = 50e-6) -> tuple[float, float]:
    """Engine seconds of a 1 MiB ring allreduce on ring:8 without and with rank 3 starting `delay` late."""
    topo = parse_topology("ring:8")
    schedule = build_schedule(Collective("allreduce", 8, 1 << 20, "float32"), "ring")
    return simulate(schedule, topo).time, simulate(schedule, topo, EngineOptions(start_delay={3: delay})).time


def straggler_extra_us() -> float:
    before, after = straggler_times()
    return (after - before) * 1e6


def deadlock_program(swapped: bool):
    """Two ranks, two all-reduces on two process groups; rank 1 calls them in the other order when `swapped`."""
    from simulator.program.loader import program_from_dict

    grads = {"op": "allreduce", "group": "dp", "size": "1MiB", "name": "grads"}
    loss = {"op": "allreduce", "group": "metrics", "size": "4KiB", "name": "loss"}
    return program_from_dict({"world": 2, "groups": {"dp": [0, 1], "metrics": [0, 1]},
                              "ranks": {0: [grads, loss], 1: [loss, grads] if swapped else [grads, loss]}})


def program_finishes() -> str:
    from simulator.program.matching import check_program

    return "yes" if not check_program(deadlock_program(True)) else "no"


LESSONS = (
    Lesson("a", "What a collective computes",
           "An **all-reduce** leaves every rank with the sum of everyone's buffers. The ring algorithm does it in two "
           "halves: a **reduce-scatter** (after it, each rank owns one chunk summed over all ranks) and an "
           "**all-gather** (each rank passes its finished chunk round the ring). Step through it below: watch the "
           "cells fill as `A0+B0+C0+D0` (written `Σ0..3`).",
           "Ring all-reduce on 4 ranks: after the reduce-scatter half (step 3), how many chunks does each rank hold "
           "fully summed (all 4 ranks in it)?",
           lambda: 1, "Reduce-scatter leaves exactly one finished chunk per rank (p chunks over p ranks); the "
           "all-gather then copies each finished chunk to everyone.",
           (("How many steps does ring all-reduce take on p ranks?", "2(p-1): p-1 for the reduce-scatter, p-1 for "
             "the all-gather (6 on 4 ranks, as the stepper shows)."),
            ("How many bytes does each rank send in a ring all-reduce of n bytes?", "2(p-1)/p x n: each step sends one "
             "chunk of n/p bytes, over 2(p-1) steps.")), unit="chunks"),
    Lesson("b", "Why the ring is bandwidth-optimal, and when it loses",
           "Each message costs a latency alpha plus bytes / bandwidth. The ring sends the fewest bytes per rank, "
           "2(p-1)/p x n, which is the lower bound, so it wins **large** messages. But it takes 2(p-1) steps, each "
           "paying alpha, so it loses **small** messages to algorithms with log2(p) steps.",
           "8 ranks, alpha = 2 us, bandwidth = 25 GB/s, a 4 KiB all-reduce: which is faster?",
           faster_at_4k, "Ring: 14 x 2 us + 14/8 x 4 KiB / 25 GB/s = 28.3 us. Recursive doubling: 3 x 2 us + "
           "3 x 4 KiB / 25 GB/s = 6.5 us. At 4 KiB latency dominates.",
           (("Where do ring and recursive doubling cross on 8 ranks (alpha 2 us, 25 GB/s)?",
             "Ring = 14 alpha + 1.75 n beta, recursive doubling = 3 alpha + 3 n beta; equal when 11 alpha = 1.25 n beta, "
             "n = 11 x 2 us x 25 GB/s / 1.25 = 440,000 bytes (about 430 KiB). The cost explorer marks it."),
            ("Why can no all-reduce send fewer than 2(p-1)/p x n bytes per rank?", "Every rank must receive the "
             "(p-1)/p of the result it did not compute, and contribute its data to the (p-1)/p computed elsewhere.")),
           options=("ring", "recursive doubling")),
    Lesson("c", "Trees and recursive doubling for small messages",
           "When latency dominates, count steps. Recursive doubling pairs rank r with r XOR 1, then r XOR 2, ...: "
           "after k steps every rank holds the sum over 2^k ranks. Binomial trees reduce up, then broadcast down, in "
           "log2(p) steps each. NCCL's double binary tree keeps every rank busy in both trees.",
           "How many steps does recursive-doubling all-reduce take on 16 ranks?",
           lambda: 4, "log2(16) = 4 exchanges; after step k every rank holds the sum of 2^k ranks.",
           (("How many steps on 6 ranks (not a power of two)?", "4: one step folds the 2 extra ranks into partners, "
             "log2(4) = 2 exchanges, one step sends the result back (MPICH's scheme)."),
            ("How many steps does a binomial broadcast take on 9 ranks?", "ceil(log2 9) = 4: the number of ranks "
             "holding the data at most doubles per step.")), unit="steps"),
    Lesson("d", "Hierarchy: nodes x GPUs",
           "Inside a node GPUs talk over NVLink; between nodes over a slower network. A flat ring crosses the network "
           "at every node boundary in every one of its 2(p-1) steps. A **hierarchical** all-reduce reduces inside each "
           "node first, runs an all-reduce across nodes with one rank per node, and then shares the result inside "
           "the node again.",
           f"On {HIER_TOPOLOGY} (16 ranks; the network at half the default bandwidth), which finishes a 4 KiB "
           "all-reduce first?",
           hierarchy_winner, "The engine runs both on this machine: the flat ring pays 30 latencies, hierarchical "
           "fewer, and the network carries less.",
           (("Which wins at 64 MiB, and why?", "Hierarchical again, by about 4.5x in the engine (10.1 ms against "
             "2.3 ms): every step of the flat ring waits for the chunks crossing the slow network, while hierarchical "
             "moves most bytes over NVLink and crosses the network only in its middle phase (see the bars)."),
            ("What group size should hierarchical use on this machine?", "4, the GPUs per node: then the first and last "
             "phases stay on NVLink.")),
           options=("flat ring", "hierarchical")),
    Lesson("e", "A slow rank or a congested link delays everyone",
           "A collective finishes when its last transfer does. In a ring every rank waits for its neighbour, so one "
           "rank that starts late delays everyone, and one link carrying background traffic slows every step that "
           "uses it.",
           f"Ring all-reduce of 1 MiB on ring:8 takes {straggler_times(0.0)[0] * 1e6:.1f} us in the engine. If rank 3 "
           "starts 50 us late, how many microseconds later does the whole collective finish? (within 15%)",
           straggler_extra_us, "All of it: each step of the ring waits for the late rank's chunk, so the finish moves "
           "by the full delay (compare the two timelines).",
           (("What if half of one link's bandwidth is taken by other traffic (switch:8, 64 MiB)?",
             "The ring's time about doubles (4.7 ms to 9.4 ms in the engine): every step sends one chunk over that link, "
             "and the ring moves at the speed of its slowest link."),
            ("Does a late rank hurt a tree all-reduce as much?", "Yes at the root's side: the reduction cannot finish "
             "without the late rank's data, so the end moves by the delay minus any slack on its branch.")),
           tolerance=0.15, unit="us"),
    Lesson("f", "Collective ordering that deadlocks",
           "Every rank must call the collectives of a process group in the same order: the k-th call of one rank "
           "meets the k-th call of the others. Below, two ranks each call two all-reduces on two groups, `grads` on "
           "`dp` and `loss` on `metrics`, but rank 1 calls them in the other order.",
           "Does this program finish?",
           program_finishes, "No: rank 0 waits in `grads` for rank 1, which waits in `loss` for rank 0, a wait-for "
           "cycle. collsim's checker (`collsim lint-program`) finds it without running anything.",
           (("How do you fix it?", "Call them in one order on every rank (tick 'same order' below), or put them on one "
             "group: then the checker reports a mismatch instead of hanging."),
            ("Why does it hang instead of failing?", "Each rank is blocked inside a collective waiting for a peer that "
             "will never arrive; NCCL has no way to know the peer is waiting elsewhere, so it waits (until a timeout, "
             "if one is set).")),
           options=("yes", "no")),
)
BY_KEY = {lesson.key: lesson for lesson in LESSONS}
