"""What one GPU allows: CUDA tensors through the executor at world size 1, native NCCL collectives at world size 1, and gamma.

    python -m benchmarks.gpu_check [--json PATH]

With no CUDA device it says so, runs the same checks on CPU with gloo (so the script itself is
exercised anywhere) and exits 0; with --require-gpu it exits 3 instead.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from simulator.algorithms import all_specs
from simulator.profile import atomic_write
from simulator.render import table
from simulator.units import parse_size_range
from verify.calibrate import GAMMA_SIZES, _reduction_times
from verify.fit import fit_rate
from verify.launch import run_local
from verify.runner import VerifyRequest, verify_job


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1KiB:64MiB:8", help="sizes (default 1KiB:64MiB:8)")
    ap.add_argument("--require-gpu", action="store_true", help="exit 3 when no CUDA device is present")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = ap.parse_args(argv)
    import torch

    cuda = torch.cuda.is_available() and torch.cuda.device_count() > 0
    if not cuda:
        print("# no CUDA device present: GPU checks cannot run here; running the same checks on CPU with gloo instead")
        if args.require_gpu:
            return 3
    backend = "nccl" if cuda else "gloo"
    device = torch.device("cuda", 0) if cuda else torch.device("cpu")
    name = torch.cuda.get_device_name(0) if cuda else "CPU"
    print(f"# device: {name}; torch {torch.__version__}; backend {backend}; world size 1")
    started = time.time()

    cases = tuple((s.op, s.name, {}) for s in all_specs() if not s.refusal(1))
    exact = VerifyRequest(cases=cases, sizes=(0, 776, 4100), dtypes=("float32", "float16", "bfloat16", "int32", "int64"), mode="exact")
    checks = run_local(verify_job, 1, backend, 120.0, (exact,))[0]
    bad = [r for r in checks if r.get("correct") is False]
    print(f"# executor on {device.type} tensors, world size 1: {len(checks) - len(bad)} of {len(checks)} cases correct "
          f"({len(cases)} algorithms x 5 dtypes x 3 sizes, checked against numpy and native)")
    for r in bad[:5]:
        print(f"# WRONG: {r['first_error']}")

    timed = VerifyRequest(cases=(("allreduce", "ring", {}), ("allgather", "ring", {}), ("reduce_scatter", "ring", {})),
                          sizes=tuple(parse_size_range(args.sizes)), timing=True, iters=20, time_budget_s=1.0)
    rows = run_local(verify_job, 1, backend, 120.0, (timed,))[0]
    print(table(["op", "size(B)", "exec time(us)", "native time(us)", "native algbw(GB/s)", "ok"],
                [[r["op"], r["bytes"], r["time_s"] * 1e6, r["native_time_s"] * 1e6, r["native_algbw_GBps"], r["correct"]]
                 for r in rows]))

    if not cuda:
        torch.set_num_threads(1)  # as in the ranks: one thread per process
    points = _reduction_times(device)
    gamma = fit_rate([p[0] for p in points], [p[1] for p in points])
    print(table(["bytes reduced", "time(us)", "GB/s"], [[n, t * 1e6, n / t / 1e9] for n, t in points]))
    print(f"# gamma (in-place float32 add on {name}): {gamma:.3g} s/B = {1e-9 / gamma if gamma else float('inf'):.1f} GB/s "
          f"over {GAMMA_SIZES[0]}..{GAMMA_SIZES[-1]} B; took {time.time() - started:.0f} s")
    if args.json:
        atomic_write(args.json, json.dumps({"device": name, "backend": backend, "cuda": cuda, "checks_failed": len(bad),
                                            "checks": len(checks), "timed": rows, "gamma_points": points,
                                            "gamma_s_per_byte": gamma}, indent=2, default=str))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
