"""Located YAML reading: a workflow file parsed into nodes that know their line and column.

The YAML is parsed event by event (no recursion to exhaust), under the limits every YAML
file of the product is read with (:mod:`plumbing.yaml_reading`: aliases and nesting deeper
than ``MAX_DEPTH`` are refused). A second document, tags other than the plain scalar ones and
duplicate keys are refused too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, cast

import yaml

from engine.loader.problems import Problems
from plumbing.yaml_reading import MAX_DEPTH, EventGuard, YamlLimitError, YamlTooDeep, position

_SCALAR_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:timestamp",
}
_STR_TAG = "tag:yaml.org,2002:str"
_LIBYAML: type[Any] | None = getattr(yaml, "CSafeLoader", None)
"""PyYAML's C parser, when PyYAML was built with libyaml."""
_COLLECTION_TAGS = {None, "!", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"}


@dataclass(slots=True)
class Node:
    """A YAML value with where it was written. Mappings keep their keys' positions too."""

    value: Any
    """dict[str, Node] for a mapping, list[Node] for a sequence, else the scalar."""
    line: int
    column: int
    style: str | None = None
    """The scalar's quoting style ('"', "'", '|', '>' or None for plain)."""
    keys: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def is_map(self) -> bool:
        return isinstance(self.value, dict)

    @property
    def is_seq(self) -> bool:
        return isinstance(self.value, list)

    def get(self, key: str | int) -> Node | None:
        child: Node | None = None
        if isinstance(key, str) and self.is_map:
            child = self.value.get(key)
        elif isinstance(key, int) and self.is_seq and 0 <= key < len(self.value):
            child = self.value[key]
        return child

    def key_mark(self, key: str) -> tuple[int, int]:
        return self.keys.get(key, (self.line, self.column))

    def plain(self) -> Any:
        if self.is_map:
            return {k: v.plain() for k, v in self.value.items()}
        if self.is_seq:
            return [v.plain() for v in self.value]
        return self.value

    def copy_with(self, transform: Callable[[Node], Any]) -> Node:
        """A deep copy whose scalars are ``transform(scalar node)``; positions are kept."""
        if self.is_map:
            value: Any = {k: v.copy_with(transform) for k, v in self.value.items()}
        elif self.is_seq:
            value = [v.copy_with(transform) for v in self.value]
        else:
            value = transform(self)
        return Node(value, self.line, self.column, self.style, dict(self.keys))

    def walk(self, prefix: str) -> Iterator[tuple[str, Node]]:
        """(dotted path, node) for this node and everything under it, depth first in the
        order written (iteratively: a generator per level cost more than the walk)."""
        stack = [(prefix, self)]
        while stack:
            path, node = stack.pop()
            yield path, node
            value = node.value
            if isinstance(value, dict):
                stack.extend(
                    reversed([(f"{path}.{key}" if path else key, c) for key, c in value.items()])
                )
            elif isinstance(value, list):
                stack.extend(reversed([(f"{path}.{index}", c) for index, c in enumerate(value)]))


class Abort(Exception):
    """Stop reading: the problem is recorded and nothing after it can be trusted."""


@dataclass(slots=True)
class _Open:
    node: Node
    is_seq: bool
    key: str | None = None
    key_mark: tuple[int, int] = (0, 0)
    skip: bool = False


class YamlReader:
    """Builds Nodes from PyYAML's event stream, iteratively (no recursion to exhaust)."""

    def __init__(self, problems: Problems) -> None:
        self.problems = problems

    def problem(self, mark: Any, message: str) -> None:
        self.problems.add(position(mark), message)

    def read(self, text: str) -> Node | None:
        """The document's root node, or None with the problems recorded.

        libyaml (PyYAML's C parser) reads the file when it is installed — some
        twenty times faster than the Python parser, which matters for workflows
        of thousands of steps. The two word their syntax errors differently, so
        a file libyaml refuses is read again by the Python parser, whose messages
        (and character checks) the loader's hints are written for.
        """
        if _LIBYAML is not None and not yaml.reader.Reader.NON_PRINTABLE.search(text):
            found = len(self.problems.found)
            try:
                return self._build(_LIBYAML(text))
            except yaml.YAMLError:
                del self.problems.found[found:]
        try:
            loader = yaml.SafeLoader(text)
        except yaml.reader.ReaderError as error:
            self._reader_problem(text, error)
            return None
        try:
            return self._build(loader)
        except yaml.MarkedYAMLError as error:
            mark = error.problem_mark or error.context_mark
            message = " ".join(part for part in (error.context, error.problem) if part)
            hint = ""
            if "flow" in message and "'{'" in message:
                hint = (
                    '; inside [...] or {...} quote values that contain braces, e.g. ["step_r{n-1}"]'
                )
            elif "'\\t'" in message:
                hint = "; indent with spaces — YAML does not allow tab characters there"
            elif "block" in message:
                hint = "; check the indentation"
            hint = (
                hint
                or "; fix the YAML here (quote values that contain ': ' or start with a symbol)"
            )
            self.problem(mark, f"YAML syntax error: {message or 'cannot parse'}{hint}")
            return None
        except yaml.reader.ReaderError as error:
            self._reader_problem(text, error)
            return None
        except yaml.YAMLError as error:
            self.problems.add(
                None, f"YAML error: {str(error).splitlines()[0]}; fix the YAML (or report it)"
            )
            return None

    def _build(self, loader: Any) -> Node | None:
        """Nodes from ``loader``'s events; YAML errors propagate, the loader's own
        refusals are recorded (and give None).

        Scalars, most of a workflow's events, take the shortest way: the limits concern
        collections and aliases only, and a mark's line and column are read directly."""
        stack: list[_Open] = []
        root: Node | None = None
        documents = 0
        guard = EventGuard()
        try:
            while loader.check_event():
                event = loader.get_event()
                if isinstance(event, yaml.ScalarEvent):
                    mark: Any = event.start_mark  # always set by both parsers
                    value = self._scalar(loader, event)
                    node = Node(value, mark.line + 1, mark.column + 1, event.style)
                    if stack:
                        self._attach(stack[-1], node, event, event.value)
                    else:
                        root = node
                    continue
                self._guard(guard, event)
                if isinstance(event, yaml.DocumentStartEvent):
                    documents += 1
                    if documents > 1:
                        self.problem(
                            event.start_mark,
                            "a workflow file holds one YAML document; remove the second '---'",
                        )
                        raise Abort
                elif isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                    if event.tag not in _COLLECTION_TAGS:
                        self.problem(
                            event.start_mark, f"unsupported YAML tag {event.tag}; remove the tag"
                        )
                        raise Abort
                    is_map = isinstance(event, yaml.MappingStartEvent)
                    node = Node({} if is_map else [], *position(event.start_mark))
                    if stack:
                        self._attach(stack[-1], node, event, None)
                    else:
                        root = node
                    stack.append(_Open(node, not is_map))
                elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                    stack.pop()
        except Abort:
            return None
        finally:
            loader.dispose()
        return root

    def _guard(self, guard: EventGuard, event: Any) -> None:
        """The limits every YAML file is read with, worded for a workflow."""
        try:
            guard.see(event)
        except YamlTooDeep:
            self.problem(
                event.start_mark,
                f"the YAML nests more than {MAX_DEPTH} levels deep; flatten it"
                " (a workflow needs fewer than ten levels)",
            )
            raise Abort from None
        except YamlLimitError as refused:
            self.problem(event.start_mark, refused.reason)
            raise Abort from None

    def _reader_problem(self, text: str, error: yaml.reader.ReaderError) -> None:
        """A character YAML does not accept (control characters, some invalid code points)."""
        offset = max(0, min(int(error.position), len(text)))
        line = text.count("\n", 0, offset) + 1
        column = offset - (text.rfind("\n", 0, offset) + 1) + 1
        character = error.character if isinstance(error.character, str) else chr(error.character)
        self.problems.add(
            (line, column), f"character {character!r} is not allowed in YAML; remove it"
        )

    def _attach(self, parent: _Open, node: Node, event: Any, raw: str | None) -> None:
        """Put ``node`` into the open collection ``parent``."""
        if parent.is_seq:
            parent.node.value.append(node)
            return
        if parent.key is None and not parent.skip:
            if raw is None:
                self.problem(
                    event.start_mark,
                    "a mapping key must be a plain value, not a list or mapping; write the key as plain text",
                )
                raise Abort
            if raw in parent.node.value:
                first = parent.node.keys[raw]
                self.problem(
                    event.start_mark,
                    f"duplicate key '{raw}' (first written at line {first[0]}); keep one of them",
                )
                parent.skip = True
                return
            parent.key, parent.key_mark = raw, (node.line, node.column)
            return
        if parent.skip:
            parent.skip = False
            return
        assert parent.key is not None
        parent.node.value[parent.key] = node
        parent.node.keys[parent.key] = parent.key_mark
        parent.key = None

    def _scalar(self, loader: Any, event: yaml.ScalarEvent) -> Any:
        tag = event.tag
        if tag in (None, "!"):
            tag = loader.resolve(yaml.ScalarNode, event.value, event.implicit)
        if tag == _STR_TAG:
            return event.value  # what PyYAML's safe constructor makes of a string
        if tag not in _SCALAR_TAGS:
            self.problem(event.start_mark, f"unsupported YAML tag {event.tag}; remove the tag")
            raise Abort
        try:
            return loader.construct_object(
                yaml.ScalarNode(
                    tag,
                    event.value,
                    cast("yaml.Mark | None", event.start_mark),
                    cast("yaml.Mark | None", event.end_mark),
                    event.style,
                )
            )
        except ValueError:
            self.problem(
                event.start_mark,
                f"cannot read {event.value[:40]!r}: the number is too large; quote it to keep it as text",
            )
        except Exception as error:  # PyYAML's constructors raise assorted errors on odd input
            self.problem(
                event.start_mark,
                f"cannot read {event.value[:40]!r}: {error}".splitlines()[0]
                + "; quote it to keep it as text",
            )
        raise Abort
