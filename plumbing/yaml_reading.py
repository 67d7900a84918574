"""Reading YAML from outside under one set of limits: every YAML file the product reads.

Workflows, registry files (agents, tools, model profiles, policies), the config file, fault
scripts and a run's quality.yaml are all written by people or by earlier runs, so all are
hostile text. PyYAML has no limits of its own, so they are checked here, hand-written:

* **size** — at most :data:`MAX_BYTES` (:data:`WORKFLOW_MAX_BYTES` for a workflow, which may be
  a generated chain of ten thousand steps); a larger file is refused before it is parsed, having
  read no more than the bound (:func:`read_bounded`), and only a regular file is read: a FIFO
  would wait for a writer for ever, a device (``/dev/zero``) never end;
* **depth** — collections nested at most :data:`MAX_DEPTH` deep (real files stay under ten):
  PyYAML builds nested collections recursively, so a few hundred levels would end in a
  ``RecursionError`` deep inside it;
* **aliases** — ``*name`` is refused: a few lines of aliases expand to billions of values
  for whoever walks the result (the "billion laughs");
* **duplicate keys** — a key written twice in one mapping is refused (PyYAML keeps the last
  and drops the first without a word).

Depth and aliases are checked on PyYAML's event stream, as the document is read, so nothing
is built past the first refusal and the text is parsed once. A refusal is a
:class:`YamlLimitError` that says where (line and column from 1) and what to do; syntax errors
stay PyYAML's own (``yaml.YAMLError``), for each reader to word with its file's name.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

MAX_BYTES = 1_000_000
"""The largest YAML file read, other than a workflow: a config or a script this large is a
mistake."""
WORKFLOW_MAX_BYTES = 4_000_000
"""The largest workflow file read: room for a generated chain of 10,000 steps, far below what
would make reading it a memory problem."""
MAX_DEPTH = 40
"""The deepest nesting of collections in any YAML file read."""


class YamlLimitError(ValueError):
    """A document refused by the limits. ``line``/``column`` (from 1) say where, when known;
    ``str()`` is the reason and what to do, without the file's name."""

    def __init__(self, reason: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.line = line
        self.column = column

    def located(self, name: str) -> str:
        """One line naming ``name`` and, when known, the place: ``name:line:col: reason``."""
        where = f":{self.line}:{self.column}" if self.line is not None else ""
        return f"{name}{where}: {self.reason}"


class YamlTooLarge(YamlLimitError):
    def __init__(self, size: int, limit: int, unit: str = "bytes") -> None:
        super().__init__(
            f"the file is {size:,} {unit}; the limit is {limit:,} — a file this large is a "
            "mistake: point to the right file"
        )
        self.size = size
        self.limit = limit


class YamlTooDeep(YamlLimitError):
    def __init__(self, line: int, column: int) -> None:
        super().__init__(
            f"nested more than {MAX_DEPTH} levels deep — flatten the file", line, column
        )


class YamlDuplicateKey(YamlLimitError):
    def __init__(self, key: str, first_line: int, line: int, column: int) -> None:
        super().__init__(
            f"duplicate key {key!r} (first written at line {first_line}); keep one of them",
            line,
            column,
        )


class YamlAliasRefused(YamlLimitError):
    def __init__(self, line: int, column: int) -> None:
        super().__init__(
            "YAML aliases (*name) are not supported: write the value out", line, column
        )


class NotARegularFile(OSError):
    """A path that names a FIFO, a device or a socket: never read (see :func:`read_bounded`)."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            errno.EINVAL, "not a regular file (a FIFO or a device); name a YAML file", str(path)
        )

    def __str__(self) -> str:
        return str(self.strerror)


def read_bounded(path: Path, limit: int) -> bytes:
    """``path``'s bytes, no more than ``limit`` + 1 of them read: a regular file only.

    Raises :class:`YamlTooLarge` past ``limit`` (with the file's size), :class:`NotARegularFile`
    for a FIFO or a device, ``IsADirectoryError`` for a folder, and ``OSError`` as ``open`` does.
    Opened without blocking, so a FIFO with no writer is refused at once instead of waited on.
    """
    handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(handle, "rb") as file:
        mode = os.fstat(file.fileno()).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            raise NotARegularFile(path)
        check_size(os.fstat(file.fileno()).st_size, limit)
        data = file.read(limit + 1)
    check_size(len(data), limit)  # it grew while it was read
    return data


def position(mark: Any) -> tuple[int, int]:
    """PyYAML's 0-based mark as a 1-based (line, column); (1, 1) when there is none."""
    return getattr(mark, "line", 0) + 1, getattr(mark, "column", 0) + 1


def check_size(size: int, limit: int = MAX_BYTES, unit: str = "bytes") -> None:
    """Refuse a document of ``size`` bytes (or characters: ``unit``) above ``limit``."""
    if size > limit:
        raise YamlTooLarge(size, limit, unit)


class EventGuard:
    """The depth and alias limits over one document's event stream, event by event."""

    def __init__(self) -> None:
        self.depth = 0

    def see(self, event: yaml.Event) -> None:
        """Account for ``event``; raise :class:`YamlLimitError` when it breaks a limit."""
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise YamlTooDeep(*position(event.start_mark))
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            self.depth -= 1
        elif isinstance(event, yaml.AliasEvent):
            raise YamlAliasRefused(*position(event.start_mark))


class LimitedLoader(yaml.SafeLoader):
    """PyYAML's safe loader with every event checked by an :class:`EventGuard` as the
    composer takes it. Subclass it to construct differently (keep key lines, say); it is the
    pure-Python parser, whose syntax messages every reader's hints are written for."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._guard = EventGuard()

    def get_event(self) -> yaml.Event:
        event = _parsed_event(self)
        self._guard.see(event)
        return event

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        """PyYAML's, except that a key written twice is refused: PyYAML keeps the last one and
        drops the first without a word, so a setting would silently not be the one read."""
        first: dict[Any, int] = {}
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                line, column = position(key_node.start_mark)
                key = self.construct_object(key_node)  # as read: ``yes`` and ``true`` are one key
                if key in first:
                    raise YamlDuplicateKey(key_node.value, first[key], line, column)
                first[key] = line
        return super().construct_mapping(node, deep=deep)


_parsed_event: Callable[[yaml.SafeLoader], yaml.Event] = yaml.SafeLoader.get_event
"""The parser's own ``get_event``, typed (PyYAML's stubs leave it untyped)."""


def load_yaml(
    text: str, loader: type[LimitedLoader] = LimitedLoader, max_bytes: int = MAX_BYTES
) -> Any:
    """The single document in ``text`` as plain values (``None`` when empty).

    Raises :class:`YamlLimitError` past a limit and ``yaml.YAMLError`` on a syntax error.
    """
    check_size(len(text), max_bytes, "characters")
    reader = loader(text)
    try:
        return reader.get_single_data()
    finally:
        reader.dispose()


def compose_yaml(text: str, max_bytes: int = MAX_BYTES) -> tuple[yaml.Node | None, Any]:
    """The single document in ``text`` as its node tree (every node knows its line and column)
    and as plain values, from one parse; ``(None, None)`` when empty. Raises as :func:`load_yaml`."""
    check_size(len(text), max_bytes, "characters")
    reader = LimitedLoader(text)
    try:
        node = reader.get_single_node()
        return node, None if node is None else reader.construct_document(node)
    finally:
        reader.dispose()


def read_yaml_file(path: Path, name: str, error: type[Exception], missing_hint: str) -> Any:
    """The parsed document at ``path``; every failure is ``error`` with one line naming ``name``
    (``missing_hint`` says what to do about a missing file)."""
    try:
        text = read_bounded(path, MAX_BYTES).decode("utf-8")
    except YamlLimitError as exc:
        raise error(exc.located(name)) from None
    except FileNotFoundError:
        raise error(f"{name}: file not found — {missing_hint}") from None
    except IsADirectoryError:
        raise error(f"{name}: is a directory, not a file — {missing_hint}") from None
    except NotARegularFile as exc:
        raise error(f"{name}: {exc} — {missing_hint}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise error(
            f"{name}: cannot read the file ({type(exc).__name__}) — check its permissions and encoding"
        ) from None
    try:
        return load_yaml(text)
    except YamlLimitError as exc:
        raise error(exc.located(name)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = ":{}:{}".format(*position(mark)) if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise error(f"{name}{where}: YAML syntax error: {problem} — fix the syntax") from None
