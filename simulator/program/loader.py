"""The program file format (YAML or JSON, see docs/programs.md): reading with one-line errors, and writing.

Every error names the file, the rank and operation index (0-based) where it applies, the field,
the bad value and what is accepted.
"""

from __future__ import annotations

import json
import re
from itertools import chain
from pathlib import Path
from typing import Any

import yaml

from ..collective import DTYPES, OPS, REDOPS, ROOTED, normalize_dtype, normalize_op
from ..errors import CollsimError
from ..readfile import read_text
from ..units import format_size, parse_size, parse_time
from . import yamlstream
from .graph import find_cycle, labels, program_dependencies
from .model import COMPUTE, DEFAULT_STREAM, KINDS, RECORD, RECV, SEND, WAIT, Op, Program, paused_gc
from .presets import get_gpu

TOP_FIELDS = ("world", "groups", "ranks", "gpu", "mfu", "name", "description", "meta")
OP_FIELDS = ("op", "stream", "name", "after", "time", "flops", "gpu", "mfu", "group", "size", "dtype", "root", "redop",
             "algorithm", "peer", "event")
_NEEDS = {COMPUTE: (), SEND: ("peer", "size"), RECV: ("peer", "size"), RECORD: ("event",), WAIT: ("event",)}
_ALLOWED = {
    COMPUTE: {"time", "flops", "gpu", "mfu"},
    SEND: {"peer", "size", "dtype"}, RECV: {"peer", "size", "dtype"},
    RECORD: {"event"}, WAIT: {"event"},
}
_COLLECTIVE_FIELDS = {"group", "size", "dtype", "root", "redop", "algorithm", "time"}  # time: measured (--timing measured)
_COMMON = {"op", "stream", "name", "after"}
MAX_WORLD = 1 << 20
MAX_PROGRAM_BYTES = 128 * 2**20  # twice a 512-GPU `collsim scenario hybrid` step (62 MB)
MAX_WORK = 2_000_000  # ranks + group members + operations (one per rank that runs it): about 20 s of lint-program
MAX_DEPTH = 32  # nesting levels of a program file
_RANKS = re.compile(r"\s*(\d{1,18})\s*(?:-\s*(\d{1,18})\s*)?")  # longer numbers are no rank: not read


def load_program(path: str | Path, max_work: int = MAX_WORK) -> Program:
    """Read a program file (.yaml, .yml or .json); one over `max_work` (program_work) is refused before it is built."""
    path = Path(path)
    text = read_text(path, "program", MAX_PROGRAM_BYTES)  # capped, UTF-8, no devices or pipes
    with paused_gc():
        return program_from_dict(_parse(text, path), source=path.name, max_work=max_work)


_STATED_WORLD = {"YAML": re.compile(rb"^world:[ \t]*(\d{1,18})[ \t]*(?:#[^\n]*)?\r?$", re.MULTILINE),
                 "JSON": re.compile(rb'\A\s*\{\s*"world"\s*:\s*(\d{1,18})\s*[,}]')}
HEAD_BYTES = 1 << 16


def stated_world(path: str | Path) -> int | None:
    """The world a program file states plainly in its first 64 KiB (a top-level `world: N` line in YAML, a leading
    "world" key in JSON, as dump_program writes them), read without parsing the file; None when it does not, or when
    the path is not a readable regular file (load_program then says why)."""
    path = Path(path)
    try:
        if not path.is_file():
            return None
        with path.open("rb") as f:
            head = f.read(HEAD_BYTES)
    except OSError:
        return None
    found = _STATED_WORLD["JSON" if path.suffix.lower() == ".json" else "YAML"].findall(head)
    return int(found[0]) if len(found) == 1 else None


def _parse(text: str, path: Path) -> Any:
    """JSON, or YAML read event by event (yamlstream.py; yaml.load for what that leaves to it)."""
    kind = "JSON" if path.suffix.lower() == ".json" else "YAML"
    try:
        if kind == "JSON":
            return json.loads(text)
        try:
            return yamlstream.load(text, _loader(), MAX_DEPTH)
        except yamlstream.Unsupported:
            return yaml.load(text, Loader=_loader())
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CollsimError(f"{path.name}: not valid {kind} ({first})") from None


def _loader():
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def program_from_dict(data: Any, source: str = "program", max_work: int = MAX_WORK) -> Program:
    """Check and build a Program from parsed YAML/JSON.

    Sizes come first, by arithmetic on rank ranges ('0-3'): a group larger than the world, a rank outside it and a
    program over MAX_WORK are refused before any range is expanded or any operation built. The operations of a rank
    key ('0-7') are built once and shared by its ranks, and equal operations anywhere are one object."""
    if not isinstance(data, dict):
        raise CollsimError(f"{source}: the file holds {type(data).__name__}; expected a mapping with world, groups and ranks")
    unknown = [k for k in data if k not in TOP_FIELDS]
    if "jobs" in unknown:
        raise CollsimError(f"{source}: jobs: a file of jobs (several programs on one machine) is run by collsim colocate "
                           "--topology SPEC FILE; expected a program (world, groups, ranks) here")
    if unknown:
        raise CollsimError(f"{source}: unknown field {unknown[0]!r}; expected {', '.join(TOP_FIELDS)}")
    world = data.get("world")
    if isinstance(world, bool) or not isinstance(world, int) or not 1 <= world <= MAX_WORLD:
        raise CollsimError(f"{source}: world: {world!r}; expected the number of ranks, an integer 1..{MAX_WORLD}")
    raw_groups = _group_ranges(data.get("groups") or {}, world, source)
    mfu = _mfu(data.get("mfu"), f"{source}: mfu") if data.get("mfu") is not None else None
    gpu = data.get("gpu")
    if gpu is not None:
        get_gpu(gpu)
    keys = _rank_keys(data.get("ranks"), world, source)
    _check_work(source, world, sum(_count(r) for r in raw_groups.values()),
                sum(_count(ranges) * len(items) for _, ranges, items in keys), max_work)
    groups = {name: _members(ranges, f"{source}: groups.{name}") for name, ranges in raw_groups.items()}
    ranks = _Builder(source, world, groups, gpu, mfu).build(keys)
    program = Program(world=world, groups=groups, ranks=dict(sorted(ranks.items())), source=source, gpu=gpu, mfu=mfu,
                      meta={k: data[k] for k in ("name", "description", "meta") if k in data})
    checked: set[int] = set()
    for rank, ops in program.ranks.items():
        if id(ops) not in checked:  # ranks of one key share their list: one check serves them all
            checked.add(id(ops))
            _check_rank(program, rank)
    return program


def program_work(program: Program) -> int:
    """What MAX_WORK bounds: world + group members + operations counted once per rank that runs them."""
    return program.world + sum(map(len, program.groups.values())) + sum(map(len, program.ranks.values()))


def _check_work(source: str, world: int, members: int, operations: int, limit: int) -> None:
    work = world + members + operations
    if work > limit:
        raise CollsimError(f"{source}: {work:,} ranks, group members and operations to check ({world:,} ranks, {members:,} "
                           f"group members, {operations:,} operations counted once per rank that runs them), over the "
                           f"limit of {limit:,}; expected a smaller program (fewer ranks, groups or operations per rank), "
                           "or --max-work raises the limit")


def _count(ranges: list) -> int:
    """Members of a list of ranges (or of a plain list of ranks)."""
    return sum(len(r) for r in ranges) if ranges and isinstance(ranges[0], range) else len(ranges)


def _group_ranges(raw: Any, world: int, source: str) -> dict[str, list]:
    """Each group's members as ranges (from '0-3') or as its list, checked for size and bounds without expanding."""
    if not isinstance(raw, dict):
        raise CollsimError(f"{source}: groups: {type(raw).__name__}; expected a mapping from group name to a list of global ranks")
    out = {}
    for name, members in raw.items():
        where = f"{source}: groups.{name}"
        if isinstance(members, str):
            members = _ranges(members, where)
        elif not isinstance(members, list) or not members or \
                not all(isinstance(m, int) and not isinstance(m, bool) for m in members):
            raise CollsimError(f"{where}: {members!r}; expected a non-empty list of global ranks such as [0, 1] or a range '0-3'")
        size = _count(members)
        if size > world:
            raise CollsimError(f"{where}: {size:,} ranks in a world of {world}; a group cannot be larger than the world")
        bad = _outside(members, world)
        if bad is not None:
            raise CollsimError(f"{where}: rank {bad} is not in the world; expected ranks 0..{world - 1}")
        out[str(name)] = members
    return out


def _outside(members: list, world: int) -> int | None:
    """The first member outside 0..world-1 (ranges: their ends), or None."""
    ends = (e for r in members for e in (r.start, r.stop - 1)) if isinstance(members[0], range) else members
    return next((m for m in ends if not 0 <= m < world), None)


def _members(ranges: list, where: str) -> tuple[int, ...]:
    """A group's ranks, each once."""
    members = tuple(chain.from_iterable(ranges)) if isinstance(ranges[0], range) else tuple(ranges)
    if len(set(members)) != len(members):
        seen: set[int] = set()
        dup = next(m for m in members if m in seen or seen.add(m))
        raise CollsimError(f"{where}: rank {dup} is listed twice; expected each member once")
    return members


def _ranges(text: str, where: str) -> list[range]:
    """'0-3,8,10-11' as ranges, without expanding them."""
    out = []
    for part in str(text).split(","):
        m = _RANKS.fullmatch(part)
        lo, hi = (int(m.group(1)), int(m.group(2) or m.group(1))) if m else (0, -1)
        if not m or hi < lo:
            raise CollsimError(f"{where}: cannot read {text!r}; expected a rank, a range such as 0-3, or a list such as 0,2,4")
        out.append(range(lo, hi + 1))
    return out


def _rank_keys(raw: Any, world: int, source: str) -> list[tuple[Any, list, list]]:
    """(key, its ranks as ranges or a list, its operations) per entry of `ranks`, checked without expanding."""
    if not isinstance(raw, dict):
        raise CollsimError(f"{source}: ranks: {type(raw).__name__}; expected a mapping from rank (0, or a range 0-3) "
                           "to a list of operations")
    out = []
    for key, items in raw.items():
        ranges = [key] if isinstance(key, int) and not isinstance(key, bool) else _ranges(str(key), f"{source}: ranks")
        bad = _outside(ranges, world)
        if bad is not None:
            raise CollsimError(f"{source}: ranks: rank {bad} (key {key!r}) is not in a world of {world}; expected 0..{world - 1}")
        if not isinstance(items, list):
            first = ranges[0].start if isinstance(ranges[0], range) else ranges[0]
            raise CollsimError(f"{source}: rank {first}: {type(items).__name__}; expected a list of operations")
        out.append((key, ranges, items))
    return out


class _Builder:
    """Each rank's operations: built once per distinct item (rank-independent checks), then checked per rank."""

    def __init__(self, source: str, world: int, groups: dict[str, tuple[int, ...]], gpu: str | None, mfu: float | None):
        self.source, self.world, self.groups, self.gpu, self.mfu = source, world, groups, gpu, mfu
        self.members = {name: frozenset(m) for name, m in groups.items()}
        self.ops: dict[tuple, Op] = {}
        self.by_id: dict[int, tuple[Any, Op]] = {}
        self.lists: dict[int, list[Op]] = {}
        self.uses: dict[int, tuple[set, set]] = {}

    def build(self, keys: list[tuple[Any, list, list]]) -> dict[int, list[Op]]:
        ranks: dict[int, list[Op]] = {}
        for key, ranges, items in keys:
            for rank in chain.from_iterable(ranges) if isinstance(ranges[0], range) else ranges:
                if rank in ranks:
                    raise CollsimError(f"{self.source}: ranks: rank {rank} is listed twice (key {key!r}); expected each rank once")
                ops = self.lists.get(id(items))
                if ops is None:
                    ops = self.lists[id(items)] = [self.op(item, rank, i) for i, item in enumerate(items)]
                self.check_use(ops, rank)
                ranks[rank] = ops
        return ranks

    def op(self, item: Any, rank: int, index: int) -> Op:
        """The operation of one item, shared with every equal item (the YAML reader shares equal items already)."""
        held = self.by_id.get(id(item))
        if held is not None and held[0] is item:
            return held[1]
        op = self.op_of(item, rank, index)
        self.by_id[id(item)] = (item, op)
        return op

    def op_of(self, item: Any, rank: int, index: int) -> Op:
        try:
            key = tuple((k, v.__class__, tuple(v) if isinstance(v, list) else v) for k, v in item.items())
            hash(key)
        except (AttributeError, TypeError):  # not a mapping, or a value that is a mapping: no sharing (it is refused)
            key = None
        op = self.ops.get(key) if key is not None else None
        if op is None:
            op = _op(item, f"{self.source}: rank {rank} op[{index}]", self.world, self.groups, self.gpu, self.mfu)
            if key is not None:
                self.ops[key] = op
        return op

    def check_use(self, ops: list[Op], rank: int) -> None:
        """What depends on the rank: it is a member of every group it calls, and no message goes to itself."""
        uses = self.uses.get(id(ops))
        if uses is None:
            uses = self.uses[id(ops)] = ({op.group for op in ops} - {None}, {op.peer for op in ops} - {None})
        groups, peers = uses
        if rank in peers or any(rank not in self.members[g] for g in groups):
            self.find_misuse(ops, rank)

    def find_misuse(self, ops: list[Op], rank: int) -> None:
        """Name the first operation that `rank` cannot run."""
        for i, op in enumerate(ops):
            if op.group is not None and rank not in self.members[op.group]:
                raise CollsimError(f"{self.source}: rank {rank} op[{i}]: group: rank {rank} is not a member of group "
                                   f"{op.group!r} {list(self.groups[op.group])}; expected a group that contains this rank")
            if op.peer == rank:
                raise CollsimError(f"{self.source}: rank {rank} op[{i}]: peer: {op.peer!r}; expected another rank of the "
                                   f"world, 0..{self.world - 1} except {rank}")


def _mfu(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise CollsimError(f"{where}: {value!r}; expected a utilisation (MFU) in (0, 1], e.g. 0.4")
    return float(value)


def _op(item: Any, where: str, world: int, groups: dict, gpu: str | None, mfu: float | None) -> Op:
    """One operation, with every check that does not depend on the rank that runs it (_Builder.check_use)."""
    if not isinstance(item, dict):
        raise CollsimError(f"{where}: {item!r}; expected a mapping such as {{op: allreduce, group: dp, size: 64MiB}}")
    unknown = [k for k in item if k not in OP_FIELDS]
    if unknown:
        raise CollsimError(f"{where}: unknown field {unknown[0]!r}; expected some of {', '.join(OP_FIELDS)}")
    kind = str(item.get("op", "")).strip().lower()
    if kind not in KINDS:
        try:
            kind = normalize_op(kind)
        except CollsimError:
            raise CollsimError(f"{where}: op: unknown operation {item.get('op')!r}; expected compute, send, recv, record, wait "
                               f"or a collective ({', '.join(OPS)})") from None
    allowed = _COMMON | (_COLLECTIVE_FIELDS if kind in OPS else _ALLOWED[kind])
    extra = [k for k in item if k not in allowed]
    if extra:
        raise CollsimError(f"{where}: {extra[0]}: not a field of {kind}; expected some of {', '.join(sorted(allowed))}")
    for need in ("group", "size") if kind in OPS else _NEEDS[kind]:
        if item.get(need) is None:
            raise CollsimError(f"{where}: {need}: missing; {kind} needs {' and '.join(('group', 'size') if kind in OPS else _NEEDS[kind])}")
    fields: dict[str, Any] = {"op": kind, "stream": str(item.get("stream", DEFAULT_STREAM)),
                              "name": None if item.get("name") is None else str(item["name"]), "after": _after(item.get("after"), where)}
    if "dtype" in item:
        try:
            fields["dtype"] = normalize_dtype(item["dtype"])
        except CollsimError:
            raise CollsimError(f"{where}: dtype: unknown element type {item['dtype']!r}; expected one of {', '.join(DTYPES)}") from None
    if "size" in item:
        nbytes = _size(item["size"], where)
        width = DTYPES[fields.get("dtype", "bfloat16")]
        if nbytes % width:
            raise CollsimError(f"{where}: size: {item['size']!r} is not a whole number of {fields.get('dtype', 'bfloat16')} elements "
                               f"({width} bytes each); expected a multiple of {width} bytes")
        fields["nbytes"] = nbytes
    if kind == COMPUTE:
        fields.update(_compute(item, where, gpu, mfu))
    elif kind in OPS:
        group = str(item["group"])
        if group not in groups:
            raise CollsimError(f"{where}: group: {group!r} is not defined; expected one of {', '.join(groups) or '(no groups defined)'}")
        fields["group"] = group
        if item.get("redop") is not None:
            if item["redop"] not in REDOPS:
                raise CollsimError(f"{where}: redop: unknown reduction {item['redop']!r}; expected one of {', '.join(REDOPS)}")
            fields["redop"] = item["redop"]
        if kind in ROOTED:
            root = item.get("root", groups[group][0])
            if root not in groups[group]:
                raise CollsimError(f"{where}: root: {root!r} is not a member of group {group!r} {list(groups[group])}; "
                                   "expected a global rank in the group")
            fields["root"] = root
        elif item.get("root") is not None:
            raise CollsimError(f"{where}: root: {kind} has no root; expected root only on {', '.join(ROOTED)}")
        if item.get("algorithm") is not None:
            fields["algorithm"] = str(item["algorithm"])
        if item.get("time") is not None:
            fields["seconds"] = _time(item["time"], where)
    elif kind in (SEND, RECV):
        peer = item["peer"]
        if isinstance(peer, bool) or not isinstance(peer, int) or not 0 <= peer < world:
            raise CollsimError(f"{where}: peer: {peer!r}; expected another rank of the world, 0..{world - 1}")
        fields["peer"] = peer
    else:
        fields["event"] = str(item["event"])
    return Op(**fields)


def _after(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    if not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in items):
        raise CollsimError(f"{where}: after: {value!r}; expected an operation name or a list of names on this rank")
    return tuple(str(v) for v in items)


def _size(value: Any, where: str) -> int:
    try:
        return parse_size(value, "size")
    except CollsimError as exc:
        raise CollsimError(f"{where}: {exc}") from None


def _time(value: Any, where: str) -> float:
    try:
        return parse_time(value, "time")
    except CollsimError as exc:
        raise CollsimError(f"{where}: {exc}") from None


def _compute(item: dict, where: str, gpu: str | None, mfu: float | None) -> dict:
    if (item.get("time") is None) == (item.get("flops") is None):
        raise CollsimError(f"{where}: compute needs exactly one of time (e.g. 1.5ms) or flops (e.g. 4.2e12); "
                           f"got {'both' if item.get('time') is not None else 'neither'}")
    if item.get("time") is not None:
        return {"seconds": _time(item["time"], where)}
    flops = item["flops"]
    if isinstance(flops, str):
        try:
            flops = float(flops)
        except ValueError:
            flops = None
    if isinstance(flops, bool) or not isinstance(flops, (int, float)) or not 0 <= flops < float("inf"):
        raise CollsimError(f"{where}: flops: {item['flops']!r}; expected a number of floating-point operations >= 0, e.g. 4.2e12")
    op_gpu = item.get("gpu", gpu)
    op_mfu = _mfu(item["mfu"], f"{where}: mfu") if item.get("mfu") is not None else mfu
    if op_gpu is None or op_mfu is None:
        missing = "gpu" if op_gpu is None else "mfu"
        raise CollsimError(f"{where}: {missing}: missing; compute given in flops needs a gpu and an mfu (on the operation or "
                           "at the top of the file)")
    try:
        peak = get_gpu(op_gpu).peak_flops
    except CollsimError as exc:
        raise CollsimError(f"{where}: {exc}") from None
    return {"flops": float(flops), "seconds": float(flops) / (peak * op_mfu),
            "gpu": item.get("gpu"), "mfu": None if item.get("mfu") is None else float(item["mfu"])}


def _check_rank(program: Program, rank: int) -> None:
    """Names and events resolve on this rank, each once, and the dependencies have no cycle."""
    ops, where = program.ops(rank), f"{program.source}: rank {rank}"
    names: dict[str, int] = {}
    records: dict[str, int] = {}
    for i, op in enumerate(ops):
        if op.name is not None:
            if op.name in names:
                raise CollsimError(f"{where} op[{i}]: name: {op.name!r} is already op[{names[op.name]}]'s; expected names unique on a rank")
            names[op.name] = i
        if op.op == RECORD:
            if op.event in records:
                raise CollsimError(f"{where} op[{i}]: event: {op.event!r} is already recorded by op[{records[op.event]}]; "
                                   "expected each event recorded once per rank")
            records[op.event] = i
    for i, op in enumerate(ops):
        for dep in op.after:
            if dep not in names:
                raise CollsimError(f"{where} op[{i}]: after: no operation named {dep!r} on this rank; expected one of "
                                   f"{', '.join(list(names)[:12]) or '(no named operations)'}")
        if op.op == WAIT and op.event not in records:
            raise CollsimError(f"{where} op[{i}]: event: {op.event!r} is never recorded on this rank; expected one of "
                               f"{', '.join(list(records)[:12]) or '(no recorded events)'}")
    cycle = find_cycle(program_dependencies(program, rank))
    if cycle:
        names_of = labels(ops)
        steps = " -> ".join(f"op[{i}] {names_of[i]}" for i in cycle + cycle[:1])
        raise CollsimError(f"{where}: dependency cycle: {steps} (each waits for the next); expected dependencies that "
                           "point to operations that can finish first")


def program_to_dict(program: Program) -> dict:
    """The file form of a program; ranks with identical operations share one key ('0-7')."""
    out: dict[str, Any] = {"world": program.world}
    out.update({k: v for k, v in program.meta.items()})
    if program.gpu is not None:
        out["gpu"] = program.gpu
    if program.mfu is not None:
        out["mfu"] = program.mfu
    out["groups"] = {name: list(members) for name, members in program.groups.items()}
    ranks: dict[str, list[dict]] = {}
    run: list[int] = []
    rows = {r: [_op_dict(op) for op in program.ops(r)] for r in program.ranks}
    for rank in sorted(rows):
        if run and rank == run[-1] + 1 and rows[rank] == rows[run[0]]:
            run.append(rank)
            continue
        if run:
            ranks[_key(run)] = rows[run[0]]
        run = [rank]
    if run:
        ranks[_key(run)] = rows[run[0]]
    out["ranks"] = ranks
    return out


def _key(run: list[int]) -> Any:
    return run[0] if len(run) == 1 else f"{run[0]}-{run[-1]}"


def _op_dict(op: Op) -> dict:
    d: dict[str, Any] = {"op": op.op}
    if op.stream != DEFAULT_STREAM:
        d["stream"] = op.stream
    if op.name:
        d["name"] = op.name
    if op.after:
        d["after"] = list(op.after)
    if op.op == COMPUTE:
        if op.flops is not None:
            d["flops"] = op.flops
            d.update({k: v for k, v in (("gpu", op.gpu), ("mfu", op.mfu)) if v is not None})
        else:
            d["time"] = op.seconds
    if op.is_collective:
        d["group"] = op.group
    if op.is_p2p:
        d["peer"] = op.peer
    if op.nbytes is not None:
        d["size"] = format_size(op.nbytes)
        if op.dtype != "bfloat16":
            d["dtype"] = op.dtype
    if op.root is not None:
        d["root"] = op.root
    if op.is_collective and op.redop != "sum":
        d["redop"] = op.redop
    if op.algorithm:
        d["algorithm"] = op.algorithm
    if op.is_collective and op.seconds is not None:
        d["time"] = op.seconds
    if op.event is not None:
        d["event"] = op.event
    return d


def dump_program(program: Program, path: str | Path | None = None) -> str:
    """The program as YAML (one operation per line), or JSON for a .json path (much faster to read back for large
    programs); written atomically to `path` when given."""
    if path is not None and str(path).lower().endswith(".json"):
        text = json.dumps(program_to_dict(program), separators=(",", ":")) + "\n"
    else:
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        text = yaml.dump(program_to_dict(program), Dumper=dumper, sort_keys=False, default_flow_style=None, width=1 << 16)
    if path is not None:
        from ..fileio import atomic_write

        atomic_write(str(path), text)
    return text
