"""Guided lessons: short text, a prediction the student makes before the reveal (checked), two exercises with answers.

The right answers that are measurements (an engine time, which algorithm wins) are computed by the
simulator when the lesson is shown, so they stay true when the model changes; the others follow from
the definitions and are stated.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from simulator.algorithms import build_schedule
from simulator.collective import Collective
from simulator.cost import LinkModel, predict
from simulator.engine import EngineOptions, simulate
from simulator.errors import CollsimError
from simulator.topology import parse_topology
from simulator.units import format_size


@dataclass(frozen=True)
class Lesson:
    """One lesson: `answer()` is the right prediction (a number, or one of `options`)."""

    key: str
    title: str
    text: str
    question: str
    answer: Callable[[], float | str]
    explain: str | Callable[[], str]   # the reveal; computed when it quotes the model's numbers
    exercises: tuple[tuple[str, str], ...]
    options: tuple[str, ...] = ()
    tolerance: float = 0.0   # relative, for numbers
    unit: str = ""

    @property
    def kind(self) -> str:
        return "choice" if self.options else "number"

    def reveal(self) -> str:
        """The explanation shown after the check (computed by the model where it quotes numbers)."""
        return self.explain() if callable(self.explain) else self.explain


def said(guess) -> str:
    """A student's answer as they typed it: 5, not 5.0; 2.5 stays 2.5."""
    if isinstance(guess, float) and math.isfinite(guess):
        return f"{guess:g}"
    return str(guess)


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


def closed_forms_4k() -> dict[str, float]:
    """Closed-form seconds of a 4 KiB allreduce on 8 ranks (alpha 2 us, 25 GB/s): ring and recursive doubling."""
    return {name.replace("_", " "): float(predict("allreduce", name, 8, [4096], TEXTBOOK)[0])
            for name in ("ring", "recursive_doubling")}


def faster_at_4k() -> str:
    """Ring or recursive doubling: the faster closed form for a 4 KiB allreduce on 8 ranks."""
    times = closed_forms_4k()
    return min(times, key=times.get)


def faster_reveal() -> str:
    times = closed_forms_4k()
    return (f"{faster_at_4k().capitalize()}. Ring: 14 x 2 us + 14/8 x 4 KiB / 25 GB/s = {times['ring'] * 1e6:.1f} us. "
            f"Recursive doubling: 3 x 2 us + 3 x 4 KiB / 25 GB/s = {times['recursive doubling'] * 1e6:.1f} us. At 4 KiB "
            "latency dominates.")


def hierarchy_times(nbytes: int = HIER_SIZE) -> dict[str, float]:
    """Engine seconds of a flat ring and hierarchical (group 4) allreduce on 4 nodes x 4 GPUs."""
    topo = parse_topology(HIER_TOPOLOGY)
    coll = Collective("allreduce", 16, nbytes, "float32")
    return {"flat ring": simulate(build_schedule(coll, "ring"), topo).time,
            "hierarchical": simulate(build_schedule(coll, "hierarchical", group=4), topo).time}


def hierarchy_winner() -> str:
    times = hierarchy_times()
    return min(times, key=times.get)


def hierarchy_reveal() -> str:
    times = hierarchy_times()
    return (f"{hierarchy_winner().capitalize()}: the engine runs both on this machine, flat ring "
            f"{times['flat ring'] * 1e6:.1f} us, hierarchical {times['hierarchical'] * 1e6:.1f} us. The flat ring pays "
            "30 latencies, hierarchical fewer, and the network carries less.")


def straggler_reveal() -> str:
    return (f"{straggler_extra_us():.0f} us, all of it: each step of the ring waits for the late rank's chunk, so the "
            "finish moves by the full delay (compare the two timelines).")


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


def call_order(program) -> dict[int, str]:
    """Per rank, the collectives it calls in order, as 'grads (dp), then loss (metrics)'."""
    return {rank: ", then ".join(f"{op.name} ({op.group})" for op in ops) for rank, ops in program.ranks.items()}


# ---- the step counts lessons (a) and (c) ask about, and step through -------------------------------------------------

A_RANKS = 4   # lesson (a): ring all-reduce, shown at the end of its reduce-scatter half (step A_RANKS - 1)
C_RANKS = 8   # lesson (c): recursive doubling, asked and stepped through on these ranks


def schedule_steps(algo: str, ranks: int) -> int:
    """Steps of `algo`'s all-reduce schedule on `ranks` ranks (what step through counts)."""
    return build_schedule(Collective("allreduce", ranks, 4096, "float32"), algo).num_steps


# ---- NCCL on presets: lessons (g), (h), (i) ---------------------------------------------------------------------------

NVLS_PRESET = "p5"                                       # one node of 8 H100 on NVSwitch; log 04 measured one
NVLS_LOG = "04_h100_p5_1node_8gpu_allreduce_awsbatch.txt"
NODES_ONE = ("hgx-b200", "07_b200_hgx_1node_8gpu_allreduce.txt")       # one B200 node, measured
NODES_MANY = ("p6-b200:nodes=4", "17_b200_4node_32gpu_allreduce_torchbench.txt")  # four B200 nodes, measured
BIG = 8 << 30                                            # the size lessons (g) and (h) ask about (both logs have it)
PROTO_PRESET = "dgx-h100"
PROTO_SIZE = 64 << 10                                    # lesson (i)'s small message
PROTOS = ("LL", "LL128", "Simple")


@cache
def _machine(spec: str):
    from simulator.nccl.machine import parse_machine

    return parse_machine(spec)


@cache
def link_rates(spec: str) -> dict[str, float]:
    """GB/s each way of a preset's links: 'nvlink' (one GPU to its NVSwitch), 'nic' (one NIC), 'nics' (a node's).

    Cached: treat the dict as read-only."""
    machine = _machine(spec)
    topo, kinds = machine.topology, machine.topology.node_kinds
    rate = {}
    for u, v, bw in zip(topo.link_src.tolist(), topo.link_dst.tolist(), topo.bandwidth.tolist()):
        pair = (kinds[u], kinds[v])
        if pair == ("gpu", "switch"):
            rate["nvlink"] = bw / 1e9
        elif pair == ("nic", "switch"):
            rate["nic"] = bw / 1e9
    nics = machine.spec.nics_per_node or machine.preset.gpus_per_node
    rate["nics"] = rate.get("nic", 0.0) * nics
    return rate


def gpus(spec: str) -> tuple[int, int]:
    """(nodes, GPUs per node) of a preset spec."""
    machine = _machine(spec)
    return machine.nodes, machine.preset.gpus_per_node


def busbw(size: int, seconds: float, ranks: int) -> float:
    """nccl-tests' all-reduce busbw in GB/s: algbw x 2(p-1)/p."""
    return size / seconds / 1e9 * 2 * (ranks - 1) / ranks


def predicted(spec: str, sizes, algo: str | None = None, proto: str | None = None) -> list:
    """`collsim predict` on preset `spec` for an all-reduce of each size (NCCL's pick unless `algo`/`proto` force one)."""
    from simulator.nccl.predict import predict

    return predict(_machine(spec), "allreduce", list(sizes), algo=algo, proto=proto)


@cache
def predicted_busbw(spec: str, size: int, algo: str | None = None) -> tuple[float, str]:
    """busbw (GB/s) `collsim predict` gives for one all-reduce size on `spec`, and NCCL's algorithm/protocol for it."""
    one = predicted(spec, [size], algo=algo)[0]
    return busbw(size, one.time_s, math.prod(gpus(spec))), f"{one.nccl_algo}/{one.proto}"


@cache
def measured_busbw(log_name: str) -> dict[int, float]:
    """A bundled nccl-tests log's out-of-place busbw (GB/s) per size in bytes, read from tests/data (cached: read-only)."""
    from app.ui.reality_model import LOGS
    from simulator.formats.nccl_tests import read_log

    return {row.bytes: row.out.busbw_GBps for row in read_log(LOGS / log_name).rows if row.bytes > 0}


def nvls_answer() -> str:
    """Whether collsim predict's busbw for NVLS_PRESET at BIG is above or below one GPU's NVLink rate."""
    return "above" if predicted_busbw(NVLS_PRESET, BIG)[0] > link_rates(NVLS_PRESET)["nvlink"] else "below"


def nvls_reveal() -> str:
    nvlink = link_rates(NVLS_PRESET)["nvlink"]
    nvls, pick = predicted_busbw(NVLS_PRESET, BIG)
    ring, _ = predicted_busbw(NVLS_PRESET, BIG, algo="Ring")
    p = gpus(NVLS_PRESET)[1]
    return (f"{nvls_answer().capitalize()}: `collsim predict` on {NVLS_PRESET} picks {pick} for {format_size(BIG)} and "
            f"gives busbw {nvls:.0f} GB/s, {nvls / nvlink:.2f}x the {nvlink:.0f} GB/s NVLink; forced to a ring "
            f"(NCCL_ALGO=Ring) {ring:.0f} GB/s. A real {NVLS_PRESET} node measured {measured_busbw(NVLS_LOG)[BIG]:.0f} GB/s "
            f"(log {NVLS_LOG[:2]}). busbw multiplies algbw by 2(p-1)/p, the bytes a *ring* moves per GPU; with NVLS the switch adds "
            f"the {p} GPUs' data, so each GPU's link carries at most (1 + 1/p) n each way (n + n/p up, n down) instead of 2(p-1)/p n, and "
            f"busbw can reach 2(p-1)/(p+1) = {2 * (p - 1) / (p + 1):.2f}x the link rate.")


NODE_CHOICES = {"about the same": 1.0, "about half": 0.5, "about a quarter": 0.25}


def nodes_ratio() -> float:
    """Measured busbw at BIG on four nodes over one node (logs 17 and 07)."""
    return measured_busbw(NODES_MANY[1])[BIG] / measured_busbw(NODES_ONE[1])[BIG]


def nodes_answer() -> str:
    """The choice nearest (in log scale) to the measured ratio of busbw on four nodes to one."""
    ratio = nodes_ratio()
    return min(NODE_CHOICES, key=lambda k: abs(math.log(ratio / NODE_CHOICES[k])))


def nodes_reveal() -> str:
    one, many = (measured_busbw(log)[BIG] for _, log in (NODES_ONE, NODES_MANY))
    rates = link_rates(NODES_MANY[0])
    nics = round(rates["nics"] / rates["nic"])
    pred_one, pick_one = predicted_busbw(NODES_ONE[0], BIG)
    pred_many, pick_many = predicted_busbw(NODES_MANY[0], BIG)
    return (f"{nodes_answer().capitalize()}: measured {many:.0f} GB/s on {gpus(NODES_MANY[0])[0]} nodes "
            f"(log {NODES_MANY[1][:2]}) against {one:.0f} GB/s on one (log {NODES_ONE[1][:2]}), {many / one:.2f}x. "
            f"Inside a node each GPU has {rates['nvlink']:.0f} GB/s of NVLink to the NVSwitch (and NVLS); across nodes "
            f"every ring leaves and enters each node through its NICs, {nics} x {rates['nic']:.0f} GB/s = "
            f"{rates['nics']:.0f} GB/s per node each way, and that caps busbw. `collsim predict` at {format_size(BIG)}: "
            f"{pred_one:.0f} GB/s on {NODES_ONE[0]} ({pick_one}), {pred_many:.0f} GB/s on {NODES_MANY[0]} "
            f"({pick_many}).")


def proto_times(size: int = PROTO_SIZE) -> dict[str, object]:
    """collsim predict's all-reduce on PROTO_PRESET at `size` with each protocol forced (NCCL's best algorithm for it)."""
    return {proto: predicted(PROTO_PRESET, [size], proto=proto)[0] for proto in PROTOS}


def proto_answer() -> str:
    """The protocol NCCL's tuning model picks for PROTO_SIZE on PROTO_PRESET."""
    return predicted(PROTO_PRESET, [PROTO_SIZE])[0].proto


def proto_reveal() -> str:
    from simulator.nccl.protocols import protocol

    times = proto_times()
    listed = ", ".join(f"{p} {t.time_s * 1e6:.1f} us ({t.nccl_algo})" for p, t in times.items())
    fastest = min(times, key=lambda p: times[p].time_s)
    engine = "the engine agrees" if fastest == proto_answer() else f"the engine times {fastest} a little faster"
    costs = {p: protocol(p) for p in PROTOS}
    steps = ", ".join(f"{p} {c.intra_s * 1e6:.1f} us" for p, c in costs.items())
    wire = ", ".join(f"{p} {c.byte_factor:.2f}" for p, c in costs.items())
    return (f"{proto_answer()}: NCCL's model picks it for {format_size(PROTO_SIZE)} on {PROTO_PRESET}, and {engine}: "
            f"{listed}. At this size the bytes hardly matter; every step's latency does (per NVLink step: "
            f"{steps}). LL pays for its low latency with its wire bytes per payload byte ({wire}): each 8-byte store "
            f"carries 4 bytes of data and a 4-byte flag, so large messages go to Simple.")


LESSONS = (
    Lesson("a", "What a collective computes",
           "An **all-reduce** leaves every rank with the sum of everyone's buffers. The ring algorithm does it in two "
           "halves: a **reduce-scatter** (after it, each rank owns one chunk summed over all ranks) and an "
           "**all-gather** (each rank passes its finished chunk round the ring). Step through it below: watch the "
           "cells fill as `A0+B0+C0+D0` (written `Σ0..3`).",
           f"Ring all-reduce on {A_RANKS} ranks: after the reduce-scatter half (step {A_RANKS - 1}), how many chunks does "
           f"each rank hold fully summed (all {A_RANKS} ranks in it)?",
           lambda: 1, f"1: reduce-scatter leaves exactly one finished chunk per rank ({A_RANKS} chunks over {A_RANKS} "
           "ranks); the all-gather then copies each finished chunk to everyone.",
           (("How many steps does ring all-reduce take on p ranks?", "2(p-1): p-1 for the reduce-scatter, p-1 for "
             f"the all-gather ({schedule_steps('ring', A_RANKS)} on {A_RANKS} ranks, as the stepper shows)."),
            ("How many bytes does each rank send in a ring all-reduce of n bytes?", "2(p-1)/p x n: each step sends one "
             "chunk of n/p bytes, over 2(p-1) steps.")), unit="chunks"),
    Lesson("b", "Why the ring is bandwidth-optimal, and when it loses",
           "Each message costs a latency alpha plus bytes / bandwidth. The ring sends the fewest bytes per rank, "
           "2(p-1)/p x n, which is the lower bound, so it wins **large** messages. But it takes 2(p-1) steps, each "
           "paying alpha, so it loses **small** messages to algorithms with log2(p) steps.",
           "8 ranks, alpha = 2 us, bandwidth = 25 GB/s, a 4 KiB all-reduce: which is faster?",
           faster_at_4k, faster_reveal,
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
           f"How many steps does recursive-doubling all-reduce take on {C_RANKS} ranks?",
           lambda: schedule_steps("recursive_doubling", C_RANKS),
           lambda: f"{schedule_steps('recursive_doubling', C_RANKS)}: log2({C_RANKS}) exchanges; after step k every "
           "rank holds the sum of 2^k ranks.",
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
           hierarchy_winner, hierarchy_reveal,
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
           straggler_extra_us, straggler_reveal,
           (("What if half of one link's bandwidth is taken by other traffic (switch:8, 64 MiB)?",
             "The ring's time about doubles (4.7 ms to 9.4 ms in the engine): every step sends one chunk over that link, "
             "and the ring moves at the speed of its slowest link."),
            ("Does a late rank hurt a tree all-reduce as much?", "Yes at the root's side: the reduction cannot finish "
             "without the late rank's data, so the end moves by the delay minus any slack on its branch.")),
           tolerance=0.15, unit="us"),
    Lesson("f", "Collective ordering that deadlocks",
           "Every rank must call the collectives of a process group in the same order: the k-th call of one rank "
           "meets the k-th call of the others. In this program two ranks each call two all-reduces on two groups, "
           "`grads` on `dp` and `loss` on `metrics`, but rank 1 calls them in the other order:\n\n" +
           "\n".join(f"- rank {r} calls {calls}" for r, calls in call_order(deadlock_program(True)).items()),
           "Does this program finish?",
           program_finishes, "No: rank 0 waits in `grads` for rank 1, which waits in `loss` for rank 0, a wait-for "
           "cycle. collsim's checker (`collsim lint-program`) finds it without running anything.",
           (("How do you fix it?", "Call them in one order on every rank (tick 'same order' below), or put them on one "
             "group: then the checker reports a mismatch instead of hanging."),
            ("Why does it hang instead of failing?", "Each rank is blocked inside a collective waiting for a peer that "
             "will never arrive; NCCL has no way to know the peer is waiting elsewhere, so it waits (until a timeout, "
             "if one is set).")),
           options=("yes", "no")),
    Lesson("g", "Why NVLS busbw can exceed the NVLink rate",
           "nccl-tests prints **busbw** = algbw x 2(p-1)/p for an all-reduce: the bytes a *ring* moves through each "
           "GPU's link, per second, so a ring's busbw approaches the link rate and never passes it. On Hopper and "
           "later, NCCL's **NVLS** (NVLink SHARP) lets the NVSwitch itself reduce: each GPU sends its data into the "
           "switch once, the switch adds the GPUs' data up and multicasts the sum back.",
           f"One {NVLS_PRESET} node ({gpus(NVLS_PRESET)[1]} H100 on NVSwitch, {link_rates(NVLS_PRESET)['nvlink']:.0f} GB/s "
           f"of NVLink per GPU each way), an all-reduce of {format_size(BIG)}: is nccl-tests' busbw above or below "
           f"{link_rates(NVLS_PRESET)['nvlink']:.0f} GB/s?",
           nvls_answer, nvls_reveal,
           (("Does NVLS change the algbw a training job sees?", "Yes, and that is what matters: algbw = n / time. "
             "busbw is algbw times a fixed factor, so NVLS's gain in busbw is its gain in time."),
            ("Why does NVLS not help across nodes by itself?", "The switch reduces only the GPUs of one NVLink domain; "
             "across nodes NCCL runs NVLS-tree (NVLS inside, a tree over the NICs), and the NICs set the rate "
             "(lesson h).")),
           options=("above", "below")),
    Lesson("h", "Why several nodes reach about half of one node's busbw",
           "Inside a node the GPUs talk over NVLink through the NVSwitch. Between nodes every byte crosses a NIC "
           "(here one 400 Gbit/s NIC per GPU), so a collective over several nodes moves at the speed of its slowest "
           "link class.",
           f"One B200 node measured {measured_busbw(NODES_ONE[1])[BIG]:.0f} GB/s busbw for an all-reduce of "
           f"{format_size(BIG)} (log {NODES_ONE[1][:2]}). {gpus(NODES_MANY[0])[0]} such nodes ({NODES_MANY[0]}: "
           f"{round(link_rates(NODES_MANY[0])['nics'] / link_rates(NODES_MANY[0])['nic'])} NICs of "
           f"{link_rates(NODES_MANY[0])['nic']:.0f} GB/s per node) run the same all-reduce over "
           f"{math.prod(gpus(NODES_MANY[0]))} GPUs: what busbw do they reach, compared with one node?",
           nodes_answer, nodes_reveal,
           (("Would a faster network help the four nodes?", "Yes, up to NVLink's rate: busbw follows the NICs until "
             "they are faster than a GPU's share of NVLink (collsim whatif / predict with net=xdr800)."),
            ("Why is busbw across nodes not the per-GPU NIC rate (50 GB/s)?", "busbw counts a ring's bytes per GPU; "
             "each ring crosses a node boundary once per node, and the node's rings share all its NICs, so busbw "
             "follows the node's NIC total, not one NIC's.")),
           options=tuple(NODE_CHOICES)),
    Lesson("i", "LL, LL128 and Simple: why small messages pay latency",
           "NCCL moves data with three protocols. **LL** (low latency) writes 8-byte stores, 4 bytes of data and a "
           "4-byte flag the receiver polls: no fences, the lowest latency, half the bandwidth. **LL128** does the same "
           "with 128-byte lines (120 bytes of data). **Simple** sends large chunks and signals each with a flag after "
           "a memory fence: the full bandwidth, the highest latency per step. NCCL's tuning model picks one per call.",
           f"One {PROTO_PRESET} node, an all-reduce of {format_size(PROTO_SIZE)}: which protocol does NCCL pick?",
           proto_answer, proto_reveal,
           (("Why is busbw so low at small sizes whatever the protocol?", "The time is a fixed number of steps times "
             "a per-step latency (plus a launch cost), not bytes over bandwidth, so halving the size barely changes "
             "the time and halves busbw."),
            ("How do you check which protocol NCCL used?", "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING prints the "
             "choice per call; NCCL_PROTO=Simple (or LL, LL128) forces one, as `collsim predict --proto` does.")),
           options=PROTOS),
)
BY_KEY = {lesson.key: lesson for lesson in LESSONS}
