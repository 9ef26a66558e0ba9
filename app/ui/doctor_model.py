"""The Doctor page's model: the DoctorRequest `collsim doctor` builds, from a bundled log or an upload, and its figure
(measured vs expected busbw per size)."""

from __future__ import annotations

import plotly.graph_objects as go

from app.figures import decade_axis, size_axis
from app.ui.reality_model import LOGS, MAX_UPLOAD, PREDICT_MAX_RANKS, bundled_logs
from collsim.doctor import DoctorRequest, DoctorResult
from simulator.errors import CollsimError
from simulator.topology.presets import MACHINE_PRESETS
from simulator.units import format_size

FIRST = "04_"  # the log the page opens with: one p5 node, a diagnosis in about a second


def request(log_name: str | None, upload: tuple[str, bytes] | None, preset: str) -> DoctorRequest:
    """The request the command line builds for `collsim doctor LOG [--preset SPEC]`: an upload (name, bytes) when given,
    else the bundled log `log_name`; an empty preset: inferred from the log."""
    spec = preset.strip() or None
    if spec is not None and spec.split(":", 1)[0].strip() not in MACHINE_PRESETS:  # no files or builders on a page
        raise CollsimError(f"preset: {spec!r} is not a machine preset collsim predict runs; expected one of "
                           f"{', '.join(MACHINE_PRESETS)}, optionally :nodes=N")
    built = _build(log_name, upload, spec)
    if built.parsed.ranks > PREDICT_MAX_RANKS:
        raise CollsimError(f"ranks: the log has {built.parsed.ranks} ranks, over this page's limit of {PREDICT_MAX_RANKS} "
                           "for collsim predict; expected at most that (`collsim doctor LOG` takes more)")
    return built


def _build(log_name: str | None, upload: tuple[str, bytes] | None, spec: str | None) -> DoctorRequest:
    if upload is not None:
        name, data = upload
        if len(data) > MAX_UPLOAD:
            raise CollsimError(f"upload: {name!r} is {len(data):,} bytes, over the limit of {MAX_UPLOAD:,}")
        return DoctorRequest(name, preset=spec, text=data.decode("utf-8", errors="replace"))
    if log_name not in bundled_logs():
        raise CollsimError(f"log: {log_name!r} is not a bundled log; expected one of {', '.join(bundled_logs())}")
    return DoctorRequest(str(LOGS / log_name), preset=spec)


def figure(result: DoctorResult) -> go.Figure:
    """Measured and expected busbw per size, log-log, the sizes judged for bandwidth (>= 64 MiB) shaded."""
    sizes = [p.bytes for p in result.points]
    labels = [format_size(s) for s in sizes]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=sizes, y=[p.measured_GBps for p in result.points], name="measured", mode="markers",
                             marker=dict(size=9, color="black"), text=labels))
    fig.add_trace(go.Scatter(x=sizes, y=[p.expected_GBps for p in result.points], mode="lines+markers",
                             name=f"what NCCL should reach on {result.request.machine.spec} (collsim predict)",
                             line=dict(color="#2f855a"), text=[f"{p.algo} {p.proto}" for p in result.points]))
    fig.add_vrect(x0=64 << 20, x1=max(sizes), fillcolor="#3182ce", opacity=0.06, line_width=0)
    fig.update_layout(title="busbw: measured against expected", xaxis=size_axis(sizes, "size"),
                      yaxis=decade_axis("busbw (GB/s)"), height=460,
                      legend=dict(orientation="h", yanchor="top", y=-0.2))
    return fig
