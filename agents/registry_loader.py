"""Reading registry files: agents, tools, model profiles and policies from YAML.

A registry root is a folder (the shipped ``workflows/``, the workspace, the
config directory); every ``*.yaml`` / ``*.yml`` under its ``agents/``,
``tools/``, ``models/`` and ``policies/`` sub-folders is a mapping of sections — ``agents``, ``tools``, ``models``,
``policies`` — each a mapping of name to definition. The shipped root comes
first, then the user's roots (workspace, config directory); a later root may
redefine a name (the user's own version wins), a second definition within
one root is an error.

Each file is read once, under the limits of every YAML file the product reads
(plumbing/yaml_reading.py: size, nesting depth, no aliases), into nodes that keep their line
and column for the messages. Every problem is reported as ``file:line:col: message`` and loading goes on
to report the rest; the definitions that are valid are kept, so one bad file
does not take the shipped agents with it, and ``problems`` says what was
dropped.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

import yaml
from pydantic import BaseModel, ValidationError

from agents.registry import (
    AgentDef,
    Entry,
    ModelProfile,
    Origin,
    PolicyDef,
    Registry,
    ToolDef,
)
from agents.tools import import_implementation
from engine.errors import Problem
from engine.spec import IDENTIFIER_PATTERN
from plumbing.yaml_reading import MAX_BYTES, YamlLimitError, compose_yaml, read_bounded

SECTIONS: dict[str, type[BaseModel]] = {
    "agents": AgentDef,
    "tools": ToolDef,
    "models": ModelProfile,
    "policies": PolicyDef,
}
SINGULAR = {"agents": "agent", "tools": "tool", "models": "model profile", "policies": "policy"}
_NAME = re.compile(IDENTIFIER_PATTERN)


@dataclass
class RegistryLoad:
    registry: Registry
    problems: list[Problem] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)


@dataclass
class _Located:
    """A definition's YAML node, kept for cross-reference messages."""

    node: yaml.Node
    source: str


def registry_files(root: Path) -> list[Path]:
    found: list[Path] = []
    for folder in SECTIONS:
        if (root / folder).is_dir():
            found += sorted(
                p
                for p in (root / folder).rglob("*")
                if p.suffix in (".yaml", ".yml") and p.is_file()
            )
    return found


def load_registry(
    roots: Iterable[tuple[Path, str]],
    implementations: Collection[str],
    files: Iterable[Path] = (),
) -> RegistryLoad:
    """Load every file of every ``(folder, origin)`` root, then each of ``files`` on its own
    (``registry validate FILE``, origin "given"); ``implementations`` are the tool
    implementation names registered in this process (a tool's ``runs`` must be one)."""
    loader = _RegistryLoader(implementations)
    for folder, origin in roots:
        loader.load_root(folder, origin)
    for path in files:
        loader.load_files([path], "given")
    return loader.finish()


def load_registry_text(
    text: str, source: str, implementations: Collection[str], origin: str = "shipped"
) -> RegistryLoad:
    """One file's text as a registry (tests and ``registry validate FILE``)."""
    loader = _RegistryLoader(implementations)
    loader.load_text(text, source, origin, {kind: {} for kind in SECTIONS})
    return loader.finish()


class _RegistryLoader:
    def __init__(self, implementations: Collection[str]) -> None:
        self.implementations = set(implementations)
        self.problems: list[Problem] = []
        self.files: list[Path] = []
        self.entries: dict[str, dict[str, Entry[Any]]] = {kind: {} for kind in SECTIONS}
        self.nodes: dict[tuple[str, str], _Located] = {}

    def add(self, source: str, node: yaml.Node | yaml.Mark | None, message: str) -> None:
        mark = node.start_mark if isinstance(node, yaml.Node) else node
        line = mark.line + 1 if mark is not None else 1
        column = mark.column + 1 if mark is not None else 1
        self.problems.append(Problem(source, line, column, message))

    # -- files -------------------------------------------------------------------
    def load_root(self, folder: Path, origin: str) -> None:
        self.load_files(registry_files(folder), origin)

    def load_files(self, paths: Iterable[Path], origin: str) -> None:
        """Load ``paths`` as the files of one root (a name may be defined once in it)."""
        seen_in_root: dict[str, dict[str, Any]] = {kind: {} for kind in SECTIONS}
        for path in paths:
            self.files.append(path)
            try:
                text = read_bounded(path, MAX_BYTES).decode("utf-8")
            except YamlLimitError as refused:
                self.add(str(path), None, refused.reason)
                continue
            except (OSError, UnicodeDecodeError) as error:
                self.add(str(path), None, f"cannot read the file: {error}")
                continue
            self.load_text(text, str(path), origin, seen_in_root)

    def load_text(
        self, text: str, source: str, origin: str, seen_in_root: dict[str, dict[str, Any]]
    ) -> None:
        try:
            root, plain = compose_yaml(text)
        except YamlLimitError as refused:
            self.problems.append(
                Problem(source, refused.line or 1, refused.column or 1, refused.reason)
            )
            return
        except yaml.MarkedYAMLError as error:
            mark = error.problem_mark or error.context_mark
            message = " ".join(p for p in (error.context, error.problem) if p) or "cannot parse"
            self.add(source, mark, f"YAML syntax error: {message}")
            return
        except yaml.YAMLError as error:
            self.add(source, None, f"YAML error: {str(error).splitlines()[0]}")
            return
        if root is None:
            return
        if not isinstance(root, yaml.MappingNode) or not isinstance(plain, dict):
            self.add(
                source,
                root,
                "a registry file is a mapping with agents, tools, models or policies sections",
            )
            return
        for key_node, value_node in root.value:
            kind = key_node.value
            if kind not in SECTIONS:
                self.add(
                    source,
                    key_node,
                    f"unknown section '{kind}'{_closest(str(kind), SECTIONS)}; "
                    f"a registry file has {', '.join(SECTIONS)}",
                )
                continue
            self._section(source, origin, kind, value_node, plain[kind], seen_in_root)

    def _section(
        self,
        source: str,
        origin: str,
        kind: str,
        node: yaml.Node,
        plain: Any,
        seen_in_root: dict[str, dict[str, Any]],
    ) -> None:
        if plain is None:
            return
        if not isinstance(node, yaml.MappingNode) or not isinstance(plain, dict):
            self.add(source, node, f"'{kind}' must be a mapping of name to definition")
            return
        model = SECTIONS[kind]
        for key_node, value_node in node.value:
            name = key_node.value
            if not isinstance(name, str) or not _NAME.match(name):
                self.add(
                    source,
                    key_node,
                    f"{SINGULAR[kind]} name '{name}' is not an identifier ([a-z][a-z0-9_]*)",
                )
                continue
            if name in seen_in_root[kind]:
                first = seen_in_root[kind][name]
                self.add(
                    source,
                    key_node,
                    f"{SINGULAR[kind]} '{name}' is defined twice in this root (first at {first})",
                )
                continue
            mark = key_node.start_mark
            where = Origin(source, mark.line + 1, mark.column + 1, origin)
            seen_in_root[kind][name] = where
            value = plain[name]
            if not isinstance(value, dict):
                self.add(source, value_node, f"{SINGULAR[kind]} '{name}' must be a mapping")
                continue
            try:
                definition = model.model_validate(value)
            except ValidationError as error:
                self._report(source, key_node, value_node, kind, name, error)
                continue
            self.entries[kind][name] = Entry(name, definition, where)
            self.nodes[(kind, name)] = _Located(value_node, source)

    def _report(
        self,
        source: str,
        name_node: yaml.Node,
        node: yaml.Node,
        kind: str,
        name: str,
        error: ValidationError,
    ) -> None:
        for detail in error.errors():
            loc = tuple(detail["loc"])
            at = _find(node, loc)
            path = ".".join(str(p) for p in loc)
            message = str(detail["msg"]).removeprefix("Value error, ")
            if detail["type"] == "extra_forbidden":
                at = _find(node, loc, key=True)
                model = _model_at(SECTIONS[kind], loc[:-1])
                fields = model.model_fields if model is not None else {}
                message = f"unknown key{_closest(str(loc[-1]), fields)}"
                if fields:
                    message += f"; expected one of {', '.join(fields)}"
            elif detail["type"] == "missing":
                at = _find(node, loc[:-1], key=True) if len(loc) > 1 else name_node
            value = (
                f" (got {detail['input']!r})"
                if detail["type"]
                not in {
                    "missing",
                    "extra_forbidden",
                }
                and not isinstance(detail["input"], (dict, list))
                else ""
            )
            where = f".{path}" if path else ""
            self.add(source, at, f"{SINGULAR[kind]} '{name}'{where}: {message}{value}")

    # -- cross-references -----------------------------------------------------------
    def finish(self) -> RegistryLoad:
        agents = self.entries["agents"]
        tools = self.entries["tools"]
        models = self.entries["models"]
        dropped: dict[str, set[str]] = {kind: set() for kind in SECTIONS}
        for name, entry in tools.items():
            tool: ToolDef = entry.definition
            if tool.runs in self.implementations:
                continue
            if ":" in tool.runs:
                _, why = import_implementation(tool.runs)
                if not why:
                    continue
                message = f"tool '{name}': runs: {why}"
            else:
                message = (
                    f"tool '{name}': runs '{tool.runs}' is not a registered tool implementation"
                    f"{_closest(tool.runs, self.implementations)}"
                    f" (registered: {', '.join(sorted(self.implementations)) or 'none'};"
                    " or give module:function)"
                )
            self._ref(("tools", name), ("runs",), message)
            dropped["tools"].add(name)
        for name, entry in agents.items():
            agent: AgentDef = entry.definition
            for index, tool_name in enumerate(agent.tools):
                if tool_name not in tools:
                    self._ref(
                        ("agents", name),
                        ("tools", index),
                        f"agent '{name}': unknown tool '{tool_name}'{_closest(tool_name, tools)}",
                    )
                    dropped["agents"].add(name)
            if agent.model not in models:
                self._ref(
                    ("agents", name),
                    ("model",),
                    f"agent '{name}': unknown model profile '{agent.model}'"
                    f"{_closest(agent.model, models)}",
                )
                dropped["agents"].add(name)
        for name, entry in self.entries["policies"].items():
            if not self._check_policy(name, entry.definition):
                dropped["policies"].add(name)
        registry = Registry(
            **{
                kind: {n: e for n, e in entries.items() if n not in dropped[kind]}
                for kind, entries in self.entries.items()
            }
        )
        ordered = sorted(set(self.problems), key=lambda p: (p.file, p.line, p.column, p.message))
        return RegistryLoad(registry, ordered, self.files)

    def _check_policy(self, name: str, policy: PolicyDef) -> bool:
        ok = True
        known = {
            "agents": self.entries["agents"],
            "tools": self.entries["tools"],
            "models": self.entries["models"],
        }

        def check(path: tuple[str | int, ...], value: str, kind: str, key: bool = False) -> None:
            nonlocal ok
            if value not in known[kind]:
                self._ref(
                    ("policies", name),
                    path,
                    f"policy '{name}': unknown {SINGULAR[kind]} '{value}'{_closest(value, known[kind])}",
                    key=key,
                )
                ok = False

        for agent_name, rules in policy.agents.items():
            if agent_name != "*":
                check(("agents", agent_name), agent_name, "agents", key=True)
            for field_name, kind in (
                ("tools", "tools"),
                ("models", "models"),
                ("invoke", "agents"),
            ):
                for index, value in enumerate(getattr(rules, field_name) or []):
                    check(("agents", agent_name, field_name, index), value, kind)
        for field_name in ("approval_required", "denied_tools"):
            for index, value in enumerate(getattr(policy, field_name)):
                check((field_name, index), value, "tools")
        return ok

    def _ref(
        self, entry: tuple[str, str], loc: tuple[str | int, ...], message: str, key: bool = False
    ) -> None:
        located = self.nodes[entry]
        self.add(located.source, _find(located.node, loc, key=key), message)


def _find(node: yaml.Node, loc: tuple[Any, ...], key: bool = False) -> yaml.Node:
    """The node at ``loc`` under ``node`` (the deepest one found); for a missing key, its
    mapping. ``key``: the last step names a mapping key; point at the key, not its value."""
    current = node
    for depth, part in enumerate(loc):
        if isinstance(current, yaml.MappingNode):
            found = None
            for key_node, value_node in current.value:
                if key_node.value == str(part):
                    last = depth == len(loc) - 1
                    found = key_node if (last and key) else value_node
                    break
            if found is None:
                return current
            current = found
        elif isinstance(current, yaml.SequenceNode) and isinstance(part, int):
            if not 0 <= part < len(current.value):
                return current
            current = current.value[part]
        else:
            return current
    return current


def _model_at(model: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The pydantic model validating the mapping at ``loc`` (for "expected one of")."""
    current: Any = model
    for part in loc:
        if isinstance(part, int) or not isinstance(current, type):
            continue
        if not issubclass(current, BaseModel):
            return None
        info = current.model_fields.get(str(part))
        if info is None:
            return None
        current = _model_in(info.annotation)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _model_in(annotation: Any) -> Any:
    """The BaseModel inside an annotation (``X | None``, ``dict[str, X]``), else it."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for argument in get_args(annotation):
        found = _model_in(argument)
        if isinstance(found, type) and issubclass(found, BaseModel):
            return found
    return annotation


def _closest(name: str, options: Iterable[str]) -> str:
    match = difflib.get_close_matches(name, list(options), n=1, cutoff=0.75)
    return f" (did you mean '{match[0]}'?)" if match else ""
