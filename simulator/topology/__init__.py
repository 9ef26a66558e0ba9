"""Network topologies: the model, builders of regular shapes, hardware presets, files and SPEC strings."""

from .builders import cluster, fat_tree, ideal, ring, switch, torus
from .fabric import ROUTINGS, rail_fabric
from .fileformat import load_topology, topology_from_dict, topology_to_dict
from .model import IdealTopology, Link, Topology
from .presets import NETWORKS, PRESETS, build_preset
from .spec import BUILDERS, parse_topology

__all__ = ["BUILDERS", "NETWORKS", "PRESETS", "ROUTINGS", "IdealTopology", "Link", "Topology", "build_preset", "cluster",
           "fat_tree", "ideal", "load_topology", "parse_topology", "rail_fabric", "ring", "switch", "topology_from_dict",
           "topology_to_dict", "torus"]
