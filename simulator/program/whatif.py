"""What-if cases: one training-step scenario on one machine, timed; the unit that whatif, scale and their sweeps run.

A `StepCase` holds only names and numbers (it is sent to worker processes and Dask workers as it is) and
`evaluate(case)` builds the machine and the program where it runs. Metrics, per step:
- tokens = data-parallel degree x micro-batch x micro-batches x sequence length;
- scaling efficiency = the compute-only step (the busiest rank's compute) / the simulated step: 1 when all
  communication hides behind compute, as with perfect linear scaling at a fixed per-GPU batch;
- cost per million tokens = price per GPU-hour x GPUs x step / 3600 / tokens x 1e6.

`timing` says how the collective calls are timed: 'links' (collsim's algorithms on the machine's links, as
`mode` says) or 'nccl' (allreduce, allgather and reduce_scatter as NCCL runs them on the machine preset,
nccl_timing.py; each call alone, so mode 'auto' runs isolated).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..engine import EngineOptions
from ..errors import CollsimError
from ..topology import Topology, parse_topology
from ..topology.presets import PRESETS
from ..topology.spec import larger_preset
from .nccl_timing import MEASURED, TIMINGS, check_timing
from .presets import GPUS
from .run import ProgramResult, run_program
from .scenarios import DDP_BUCKET, StepSpec, build_spec, generate

LINK_KINDS = ("nic", "nvlink")


@dataclass(frozen=True)
class StepCase:
    """A scenario on a machine: everything `evaluate` needs, as plain values."""

    scenario: str
    machine: str                      # a topology SPEC
    model: str = "llama2-7b"
    gpu: str | None = None            # default: the machine preset's GPU
    gpus: int | None = None           # default: every device of the machine
    tp: int | None = None
    pp: int | None = None
    ep: int | None = None
    fsdp: bool = False
    sp: bool = False
    mfu: float = 0.4
    micro_batch: int = 1
    microbatches: int | None = None
    seq_len: int | None = None
    bucket: int = DDP_BUCKET
    algorithms: tuple[tuple[str, str], ...] = ()
    mode: str = "auto"
    timing: str = "links"             # 'links' or 'nccl' (nccl_timing.TIMINGS)
    ports: int = 1
    double: str | None = None         # 'nic' or 'nvlink': that kind of link at twice its bandwidth
    trace_ranks: int = 0              # return Chrome trace events for the first N ranks (0: none)
    label: str = ""
    extra: dict = field(default_factory=dict, compare=False)


def preset_name(spec: str) -> str:
    return spec.split(":", 1)[0].strip().lower()


def gpu_for(spec: str, gpu: str | None) -> str:
    """The GPU preset of a case: given, else the machine preset's (its declaration's gpu, when program/presets.py
    has that GPU), else an error naming the choice."""
    if gpu:
        return gpu
    preset = PRESETS.get(preset_name(spec))
    if preset is not None and preset.gpu in GPUS:
        return preset.gpu
    raise CollsimError(f"gpu: machine {spec!r} has no GPU preset of its own; expected --gpu ({', '.join(GPUS)})")


def gpus_per_node(spec: str, topology: Topology) -> int:
    """GPUs per node of a machine: the preset's, a builder's gpus=, else 8 (at most the whole machine)."""
    name = preset_name(spec)
    if name in PRESETS:
        return min(PRESETS[name].gpus_per_node, topology.num_devices)
    for part in spec.split(":", 1)[-1].split(","):
        key, _, value = part.partition("=")
        if key.strip() == "gpus" and value.strip().isdigit():
            return int(value)
    return min(8, topology.num_devices)


def link_kind(topology: Topology, lid: int) -> str:
    """'nvlink' (a GPU to its switch or peer), 'pcie' (a GPU to its NIC) or 'nic' (the network beyond the NIC)."""
    kinds = (topology.node_kinds[topology.link_src[lid]], topology.node_kinds[topology.link_dst[lid]])
    if "gpu" in kinds:
        return "pcie" if "nic" in kinds or "cpu" in kinds else "nvlink"
    return "nic"


def scaled(topology: Topology, kind: str, factor: float = 2.0) -> Topology:
    """A copy of `topology` with the links of one kind at `factor` times their bandwidth."""
    if kind not in LINK_KINDS:
        raise CollsimError(f"double: {kind!r}; expected one of {', '.join(LINK_KINDS)}")
    if topology.ideal:
        raise CollsimError(f"machine: {topology.name} has no NIC or NVLink links to change; expected a preset or a built machine")
    clone = topology.with_links()
    for lid in range(clone.num_links):
        if link_kind(clone, lid) == kind:
            clone.bandwidth[lid] *= factor
    return clone


def topology_of(case: StepCase) -> Topology:
    """The case's machine as a topology, its links of one kind doubled where the case asks."""
    topo = parse_topology(case.machine)
    return scaled(topo, case.double) if case.double else topo


def check_case_timing(case: StepCase) -> None:
    """Refuse what NCCL timing cannot honour: unknown timings, exact mode, an algorithm forced on an op NCCL picks
    (nccl_timing.check_timing), and a doubled link."""
    if case.timing == MEASURED:  # a scenario's calls have no measured time
        raise CollsimError(f"timing: {case.timing!r}; expected one of {', '.join(TIMINGS)} (measured is run-program's, "
                           "for a program from collsim import-trace)")
    check_timing(case.timing, case.mode, dict(case.algorithms))
    if case.timing == "nccl" and case.double:
        raise CollsimError(f"double: {case.double!r} with timing 'nccl': NCCL's model knows only the preset's own links; "
                           "expected timing links for the doubled-bandwidth reruns")


def run_step(case: StepCase) -> tuple[StepSpec, Topology, ProgramResult]:
    """Generate the step on the machine and run it: its spec, the machine and the run."""
    check_case_timing(case)
    topo = topology_of(case)
    gpus = case.gpus or topo.num_devices
    larger = larger_preset(case.machine, gpus)
    topo.check_ranks(gpus, "gpus", f"--gpus <= {topo.num_devices} or " + (
        f"a machine with more nodes, such as --machines {larger}" if larger else "a larger machine in --machines"))
    spec = build_spec(case.scenario, case.model, gpu_for(case.machine, case.gpu), gpus, gpus_per_node(case.machine, topo),
                      case.tp, case.pp, case.ep, case.fsdp, case.sp, case.mfu, case.micro_batch, case.microbatches,
                      case.seq_len, case.bucket)
    program = generate(spec)
    result = run_program(program, topo, EngineOptions(ports=case.ports), dict(case.algorithms), spec.layout.gpus_per_node,
                         mode=case.mode, timing=case.timing)
    return spec, topo, result


def evaluate(case: StepCase) -> dict:
    """Generate the step on the machine and run it: one row of the what-if table (plain data)."""
    spec, topo, result = run_step(case)
    gpus = spec.layout.gpus
    t = result.totals()
    lay = spec.layout
    tokens = lay.dp * spec.micro_batch * spec.microbatches * spec.seq_len
    step = t["step_s"]
    row = {"label": case.label or case.machine, "machine": topo.name, "scenario": case.scenario, "model": spec.model.name,
           "gpu": spec.gpu.name, "gpus": gpus, "tp": lay.tp, "pp": lay.pp, "dp": lay.dp, "ep": lay.ep,
           "algorithms": dict(case.algorithms), "double": case.double, "mode": t["mode"], "timing": case.timing, "timed": t["timed"],
           "step_s": step,
           "compute_s": t["max_compute_s"], "comm_s": t["comm_s"], "exposed_s": t["exposed_s"], "tokens": tokens,
           "tokens_per_s": tokens / step if step > 0 else None,
           "efficiency": t["max_compute_s"] / step if step > 0 else None, "transfers": t["transfers"]}
    if case.trace_ranks:
        row["trace_events"] = result.chrome_events(ranks=case.trace_ranks)
    return row


def calls_timed(row: dict) -> str:
    """How a row's collective calls were timed: 'links', or 'N NCCL' (and 'M links' where some fell back)."""
    timed = row.get("timed") or {}
    if row.get("timing") != "nccl":
        return "links"
    links = sum(timed.values()) - timed.get("nccl", 0)
    return f"{timed.get('nccl', 0)} NCCL" + (f", {links} links" if links else "")


def cost_per_million(row: dict, price_per_gpu_hour: float) -> float:
    """Dollars per million tokens at `price_per_gpu_hour` for each GPU."""
    return price_per_gpu_hour * row["gpus"] * row["step_s"] / 3600 / row["tokens"] * 1e6


def sensitivity_cases(case: StepCase) -> list[StepCase]:
    """The same case with the NIC bandwidth doubled, then with NVLink doubled."""
    return [replace(case, double=kind, trace_ranks=0) for kind in LINK_KINDS]
