"""MSCCL algorithm XML (<algo>/<gpu>/<tb>/<step>): the model and a parser that checks it and names lines.

The format is the one MSCCL's executor parses (Azure/msccl-executor-nccl, src/misc/msccl/msccl_parser.cc)
and msccl-tools writes. A buffer is cut into `nchunksperloop` equal chunks; a step moves `cnt` chunks
starting at a chunk offset. Each threadblock (tb) has at most one send peer and one receive peer on one
channel and runs its steps in order; the n-th send of gpu A's tb (send=B, chan=c) meets the n-th receive
of gpu B's tb (recv=A, chan=c). A step with depid/deps also waits until threadblock `depid` on the same
gpu has finished a step with hasdep=1 at or after index `deps` (nop steps only carry such waits).
Which fields each step type uses (the rest are informational):

    s     send src                         r     receive into dst
    rcs   receive into dst, send dst       rrs   receive, reduce with src, send (nothing stored)
    rrc   dst = src (+) received           rrcs  dst = src (+) received, send dst
    cpy   dst = src (local)                re    dst = dst (+) src (local)
    nop   no data; waits only
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from xml.parsers import expat

from ..collective import REDOPS, normalize_op
from ..errors import CollsimError
from ..ops import SPECS
from ..readfile import read_bytes

STEP_TYPES = ("s", "r", "rcs", "rrs", "rrc", "rrcs", "cpy", "re", "nop")
SENDS = frozenset({"s", "rcs", "rrs", "rrcs"})
RECEIVES = frozenset({"r", "rcs", "rrs", "rrc", "rrcs"})
LOCAL = frozenset({"cpy", "re", "nop"})
USES_SRC = frozenset({"s", "rrs", "rrc", "rrcs", "cpy", "re"})
USES_DST = frozenset({"r", "rcs", "rrc", "rrcs", "cpy", "re"})
BUFFER_NAMES = {"i": "input", "o": "output", "s": "scratch"}
PROTOCOLS = ("Simple", "LL", "LL128")
# coll= names collsim reads (collsim's names and MSCCL's), each to MSCCL's name (simulator/ops.py).
MSCCL_OPS = {**{name: s.msccl for name, s in SPECS.items()}, **{s.msccl: s.msccl for s in SPECS.values()}}
# Ops whose nchunksperloop counts one rank's block, not the whole buffer (the executor's sizeMultiplier is 1).
PER_RANK_BASE = tuple(name for name, s in SPECS.items() if s.msccl_per_rank)
# MSCCL keeps chunk offsets in 16-bit integers; collsim accepts up to this many chunks per buffer.
MAX_CHUNKS = 1 << 16
MAX_ATTRIBUTE = 2**31 - 1  # MSCCL's executor reads attributes into C ints


@dataclass(frozen=True)
class Step:
    """One <step>: what a threadblock does at position `index` (chunk offsets and counts)."""

    index: int
    type: str
    srcbuf: str
    srcoff: int
    dstbuf: str
    dstoff: int
    cnt: int
    depid: int
    deps: int
    hasdep: bool
    line: int

    @property
    def sends(self) -> bool:
        """True when the step sends to the threadblock's send peer."""
        return self.type in SENDS

    @property
    def receives(self) -> bool:
        """True when the step receives from the threadblock's receive peer."""
        return self.type in RECEIVES


@dataclass
class ThreadBlock:
    """One <tb>: a send peer, a receive peer (-1 for none), a channel and steps run in order."""

    id: int
    send: int
    recv: int
    chan: int
    line: int
    steps: list[Step] = field(default_factory=list)


@dataclass
class Gpu:
    """One <gpu>: its buffer sizes in chunks and its threadblocks by id."""

    id: int
    i_chunks: int
    o_chunks: int
    s_chunks: int
    line: int
    tbs: list[ThreadBlock] = field(default_factory=list)


@dataclass
class MscclAlgo:
    """A parsed and structurally checked MSCCL algorithm."""

    name: str
    op: str
    coll: str
    proto: str
    nchannels: int
    nchunksperloop: int
    ngpus: int
    inplace: bool
    outofplace: bool
    min_bytes: int
    max_bytes: int
    redop: str
    root: int
    gpus: list[Gpu]
    source: str = "<xml>"

    def where(self, line: int) -> str:
        """'file:line' for messages."""
        return f"{self.source}:{line}"

    def expected_chunks(self, buf: str) -> int:
        """Chunks an input ('i') or output ('o') buffer holds for this collective."""
        n, p, spec = self.nchunksperloop, self.ngpus, SPECS[self.op]
        whole, block = (n * p, n) if spec.msccl_per_rank else (n, n // p)
        return block if (spec.send if buf == "i" else spec.recv) == "block" else whole

    @property
    def placements(self) -> list[str]:
        """The placements the file declares it supports ('in-place', 'out-of-place')."""
        return [name for name, ok in (("out-of-place", self.outofplace), ("in-place", self.inplace)) if ok]

    def step_count(self) -> int:
        """Steps in the whole file."""
        return sum(len(tb.steps) for g in self.gpus for tb in g.tbs)


# ----------------------------------------------------------------------------------------------------------
# XML reading with line numbers


@dataclass
class _Element:
    tag: str
    attrs: dict[str, str]
    line: int
    children: list[_Element] = field(default_factory=list)


def _parse_tree(text: str | bytes, source: str) -> _Element:
    """Elements with the line each starts on; a syntax error names its line and column."""
    parser = expat.ParserCreate()
    stack: list[_Element] = []
    roots: list[_Element] = []

    def start(tag: str, attrs: dict[str, str]) -> None:
        element = _Element(tag, dict(attrs), parser.CurrentLineNumber)
        (stack[-1].children if stack else roots).append(element)
        stack.append(element)

    def end(tag: str) -> None:
        stack.pop()

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    try:
        parser.Parse(text, True)
    except expat.ExpatError as exc:
        raise CollsimError(f"msccl: {source}:{exc.lineno}: not well-formed XML ({expat.ErrorString(exc.code)}, "
                           f"column {exc.offset + 1}); expected an MSCCL <algo> file") from None
    if not roots:
        raise CollsimError(f"msccl: {source}: no XML elements; expected an MSCCL <algo> file")
    return roots[0]


class _Attrs:
    """Typed access to one element's attributes, with errors that name the file, line and attribute."""

    def __init__(self, element: _Element, source: str):
        self.e = element
        self.where = f"{source}:{element.line}"

    def _raw(self, name: str, default: str | None) -> str:
        value = self.e.attrs.get(name)
        if value is None:
            if default is None:
                raise CollsimError(f"msccl: {self.where}: <{self.e.tag}> has no {name!r} attribute; it is required")
            return default
        return value.strip()

    def int(self, name: str, default: int | None = None, minimum: int | None = None) -> int:
        raw = self._raw(name, None if default is None else str(default))
        shown = repr(raw) if len(raw) <= 40 else f"{raw[:40]!r}... ({len(raw)} characters)"
        try:
            value = int(raw) if len(raw) <= 40 else None
        except ValueError:
            value = None
        if value is None or abs(value) > MAX_ATTRIBUTE:
            accepted = f"an integer of at most {MAX_ATTRIBUTE} (2^31 - 1)" if value is not None or raw.lstrip("-").isdigit() \
                else "an integer"
            raise CollsimError(f"msccl: {self.where}: <{self.e.tag}> {name}={shown} is not {accepted}")
        if minimum is not None and value < minimum:
            raise CollsimError(f"msccl: {self.where}: <{self.e.tag}> {name}={value} is too small; expected >= {minimum}")
        return value

    def str(self, name: str, default: str | None = None) -> str:
        return self._raw(name, default)

    def choice(self, name: str, choices, default: str | None = None) -> str:
        value = self._raw(name, default)
        if value not in choices:
            raise CollsimError(f"msccl: {self.where}: <{self.e.tag}> {name}={value!r} is not accepted; "
                               f"expected one of {', '.join(choices)}")
        return value

    def flag(self, name: str, default: int | None = None) -> bool:
        value = self.int(name, default)
        if value not in (0, 1):
            raise CollsimError(f"msccl: {self.where}: <{self.e.tag}> {name}={value} is not a flag; expected 0 or 1")
        return bool(value)


def parse_msccl(text: str | bytes, source: str = "<xml>") -> MscclAlgo:
    """An MscclAlgo from XML text; any problem is a CollsimError naming the file and line."""
    root = _parse_tree(text, source)
    if root.tag != "algo":
        raise CollsimError(f"msccl: {source}:{root.line}: the top element is <{root.tag}>; expected <algo>")
    a = _Attrs(root, source)
    coll = a.str("coll")
    key = coll.strip().lower()
    if key not in MSCCL_OPS:
        raise CollsimError(f"msccl: {a.where}: <algo> coll={coll!r} is not a collective collsim imports; "
                           f"expected one of {', '.join(MSCCL_OPS)}")
    op = normalize_op(key)
    ngpus = a.int("ngpus", minimum=1)
    nchunks = a.int("nchunksperloop", minimum=1)
    if nchunks > MAX_CHUNKS:
        raise CollsimError(f"msccl: {a.where}: <algo> nchunksperloop={nchunks} is more than collsim reads; expected at most "
                           f"{MAX_CHUNKS} (MSCCL keeps chunk offsets in 16 bits)")
    inplace = a.flag("inplace", 0)
    outofplace = a.flag("outofplace", 0 if inplace else 1)
    if not inplace and not outofplace:
        raise CollsimError(f"msccl: {a.where}: <algo> says inplace=0 and outofplace=0; expected at least one placement")
    if SPECS[op].total_size and not SPECS[op].msccl_per_rank and nchunks % ngpus:
        raise CollsimError(f"msccl: {a.where}: wrong chunk count: nchunksperloop={nchunks} does not divide among "
                           f"ngpus={ngpus} for {coll}; expected a multiple of {ngpus}")
    redop = a.choice("redop", REDOPS, "sum")
    root_rank = a.int("root", 0, minimum=0)
    if root_rank >= ngpus:
        raise CollsimError(f"msccl: {a.where}: <algo> root={root_rank} is not a gpu of {ngpus}; expected 0..{ngpus - 1}")
    algo = MscclAlgo(name=a.str("name", "msccl"), op=op, coll=coll, proto=a.choice("proto", PROTOCOLS, "Simple"),
                     nchannels=a.int("nchannels", 1, minimum=1), nchunksperloop=nchunks, ngpus=ngpus, inplace=inplace,
                     outofplace=outofplace, min_bytes=a.int("minBytes", 0, minimum=0), max_bytes=a.int("maxBytes", 0, minimum=0),
                     redop=redop, root=root_rank, gpus=[], source=source)
    gpus: dict[int, Gpu] = {}
    for child in root.children:
        if child.tag != "gpu":
            raise CollsimError(f"msccl: {source}:{child.line}: unexpected <{child.tag}> inside <algo>; expected <gpu>")
        gpu = _parse_gpu(child, algo, gpus)
        gpus[gpu.id] = gpu
    if len(gpus) < ngpus:  # every id is below ngpus and none repeats, so one of 0..len(gpus) is missing
        missing = next(g for g in range(len(gpus) + 1) if g not in gpus)
        raise CollsimError(f"msccl: {a.where}: ngpus={ngpus} but there is no <gpu> with id {missing}; expected ids 0..{ngpus - 1}")
    algo.gpus = [gpus[g] for g in range(ngpus)]
    for gpu in algo.gpus:
        _check_gpu(gpu, algo)
    return algo


def _parse_gpu(element: _Element, algo: MscclAlgo, seen: dict[int, Gpu]) -> Gpu:
    """One <gpu>; its id is checked against ngpus and the ids `seen` before its threadblocks are read (a repeated id
    would otherwise show first as a threadblock whose peer is its own gpu)."""
    a = _Attrs(element, algo.source)
    gid = a.int("id", minimum=0)
    if gid >= algo.ngpus:
        raise CollsimError(f"msccl: {a.where}: gpu id={gid} is not below ngpus={algo.ngpus}; expected 0..{algo.ngpus - 1}")
    if gid in seen:
        raise CollsimError(f"msccl: {a.where}: gpu id={gid} appears twice (first on line {seen[gid].line}); expected each "
                           f"id 0..{algo.ngpus - 1} once")
    gpu = Gpu(gid, a.int("i_chunks", 0, minimum=0), a.int("o_chunks", 0, minimum=0), a.int("s_chunks", 0, minimum=0),
              element.line)
    if gpu.s_chunks > MAX_CHUNKS:
        raise CollsimError(f"msccl: {a.where}: gpu {gid} s_chunks={gpu.s_chunks} is more than collsim reads; expected at most "
                           f"{MAX_CHUNKS} (MSCCL keeps chunk offsets in 16 bits)")
    for buf, declared in (("i", gpu.i_chunks), ("o", gpu.o_chunks)):
        want = algo.expected_chunks(buf)
        if declared not in (0, want):
            raise CollsimError(
                f"msccl: {a.where}: wrong chunk count: gpu {gid} declares {buf}_chunks={declared}, but the "
                f"{BUFFER_NAMES[buf]} of a {algo.coll} on {algo.ngpus} gpus with nchunksperloop={algo.nchunksperloop} "
                f"holds {want} chunks; expected {want} (or 0 if unused)")
    tbs: dict[int, ThreadBlock] = {}
    for child in element.children:
        if child.tag != "tb":
            raise CollsimError(f"msccl: {algo.source}:{child.line}: unexpected <{child.tag}> inside <gpu>; expected <tb>")
        t = _Attrs(child, algo.source)
        tb = ThreadBlock(t.int("id", minimum=0), t.int("send", -1, minimum=-1), t.int("recv", -1, minimum=-1),
                         t.int("chan", 0, minimum=0), child.line)
        if tb.id in tbs:
            raise CollsimError(f"msccl: {t.where}: gpu {gid} has two threadblocks with id={tb.id} (first on line {tbs[tb.id].line})")
        for role, peer in (("send", tb.send), ("recv", tb.recv)):
            if peer == gid or peer >= algo.ngpus:
                raise CollsimError(f"msccl: {t.where}: tb {tb.id} on gpu {gid} has {role}={peer}; expected -1 (none) "
                                   f"or another gpu in 0..{algo.ngpus - 1}")
        for index, st in enumerate(child.children):
            if st.tag != "step":
                raise CollsimError(f"msccl: {algo.source}:{st.line}: unexpected <{st.tag}> inside <tb>; expected <step>")
            tb.steps.append(_parse_step(st, index, tb, gpu, algo))
        tbs[tb.id] = tb
    for i in range(len(tbs)):
        if i not in tbs:
            raise CollsimError(f"msccl: {a.where}: gpu {gid} has threadblocks up to id {max(tbs)} but none with id {i}; "
                               f"expected ids 0..{len(tbs) - 1} with none missing")
    gpu.tbs = [tbs[i] for i in range(len(tbs))]
    return gpu


def _parse_step(element: _Element, index: int, tb: ThreadBlock, gpu: Gpu, algo: MscclAlgo) -> Step:
    a = _Attrs(element, algo.source)
    kind = a.choice("type", STEP_TYPES)
    s = a.int("s", index)
    if s != index:
        raise CollsimError(f"msccl: {a.where}: step s={s} is the step at position {index} of tb {tb.id} on gpu {gpu.id}; "
                           f"expected s={index} (steps are numbered in order from 0)")
    cnt = a.int("cnt", 0 if kind == "nop" else None, minimum=0 if kind == "nop" else 1)
    srcbuf = a.choice("srcbuf", tuple(BUFFER_NAMES), "i" if kind not in USES_SRC else None)
    dstbuf = a.choice("dstbuf", tuple(BUFFER_NAMES), "o" if kind not in USES_DST else None)
    step = Step(index, kind, srcbuf, a.int("srcoff", 0 if kind not in USES_SRC else None, minimum=-1), dstbuf,
                a.int("dstoff", 0 if kind not in USES_DST else None, minimum=-1), cnt, a.int("depid", -1, minimum=-1),
                a.int("deps", -1, minimum=-1), a.flag("hasdep", 0), element.line)
    if step.sends and tb.send < 0:
        raise CollsimError(f"msccl: {a.where}: a {kind!r} step sends, but tb {tb.id} on gpu {gpu.id} has no send peer (send=-1)")
    if step.receives and tb.recv < 0:
        raise CollsimError(f"msccl: {a.where}: a {kind!r} step receives, but tb {tb.id} on gpu {gpu.id} has no receive peer (recv=-1)")
    declared = {"i": gpu.i_chunks, "o": gpu.o_chunks, "s": gpu.s_chunks}
    for role, used, buf, off in (("src", USES_SRC, srcbuf, step.srcoff), ("dst", USES_DST, dstbuf, step.dstoff)):
        if kind not in used:
            continue
        if off < 0 or off + cnt > declared[buf]:
            raise CollsimError(
                f"msccl: {a.where}: wrong chunk count: {role}buf={buf} {role}off={off} cnt={cnt} reaches chunk {off + cnt - 1}, "
                f"but gpu {gpu.id} declares {buf}_chunks={declared[buf]}; expected chunks 0..{declared[buf] - 1}")
    return step


def _check_gpu(gpu: Gpu, algo: MscclAlgo) -> None:
    """Dependencies point at steps that exist; no two threadblocks share a connection."""
    seen: dict[tuple[str, int, int], ThreadBlock] = {}
    for tb in gpu.tbs:
        for role, peer in (("send", tb.send), ("recv", tb.recv)):
            if peer < 0:
                continue
            key = (role, peer, tb.chan)
            if key in seen:
                raise CollsimError(
                    f"msccl: {algo.where(tb.line)}: tb {tb.id} and tb {seen[key].id} on gpu {gpu.id} both {role} "
                    f"{'to' if role == 'send' else 'from'} gpu {peer} on channel {tb.chan}; expected one threadblock per "
                    f"peer and channel")
            seen[key] = tb
        for step in tb.steps:
            if step.depid < 0:
                continue
            where = algo.where(step.line)
            if step.depid >= len(gpu.tbs):
                raise CollsimError(f"msccl: {where}: step depends on tb {step.depid}, which does not exist on gpu {gpu.id} "
                                   f"(it has tbs 0..{len(gpu.tbs) - 1})")
            target = gpu.tbs[step.depid]
            if not 0 <= step.deps < len(target.steps):
                raise CollsimError(f"msccl: {where}: step depends on step {step.deps} of tb {step.depid} on gpu {gpu.id}, "
                                   f"which does not exist (that tb has steps 0..{len(target.steps) - 1})")
            if step.depid == tb.id and step.deps >= step.index:
                raise CollsimError(f"msccl: {where}: step {step.index} of tb {tb.id} depends on its own step {step.deps}, "
                                   f"which comes at or after it; it would wait forever")
            if signal_step(target, step.deps) is None:
                raise CollsimError(f"msccl: {where}: step depends on step {step.deps} of tb {step.depid} on gpu {gpu.id}, "
                                   f"but no step there from {step.deps} on has hasdep=1, so the executor never signals it")


def signal_step(tb: ThreadBlock, deps: int) -> int | None:
    """The step whose completion releases a wait on step `deps` of `tb`: the first data step at or after it with hasdep=1."""
    for step in tb.steps[deps:]:
        if step.hasdep and step.type != "nop":
            return step.index
    return None


def read_msccl(path: str | Path) -> MscclAlgo:
    """Parse an MSCCL XML file."""
    return parse_msccl(read_bytes(path, "msccl"), Path(path).name)


