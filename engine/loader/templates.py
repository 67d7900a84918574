"""Templates: a step list written once and instantiated for each value of its parameters.

``{n}`` in any string of a template's steps becomes the parameter's value;
``{n-1}`` / ``{n+1}`` do integer arithmetic; ``first:`` overrides keys of the
first instance.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from engine.loader.located_yaml import Node
from engine.loader.names import closest, identifier_problem, is_identifier, type_name
from engine.loader.problems import Problems

TEMPLATE_KEYS = ("params", "steps", "description")
MAX_TEMPLATE_STEPS = 1_000
"""Steps the templates of one workflow may make in all: the file's size is capped (MAX_BYTES), and
so is what it expands to — one ``with:`` list of 300,000 values would otherwise take a minute and
gigabytes to check."""
_USE_KEYS = ("use", "with")


@dataclass
class StepSource:
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


def _templates(problems: Problems, node: Node | None) -> tuple[dict[str, Node], set[str]]:
    """The valid templates, and every template name written (valid or not)."""
    if node is None or node.value is None:
        return {}, set()
    if not node.is_map:
        problems.add(
            node,
            f"templates must be a mapping of template name to template, got {type_name(node.plain())}",
        )
        return {}, set()
    templates: dict[str, Node] = {}
    for name, template in node.value.items():
        if not is_identifier(name):
            problems.add(node.key_mark(name), identifier_problem(name, "template name"))
            continue
        if not template.is_map:
            problems.add(template, f"template '{name}' must be a mapping with params and steps")
            continue
        ok = True
        for key in template.value:
            if key not in TEMPLATE_KEYS:
                problems.add(
                    template.key_mark(key),
                    f"template '{name}': unknown key '{key}'; a template has params, steps, description",
                )
                ok = False
        params = template.get("params")
        if params is None or not params.is_seq or not params.value:
            problems.add(
                params or template,
                f"template '{name}': params must be a non-empty list of names, e.g. [n]",
            )
            ok = False
        else:
            for param in params.value:
                if not is_identifier(param.value):
                    problems.add(param, identifier_problem(param.value, "template parameter"))
                    ok = False
        steps = template.get("steps")
        if steps is None or not steps.is_seq or not steps.value:
            problems.add(
                steps or template, f"template '{name}': steps must be a non-empty list of steps"
            )
            ok = False
        if ok:
            templates[name] = template
    return templates, set(node.value)


def expand_steps(problems: Problems, root: Node) -> list[StepSource]:
    """Every step of the workflow, template uses expanded into their instances."""
    templates, declared = _templates(problems, root.get("templates"))
    node = root.get("steps")
    if node is None:
        return []
    if not node.is_seq or not node.value:
        problems.add(
            node, f"steps must be a non-empty list of steps, got {type_name(node.plain())}"
        )
        return []
    sources: list[StepSource] = []
    for entry in node.value:
        if not entry.is_map:
            problems.add(
                entry, f"a step is a mapping with id and uses, got {type_name(entry.plain())}"
            )
        elif "use" in entry.value:
            made = sum(1 for source in sources if source.template is not None)
            sources += _instantiate(problems, entry, templates, declared, MAX_TEMPLATE_STEPS - made)
        else:
            sources.append(StepSource(entry))
    return sources


def _instantiate(
    problems: Problems, entry: Node, templates: dict[str, Node], declared: set[str], room: int
) -> list[StepSource]:
    """The steps ``entry``'s use of a template makes (at most ``room``)."""
    for key in entry.value:
        if key not in _USE_KEYS:
            problems.add(
                entry.key_mark(key),
                f"unknown key '{key}' next to 'use'; a template use has use and with",
            )
            return []
    use = entry.value["use"]
    name = use.value
    if isinstance(name, str) and name in declared and name not in templates:
        return []
    if not isinstance(name, str) or name not in templates:
        known = ", ".join(sorted(templates)) or "none are defined"
        problems.add(
            use,
            f"unknown template '{name}'{closest(str(name), templates)} (templates: {known})",
        )
        return []
    template = templates[name]
    params = [p.value for p in template.value["params"].value]
    per_instance = len(template.value["steps"].value)
    instances = _instances(problems, entry.get("with"), entry, name, params, room // per_instance)
    sources: list[StepSource] = []
    for index, values in enumerate(instances):
        for step in template.value["steps"].value:
            built = _instance_step(problems, step, values, first=index == 0, template=name)
            if built is not None:
                sources.append(StepSource(built, name, values))
    return sources


def _instances(
    problems: Problems,
    node: Node | None,
    entry: Node,
    template: str,
    params: list[str],
    most: int,
) -> list[dict[str, Any]]:
    """One mapping of parameter to value per instance ``with:`` asks for (at most ``most``)."""
    if node is None or not node.is_map:
        problems.add(
            node or entry,
            f"use of template '{template}' needs with: a mapping of {', '.join(params)} to values, e.g. {{{params[0]}: [1, 2, 3]}}",
        )
        return []
    ok = True
    for key in node.value:
        if key not in params:
            problems.add(
                node.key_mark(key),
                f"template '{template}' has no parameter '{key}' (params: {', '.join(params)})",
            )
            ok = False
    for param in params:
        if param not in node.value:
            problems.add(
                node, f"with: missing a value for parameter '{param}' of template '{template}'"
            )
            ok = False
    if not ok:
        return []
    asked = max((len(node.value[p].value) for p in params if node.value[p].is_seq), default=1)
    if asked > most:
        problems.add(
            node,
            f"with: {asked:,} instances of template '{template}' would make more steps than the"
            f" {MAX_TEMPLATE_STEPS:,} templates may make in one workflow; give fewer values",
        )
        return []
    columns: dict[str, list[Any]] = {}
    lengths: set[int] = set()
    for param in params:
        value = node.value[param]
        items = value.value if value.is_seq else [value]
        for item in items:
            if isinstance(item.value, bool) or not isinstance(item.value, (int, str)):
                problems.add(
                    item,
                    f"with: values of '{param}' must be integers or strings, got {type_name(item.plain())}",
                )
                ok = False
        if value.is_seq:
            if not value.value:
                problems.add(value, f"with: '{param}' lists no values; give at least one")
                ok = False
            lengths.add(len(value.value))
        columns[param] = [item.value for item in items]
    if len(lengths) > 1:
        problems.add(
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
    problems: Problems, step: Node, values: dict[str, Any], *, first: bool, template: str
) -> Node | None:
    if not step.is_map:
        problems.add(
            step,
            f"template '{template}': a step is a mapping with id and uses, got {type_name(step.plain())}",
        )
        return None
    if "use" in step.value:
        problems.add(
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
            problems.add(
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
        problems.add(at, f"template '{template}': {failure}")
    return None if failures else built
