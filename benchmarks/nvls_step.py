"""The cost of one NVLS pipeline step, fitted on the shared logs leave-one-out (no log predicted with its own fit).

    python -m benchmarks.nvls_step [--data tests/data/nccl-tests]

`collsim predict` charges each NVLS channel `nvls_step_s` for every step its chunks (NCCL's
calcCollChunking: 16-64 KiB below ~1 GiB) add over the largest chunk's (simulator/nccl/channels.py).
NCCL has no such constant, so it is fitted (simulator/nccl/nvls_fit.py): on a grid of 0 .. 5 us, the value with the
smallest mean median |error| over sizes >= 1 MiB of the logs whose prediction runs NVLS with
smaller chunks. benchmarks/preset_accuracy.py and benchmarks/calibration_accuracy.py predict each
of those logs with the value fitted on the *other* logs; this script prints those and the value
fitted on all of them, the one `NVLS_STEP_FIT` ships.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from simulator.nccl.log_presets import CASES
from simulator.nccl.nvls_fit import leave_one_out

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT / "tests" / "data" / "nccl-tests"))
    args = parser.parse_args(argv)
    found = [(c.prefix, c.new_spec, paths[0]) for c in CASES if (paths := sorted(Path(args.data).glob(c.prefix + "*.txt")))]
    held_out, (value, prefixes) = leave_one_out(found)
    for prefix, step in held_out.items():
        print(f"{prefix[:2]}: {step * 1e6:.1f} us per NVLS step, fitted on the other NVLS logs")
    print(f"NVLS_STEP_FIT = ({value:.3g}, 'logs {', '.join(p[:2] for p in prefixes)}')")
    return 0


if __name__ == "__main__":
    sys.exit(main())
