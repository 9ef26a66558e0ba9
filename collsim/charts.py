"""Standalone HTML charts written by commands (--html): small files that load plotly.js from its CDN."""

from __future__ import annotations

PLOTLY_JS = "cdn"  # a link to plotly.js (about 4.6 MB if embedded): the file is tens of KB; viewing it needs the network


def standalone_html(fig) -> str:
    """A full HTML page of the plotly figure, plotly.js loaded from its CDN."""
    return fig.to_html(include_plotlyjs=PLOTLY_JS, full_html=True)


def count_ticks(values, most: int = 10) -> dict:
    """Axis settings for a log axis of counts (GPUs): ticks at the values themselves (thinned to at most `most`),
    labelled in full, instead of plotly's '7 8 9 10 2 3' minor labels between decades."""
    shown = sorted({int(v) for v in values})
    step = -(-len(shown) // most)
    shown = shown[::step] if step > 1 else shown
    return dict(type="log", tickmode="array", tickvals=shown, ticktext=[str(v) for v in shown])
