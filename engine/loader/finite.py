"""No number of a loaded workflow is infinite or NaN.

YAML reads ``.inf`` and ``.nan`` as floats, and pydantic turns the text ``1e400`` or ``inf``
into one where a field takes a number. A run stores its definition as JSON, which has no
infinity: the value would be stored as ``null`` and the run could never be read back
(``workbench runs show``, ``resume``, ``runs copy``). The loader refuses the value instead,
where it was written.
"""

from __future__ import annotations

import math
from typing import Any

from engine.loader.located_yaml import Node
from engine.loader.problems import Problems
from engine.spec import WorkflowDefinition


def check_finite(problems: Problems, root: Node, wf: WorkflowDefinition) -> None:
    """Add a problem for every number in ``wf`` that is infinite or NaN."""
    data = wf.model_dump(exclude={"locations", "source", "steps"})
    data["steps"] = {step.id: step.model_dump() for step in wf.steps}
    stack: list[tuple[tuple[str, ...], Any]] = [((), data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            stack.extend(((*path, str(key)), child) for key, child in value.items())
        elif isinstance(value, list):
            stack.extend(((*path, str(index)), child) for index, child in enumerate(value))
        elif isinstance(value, float) and not math.isfinite(value):
            problems.add(
                _written_at(root, wf, path),
                f"{_name(path)}: {value} is not a finite number, and a run stores none; write a"
                " finite number",
            )


def _name(path: tuple[str, ...]) -> str:
    if path[0] == "steps":
        return f"step '{path[1]}': {'.'.join(path[2:])}"
    return ".".join(path)


def _written_at(root: Node, wf: WorkflowDefinition, path: tuple[str, ...]) -> tuple[int, int]:
    """Where ``path`` was written: the node it names, or the deepest one found on the way (a
    step a template made is found by where the template wrote it)."""
    node: Node | None = root
    rest = path
    if path[0] == "steps":
        node, rest = _step_node(root, path[1]), path[2:]
        if node is None:
            where = wf.locations.get(path[1])
            return (where.line, where.column) if where is not None else (1, 1)
    assert node is not None
    for part in rest:
        child = node.get(int(part) if node.is_seq and part.isdigit() else part)
        if child is None:
            break
        node = child
    return node.line, node.column


def _step_node(root: Node, step_id: str) -> Node | None:
    """The step written in the file with id ``step_id`` (None: a template made it)."""
    steps = root.get("steps")
    written_steps: list[Node] = steps.value if steps is not None and steps.is_seq else []
    for step in written_steps:
        written = step.get("id")
        if written is not None and written.value == step_id:
            return step
    return None
