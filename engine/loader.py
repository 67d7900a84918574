"""Loading a workflow (DESIGN §3): YAML with line numbers → templates → specs → checks.

``load_workflow`` either returns a ``WorkflowDefinition`` that the engines can
run without meeting a problem the loader could have seen, or raises
``WorkflowLoadError`` listing every problem as ``file:line:col: message``.
Nothing else escapes, whatever the file holds.

Stages, each reporting every problem it finds before the next runs:

1. **Read**: the YAML is parsed event by event into located nodes (1-based
   line/column on every value and key). Aliases, a second document, nesting
   deeper than ``MAX_DEPTH``, tags other than the plain scalar ones, duplicate
   keys and files larger than ``MAX_BYTES`` are refused.
2. **Shape**: templates are expanded, every step and the workflow's other
   sections are validated against the spec models, ids are checked to be
   identifiers, names to be known, CEL to compile.
3. **Graph**: the workflow graph is built and checked: cycles not closed by a
   bounded loop, loop targets that are not ancestors, detours, tie-breaker
   targets that are not edges, and every name a CEL expression or a
   ``context.requires`` reads must be something the run context will hold
   when the expression is evaluated.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import re
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from engine.agents.advisory import ORCHESTRATOR_STEP, ORCHESTRATOR_STEP_ID, check_advisory
from engine.agents.registry import AGENT_PREFIX
from engine.conditions import (
    CEL_RESERVED_WORDS,
    CEL_TYPE_NAMES,
    RUN_FIELDS,
    STEP_VIEW_FIELDS,
    TOP_LEVEL_NAMES,
    CelSyntaxError,
    CompiledExpr,
    compile_expr,
    unknown_functions,
)
from engine.errors import Problem, WorkflowLoadError
from engine.graph import WorkflowGraph
from engine.spec import (
    IDENTIFIER_PATTERN,
    SourceLocation,
    StepSpec,
    WorkflowDefinition,
)
from engine.steps import REGISTRY, StepRegistry

__all__ = ["Problem", "WorkflowLoadError", "load_workflow", "load_workflow_text"]

MAX_BYTES = 1_000_000
MAX_DEPTH = 40
"""Deepest nesting of YAML collections a workflow may use; real ones stay under ten."""

INTERNAL_ERROR = "internal loader error (please report it)"

_IDENTIFIER = re.compile(IDENTIFIER_PATTERN)
_TOP_KEYS = (
    "name",
    "version",
    "description",
    "engine",
    "inputs",
    "limits",
    "templates",
    "steps",
    "completion",
    "outputs",
    "mode",
    "advisory",
)
_MODE_KEYS = ("mode", "advisory")
"""An advisory workflow (engine/agents/advisory.py) has these instead of steps."""
_TEMPLATE_KEYS = ("params", "steps", "description")
_USE_KEYS = ("use", "with")
_SCALAR_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:timestamp",
}
_COLLECTION_TAGS = {None, "!", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"}


# == stage 1: located YAML ====================================================


@dataclass
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
        if isinstance(key, str) and self.is_map:
            return self.value.get(key)
        if isinstance(key, int) and self.is_seq and 0 <= key < len(self.value):
            return self.value[key]
        return None

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
        """(dotted path, node) for this node and everything under it."""
        yield prefix, self
        if self.is_map:
            for key, child in self.value.items():
                yield from child.walk(f"{prefix}.{key}" if prefix else key)
        elif self.is_seq:
            for index, child in enumerate(self.value):
                yield from child.walk(f"{prefix}.{index}")


class _Abort(Exception):
    """Stop reading: the problem is recorded and nothing after it can be trusted."""


@dataclass
class _Open:
    node: Node
    key: str | None = None
    key_mark: tuple[int, int] = (0, 0)
    skip: bool = False


class _YamlReader:
    """Builds Nodes from PyYAML's event stream, iteratively (no recursion to exhaust)."""

    def __init__(self, source: str, problems: list[Problem]) -> None:
        self.source = source
        self.problems = problems

    def problem(self, mark: Any, message: str) -> None:
        line = getattr(mark, "line", 0) + 1
        column = getattr(mark, "column", 0) + 1
        self.problems.append(Problem(self.source, line, column, message))

    def read(self, text: str) -> Node | None:
        try:
            loader = yaml.SafeLoader(text)
        except yaml.reader.ReaderError as error:
            self._reader_problem(text, error)
            return None
        stack: list[_Open] = []
        root: Node | None = None
        documents = 0
        try:
            while loader.check_event():
                event = loader.get_event()
                if isinstance(event, yaml.DocumentStartEvent):
                    documents += 1
                    if documents > 1:
                        self.problem(
                            event.start_mark,
                            "a workflow file holds one YAML document; remove the second '---'",
                        )
                        raise _Abort
                elif isinstance(event, yaml.AliasEvent):
                    self.problem(
                        event.start_mark,
                        "YAML aliases (*name) are not supported: write the value out",
                    )
                    raise _Abort
                elif isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                    if len(stack) >= MAX_DEPTH:
                        self.problem(
                            event.start_mark, f"the YAML nests more than {MAX_DEPTH} levels deep"
                        )
                        raise _Abort
                    if event.tag not in _COLLECTION_TAGS:
                        self.problem(event.start_mark, f"unsupported YAML tag {event.tag}")
                        raise _Abort
                    is_map = isinstance(event, yaml.MappingStartEvent)
                    node = Node(
                        {} if is_map else [], event.start_mark.line + 1, event.start_mark.column + 1
                    )
                    root = self._attach(stack, node, event, None) or root
                    stack.append(_Open(node))
                elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                    stack.pop()
                elif isinstance(event, yaml.ScalarEvent):
                    node = Node(
                        self._scalar(loader, event),
                        event.start_mark.line + 1,
                        event.start_mark.column + 1,
                        event.style,
                    )
                    root = self._attach(stack, node, event, event.value) or root
        except _Abort:
            return None
        except yaml.MarkedYAMLError as error:
            mark = error.problem_mark or error.context_mark
            message = " ".join(part for part in (error.context, error.problem) if part)
            hint = ""
            if "flow" in message and "'{'" in message:
                hint = (
                    '; inside [...] or {...} quote values that contain braces, e.g. ["step_r{n-1}"]'
                )
            elif "block" in message:
                hint = "; check the indentation"
            self.problem(mark, f"YAML syntax error: {message or 'cannot parse'}{hint}")
            return None
        except yaml.reader.ReaderError as error:
            self._reader_problem(text, error)
            return None
        except yaml.YAMLError as error:
            self.problems.append(
                Problem(self.source, 1, 1, f"YAML error: {str(error).splitlines()[0]}")
            )
            return None
        finally:
            loader.dispose()
        return root

    def _reader_problem(self, text: str, error: yaml.reader.ReaderError) -> None:
        """A character YAML does not accept (control characters, some invalid code points)."""
        position = max(0, min(int(error.position), len(text)))
        line = text.count("\n", 0, position) + 1
        column = position - (text.rfind("\n", 0, position) + 1) + 1
        character = error.character if isinstance(error.character, str) else chr(error.character)
        self.problems.append(
            Problem(
                self.source,
                line,
                column,
                f"character {character!r} is not allowed in YAML; remove it",
            )
        )

    def _attach(self, stack: list[_Open], node: Node, event: Any, raw: str | None) -> Node | None:
        """Put ``node`` into the open collection; returns it when it is the document root."""
        if not stack:
            return node
        parent = stack[-1]
        if parent.node.is_seq:
            parent.node.value.append(node)
            return None
        if parent.key is None and not parent.skip:
            if raw is None or node.is_map or node.is_seq:
                self.problem(
                    event.start_mark, "a mapping key must be a plain value, not a list or mapping"
                )
                raise _Abort
            mark = (node.line, node.column)
            if raw in parent.node.value:
                first = parent.node.keys[raw]
                self.problem(
                    event.start_mark, f"duplicate key '{raw}' (first written at line {first[0]})"
                )
                parent.skip = True
                return None
            parent.key, parent.key_mark = raw, mark
            return None
        if parent.skip:
            parent.skip = False
            return None
        assert parent.key is not None
        parent.node.value[parent.key] = node
        parent.node.keys[parent.key] = parent.key_mark
        parent.key = None
        return None

    def _scalar(self, loader: yaml.SafeLoader, event: yaml.ScalarEvent) -> Any:
        tag = event.tag
        if tag in (None, "!"):
            tag = loader.resolve(yaml.ScalarNode, event.value, event.implicit)
        if tag not in _SCALAR_TAGS:
            self.problem(event.start_mark, f"unsupported YAML tag {event.tag}")
            raise _Abort
        try:
            return loader.construct_object(
                yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
            )
        except ValueError:
            self.problem(
                event.start_mark, f"cannot read {event.value[:40]!r}: the number is too large"
            )
        except Exception as error:  # PyYAML's constructors raise assorted errors on odd input
            self.problem(
                event.start_mark, f"cannot read {event.value[:40]!r}: {error}".splitlines()[0]
            )
        raise _Abort


# == helpers ==================================================================


def _is_identifier(value: Any) -> bool:
    """A name CEL can read: the identifier pattern, and not a CEL reserved word."""
    return (
        isinstance(value, str)
        and bool(_IDENTIFIER.match(value))
        and value not in CEL_RESERVED_WORDS
    )


def _identifier_problem(value: Any, what: str) -> str:
    """Why ``value`` cannot be a step id (or other name CEL must read)."""
    if not isinstance(value, str):
        return f"{what} must be a string, got {_type_name(value)}"
    if value in CEL_RESERVED_WORDS and _IDENTIFIER.match(value):
        return f"{what} '{value}' is a CEL reserved word; choose another name"
    suggestion = re.sub(r"[^a-z0-9_]+", "_", value.lower()).strip("_") or "name"
    if not suggestion[0].isalpha():
        suggestion = f"s_{suggestion}"
    why = ""
    operator = re.search(r"[-+*/%.]", value)
    if operator:
        left, right = value[: operator.start()], value[operator.end() :]
        kind = {
            "-": "a subtraction",
            "+": "an addition",
            "*": "a multiplication",
            "/": "a division",
            "%": "a modulo",
            ".": "a field access",
        }[operator.group()]
        why = f" — CEL would read '{value}' as {kind} ({left} {operator.group()} {right})"
    elif value[:1].isdigit():
        why = " — it must start with a letter"
    elif value != value.lower():
        why = " — use lower case"
    return f"{what} '{value}' is not an identifier ([a-z][a-z0-9_]*){why}; use '{suggestion}'"


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _closest(name: str, options: typing.Iterable[str]) -> str:
    match = difflib.get_close_matches(name, list(options), n=1, cutoff=0.75)
    return f" (did you mean '{match[0]}'?)" if match else ""


def _loc_text(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _model_at(model: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The pydantic model that validates the mapping at ``loc`` (for 'expected one of')."""
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        if isinstance(current, type) and issubclass(current, BaseModel):
            info = current.model_fields.get(str(part))
            if info is None:
                return None
            current = _unwrap(info.annotation)
        elif current is dict:
            continue
        else:
            return None
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _unwrap(annotation: Any) -> Any:
    for argument in typing.get_args(annotation) or ():
        found = _unwrap(argument)
        if isinstance(found, type) and issubclass(found, BaseModel):
            return found
    origin = typing.get_origin(annotation)
    if origin is dict:
        return dict
    return annotation


_INPUT_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "bool": lambda v: isinstance(v, bool),
    "date": lambda v: isinstance(v, _dt.date) or (isinstance(v, str) and _is_iso_date(v)),
    "list": lambda v: isinstance(v, list),
    "dict": lambda v: isinstance(v, dict),
}


def _is_iso_date(text: str) -> bool:
    try:
        _dt.date.fromisoformat(text)
    except ValueError:
        return False
    return True


@dataclass
class _StepSource:
    """A step's YAML and, for a template instance, where it came from."""

    node: Node
    template: str | None = None
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def origin(self) -> str:
        if self.template is None:
            return ""
        values = ", ".join(f"{k}={v}" for k, v in self.params.items())
        return f" (template {self.template}, {values})"

    @property
    def group(self) -> str | None:
        if self.template is None:
            return None
        return f"{self.template}:{','.join(str(v) for v in self.params.values())}"


@dataclass
class _Expression:
    """One CEL expression of the definition, for the graph-stage reference checks."""

    compiled: CompiledExpr
    node: Node
    where: str
    step: StepSpec | None
    routing: bool = False


# == the loader ===============================================================


class _Loader:
    def __init__(self, source: str, registry: StepRegistry) -> None:
        self.source = source
        self.registry = registry
        self.problems: list[Problem] = []
        self.step_nodes: dict[str, _StepSource] = {}
        self.expressions: list[_Expression] = []
        self.declared_templates: set[str] = set()
        """Template names written in the file, valid or not (an invalid one is reported once)."""

    # -- reporting ------------------------------------------------------------
    def add(self, at: Node | tuple[int, int] | None, message: str) -> None:
        if isinstance(at, Node):
            line, column = at.line, at.column
        elif at is None:
            line, column = 1, 1
        else:
            line, column = at
        self.problems.append(Problem(self.source, line, column, message))

    def fail_if_problems(self) -> None:
        if self.problems:
            raise WorkflowLoadError(self.problems)

    # -- entry ----------------------------------------------------------------
    def load(self, text: str) -> WorkflowDefinition:
        root = _YamlReader(self.source, self.problems).read(text)
        self.fail_if_problems()
        if root is None or root.value is None:
            self.add(root, "the file is empty: a workflow needs at least 'name' and 'steps'")
            self.fail_if_problems()
        assert root is not None
        if not root.is_map:
            self.add(
                root,
                f"a workflow is a mapping with 'name' and 'steps', got {_type_name(root.plain())}",
            )
            self.fail_if_problems()
        wf = self._shape(root)
        self.fail_if_problems()
        assert wf is not None
        self._check_graph(wf)
        self.fail_if_problems()
        return wf

    # == stage 2: shape ==========================================================
    def _shape(self, root: Node) -> WorkflowDefinition | None:
        for key in root.value:
            if key not in _TOP_KEYS:
                self.add(
                    root.key_mark(key),
                    f"unknown key '{key}'{_closest(key, _TOP_KEYS)}; a workflow has {', '.join(k for k in _TOP_KEYS if k not in _MODE_KEYS)}",
                )
        advisory = "mode" in root.value
        for required in ("name",) if advisory else ("name", "steps"):
            if required not in root.value:
                self.add(root, f"missing required key '{required}'")
        header = self._header(root)
        templates = self._templates(root.get("templates"))
        steps_node = self._advisory_steps(root) if advisory else root.get("steps")
        sources = self._expand_steps(steps_node, templates)
        steps = [spec for spec in (self._step(source) for source in sources) if spec is not None]
        self._check_ids(steps)
        self._check_step_fields(steps)
        if header is not None:
            self._check_workflow_sections(root, header)
        if self.problems or header is None:
            return None
        locations = self._locations(root)
        return header.model_copy(
            update={"steps": steps, "source": self.source, "locations": locations}
        )

    def _header(self, root: Node) -> WorkflowDefinition | None:
        """Everything but steps and templates, validated by the WorkflowDefinition model."""
        data = {
            k: v.plain()
            for k, v in root.value.items()
            if k in _TOP_KEYS and k not in ("steps", "templates", *_MODE_KEYS)
        }
        name = root.get("name")
        if name is not None and not _is_identifier(name.value):
            self.add(name, _identifier_problem(name.value, "workflow name"))
            data.pop("name")
        inputs = root.get("inputs")
        if inputs is not None and inputs.is_map:
            for input_name in inputs.value:
                if not _is_identifier(input_name):
                    self.add(
                        inputs.key_mark(input_name), _identifier_problem(input_name, "input name")
                    )
                    data["inputs"].pop(input_name)
        data.setdefault("name", "unnamed")
        try:
            header = WorkflowDefinition.model_validate({**data, "steps": []})
        except ValidationError as error:
            self._report_validation(error, root, WorkflowDefinition)
            return None
        return header

    def _advisory_steps(self, root: Node) -> Node | None:
        """``mode: advisory``: the one orchestrator step, its ``advisory`` section as config."""
        mode = root.value["mode"]
        if mode.value != "advisory":
            self.add(
                mode,
                f"mode must be 'advisory' (or left out for a strict workflow), got {mode.value!r}",
            )
            return None
        if "steps" in root.value:
            self.add(
                root.key_mark("steps"),
                "an advisory workflow has no steps: its orchestrator invokes the agents in 'advisory'",
            )
        section = root.get("advisory")
        if section is None or not section.is_map:
            self.add(
                section or mode,
                "mode: advisory needs an 'advisory' mapping (orchestrator, required_agents, "
                "optional_agents, suggested_sequence, completion)",
            )
            return None
        agents = {
            n.removeprefix(AGENT_PREFIX)
            for n in self.registry.names()
            if n.startswith(AGENT_PREFIX)
        }
        _, problems = check_advisory(section.plain(), agents)
        for path, message in problems:
            where = ".".join(str(part) for part in path)
            at: Node | tuple[int, int] = _descend(section, *path)
            if message.startswith("unknown key") and path and isinstance(path[-1], str):
                at = _descend(section, *path[:-1]).key_mark(path[-1])
            self.add(at, f"advisory{'.' + where if where else ''}: {message}")
        line, column = section.line, section.column
        step = {
            "id": Node(ORCHESTRATOR_STEP_ID, line, column),
            "uses": Node(ORCHESTRATOR_STEP, line, column),
            "config": section,
        }
        return Node([Node(step, line, column)], line, column)

    # -- templates ------------------------------------------------------------
    def _templates(self, node: Node | None) -> dict[str, Node]:
        if node is None or node.value is None:
            return {}
        if not node.is_map:
            self.add(
                node,
                f"templates must be a mapping of template name to template, got {_type_name(node.plain())}",
            )
            return {}
        templates: dict[str, Node] = {}
        self.declared_templates = set(node.value)
        for name, template in node.value.items():
            if not _is_identifier(name):
                self.add(node.key_mark(name), _identifier_problem(name, "template name"))
                continue
            if not template.is_map:
                self.add(template, f"template '{name}' must be a mapping with params and steps")
                continue
            ok = True
            for key in template.value:
                if key not in _TEMPLATE_KEYS:
                    self.add(
                        template.key_mark(key),
                        f"template '{name}': unknown key '{key}'; a template has params, steps, description",
                    )
                    ok = False
            params = template.get("params")
            if params is None or not params.is_seq or not params.value:
                self.add(
                    params or template,
                    f"template '{name}': params must be a non-empty list of names, e.g. [n]",
                )
                ok = False
            else:
                for param in params.value:
                    if not _is_identifier(param.value):
                        self.add(param, _identifier_problem(param.value, "template parameter"))
                        ok = False
            steps = template.get("steps")
            if steps is None or not steps.is_seq or not steps.value:
                self.add(
                    steps or template, f"template '{name}': steps must be a non-empty list of steps"
                )
                ok = False
            if ok:
                templates[name] = template
        return templates

    def _expand_steps(self, node: Node | None, templates: dict[str, Node]) -> list[_StepSource]:
        if node is None:
            return []
        if not node.is_seq or not node.value:
            self.add(
                node, f"steps must be a non-empty list of steps, got {_type_name(node.plain())}"
            )
            return []
        sources: list[_StepSource] = []
        for entry in node.value:
            if not entry.is_map:
                self.add(
                    entry, f"a step is a mapping with id and uses, got {_type_name(entry.plain())}"
                )
            elif "use" in entry.value:
                sources += self._instantiate(entry, templates)
            else:
                sources.append(_StepSource(entry))
        return sources

    def _instantiate(self, entry: Node, templates: dict[str, Node]) -> list[_StepSource]:
        for key in entry.value:
            if key not in _USE_KEYS:
                self.add(
                    entry.key_mark(key),
                    f"unknown key '{key}' next to 'use'; a template use has use and with",
                )
                return []
        use = entry.value["use"]
        name = use.value
        if isinstance(name, str) and name in self.declared_templates and name not in templates:
            return []
        if not isinstance(name, str) or name not in templates:
            known = ", ".join(sorted(templates)) or "none are defined"
            self.add(
                use,
                f"unknown template '{name}'{_closest(str(name), templates)} (templates: {known})",
            )
            return []
        template = templates[name]
        params = [p.value for p in template.value["params"].value]
        instances = self._instances(entry.get("with"), entry, name, params)
        sources: list[_StepSource] = []
        for index, values in enumerate(instances):
            for step in template.value["steps"].value:
                built = self._instance_step(step, values, first=index == 0, template=name)
                if built is not None:
                    sources.append(_StepSource(built, name, values))
        return sources

    def _instances(
        self, node: Node | None, entry: Node, template: str, params: list[str]
    ) -> list[dict[str, Any]]:
        if node is None or not node.is_map:
            self.add(
                node or entry,
                f"use of template '{template}' needs with: a mapping of {', '.join(params)} to values, e.g. {{{params[0]}: [1, 2, 3]}}",
            )
            return []
        ok = True
        for key in node.value:
            if key not in params:
                self.add(
                    node.key_mark(key),
                    f"template '{template}' has no parameter '{key}' (params: {', '.join(params)})",
                )
                ok = False
        for param in params:
            if param not in node.value:
                self.add(
                    node, f"with: missing a value for parameter '{param}' of template '{template}'"
                )
                ok = False
        if not ok:
            return []
        columns: dict[str, list[Any]] = {}
        lengths: set[int] = set()
        for param in params:
            value = node.value[param]
            items = value.value if value.is_seq else [value]
            for item in items:
                if isinstance(item.value, bool) or not isinstance(item.value, (int, str)):
                    self.add(
                        item,
                        f"with: values of '{param}' must be integers or strings, got {_type_name(item.plain())}",
                    )
                    ok = False
            if value.is_seq:
                if not value.value:
                    self.add(value, f"with: '{param}' lists no values; give at least one")
                    ok = False
                lengths.add(len(value.value))
            columns[param] = [item.value for item in items]
        if len(lengths) > 1:
            self.add(
                node,
                f"with: the value lists have different lengths ({', '.join(map(str, sorted(lengths)))}); give each parameter the same number of values",
            )
            ok = False
        if not ok:
            return []
        count = max(lengths) if lengths else 1
        return [
            {
                param: values[index] if node.value[param].is_seq else values[0]
                for param, values in columns.items()
            }
            for index in range(count)
        ]

    def _instance_step(
        self, step: Node, values: dict[str, Any], *, first: bool, template: str
    ) -> Node | None:
        if not step.is_map:
            self.add(
                step,
                f"template '{template}': a step is a mapping with id and uses, got {_type_name(step.plain())}",
            )
            return None
        if "use" in step.value:
            self.add(
                step.key_mark("use"), f"template '{template}': templates cannot use other templates"
            )
            return None
        failures: list[tuple[Node, str]] = []
        pattern = re.compile(
            r"\{\s*(" + "|".join(map(re.escape, values)) + r")\s*(?:([+-])\s*(\d+))?\s*\}"
        )

        def substitute(node: Node) -> Any:
            scalar = node.value
            if not isinstance(scalar, str):
                return scalar

            def replace(match: re.Match[str]) -> str:
                value = values[match.group(1)]
                if match.group(2) is None:
                    return str(value)
                if not isinstance(value, int):
                    failures.append(
                        (
                            node,
                            f"'{match.group(0)}' needs an integer, but {match.group(1)} is '{value}'",
                        )
                    )
                    return match.group(0)
                offset = int(match.group(3))
                return str(value + offset if match.group(2) == "+" else value - offset)

            return pattern.sub(replace, scalar)

        built = step.copy_with(substitute)
        override = built.value.pop("first", None)
        built.keys.pop("first", None)
        if override is not None:
            if not override.is_map:
                self.add(
                    override,
                    f"template '{template}': first must be a mapping of step keys to use for the first instance",
                )
                return None
            if first:
                for key, value in override.value.items():
                    if value.value is None:
                        built.value.pop(key, None)
                        built.keys.pop(key, None)
                    else:
                        built.value[key] = value
                        built.keys[key] = override.key_mark(key)
        for at, failure in failures:
            self.add(at, f"template '{template}': {failure}")
        return None if failures else built

    # -- one step ---------------------------------------------------------------
    def _step(self, source: _StepSource) -> StepSpec | None:
        node = source.node
        id_node = node.get("id")
        if id_node is None:
            self.add(node, f"step has no 'id'{source.origin}")
            return None
        if not _is_identifier(id_node.value):
            self.add(id_node, _identifier_problem(id_node.value, "step id") + source.origin)
            return None
        step_id = id_node.value
        if step_id in self.step_nodes:
            first = self.step_nodes[step_id].node.get("id")
            line = first.line if first else self.step_nodes[step_id].node.line
            self.add(
                id_node,
                f"duplicate step id '{step_id}' (first defined at line {line}){source.origin}",
            )
            return None
        self.step_nodes[step_id] = source
        ok = self._check_identifier_lists(node, source)
        data = node.plain()
        if source.group is not None:
            data["group"] = source.group
        try:
            spec = StepSpec.model_validate(data)
        except ValidationError as error:
            self._report_validation(
                error,
                node,
                StepSpec,
                prefix=f"step '{step_id}': ",
                suffix=source.origin,
                skip_patterns=not ok,
            )
            return None
        return spec if ok else None

    def _check_identifier_lists(self, node: Node, source: _StepSource) -> bool:
        """Step references written as non-identifiers get the identifier explanation."""
        ok = True
        for path, child in node.walk(""):
            if not _references_a_step(path):
                continue
            if isinstance(child.value, (str, int, float, bool)) and not _is_identifier(child.value):
                self.add(child, _identifier_problem(child.value, "step reference") + source.origin)
                ok = False
        return ok

    def _check_ids(self, steps: list[StepSpec]) -> None:
        """uses must be registered; every step a step names must exist."""
        known = set(self.step_nodes)
        for spec in steps:
            source = self.step_nodes[spec.id]
            if spec.uses not in self.registry:
                registered = self.registry.names()
                hint = _closest(spec.uses, registered)
                listing = (
                    f" (registered: {', '.join(registered[:12])}{', ...' if len(registered) > 12 else ''})"
                    if not hint
                    else ""
                )
                self.add(
                    source.node.get("uses"),
                    f"step '{spec.id}': unknown step implementation '{spec.uses}' in uses{hint}{listing}{source.origin}",
                )
            for index, dependency in enumerate(spec.depends_on):
                at = self._node(spec.id, "depends_on", index)
                if dependency == spec.id:
                    self.add(at, f"step '{spec.id}' depends on itself{source.origin}")
                elif dependency not in known:
                    self.add(
                        at,
                        f"step '{spec.id}': depends_on names unknown step '{dependency}'{_closest(dependency, known)}{source.origin}{self._first_hint(source, dependency)}",
                    )
            for path, target in _routing_references(spec):
                at = self._node(spec.id, *path)
                if target not in known:
                    self.add(
                        at,
                        f"step '{spec.id}': {_loc_text(path)} names unknown step '{target}'{_closest(target, known)}{source.origin}{self._first_hint(source, target)}",
                    )

    @staticmethod
    def _first_hint(source: _StepSource, target: str) -> str:
        if source.template is None or not re.search(r"(?<![0-9])0$|-\d+$", target):
            return ""
        return "; use first: to override keys for the first instance"

    def _node(self, step_id: str, *path: str | int) -> Node:
        """The deepest node on ``path`` under the step's YAML."""
        return _descend(self.step_nodes[step_id].node, *path)

    # -- fields that need more than one key --------------------------------------
    def _check_step_fields(self, steps: list[StepSpec]) -> None:
        for spec in steps:
            origin = self.step_nodes[spec.id].origin
            prefix = f"step '{spec.id}'"
            if spec.when is not None:
                self._compile(spec.when, self._node(spec.id, "when"), f"{prefix} when", spec)
            for name, expr in spec.inputs.items():
                self._compile(
                    expr, self._node(spec.id, "inputs", name), f"{prefix} inputs.{name}", spec
                )
            self._check_input_names(spec, origin)
            if spec.context is not None:
                for index, ref in enumerate(spec.context.requires):
                    step_part, _, field_part = ref.partition(".")
                    if not _is_identifier(step_part) or (
                        field_part and not field_part.replace(".", "_").isidentifier()
                    ):
                        self.add(
                            self._node(spec.id, "context", "requires", index),
                            f"{prefix}: context.requires entry '{ref}' must be a step id or step.field{origin}",
                        )
                    elif step_part not in self.step_nodes:
                        self.add(
                            self._node(spec.id, "context", "requires", index),
                            f"{prefix}: context.requires names unknown step '{step_part}'{_closest(step_part, self.step_nodes)}{origin}",
                        )
            if spec.routing is not None:
                self._check_routing_shape(spec, origin)

    def _check_input_names(self, spec: StepSpec, origin: str) -> None:
        """``inputs`` must give every required field of the step's input model, and no field it lacks."""
        if spec.uses not in self.registry:
            return
        model = self.registry.get(spec.uses).input_model
        fields = model.model_fields
        accepted = set(fields) | {info.alias for info in fields.values() if info.alias}
        if model.model_config.get("extra") != "allow":
            for name in spec.inputs:
                if name not in accepted:
                    self.add(
                        self._node(spec.id, "inputs").key_mark(name),
                        f"step '{spec.id}': {spec.uses} takes no input '{name}'{_closest(name, accepted)}"
                        f" (inputs: {', '.join(fields) or 'none'}){origin}",
                    )
        missing = [
            name
            for name, info in fields.items()
            if info.is_required()
            and name not in spec.inputs
            and (info.alias or name) not in spec.inputs
        ]
        if missing:
            at = self._node(spec.id, "inputs") if spec.inputs else self._node(spec.id, "uses")
            self.add(
                at,
                f"step '{spec.id}': {spec.uses} needs input {', '.join(repr(m) for m in missing)}"
                f" in inputs:{origin}",
            )

    def _check_routing_shape(self, spec: StepSpec, origin: str) -> None:
        routing = spec.routing
        assert routing is not None
        prefix = f"step '{spec.id}'"
        at_kind = self._node(spec.id, "routing", "kind")
        if routing.kind == "loop" and routing.loop is None:
            self.add(
                at_kind,
                f"{prefix}: kind: loop needs routing.loop: {{target: ..., max_iterations: N}}{origin}",
            )
        if routing.kind == "branch" and not routing.branches:
            self.add(
                at_kind,
                f"{prefix}: kind: branch needs routing.branches: {{VALUE: step, ...}}{origin}",
            )
        if routing.branches and routing.kind != "branch":
            self.add(
                self._node(spec.id, "routing", "branches"),
                f"{prefix}: branches are only read with kind: branch (kind is {routing.kind}){origin}",
            )
        if routing.kind == "conditional" and not routing.conditions and routing.tie_breaker is None:
            self.add(
                at_kind, f"{prefix}: kind: conditional needs conditions (or a tie_breaker){origin}"
            )
        for target in (
            [c.target for c in routing.conditions]
            + list(routing.branches.values())
            + [routing.next]
        ):
            if target == spec.id and not (routing.loop and routing.loop.target == spec.id):
                self.add(
                    self._routing_node(spec, target),
                    f"{prefix} routes to itself; a step that repeats needs routing.loop: {{target: {spec.id}, max_iterations: N}}{origin}",
                )
                break
        detour = routing.detour
        if detour is not None:
            at = self._node(spec.id, "routing", "detour", "target")
            if detour.target == spec.id:
                self.add(
                    at,
                    f"{prefix} detours to itself; a detour goes to another step and returns{origin}",
                )
            elif routing.loop is not None and detour.target == routing.loop.target:
                self.add(
                    at,
                    f"{prefix}: detour target '{detour.target}' is also the loop target; a step is either a loop's or a detour's target{origin}",
                )
            elif detour.target == routing.next:
                self.add(
                    at,
                    f"{prefix}: detour target '{detour.target}' is also routing.next; a detour returns and the default edge does not — use different steps{origin}",
                )
            if detour.when is not None:
                self._compile(
                    detour.when,
                    self._node(spec.id, "routing", "detour", "when"),
                    f"{prefix} routing.detour.when",
                    spec,
                    routing=True,
                )
        for index, condition in enumerate(routing.conditions):
            self._compile(
                condition.expr,
                self._node(spec.id, "routing", "conditions", index, "expr"),
                f"{prefix} routing.conditions[{index}]",
                spec,
                routing=True,
            )
        if routing.terminate_when is not None:
            self._compile(
                routing.terminate_when,
                self._node(spec.id, "routing", "terminate_when"),
                f"{prefix} routing.terminate_when",
                spec,
                routing=True,
            )
        if routing.kind == "branch":
            self._compile(
                routing.branch_on,
                self._node(spec.id, "routing", "branch_on")
                if "branch_on" in routing.model_fields_set
                else self._node(spec.id, "routing", "kind"),
                f"{prefix} routing.branch_on",
                spec,
                routing=True,
            )
        tie = routing.tie_breaker
        if tie is not None and tie.enabled:
            at = self._node(spec.id, "routing", "tie_breaker")
            if routing.next is None:
                self.add(
                    at,
                    f"{prefix}: a tie_breaker needs routing.next, the default edge it falls back to{origin}",
                )
            offered = tie.valid_targets or routing.targets()
            if len(set(offered)) < 2:
                self.add(
                    at,
                    f"{prefix}: a tie_breaker needs at least two targets to choose between (has {', '.join(offered) or 'none'}){origin}",
                )

    def _routing_node(self, spec: StepSpec, target: str) -> Node | None:
        for path, value in _routing_references(spec):
            if value == target:
                return self._node(spec.id, *path)
        return self._node(spec.id, "routing")

    def _compile(
        self,
        expr: str,
        node: Node | None,
        where: str,
        step: StepSpec | None,
        *,
        routing: bool = False,
    ) -> None:
        at = node or (self.step_nodes[step.id].node if step else None)
        try:
            compiled = compile_expr(expr)
        except CelSyntaxError as error:
            self.add(self._column_in(at, error.column), f"{where}: {error.message} in {expr!r}")
            return
        for call in unknown_functions(compiled):
            self.add(
                self._column_in(at, call.column),
                f"{where}: unknown function '{call.name}' in {expr!r}",
            )
        if at is not None:
            self.expressions.append(_Expression(compiled, at, where, step, routing))

    @staticmethod
    def _column_in(node: Node | None, column: int) -> tuple[int, int] | Node | None:
        """Where column ``column`` of an expression is in the file (exact for one-line scalars)."""
        if node is None or node.style in ("|", ">"):
            return node
        quote = 1 if node.style in ('"', "'") else 0
        return node.line, node.column + quote + column - 1

    def _check_workflow_sections(self, root: Node, header: WorkflowDefinition) -> None:
        for name, expr in header.outputs.items():
            self._compile(expr, _descend(root, "outputs", name), f"outputs.{name}", None)
        for index, step_id in enumerate(header.completion.required_steps):
            if step_id not in self.step_nodes:
                self.add(
                    _descend(root, "completion", "required_steps", index),
                    f"completion.required_steps names unknown step '{step_id}'{_closest(step_id, self.step_nodes)}",
                )
        for index, name in enumerate(header.completion.required_outputs):
            if name not in header.outputs:
                declared = ", ".join(header.outputs) or "none are declared"
                self.add(
                    _descend(root, "completion", "required_outputs", index),
                    f"completion.required_outputs names '{name}', which is not a workflow output (outputs: {declared})",
                )
        for name, spec in header.inputs.items():
            check = _INPUT_TYPES[spec.type]
            if spec.default is not None and not check(spec.default):
                self.add(
                    _descend(root, "inputs", name, "default"),
                    f"input '{name}': default {spec.default!r} is not of type {spec.type}",
                )
            for index, choice in enumerate(spec.choices or []):
                if not check(choice):
                    self.add(
                        _descend(root, "inputs", name, "choices", index),
                        f"input '{name}': choice {choice!r} is not of type {spec.type}",
                    )
            if (
                spec.choices is not None
                and spec.default is not None
                and spec.default not in spec.choices
            ):
                self.add(
                    _descend(root, "inputs", name, "default"),
                    f"input '{name}': default {spec.default!r} is not one of the choices",
                )
        limit = header.limits.max_step_runs
        if limit != "auto" and limit < 1:
            self.add(
                _descend(root, "limits", "max_step_runs"),
                f"limits.max_step_runs must be a positive integer or auto, got {limit}",
            )

    # == stage 3: graph ==========================================================
    def _check_graph(self, wf: WorkflowDefinition) -> None:
        graph = WorkflowGraph(wf)
        cycles = graph.forward_cycles()
        for cycle in cycles:
            self._report_cycle(wf, cycle)
        if cycles:
            return
        for spec in wf.steps:
            routing = spec.routing
            if routing is None:
                continue
            origin = self.step_nodes[spec.id].origin
            if routing.loop is not None:
                target = routing.loop.target
                if target != spec.id and target not in graph.ancestors(spec.id):
                    self.add(
                        self._node(spec.id, "routing", "loop", "target"),
                        f"step '{spec.id}': loop target '{target}' is not upstream of '{spec.id}'; a loop goes back to a step it depends on, directly or through others{origin}",
                    )
            if routing.detour is not None:
                declarer = graph.detour_declarer(routing.detour.target)
                if declarer is not None and declarer != spec.id:
                    self.add(
                        self._node(spec.id, "routing", "detour", "target"),
                        f"step '{spec.id}': '{routing.detour.target}' is already the detour target of '{declarer}'; a detour target serves one step{origin}",
                    )
            tie = routing.tie_breaker
            if tie is not None:
                edges = routing.targets()
                for index, target in enumerate(tie.valid_targets):
                    if target not in edges:
                        self.add(
                            self._node(spec.id, "routing", "tie_breaker", "valid_targets", index),
                            f"step '{spec.id}': tie_breaker valid target '{target}' is not an edge of the graph; it may only choose among this step's routing targets ({', '.join(edges)}){origin}",
                        )
        visible = {spec.id: graph.visible_from(spec.id) for spec in wf.steps}
        for expression in self.expressions:
            self._check_references(wf, expression, visible)
        for spec in wf.steps:
            if spec.context is None:
                continue
            for index, ref in enumerate(spec.context.requires):
                step_part = ref.partition(".")[0]
                if step_part not in visible[spec.id]:
                    self.add(
                        self._node(spec.id, "context", "requires", index),
                        f"step '{spec.id}': context.requires '{ref}' is not upstream of '{spec.id}'; add '{step_part}' to depends_on or drop it{self.step_nodes[spec.id].origin}",
                    )

    def _report_cycle(
        self, wf: WorkflowDefinition, cycle: list[tuple[str, str, frozenset[str]]]
    ) -> None:
        order = {step_id: index for index, step_id in enumerate(wf.step_ids)}
        source, target, kinds = max(cycle, key=lambda e: (order[e[0]] >= order[e[1]], order[e[0]]))
        start = cycle.index(next(e for e in cycle if e[0] == target))
        ordered = cycle[start:] + cycle[:start]
        path = " → ".join([e[0] for e in ordered] + [target])
        spec = wf.step(source)
        origin = self.step_nodes[source].origin
        if "detour" in kinds:
            self.add(
                self._node(source, "routing", "detour", "target"),
                f"step '{source}': detour target '{target}' is upstream of it (cycle {path}); a detour goes to a step that is not upstream — to go back, use routing.loop{origin}",
            )
        elif "route" in kinds:
            self.add(
                self._routing_node(spec, target),
                f"step '{source}' routes back to '{target}' (cycle {path}); a cycle must be closed by a bounded loop: routing.loop: {{target: {target}, max_iterations: N}}{origin}",
            )
        else:
            dependent = wf.step(target)
            index = dependent.depends_on.index(source)
            self.add(
                self._node(target, "depends_on", index),
                f"step '{target}' depends on '{source}', which is downstream of it (cycle {path}); a cycle must be closed by a bounded routing.loop{self.step_nodes[target].origin}",
            )

    def _check_references(
        self, wf: WorkflowDefinition, expression: _Expression, visible: dict[str, frozenset[str]]
    ) -> None:
        step = expression.step
        if step is None:
            roots = {"inputs", "steps", "run"}
            readable: frozenset[str] | set[str] = set(wf.step_ids)
        else:
            roots = (
                set(TOP_LEVEL_NAMES)
                if expression.routing
                else {"inputs", "steps", "iteration", "run"}
            )
            readable = visible[step.id] | ({step.id} if expression.routing else frozenset())
        for reference in expression.compiled.references:
            message = self._reference_problem(
                wf, reference.path, roots, readable, step, expression.routing
            )
            if message:
                origin = self.step_nodes[step.id].origin if step else ""
                self.add(
                    self._column_in(expression.node, reference.column),
                    f"{expression.where}: {message}{origin}",
                )

    def _reference_problem(
        self,
        wf: WorkflowDefinition,
        path: tuple[str, ...],
        roots: set[str],
        readable: frozenset[str] | set[str],
        step: StepSpec | None,
        routing: bool,
    ) -> str | None:
        root = path[0]
        dotted = ".".join(path)
        if root in CEL_TYPE_NAMES and len(path) == 1:
            return None
        if root not in TOP_LEVEL_NAMES:
            return f"unknown name '{root}'{_closest(root, TOP_LEVEL_NAMES)}; expressions read {', '.join(TOP_LEVEL_NAMES)}"
        if root not in roots:
            if root == "outputs":
                return "'outputs' (the step's own outputs) is only readable in routing expressions; read steps.<id>.outputs instead"
            return (
                f"'{root}' is not available here; this expression reads {', '.join(sorted(roots))}"
            )
        if len(path) == 1:
            return None
        second = path[1]
        if root == "inputs":
            if second not in wf.inputs:
                declared = ", ".join(wf.inputs) or "none are declared"
                return f"'{dotted}': no input '{second}'{_closest(second, wf.inputs)} (inputs: {declared})"
        elif root == "iteration":
            return f"'{dotted}': iteration is a number; it has no fields"
        elif root == "run":
            if second not in RUN_FIELDS:
                return f"'{dotted}': run has {', '.join(RUN_FIELDS)}"
        elif root == "outputs":
            assert step is not None
            return self._field_problem(step, path[1:], dotted)
        elif root == "steps":
            if second not in self.step_nodes:
                return f"'{dotted}': no step '{second}'{_closest(second, self.step_nodes)}"
            if second not in readable:
                where = f"'{step.id}'" if step else "the workflow"
                return f"'{dotted}': step '{second}' is not upstream of {where}; add it to depends_on or read it from a later step"
            if len(path) >= 3 and path[2] not in STEP_VIEW_FIELDS:
                return f"'{dotted}': a step has {', '.join(STEP_VIEW_FIELDS)}"
            if len(path) >= 4 and path[2] == "outputs":
                return self._field_problem(wf.step(second), path[3:], dotted)
        return None

    def _field_problem(self, spec: StepSpec, fields: tuple[str, ...], dotted: str) -> str | None:
        """An output field the step's output model can never have."""
        if not fields or spec.uses not in self.registry:
            return None
        model = self.registry.get(spec.uses).output_model
        if model.model_config.get("extra") == "allow":
            return None
        names = set(model.model_fields)
        names |= {info.alias for info in model.model_fields.values() if info.alias}
        if fields[0] in names:
            return None
        listing = ", ".join(sorted(model.model_fields)) or "none"
        return f"'{dotted}': the outputs of {spec.uses} have no field '{fields[0]}'{_closest(fields[0], names)} (fields: {listing})"

    # -- pydantic errors, located ---------------------------------------------------
    def _report_validation(
        self,
        error: ValidationError,
        node: Node,
        model: type[BaseModel],
        *,
        prefix: str = "",
        suffix: str = "",
        skip_patterns: bool = False,
    ) -> None:
        for detail in error.errors():
            loc = tuple(detail.get("loc", ()))
            kind = detail.get("type", "")
            if kind == "string_pattern_mismatch" and skip_patterns:
                continue
            target, key_mark = _locate(node, loc, kind)
            where = _loc_text(loc)
            if kind == "extra_forbidden":
                parent = _model_at(model, loc[:-1])
                expected = f"; expected one of: {', '.join(parent.model_fields)}" if parent else ""
                close = _closest(str(loc[-1]), parent.model_fields) if parent else ""
                message = f"unknown key '{loc[-1]}'{close}{expected}"
                if len(loc) > 1:
                    message = f"{_loc_text(loc[:-1])}: {message}"
                self.add(key_mark, f"{prefix}{message}{suffix}")
                continue
            if kind == "missing":
                self.add(target, f"{prefix}missing required key '{where}'{suffix}")
                continue
            if kind == "string_pattern_mismatch":
                message = _identifier_problem(detail.get("input"), where)
            else:
                received = detail.get("input")
                got = "" if isinstance(received, (dict, list)) else f", got {received!r}"
                text = str(detail.get("msg", "invalid value")).removeprefix("Value error, ")
                message = f"{where}: {text}{got}" if where else text
            self.add(target, f"{prefix}{message}{suffix}")

    def _locations(self, root: Node) -> dict[str, SourceLocation]:
        locations: dict[str, SourceLocation] = {}
        for key, child in root.value.items():
            if key in ("steps", "templates"):
                continue
            for path, node in child.walk(key):
                locations[path] = SourceLocation(
                    file=self.source, line=node.line, column=node.column
                )
        for step_id, source in self.step_nodes.items():
            for path, node in source.node.walk(f"steps.{step_id}"):
                locations[path] = SourceLocation(
                    file=self.source, line=node.line, column=node.column
                )
        return locations


def _descend(node: Node, *path: str | int) -> Node:
    """The deepest node that exists along ``path`` from ``node``."""
    for part in path:
        child = node.get(part)
        if child is None:
            break
        node = child
    return node


def _references_a_step(path: str) -> bool:
    """Dotted paths in a step whose scalar names another step."""
    parts = path.split(".")
    if parts[:1] == ["depends_on"] and len(parts) == 2:
        return True
    if parts[:1] != ["routing"] or len(parts) < 2:
        return False
    tail = parts[1:]
    return (
        tail == ["next"]
        or (tail[0] == "conditions" and len(tail) == 3 and tail[2] == "target")
        or (tail[0] == "branches" and len(tail) == 2)
        or tail in (["loop", "target"], ["detour", "target"])
        or (tail[:2] == ["tie_breaker", "valid_targets"] and len(tail) == 3)
    )


def _routing_references(spec: StepSpec) -> list[tuple[tuple[str | int, ...], str]]:
    """(path under the step, target) for every step a step's routing names."""
    routing = spec.routing
    if routing is None:
        return []
    found: list[tuple[tuple[str | int, ...], str]] = []
    if routing.next is not None:
        found.append((("routing", "next"), routing.next))
    found += [
        (("routing", "conditions", i, "target"), c.target) for i, c in enumerate(routing.conditions)
    ]
    found += [(("routing", "branches", key), target) for key, target in routing.branches.items()]
    if routing.loop is not None:
        found.append((("routing", "loop", "target"), routing.loop.target))
    if routing.detour is not None:
        found.append((("routing", "detour", "target"), routing.detour.target))
    if routing.tie_breaker is not None:
        found += [
            (("routing", "tie_breaker", "valid_targets", i), t)
            for i, t in enumerate(routing.tie_breaker.valid_targets)
        ]
    return found


def _locate(node: Node, loc: tuple[Any, ...], kind: str) -> tuple[Node, tuple[int, int]]:
    """The node a pydantic error location points at, and the position of its key."""
    current = node
    key_mark = (node.line, node.column)
    for part in loc:
        child = current.get(part) if isinstance(part, (str, int)) else None
        if child is None:
            if isinstance(part, str) and current.is_map and part in current.keys:
                key_mark = current.key_mark(part)
            break
        if isinstance(part, str):
            key_mark = current.key_mark(part)
        else:
            key_mark = (child.line, child.column)
        current = child
    if kind == "extra_forbidden" and loc and current.is_map and str(loc[-1]) in current.keys:
        key_mark = current.key_mark(str(loc[-1]))
    return current, key_mark


# == public API ===============================================================


def load_workflow_text(
    text: str, source: str = "<string>", registry: StepRegistry | None = None
) -> WorkflowDefinition:
    """Load a workflow from YAML text; ``source`` names it in problems."""
    if not isinstance(text, str):
        raise WorkflowLoadError(
            [Problem(source, 1, 1, f"expected YAML text, got {type(text).__name__}")]
        )
    if len(text) > MAX_BYTES:
        raise WorkflowLoadError(
            [
                Problem(
                    source,
                    1,
                    1,
                    f"the file is larger than {MAX_BYTES // 1000} kB; a workflow is far smaller",
                )
            ]
        )
    loader = _Loader(source, registry if registry is not None else REGISTRY)
    try:
        return loader.load(text)
    except WorkflowLoadError:
        raise
    except RecursionError:
        raise WorkflowLoadError(
            [Problem(source, 1, 1, "the workflow nests too deeply to load")]
        ) from None
    except Exception as error:  # the contract: nothing but WorkflowLoadError escapes
        raise WorkflowLoadError(
            [
                Problem(
                    source,
                    1,
                    1,
                    f"{INTERNAL_ERROR}: {type(error).__name__}: {error}".splitlines()[0],
                )
            ]
        ) from error


def load_workflow(path: str | Path, registry: StepRegistry | None = None) -> WorkflowDefinition:
    """Load a workflow file; every problem is raised as one WorkflowLoadError."""
    source = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise WorkflowLoadError(
            [Problem(source, 1, 1, f"cannot read the file: {error.strerror or error}")]
        ) from None
    if len(data) > MAX_BYTES:
        raise WorkflowLoadError(
            [
                Problem(
                    source,
                    1,
                    1,
                    f"the file is larger than {MAX_BYTES // 1000} kB; a workflow is far smaller",
                )
            ]
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        raise WorkflowLoadError(
            [Problem(source, line, column, "the file is not UTF-8 text; save it as UTF-8")]
        ) from None
    return load_workflow_text(text, source=source, registry=registry)
