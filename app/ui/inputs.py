"""Text inputs of the app parsed like the command line parses them, with the app's own bounds."""

from __future__ import annotations

from simulator.cost import LinkModel
from simulator.errors import CollsimError
from simulator.topology import PRESETS, parse_topology
from simulator.topology.model import Topology, check_link_value
from simulator.topology.spec import BUILDERS
from simulator.units import parse_bandwidth, parse_size, parse_size_range, parse_time

MAX_POINTS = 256          # sizes per curve: 13,870 took 44 s to draw, with no visibly better plot
MAX_DEVICES = 1024        # devices in a topology typed into the app
TOPOLOGY_ACCEPTED = (f"a builder ({', '.join(b[0] for b in BUILDERS.values())}; a bare name such as 'ring' uses the "
                     f"ranks chosen) or a preset ({', '.join(PRESETS)}, optionally :nodes=N)")


def sizes_input(text: str, field: str = "sizes") -> list[int]:
    """Sizes from a text field (parsed like --sizes, which counts a range before making it), at most MAX_POINTS."""
    sizes = parse_size_range(text, field)
    if len(sizes) > MAX_POINTS:
        raise CollsimError(f"{field}: {text!r} gives {len(sizes):,} sizes, over the app's limit of {MAX_POINTS} per curve; "
                           "use a larger FACTOR or a shorter range")
    return sizes


def size_input(text: str, field: str = "size", multiple: int = 1) -> int:
    """One size in bytes, a whole number of `multiple`-byte elements."""
    nbytes = parse_size(text, field)
    if nbytes % multiple:
        raise CollsimError(f"{field}: {text!r} is {nbytes} bytes, not a whole number of {multiple}-byte float32 "
                           f"elements; expected a multiple of {multiple}, such as 1MiB")
    return nbytes


def link_model(alpha: str, bandwidth: str, gamma: float = 0.0) -> LinkModel:
    """Latency and bandwidth typed as '2us' and '25GB/s'; finite, bandwidth > 0."""
    latency = check_link_value("alpha", parse_time(alpha, "alpha"), "")
    return LinkModel.from_bandwidth(latency, check_link_value("bandwidth", parse_bandwidth(bandwidth), ""), gamma)


def topology_input(text: str, ranks: int, field: str = "topology") -> Topology:
    """A builder or preset SPEC for `ranks` ranks; a bare builder name gets the rank count. Files are not read."""
    spec = text.strip()
    name = spec.split(":", 1)[0].strip().lower().replace("-", "_")
    if not spec or (name not in BUILDERS and spec.split(":", 1)[0].strip() not in PRESETS):
        raise CollsimError(f"{field}: {text!r} is not a topology the app builds; expected {TOPOLOGY_ACCEPTED}")
    if ":" not in spec and name in ("ideal", "switch", "ring"):
        spec = f"{name}:{ranks}"
    elif ":" not in spec and name == "torus":
        spec = f"torus:{_torus_dims(ranks)}"
    from collsim.limits import estimate_links

    links = estimate_links(spec)
    if links is not None and links > 8.0 * MAX_DEVICES * 4:
        raise CollsimError(f"{field}: {text!r} is too large for the app (about {links:,.0f} links); expected at most "
                           f"{MAX_DEVICES} devices")
    topo = parse_topology(spec)
    if topo.num_devices > MAX_DEVICES:
        raise CollsimError(f"{field}: {text!r} has {topo.num_devices} devices, over the app's limit of {MAX_DEVICES}")
    if topo.num_devices < ranks:
        raise CollsimError(f"{field}: {text!r} has {topo.num_devices} devices, fewer than the {ranks} ranks chosen; "
                           "use a larger topology or fewer ranks")
    return topo


def _torus_dims(ranks: int) -> str:
    """The squarest AxB with A x B = ranks (a 1 x P ring when P is prime)."""
    a = max(d for d in range(1, int(ranks ** 0.5) + 1) if ranks % d == 0)
    return f"{a}x{ranks // a}"
