"""Large YAML program files read from the parser's event stream: no node tree, repeated values shared.

`yaml.load` first composes the whole document into nodes (each scalar with two position marks) in one C
call that no signal interrupts, then builds the data: a 40 MB program held 3.4 GB and ignored SIGTERM
for the whole compose. Here each event becomes data as it arrives (SIGTERM and Ctrl-C are seen between
events), equal scalars are built once, and flat mappings of scalars (one operation each) with equal
contents are one shared dict, so a program whose ranks repeat the same operations holds each once.

The result equals `yaml.load(text, Loader=SafeLoader)` (tests/simulator/test_program_yamlstream.py). What
this reader does not build itself (merge keys `<<`, collections with an explicit tag, complex keys, an
alias to an unfinished node) raises `Unsupported`, and the caller falls back to `yaml.load`.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

_SCALAR, _MAP_START, _MAP_END = yaml.ScalarEvent, yaml.MappingStartEvent, yaml.MappingEndEvent
_SEQ_START, _SEQ_END, _ALIAS = yaml.SequenceStartEvent, yaml.SequenceEndEvent, yaml.AliasEvent
_DEFAULT_TAGS = (None, "!", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq")
_MERGE = "tag:yaml.org,2002:merge"
_NO_KEY = object()


class Unsupported(Exception):
    """A construct this reader leaves to yaml.load."""


class _Map:
    """A mapping being read: its items, the key waiting for its value, its anchor."""

    __slots__ = ("items", "key", "anchor", "flat")

    def __init__(self, anchor: str | None):
        self.items: dict = {}
        self.key: Any = _NO_KEY
        self.anchor = anchor
        self.flat = True  # every value so far a scalar


class Builder:
    """Data from YAML events (safe types only), sharing equal scalars and equal flat mappings."""

    def __init__(self, max_depth: int):
        self.resolver = yaml.resolver.Resolver()
        self.constructor = yaml.constructor.SafeConstructor()
        self.scalars: dict[tuple, Any] = {}
        self.flat: dict[tuple, dict] = {}
        self.anchors: dict[str, Any] = {}
        self.stack: list = []
        self.max_depth = max_depth
        self.root: Any = None
        self.prefix: str | None = None  # tokens of _shorthand: seen only as whole plain scalars

    def scalar(self, event: yaml.ScalarEvent) -> Any:
        key = (event.value, event.implicit, event.tag)
        try:
            return self.scalars[key]
        except KeyError:
            if self.prefix is not None and self.prefix in event.value:  # a token that is not a whole plain scalar
                raise Unsupported("a shorthand token inside a longer scalar") from None
            tag = event.tag
            if tag is None or tag == "!":
                tag = self.resolver.resolve(yaml.ScalarNode, event.value, event.implicit)
                if tag == _MERGE:
                    raise Unsupported("a merge key") from None
            value = self.constructor.construct_object(yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark))
            self.scalars[key] = value
            return value

    def add(self, value: Any, container: bool) -> None:
        """Put a finished value into the collection being read (or make it the document)."""
        if not self.stack:
            self.root = value
            return
        top = self.stack[-1]
        if top.__class__ is list:
            top.append(value)
        elif top.key is _NO_KEY:
            if container:
                raise Unsupported("a collection as a mapping key")
            top.key = value
        else:
            top.items[top.key] = value
            top.key = _NO_KEY
            if container:
                top.flat = False

    def open(self, event) -> None:
        if event.tag not in _DEFAULT_TAGS:
            raise Unsupported(f"the tag {event.tag}")
        if len(self.stack) >= self.max_depth:
            raise yaml.YAMLError(f"nested more than {self.max_depth} levels deep at line {event.start_mark.line + 1}")
        if event.__class__ is _SEQ_START:
            items: list = []
            self.add(items, True)
            if event.anchor is not None:
                self.anchors[event.anchor] = items
            self.stack.append(items)
        else:
            self.stack.append(_Map(event.anchor))

    def close_map(self) -> None:
        frame = self.stack.pop()
        items = frame.items
        if frame.flat:  # one operation, say: share it with every equal one
            key = tuple((k, v.__class__, v) for k, v in items.items())
            try:
                items = self.flat.setdefault(key, items)
            except TypeError:  # an unhashable scalar (a date, say, is hashable; kept general)
                pass
        if frame.anchor is not None:
            self.anchors[frame.anchor] = items
        self.add(items, True)

    def feed(self, event) -> None:
        kind = event.__class__
        if kind is _SCALAR:
            value = self.scalar(event)
            if event.anchor is not None:
                self.anchors[event.anchor] = value
            self.add(value, False)
        elif kind is _MAP_START or kind is _SEQ_START:
            self.open(event)
        elif kind is _MAP_END:
            self.close_map()
        elif kind is _SEQ_END:
            self.stack.pop()
        elif kind is _ALIAS:
            if event.anchor not in self.anchors:
                raise Unsupported(f"an alias to an unfinished or unknown node *{event.anchor}")
            value = self.anchors[event.anchor]
            self.add(value, isinstance(value, (list, dict)))


_PLAIN = r"[^\"'#{}\[\]&*!|>%@`\\\n]"
_OP_LINE = re.compile(r"^( *- )(\{" + _PLAIN + r"*(?:\[" + _PLAIN + r"*\]" + _PLAIN + r"*)*\})[ \t]*$", re.M)
MIN_REPEAT = 2  # the shorthand pays when lines repeat at least this often on average


def load(text: str, loader: type, max_depth: int = 64) -> Any:
    """The first document of `text` as data, read event by event (raises Unsupported, or yaml.YAMLError).

    Lines that hold one flow mapping of plain scalars (`    - {op: allreduce, group: tp0, size: 16MiB}`, one
    operation) and repeat are read once each: every such line becomes a token that stands for its mapping, and
    the document is read with the tokens. Where a token does not come back as a whole plain scalar (a line
    inside a block scalar, say) or anything fails, the document is read as written."""
    shorthand = _shorthand(text, loader, max_depth)
    if shorthand is not None:
        try:
            return _load(*shorthand, loader, max_depth)
        except (Unsupported, yaml.YAMLError):
            pass
    return _load(text, {}, None, loader, max_depth)


def _shorthand(text: str, loader: type, max_depth: int) -> tuple[str, dict, str] | None:
    """(text with repeated operation lines as tokens, token -> its mapping, the tokens' prefix), or None."""
    nonce = next(n for n in range(len(text) + 1) if f"collsim{n}op" not in text)
    prefix = f"collsim{nonce}op"
    token: dict[str, str] = {}
    count = 0

    def replace(m: re.Match) -> str:
        nonlocal count
        count += 1
        body = m.group(2)
        if body not in token:
            token[body] = f"{prefix}{len(token)}"
        return m.group(1) + token[body]

    short = _OP_LINE.sub(replace, text)
    if count < MIN_REPEAT * max(1, len(token)):
        return None
    try:
        values = _load("\n".join(f"- {body}" for body in token), {}, None, loader, max_depth)
    except (Unsupported, yaml.YAMLError):
        return None
    if not isinstance(values, list) or len(values) != len(token) or not all(isinstance(v, dict) for v in values):
        return None
    return short, dict(zip(token.values(), values)), prefix


def _load(text: str, seeds: dict, prefix: str | None, loader: type, max_depth: int) -> Any:
    builder = Builder(max_depth)
    builder.scalars.update({(tok, (True, False), None): value for tok, value in seeds.items()})
    builder.prefix = prefix
    feed = builder.feed
    documents = 0
    for event in yaml.parse(text, Loader=loader):
        kind = event.__class__
        if kind is yaml.DocumentStartEvent:
            documents += 1
            if documents > 1:
                raise Unsupported("a second document")
        elif kind not in (yaml.StreamStartEvent, yaml.StreamEndEvent, yaml.DocumentEndEvent):
            feed(event)
    return builder.root
