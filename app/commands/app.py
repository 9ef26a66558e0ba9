"""`collsim app`: start the Streamlit app."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from simulator.errors import CollsimError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("app", help="open the Streamlit app in a browser",
                       description="Start the collsim Streamlit app (step-through pictures, cost curves, what-if).")
    p.add_argument("--port", type=int, default=8501, help="port to serve on (default 8501)")
    p.add_argument("--headless", action="store_true", help="do not open a browser")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        import streamlit  # noqa: F401
    except ImportError:
        raise CollsimError("app: streamlit is not installed; install the app extra: pip install 'collsim[app]'") from None
    script = Path(__file__).resolve().parents[1] / "streamlit_app.py"
    cmd = [sys.executable, "-m", "streamlit", "run", str(script), "--server.port", str(args.port)]
    if args.headless:
        cmd += ["--server.headless", "true"]
    return subprocess.call(cmd, cwd=Path(script).parents[1])
