"""Programs of collectives: per rank, ordered operations on named streams over named process groups.

model: the Program and its operations; loader: the YAML/JSON format and its checks; matching: the
static check that every group's collectives line up across ranks and that program order cannot
deadlock; presets and scenarios: training steps (DDP, FSDP, TP, PP, EP) generated as Programs.
"""

from .loader import dump_program, load_program, program_from_dict, program_to_dict
from .matching import Problem, check_program
from .model import Op, Program

__all__ = ["Op", "Problem", "Program", "check_program", "dump_program", "load_program", "program_from_dict", "program_to_dict"]
