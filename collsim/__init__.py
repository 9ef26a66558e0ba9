"""collsim's requests: every question a face asks (the `collsim` command line, the Streamlit app), as one frozen,
typed request that checks and bounds itself when it is built and answers with a result that renders to text, JSON
and files.

Layers, each importing only from those before it: simulator -> verify -> collsim -> app (tests/test_layers.py).
"""

from .fit import CalibrateRequest, FitRequest, Measured
from .predict import PredictRequest
from .request import Request, Result
from .step import StepRequest

__all__ = ["CalibrateRequest", "FitRequest", "Measured", "PredictRequest", "Request", "Result", "StepRequest"]
