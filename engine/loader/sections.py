"""Workflow-level checks: the header (name, inputs, limits, completion, outputs) and where
every key of the file was written."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from functools import partial
from itertools import chain
from typing import Any

from pydantic import ValidationError

from engine.loader.expressions import compile_checked
from engine.loader.finite import check_finite_inputs
from engine.loader.located_yaml import Node
from engine.loader.names import closest, identifier_problem, is_identifier
from engine.loader.problems import Problems
from engine.loader.step_checks import StepIndex, descend
from engine.loader.validation import report_validation
from engine.run_inputs import InputError, check_bounds
from engine.spec import SourceLocation, WorkflowDefinition

TOP_KEYS = (
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
)


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


def read_header(problems: Problems, root: Node) -> WorkflowDefinition | None:
    """Everything but steps and templates, validated by the WorkflowDefinition model."""
    data = {
        k: v.plain()
        for k, v in root.value.items()
        if k in TOP_KEYS and k not in ("steps", "templates")
    }
    name = root.get("name")
    if name is not None and not is_identifier(name.value):
        problems.add(name, identifier_problem(name.value, "workflow name"))
        data.pop("name")
    inputs = root.get("inputs")
    if inputs is not None and inputs.is_map:
        for input_name in inputs.value:
            if not is_identifier(input_name):
                problems.add(
                    inputs.key_mark(input_name), identifier_problem(input_name, "input name")
                )
                data["inputs"].pop(input_name)
    data.setdefault("name", "unnamed")
    check_finite_inputs(problems, inputs)
    try:
        header = WorkflowDefinition.model_validate({**data, "steps": []})
    except ValidationError as error:
        report_validation(problems, error, root, WorkflowDefinition)
        return None
    return header


def check_workflow_sections(
    problems: Problems, step_index: StepIndex, root: Node, header: WorkflowDefinition
) -> None:
    for name, expr in header.outputs.items():
        compile_checked(
            problems,
            step_index.expressions,
            expr,
            descend(root, "outputs", name),
            f"outputs.{name}",
            None,
        )
    for index, step_id in enumerate(header.completion.required_steps):
        if step_id not in step_index.sources:
            problems.add(
                descend(root, "completion", "required_steps", index),
                f"completion.required_steps names unknown step '{step_id}'{closest(step_id, step_index.sources)};"
                " name a step of this workflow",
            )
    for index, name in enumerate(header.completion.required_outputs):
        if name not in header.outputs:
            declared = ", ".join(header.outputs) or "none are declared"
            problems.add(
                descend(root, "completion", "required_outputs", index),
                f"completion.required_outputs names '{name}', which is not a workflow output (outputs: {declared});"
                " declare it under outputs: or remove it",
            )
    for name, spec in header.inputs.items():
        check = _INPUT_TYPES[spec.type]
        at_default = descend(root, "inputs", name, "default")
        typed = spec.default is None or check(spec.default)
        if not typed:
            problems.add(
                at_default,
                f"input '{name}': default {spec.default!r} is not of type {spec.type};"
                f" give a default of type {spec.type} or change the type",
            )
        if spec.required and spec.default is not None:
            problems.add(
                descend(root, "inputs", name, "required"),
                f"input '{name}' is required and has a default, so the default is never used;"
                " remove required: true or the default",
            )
        for index, choice in enumerate(spec.choices or []):
            if not check(choice):
                problems.add(
                    descend(root, "inputs", name, "choices", index),
                    f"input '{name}': choice {choice!r} is not of type {spec.type};"
                    f" write choices of type {spec.type}",
                )
        for bound in ("min", "max"):
            if getattr(spec, bound) is not None and spec.type not in ("int", "float"):
                problems.add(
                    descend(root, "inputs", name, bound),
                    f"input '{name}': {bound} bounds int and float inputs (this one is"
                    f" {spec.type}); remove {bound} or use choices",
                )
        if spec.max_length is not None and spec.type != "string":
            problems.add(
                descend(root, "inputs", name, "max_length"),
                f"input '{name}': max_length bounds string inputs (this one is {spec.type});"
                " remove max_length",
            )
        if spec.min is not None and spec.max is not None and spec.min > spec.max:
            problems.add(
                descend(root, "inputs", name, "max"),
                f"input '{name}': max {spec.max:g} is below min {spec.min:g}; swap them",
            )
        elif typed:
            try:
                check_bounds(name, spec, spec.default)
            except InputError as error:
                problems.add(at_default, f"default of {error}; change the default or the bounds")
    limit = header.limits.max_step_runs
    if limit != "auto" and limit < 1:
        problems.add(
            descend(root, "limits", "max_step_runs"),
            f"limits.max_step_runs must be a positive integer or auto, got {limit}; set auto or a number above 0",
        )


def locations(problems: Problems, step_index: StepIndex, root: Node) -> dict[str, SourceLocation]:
    # Validated: pydantic's validation of three plain fields (~1 us) costs less than building
    # the model without it (model_construct ~3 us, engine.trusted's ~1.5 us).
    place = partial(SourceLocation, file=problems.source)
    walks = [child.walk(key) for key, child in root.value.items() if key not in _OWN_PLACES]
    walks += [
        source.node.walk(f"steps.{step_id}") for step_id, source in step_index.sources.items()
    ]
    return {
        path: place(line=node.line, column=node.column) for path, node in chain.from_iterable(walks)
    }


_OWN_PLACES = ("steps", "templates")
"""The sections whose places are those of the steps they expand to."""
