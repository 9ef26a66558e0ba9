"""The collsim model: schedules, algorithms, closed-form costs and (later) the event engine.

Depends on numpy, simpy and networkx only; never imports torch or streamlit.
"""

from .collective import OPS, Collective
from .errors import CollsimError

__all__ = ["OPS", "Collective", "CollsimError"]
