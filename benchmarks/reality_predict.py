"""Seconds the Model vs reality page spends in `collsim predict` per bundled log, on the log's own machine preset.

The page's functions (app.ui.reality_model: held_out_nvls_step, then predict_log) without Streamlit's cache: the
first look at a log (the page keeps the result per log and preset). Also the page's median / worst |error| over
sizes >= 1 MiB, which should equal the predict column of `python -m benchmarks.preset_accuracy`.

usage: python -m benchmarks.reality_predict
"""

from __future__ import annotations

import os
import sys
import time

from app.ui.reality_model import (
    bundled_logs,
    default_preset,
    held_out_nvls_step,
    predict_accuracy,
    predict_log,
    read_bundled,
)
from simulator.render import table


def main() -> int:
    rows = []
    for name in bundled_logs():
        log = read_bundled(name)
        start = time.perf_counter()
        predictions = predict_log(log, default_preset(name), held_out_nvls_step(name))
        seconds = time.perf_counter() - start
        median, worst = predict_accuracy(log, predictions) or (float("nan"), float("nan"))
        rows.append([name[:34], log.ranks, len(predictions), default_preset(name), f"{seconds:.2f}",
                     f"{median:.1f}/{worst:.0f}"])
    print(table(["log", "p", "sizes", "preset", "predict (s)", "med/worst |err| %"], rows, "lrrlrr"))
    print("load average: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
