"""`collsim app`: start the Streamlit app, on this machine only unless told otherwise, with every Streamlit option passed on."""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import signal
import subprocess
import sys
import threading
from pathlib import Path

from simulator.errors import CollsimError

LOCAL = "127.0.0.1"
ADDRESS_ACCEPTED = f"{LOCAL} (default) or 0.0.0.0 to share the app"
DESCRIPTION = (
    "Start the collsim Streamlit app (lessons, step through, cost explorer, contention, what-if hardware,\n"
    "model vs reality; every page keeps its state in the URL).\n\n"
    f"It listens on {LOCAL} (this machine only) and sends no usage statistics. To share it on a network,\n"
    "listen on every interface with --address 0.0.0.0 (anyone who can reach this machine's port can then\n"
    "use the app). Any other Streamlit option is passed on as given, e.g.\n"
    "  collsim app --server.port 9000 --theme.base dark\n"
    "  collsim app --address 0.0.0.0 --headless\n"
    "(`streamlit run --help` lists them; --browser.gatherUsageStats true turns the statistics back on).")


class _ForwardingParser(argparse.ArgumentParser):
    """A subcommand parser that keeps the arguments it does not know in `streamlit_options` instead of refusing them."""

    def parse_known_args(self, args=None, namespace=None):  # noqa: D102
        namespace, extras = super().parse_known_args(args, namespace)
        namespace.streamlit_options = list(getattr(namespace, "streamlit_options", [])) + list(extras)
        return namespace, []


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser_class = sub._parser_class
    sub._parser_class = _ForwardingParser  # this subcommand only: Streamlit's options pass through
    try:
        p = sub.add_parser("app", help="open the Streamlit app in a browser", description=DESCRIPTION)
    finally:
        sub._parser_class = parser_class
    p.add_argument("--port", default="8501", help="port to serve on, 1-65535 (default 8501)")
    p.add_argument("--address", default=LOCAL,
                   help=f"address to listen on (default {LOCAL}: this machine only; 0.0.0.0 shares it on every network)")
    p.add_argument("--headless", action="store_true", help="do not open a browser")
    p.set_defaults(func=run, streamlit_options=[], _accepted={"address": ADDRESS_ACCEPTED})


def check_port(text: str, field: str = "port") -> int:
    """A TCP port number from text, or a CollsimError naming the field."""
    value = str(text).strip()
    if not value.isdigit() or len(value) > 5 or not 1 <= int(value) <= 65535:
        raise CollsimError(f"{field}: {text!r} is not a TCP port; expected an integer from 1 to 65535 (default 8501)")
    return int(value)


def _pairs(options: list[str]) -> list[tuple[str, str]]:
    """('server.port', '9000') pairs from '--server.port 9000' or '--server.port=9000'."""
    pairs, i = [], 0
    while i < len(options):
        item = options[i]
        if not item.startswith("--") or "." not in item.split("=", 1)[0]:
            raise CollsimError(f"app: unexpected argument {item!r}; expected --port, --address, --headless or a Streamlit "
                               "option such as --server.port 9000 or --theme.base dark")
        if "=" in item:
            key, value = item[2:].split("=", 1)
            i += 1
        elif i + 1 < len(options) and not options[i + 1].startswith("--"):
            key, value = item[2:], options[i + 1]
            i += 2
        else:
            raise CollsimError(f"app: {item} has no value; expected {item} VALUE, e.g. --server.headless true")
        pairs.append((key, value))
    return pairs


def _check_option(key: str, value: str) -> str:
    """Refuse options Streamlit does not have and values of the wrong type, before starting it."""
    try:
        from streamlit import config

        known = config.get_config_options()
    except (ImportError, AttributeError):  # pragma: no cover - an old or new Streamlit: leave it to Streamlit
        return value
    if key not in known:
        close = difflib.get_close_matches(key, list(known), n=1)
        hint = f"; did you mean --{close[0]}?" if close else "; `streamlit run --help` lists them"
        raise CollsimError(f"app: --{key} is not a Streamlit option{hint}")
    kind = known[key].type
    if key == "server.port":
        return str(check_port(value, "--server.port"))
    if kind is bool and value.lower() not in ("true", "false"):
        raise CollsimError(f"app: --{key} {value!r}: expected true or false")
    if kind in (int, float):
        try:
            kind(value)
        except ValueError:
            raise CollsimError(f"app: --{key} {value!r}: expected {'an integer' if kind is int else 'a number'}") from None
    return value


def streamlit_options(args: argparse.Namespace) -> list[str]:
    """The options collsim passes to `streamlit run`: port, address, headless, no usage statistics, then the user's own."""
    settings = {"server.port": str(check_port(args.port)), "server.address": args.address,
                "browser.gatherUsageStats": "false", "client.toolbarMode": "minimal"}  # minimal: no "Deploy" button
    if not str(args.address).strip():
        raise CollsimError(f"address: {args.address!r} is empty; expected {ADDRESS_ACCEPTED}")
    if args.headless:
        settings["server.headless"] = "true"
    for key, value in _pairs(args.streamlit_options):
        settings[key] = _check_option(key, value)  # the user's own value wins over collsim's default
    return [part for key, value in settings.items() for part in (f"--{key}", value)]


def run(args: argparse.Namespace) -> int:
    # found, not imported: importing Streamlit takes half a second, and only options of its own need it (to be checked)
    if importlib.util.find_spec("streamlit") is None:
        raise CollsimError("app: streamlit is not installed; install the app extra: pip install 'collsim[app]'")
    script = Path(__file__).resolve().parents[1] / "streamlit_app.py"
    cmd = [sys.executable, "-m", "streamlit", "run", str(script), *streamlit_options(args)]
    return serve(cmd, Path(script).parents[1])


def serve(cmd: list[str], cwd: Path) -> int:
    """Run Streamlit until it ends. SIGTERM or Ctrl-C is a request to stop, not a failure: it is passed on to
    Streamlit, which shuts down, and collsim exits 0 without an error line."""
    proc = subprocess.Popen(cmd, cwd=cwd)
    stopping = []

    def stop(signum, frame) -> None:
        stopping.append(signum)
        proc.send_signal(signum)

    main = threading.current_thread() is threading.main_thread()
    previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)} if main else {}
    try:
        code = proc.wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    return 0 if stopping else code
