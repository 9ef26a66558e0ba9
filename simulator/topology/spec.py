"""SPEC strings: a preset, a topology or calibration file, or a builder such as ring:8, switch:16, torus:4x4, cluster:nodes=4,gpus=8."""

from __future__ import annotations

import difflib
import math
from pathlib import Path

from ..errors import CollsimError
from ..readfile import read_data
from ..units import parse_bandwidth, parse_time
from . import builders
from .fabric import ROUTINGS, rail_fabric
from .fileformat import load_topology, topology_from_dict
from .model import Topology, check_link_value
from .presets import PRESETS, build_preset

# name -> (syntax, what it builds)
BUILDERS = {
    "ideal": ("ideal:P", "a dedicated link between every ordered pair (the textbook alpha-beta machine)"),
    "switch": ("switch:P", "P devices on one non-blocking switch (a message crosses 2 links)"),
    "ring": ("ring:P[,uni]", "P devices in a ring, bidirectional unless ',uni'"),
    "torus": ("torus:AxB[xC]", "2-D or 3-D torus, dimension-order routing"),
    "fat_tree": ("fat_tree:hosts=H,leaf=L,oversub=R", "leaf-spine, L hosts per leaf, R:1 oversubscribed uplinks"),
    "cluster": ("cluster:nodes=N,gpus=G[,intra=switch|mesh][,nic=gpu|node][,nics=NICS][,oversub=R][,leaf=NODES]",
                "N nodes x G GPUs, NVSwitch-like switch or mesh inside, leaf-spine network between (NODES per leaf, "
                "spine = destination mod spines)"),
    "rails": ("rails:nodes=N,gpus=G[,intra=switch|mesh][,nics=NICS][,su=NODES][,leaf_rails=K][,oversub=R]"
              "[,routing=adaptive|ecmp|static][,pxn=1]",
              "N nodes x G GPUs, a rail-optimised leaf-spine between (NIC k of each node of a scalable unit of NODES "
              "on leaf k; the presets' network)"),
}
COMMON_OPTIONS = ("every builder also takes lat=LATENCY and bw=BANDWIDTH (per link, per direction) and ecmp=1; "
                  "rails: and multi-node presets take routing=adaptive|ecmp|static (ecmp=1 = routing=ecmp): "
                  + "; ".join(f"{k}: {v}" for k, v in ROUTINGS.items()))


_LINK_KEYS = ("lat", "bw", "ecmp")
_NODE_KEYS = ("nodes", "gpus", "intra", "nics", "intra_bw", "net_bw", "oversub")
KEYS = {  # the options each kind of SPEC takes (the first a builder's positional value)
    "preset": ("nodes", "net", "shm", "routing", "ecmp"),
    "calibration": ("nodes", "net", "ecmp"),
    "ideal": ("n", *_LINK_KEYS), "switch": ("n", *_LINK_KEYS), "ring": ("n", "uni", *_LINK_KEYS),
    "torus": ("dims", *_LINK_KEYS), "fat_tree": ("hosts", "leaf", "oversub", *_LINK_KEYS),
    "cluster": (*_NODE_KEYS, "nic", "leaf", *_LINK_KEYS),
    "rails": (*_NODE_KEYS, "su", "leaf_rails", "routing", "pxn", *_LINK_KEYS),
}
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def _options(args: str, spec: str, kind: str) -> dict[str, str]:
    """KEY=VALUE options of a SPEC of `kind` (a KEYS entry); a bare first value is the kind's positional option.
    An option the kind does not take is refused, with the accepted option it is closest to."""
    keys = KEYS[kind]
    out: dict[str, str] = {}
    for i, part in enumerate(p.strip() for p in args.split(",") if p.strip()):
        if "=" in part:
            key, value = part.split("=", 1)
            key = key.strip().lower()
            if key not in keys:
                raise CollsimError(f"topology: unknown option {key!r} in {spec!r}{_did_you_mean(key, keys)}; "
                                   + _what_it_takes(kind, keys))
            out[key] = value.strip()
        elif part == "uni" and "uni" in keys:
            out["uni"] = "1"
        elif i == 0:
            out[keys[0]] = part
        else:
            raise CollsimError(f"topology: cannot read {part!r} in {spec!r}; {_what_it_takes(kind, keys)}")
    return out


def _did_you_mean(key: str, keys: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(key, keys, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}=?)" if close else ""


def _what_it_takes(kind: str, keys: tuple[str, ...]) -> str:
    what = {"preset": "a preset", "calibration": "a calibration file"}.get(kind, f"the {kind}: builder")
    return f"expected KEY=VALUE with a KEY {what} takes: {', '.join(keys)} (docs/topologies.md)"


def _bool(opts: dict, key: str, spec: str) -> bool:
    """An on/off option (ecmp=, pxn=, uni=): 1/true/yes/on or 0/false/no/off; absent is off."""
    text = opts.pop(key, "0")
    if text.lower() in _TRUE:
        return True
    if text.lower() in _FALSE:
        return False
    raise CollsimError(f"topology: {key}={text} in {spec!r} is not on or off; expected {key}=1 or {key}=0 "
                       f"({'/'.join(_TRUE)} or {'/'.join(_FALSE)})")


def _int(opts: dict, key: str, spec: str, default: int | None = None) -> int:
    """A count KEY=N >= 1 (every integer a SPEC takes is one), or `default` when absent (required when None)."""
    if key not in opts:
        if default is None:
            raise CollsimError(f"topology: {spec!r} needs {key}=N")
        return default
    text = opts.pop(key)
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise CollsimError(f"topology: {key}={text} in {spec!r} is not a count; expected {key}=N with N an integer >= 1")
    return value


def _float(opts: dict, key: str, spec: str, default: float) -> float:
    if key not in opts:
        return default
    text = opts.pop(key)
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise CollsimError(f"topology: {key}={text} in {spec!r} is not a number; expected a finite number such as 2")
    return value


def _link_value(opts: dict, key: str, spec: str) -> float:
    """lat=/bw=/intra_bw=/net_bw=: a finite latency >= 0 or bandwidth > 0, errors naming the option and the spec."""
    text = opts.pop(key)
    parse = parse_time if key == "lat" else parse_bandwidth
    try:
        value = parse(text, key)
    except CollsimError as exc:
        raise CollsimError(f"topology: {exc} (in {spec!r})") from None
    return check_link_value(key, value, f"topology: {key}={text} in {spec!r}: ")


def parse_topology(spec: str) -> Topology:
    """The topology a SPEC names: a preset (optionally :nodes=N,net=ib400|roce200; rtx4090-pcie:shm=RATE), a .yaml/.json file,
    or a builder."""
    spec = str(spec).strip()
    name, _, args = spec.partition(":")
    name = name.strip().lower().replace("-", "_") if name.strip().lower().replace("-", "_") in BUILDERS else name.strip()
    if name in PRESETS:
        opts = _options(args, spec, "preset")
        shm = _link_value(opts, "shm", spec) if "shm" in opts else None
        topo = build_preset(name, _int(opts, "nodes", spec, 1), opts.pop("net", None), shm, _routing(opts, spec, None))
        return _finish(topo, opts, spec)
    if name in BUILDERS:
        return _build(name, args, spec)
    if Path(name).suffix.lower() in (".yaml", ".yml", ".json"):
        return _from_file(name, args, spec)
    check_spec_name(spec)
    return load_topology(Path(spec))


def check_spec_name(spec: str) -> None:
    """Refuse a SPEC that names no preset, builder or file, without building anything (a command with several
    machines checks them all before it starts the first)."""
    spec = str(spec).strip()
    name = spec.partition(":")[0].strip()
    if name in PRESETS or name.lower().replace("-", "_") in BUILDERS or Path(name).suffix.lower() in (".yaml", ".yml", ".json"):
        return
    path = Path(spec)
    if path.suffix.lower() in (".yaml", ".yml", ".json") or path.exists():
        return
    raise CollsimError(f"topology: unknown topology {spec!r}; expected a preset ({', '.join(PRESETS)}), "
                       f"a builder ({', '.join(b[0] for b in BUILDERS.values())}) or a .yaml/.json file")


def preset_gpus(spec: str) -> int | None:
    """The GPUs a preset SPEC (NAME[:nodes=N,...]) names, read without building it; None for anything else."""
    name, _, args = str(spec).strip().partition(":")
    preset = PRESETS.get(name.strip())
    if preset is None:
        return None
    return preset.gpus_per_node * _int(_options(args, spec, "preset"), "nodes", spec, 1)


def larger_preset(spec: str, ranks: int) -> str | None:
    """The multi-node preset SPEC's machine with enough nodes for `ranks` ('dgx-h100:nodes=8' for 64 ranks on
    dgx-h100); None when SPEC is not a multi-node preset."""
    preset = PRESETS.get(str(spec).strip().partition(":")[0].strip())
    if preset is None or not preset.multinode:
        return None
    return f"{preset.name}:nodes={-(-ranks // preset.gpus_per_node)}"


def spec_devices(spec: str) -> int | None:
    """The devices a preset or builder SPEC names, read from its numbers without building it; None for a file, an
    unknown name or numbers that do not read (parse_topology then says what is wrong)."""
    spec = str(spec).strip()
    name, _, args = spec.partition(":")
    key = name.strip().lower().replace("-", "_")
    try:
        if name.strip() in PRESETS:
            return preset_gpus(spec)
        if key not in BUILDERS:
            return None
        opts = _options(args, spec, key)
        if key == "torus":
            factors = [int(d) for d in opts["dims"].lower().split("x")]
        else:  # the builder's first option is its unnamed one: n, hosts or nodes
            factors = [int(opts[KEYS[key][0]]), int(opts.get("gpus", 8)) if key in ("cluster", "rails") else 1]
    except (CollsimError, ValueError, KeyError):
        return None
    return math.prod(factors) if min(factors) >= 1 else None


def _from_file(path: str, args: str, spec: str) -> Topology:
    """A topology file, or a calibration file (`collsim fit --preset ... --out`) with optional :nodes=N,net=NET."""
    from ..nccl.calibration import calibration_from_dict, is_calibration

    data = read_data(path, "topology")
    if not is_calibration(data):
        if args:
            raise CollsimError(f"topology: {spec!r}: options after a topology file; expected only a calibration file "
                               "(collsim fit --preset ... --out FILE) to take :nodes=N,net=NET")
        return topology_from_dict(data, path)
    cal = calibration_from_dict(data, path)
    opts = _options(args, spec, "calibration")
    topo = cal.topology(_int(opts, "nodes", spec, cal.nodes), opts.pop("net", None))
    return _finish(topo, opts, spec)


def _build(name: str, args: str, spec: str) -> Topology:
    opts = _options(args, spec, name)
    link = {}
    if "lat" in opts:
        link["latency"] = _link_value(opts, "lat", spec)
    if "bw" in opts:
        link["bandwidth"] = _link_value(opts, "bw", spec)
    if name in ("ideal", "switch"):
        topo = getattr(builders, name)(_int(opts, "n", spec), **link)
    elif name == "ring":
        topo = builders.ring(_int(opts, "n", spec), bidirectional=not _bool(opts, "uni", spec), **link)
    elif name == "torus":
        text = opts.pop("dims", "")
        try:
            dims = [int(d) for d in text.lower().split("x")]
        except ValueError:
            raise CollsimError(f"topology: torus dimensions {text!r} in {spec!r}; expected AxB or AxBxC such as 4x4") from None
        topo = builders.torus(dims, **link)
    elif name == "fat_tree":
        topo = builders.fat_tree(_int(opts, "hosts", spec), _int(opts, "leaf", spec, 4), _float(opts, "oversub", spec, 1.0),
                                 **link)
    elif name == "cluster":
        topo = _cluster(opts, spec, link)
    else:
        topo = _rails(opts, spec, link)
    return _finish(topo, opts, spec)


def _routing(opts: dict, spec: str, default: str | None) -> str | None:
    """routing=NAME, or ecmp=1 (hashed spines) where routing= is not given; ecmp=1 is then consumed."""
    ecmp = _bool(opts, "ecmp", spec)
    return opts.pop("routing", "ecmp" if ecmp else default)


def _rails(opts: dict, spec: str, link: dict) -> Topology:
    """rails:...: the network options of cluster: (intra_bw=, net_bw=, nics=, oversub=) and su=, leaf_rails=, routing=,
    pxn=."""
    kw = _link_options(opts, spec, link)
    return rail_fabric(_int(opts, "nodes", spec), _int(opts, "gpus", spec, 8), opts.pop("intra", "switch"),
                       su=_int(opts, "su", spec, 32), rails_per_leaf=_int(opts, "leaf_rails", spec, 1),
                       oversub=_float(opts, "oversub", spec, 1.0), routing=_routing(opts, spec, "adaptive"),
                       pxn=_bool(opts, "pxn", spec), **kw)


def _cluster(opts: dict, spec: str, link: dict) -> Topology:
    """cluster:...: its own options (intra_bw=, net_bw=, nics=, leaf=, oversub=) on top of lat= and bw=."""
    kw = _link_options(opts, spec, link)
    leaf = _int(opts, "leaf", spec) if "leaf" in opts else None  # default: every node on one leaf
    return builders.cluster(_int(opts, "nodes", spec), _int(opts, "gpus", spec, 8), opts.pop("intra", "switch"),
                            opts.pop("nic", "gpu"), nodes_per_leaf=leaf, oversub=_float(opts, "oversub", spec, 1.0), **kw)


def _link_options(opts: dict, spec: str, link: dict) -> dict:
    """The keyword arguments of a multi-node builder from lat=, bw=, intra_bw=, net_bw= and nics=."""
    kw = {}
    if "latency" in link:
        kw["intra_latency"] = kw["net_latency"] = link["latency"]
    if "bandwidth" in link:
        kw["intra_bandwidth"] = kw["net_bandwidth"] = link["bandwidth"]
    if "intra_bw" in opts:
        kw["intra_bandwidth"] = _link_value(opts, "intra_bw", spec)
    if "net_bw" in opts:
        kw["net_bandwidth"] = _link_value(opts, "net_bw", spec)
    if "nics" in opts:
        kw["nics"] = _int(opts, "nics", spec)
    return kw


def _finish(topo: Topology, opts: dict, spec: str) -> Topology:
    if _bool(opts, "ecmp", spec):
        topo = topo.with_ecmp(True)
    if opts:  # a key KEYS lists that this path does not read
        raise CollsimError(f"topology: option {next(iter(opts))!r} in {spec!r} does not apply here; {COMMON_OPTIONS}")
    return topo
