"""The step-by-step pictures live in simulator/diagram.py (collsim/draw.py draws through them); named here as well
for the imports that find them in the app."""

from __future__ import annotations

from simulator.diagram import DRAWABLE_OPS, render_svg, symbolic_states

__all__ = ["DRAWABLE_OPS", "render_svg", "symbolic_states"]
