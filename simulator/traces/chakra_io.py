"""Chakra execution trace files (mlcommons/chakra, the workload input of ASTRA-sim): reading and writing the stream.

A file is one rank's trace: a length-delimited stream of protobuf messages (a varint byte count, then the message),
first a `GlobalMetadata`, then `Node`s (chakra's src/third_party/utils/protolib.py encodeMessage/decodeMessage), gzip
or not. The classes come from chakra's schema, et_def.proto (et_def_pb2.py, generated; its header says how). Every bad
file ends in one line naming the file, what is wrong and what is accepted.
"""

from __future__ import annotations

import gzip
import io
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import CollsimError
from ..readfile import read_bytes

MAX_FILE_BYTES = 64 * 2**20     # one rank's trace on disk (gzip or not)
MAX_TRACE_BYTES = 256 * 2**20   # once decompressed
MAX_NODES = 2_000_000           # nodes over all the traces of one import (program_from_dict's MAX_WORK)
RANK_IN_NAME = re.compile(r"\.(\d{1,7})\.et(?:\.gz)?$", re.IGNORECASE)  # <prefix>.<rank>.et, ASTRA-sim's naming
SUFFIXES = (".et", ".et.gz")


def pb() -> Any:
    """chakra's generated classes; protobuf is an optional dependency (collsim[traces])."""
    try:
        from . import et_def_pb2
    except Exception as exc:  # no protobuf (ImportError), or one older than the generated code needs (VersionError)
        raise CollsimError(f"chakra: reading and writing Chakra traces needs protobuf >= 7.35.1 ({exc}); expected "
                           "pip install 'collsim[traces]'") from None
    return et_def_pb2


def is_chakra(path: str | Path) -> bool:
    """A Chakra trace by its name: <prefix>.<rank>.et, gzip or not (.et.gz)."""
    return str(path).lower().endswith(SUFFIXES)


@dataclass
class EtTrace:
    """One rank's trace file: its metadata message and its nodes, in file order."""

    path: str
    rank: int
    metadata: Any
    nodes: list


def rank_of(path: str | Path, index: int, named: bool) -> int:
    """The rank a file holds: the number in <prefix>.<rank>.et when the files are so named, else its place in the list."""
    if not named:
        return index
    m = RANK_IN_NAME.search(Path(path).name)
    if m is None:
        raise CollsimError(f"trace: {path}: no rank in the name; expected every file named <prefix>.<rank>.et (as "
                           "ASTRA-sim reads them) or none")
    return int(m.group(1))


def read_et(path: str | Path, rank: int, budget: int = MAX_NODES) -> EtTrace:
    """One rank's trace: the metadata and up to `budget` nodes (more is refused)."""
    path = Path(path)
    raw = read_bytes(path, "trace", MAX_FILE_BYTES)
    if raw[:2] == b"\x1f\x8b":
        raw = _gunzip(raw, path)
    if not raw:
        raise CollsimError(f"trace: {path} is empty; expected a Chakra execution trace (GlobalMetadata, then nodes)")
    if raw.lstrip()[:1] in (b"{", b"["):
        raise CollsimError(f"trace: {path}: holds JSON, not a Chakra execution trace (a stream of protobuf messages); "
                           "a PyTorch profiler trace is read from a .json or .json.gz name")
    messages = _split(raw, path)
    lib = pb()
    metadata = _metadata(lib, next(messages), path)
    nodes = []
    for i, body in enumerate(messages, 1):
        if i > budget:
            raise CollsimError(f"trace: {path}: over {budget:,} nodes, the limit of {MAX_NODES:,} over all traces less "
                               "those already read; expected a trace of one step")
        nodes.append(_node(lib, body, path, i))
    return EtTrace(str(path), rank, metadata, nodes)


def _gunzip(raw: bytes, path: Path) -> bytes:
    try:
        out = gzip.GzipFile(fileobj=io.BytesIO(raw)).read(MAX_TRACE_BYTES + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise CollsimError(f"trace: {path}: cannot decompress ({exc}); expected a whole gzip file") from None
    if len(out) > MAX_TRACE_BYTES:
        raise CollsimError(f"trace: {path}: over {MAX_TRACE_BYTES // 2**20} MiB once decompressed; expected a trace of "
                           "one step")
    return out


def _split(raw: bytes, path: Path) -> Iterator[memoryview]:
    """The messages' bytes, one by one: each a varint length, then that many bytes."""
    view, pos, index = memoryview(raw), 0, 0
    while pos < len(raw):
        size, start = _varint(raw, pos, path, index)
        if start + size > len(raw):
            raise CollsimError(f"trace: {path}: truncated, or not a Chakra trace: message {index} at byte {pos} needs "
                               f"{size:,} bytes, {len(raw) - start:,} are left; expected a complete Chakra execution trace")
        yield view[start:start + size]
        pos, index = start + size, index + 1


def _varint(raw: bytes, pos: int, path: Path, index: int) -> tuple[int, int]:
    value = shift = 0
    for i in range(pos, min(pos + 10, len(raw))):
        value |= (raw[i] & 0x7F) << shift
        if not raw[i] & 0x80:
            return value, i + 1
        shift += 7
    raise CollsimError(f"trace: {path}: truncated or not a Chakra trace: message {index}'s length at byte {pos} does not "
                       "end; expected a stream of length-delimited protobuf messages")


def _parse(message: Any, body: memoryview, path: Path, index: int) -> Any:
    from google.protobuf.message import DecodeError

    try:
        message.ParseFromString(bytes(body))
    except DecodeError:
        what = "GlobalMetadata" if index == 0 else "Node"
        raise CollsimError(f"trace: {path}: message {index} is not a Chakra {what}; expected a Chakra execution trace "
                           "(GlobalMetadata, then nodes)") from None
    return message


def _metadata(lib: Any, body: memoryview, path: Path) -> Any:
    """The first message, a GlobalMetadata with no field the schema does not know (text or another tool's bytes that
    happen to parse would have some)."""
    from google.protobuf.unknown_fields import UnknownFieldSet

    metadata = _parse(lib.GlobalMetadata(), body, path, 0)
    if len(UnknownFieldSet(metadata)):
        raise CollsimError(f"trace: {path}: message 0 is not a Chakra GlobalMetadata (fields its schema does not have); "
                           "expected a Chakra execution trace (GlobalMetadata, then nodes)")
    return metadata


def _node(lib: Any, body: memoryview, path: Path, index: int) -> Any:
    node = _parse(lib.Node(), body, path, index)
    if node.type not in lib.NodeType.values():
        raise CollsimError(f"trace: {path}: message {index} (node {node.id}): type {node.type} is no Chakra node type; "
                           f"expected one of {', '.join(lib.NodeType.keys())}")
    return node


def attr_value(attr: Any) -> Any:
    """An AttributeProto's value: a number, bool, string or bytes, or a list of them."""
    kind = attr.WhichOneof("value")
    if kind is None:
        return None
    value = getattr(attr, kind)
    return list(value.values) if kind.endswith("_list") else value


def attrs_of(message: Any) -> dict[str, Any]:
    """A node's (or the metadata's) attributes by name (the last one of a name counts)."""
    return {a.name: attr_value(a) for a in message.attr}


def write_et(path: str, messages: list) -> None:
    """Write one rank's trace: each message length-prefixed (protolib.encodeMessage), atomically."""
    from ..fileio import atomic_write

    out = bytearray()
    for message in messages:
        body = message.SerializeToString()
        size = len(body)
        while size > 0x7F:
            out.append(0x80 | (size & 0x7F))
            size >>= 7
        out.append(size)
        out += body
    atomic_write(path, bytes(out))
